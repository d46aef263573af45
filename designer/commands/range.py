"""``ldp-designer range`` and ``ldp-designer strategy`` (metric-ldp-range-counting.md).

* ``range`` simulates the L1 range mechanism (Section IV) on Zipf(1.1) data and
  reports the squared errors of single cells and random ranges against the
  analysed bound of Theorems 2-3 (and their exact expectations).
* ``strategy`` designs the noise scales of a matrix-mechanism strategy for a
  workload under an E file (Section III, problem (1)) and certifies it
  (Proposition 1).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from designer.commands import check_simulation_epsilon, guarded, print_json

if TYPE_CHECKING:
    import numpy as np

#: Largest number of cells ``m^D`` the simulation accepts (the observation tensor is dense).
MAX_CELLS = 2**26
#: Largest D (with m >= 2, more dimensions exceed :data:`MAX_CELLS`).
MAX_DIMENSIONS = 26
#: Most random range queries per run (their exact variances cost about 1 ms each).
MAX_QUERIES = 100_000


def range_memory(m: int, dimensions: int, n: int, queries: int) -> int:
    """Estimated peak bytes of :func:`simulate_range` (measured with ``tracemalloc``).

    Each user's report is D x m signs (int8) plus coordinates and draws (~32 bytes
    per dimension); the cell tensors cost ~64 bytes per cell, a query ~64 bytes per
    dimension, plus ~256 MiB of chunked temporaries.
    """
    return (256 << 20) + n * dimensions * (m + 32) + 64 * m**dimensions + 64 * queries * dimensions


def simulate_range(m: int, dimensions: int, epsilon: float, n: int, queries: int, seed: int) -> dict:
    """One simulated collection: errors of all single cells and ``queries`` random ranges (Figure 1).

    ``seconds`` covers encoding, observations (eq. 3), all cell estimates (eq. 6)
    and the range queries (eq. 7); ``seconds_per_query`` the range queries only.
    """
    import numpy as np

    from designer.metric.range_mechanism import L1RangeMechanism, cell_counts, random_ranges, true_range_counts, zipf_values
    from designer.simulation import check_memory

    if m < 1 or dimensions < 1 or n < 1 or queries < 0:
        raise ValueError(f"need m >= 1, D >= 1, n >= 1, queries >= 0; got m={m}, D={dimensions}, n={n}, queries={queries}")
    if dimensions > MAX_DIMENSIONS:
        raise ValueError(f"--D {dimensions} is more than the {MAX_DIMENSIONS} dimensions this simulation supports")
    if m**dimensions > MAX_CELLS:
        raise ValueError(f"m^D = {m}^{dimensions} cells is more than the {MAX_CELLS} this simulation holds in memory")
    if queries > MAX_QUERIES:
        raise ValueError(f"--queries {queries:,} is more than the {MAX_QUERIES:,} a run evaluates (about 1 ms each)")
    check_memory(range_memory(m, dimensions, n, queries), f"--n {n:,} users on {m}^{dimensions} cells")
    shape = (m,) * dimensions
    mechanism = L1RangeMechanism(shape, epsilon)
    rng = np.random.default_rng(seed)
    values = zipf_values(shape, n, rng)
    lower, upper = random_ranges(shape, queries, rng)
    start = time.perf_counter()
    oracle = mechanism.collect(values, rng)
    frequencies = oracle.frequencies()
    before_ranges = time.perf_counter()
    ranges = oracle.range_queries(lower, upper) if queries else np.zeros(0)
    finish = time.perf_counter()
    seconds, range_seconds = finish - start, finish - before_ranges
    counts = cell_counts(shape, values)
    truth = true_range_counts(counts, lower, upper) if queries else np.zeros(0)
    return {
        "m": m,
        "D": dimensions,
        "eps": epsilon,
        "n": n,
        "queries": queries,
        "seed": seed,
        "mse_single": float(np.mean((frequencies - counts) ** 2)),
        "mse_range": float(np.mean((ranges - truth) ** 2)) if queries else None,
        "expected_mse_single": float(mechanism.frequency_variances(counts).mean()),
        "expected_mse_range": float(mechanism.range_variances(counts, lower, upper).mean()) if queries else None,
        "bound": mechanism.variance_bound(n),
        "seconds": seconds,
        "seconds_per_query": range_seconds / queries if queries else None,
    }


@guarded
def range_command(
    m: int = typer.Option(64, "--m", help="Domain size per dimension."),
    dimensions: int = typer.Option(2, "--D", help="Number of dimensions D."),
    epsilon: float = typer.Option(1.0, "--eps", help="E(x, x') = eps * ||x - x'||_1."),
    n: int = typer.Option(1_000_000, "--n", help="Number of users."),
    queries: int = typer.Option(100, "--queries", help="Number of random range queries."),
    seed: int = typer.Option(0, "--seed", min=0, help="Random seed (data, queries and noise)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Simulate the L1 range mechanism on Zipf(1.1) data and report squared errors vs the bound."""
    check_simulation_epsilon(epsilon)
    result = simulate_range(m, dimensions, epsilon, n, queries, seed)
    if as_json:
        print_json(result)
        return
    table = Table(title=f"L1 range mechanism, m={m}, D={dimensions}, eps={epsilon:g}, n={n}")
    table.add_column("query")
    table.add_column("squared error (mean)", justify="right")
    table.add_column("expected", justify="right")
    table.add_column("bound (Thm 2-3)", justify="right")
    table.add_row("single cells", f"{result['mse_single']:.4g}", f"{result['expected_mse_single']:.4g}", f"{result['bound']:.4g}")
    if queries:
        table.add_row(f"{queries} ranges", f"{result['mse_range']:.4g}", f"{result['expected_mse_range']:.4g}", f"{result['bound']:.4g}")
    console = Console()
    console.print(table)
    per_query = f", {result['seconds_per_query'] * 1e6:.2f} us per range query" if queries else ""
    console.print(f"encode + estimate: {result['seconds']:.3f} s{per_query}")


def _named_or_file(name: str, table: dict, m: int, what: str) -> tuple[np.ndarray, str]:
    from designer.io import InputError, read_matrix
    from designer.io.numbers import REAL

    if name in table:
        return table[name](m), name
    matrix = read_matrix(Path(name), what, rule=REAL)  # entries of W and A may be negative
    if matrix.shape[1] != m:
        raise InputError(f"{name}: the {what} has {matrix.shape[1]} columns but E has {m} symbols")
    return matrix, Path(name).name


@guarded(reads=("--workload", "--E", "--strategy"), writes=("--out",))
def strategy_command(
    workload: str = typer.Option(..., "--workload", help="prefix | all-range | identity | a CSV file W (q x m)."),
    e_file: Path = typer.Option(..., "--E", help="CSV with the m x m privacy matrix E."),
    out: Path = typer.Option(..., "--out", help="Where to write the strategy JSON."),
    strategy: str = typer.Option("prefix", "--strategy", help="A: prefix | identity | a CSV file (p x m, p >= m)."),
    n: int = typer.Option(1, "--n", help="Number of users in the reported total error."),
    as_json: bool = typer.Option(False, "--json", help="Print the JSON written to --out."),
) -> None:
    """Design the noise scales of a matrix-mechanism strategy (problem (1)) and certify it."""
    from designer.io import InputError, check_destinations, read_privacy_matrix, write_json
    from designer.metric.strategy import certify_strategy, design_overcomplete, design_strategy
    from designer.metric.workloads import all_range_workload, identity_workload, prefix_strategy, prefix_workload

    workloads = {"identity": identity_workload, "prefix": prefix_workload, "all-range": all_range_workload}
    strategies = {"identity": identity_workload, "prefix": prefix_strategy}
    check_destinations([out])
    privacy = read_privacy_matrix(e_file, exact=False)
    m = privacy.k
    W, workload_name = _named_or_file(workload, workloads, m, "workload")
    A, strategy_name = _named_or_file(strategy, strategies, m, "strategy")
    if A.shape[0] < m:
        raise InputError(f"{strategy}: the strategy needs at least m = {m} rows, got {A.shape[0]}")
    if not 1 <= n <= 2**53:  # the total error is a float: n must convert exactly
        raise ValueError(f"--n must be between 1 and 2^53 = {2**53:,}, got {n}")
    start = time.perf_counter()
    history = None
    if A.shape[0] == m:
        designed = design_strategy(W, privacy, A)
    else:
        result = design_overcomplete(W, privacy, A)
        designed, history = result.strategy, result.history
    seconds = time.perf_counter() - start
    certificate = certify_strategy(designed, privacy)
    payload = {
        "workload": workload_name,
        "strategy": strategy_name,
        "E": str(e_file),
        **designed.to_dict(n),
        "error_per_user": designed.error(1),
        "certificate": certificate.to_dict(),
        "seconds": seconds,
    }
    if history is not None:
        payload["alternating_history"] = history
    write_json(out, payload)
    if as_json:
        print_json(payload)
        return
    console = Console()
    console.print(
        f"{workload_name} workload (q={payload['q']}), strategy {strategy_name} (p={payload['p']}), m={m}: "
        f"total error {payload['total_error']:.6g} for n={n} (Proposition 2), solved in {seconds:.3f} s",
        markup=False, emoji=False,  # the names of workload and strategy files are printed verbatim
    )
    console.print(
        f"privacy (Proposition 1): {certificate.verdict.upper()}, margin {certificate.margin:.3g}, "
        f"tightest pair {certificate.tightest_pair}"
    )
    console.print(f"wrote {out}", markup=False, emoji=False)


def register(app: typer.Typer) -> None:
    app.command("range")(range_command)
    app.command("strategy")(strategy_command)
