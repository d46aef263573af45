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

import typer
from rich.console import Console
from rich.table import Table

from designer.commands import check_simulation_epsilon, guarded, print_json

#: Largest number of cells ``m^D`` the simulation accepts (the observation tensor is dense).
MAX_CELLS = 2**26
#: Largest D (with m >= 2, more dimensions exceed :data:`MAX_CELLS`).
MAX_DIMENSIONS = 26
#: Most random range queries per run (their exact variances cost about 1 ms each).
MAX_QUERIES = 100_000


def range_memory(m: int, dimensions: int, n: int, queries: int) -> int:
    """Estimated peak bytes of :func:`simulate_range` (measured with ``tracemalloc``).

    Reports are encoded and summed in blocks of users
    (:meth:`~designer.metric.range_mechanism.L1RangeMechanism.collect`), so they
    cost a fixed ~256 MiB of temporaries whatever n; each user's coordinates and
    their Zipf draws ~48 bytes per dimension; the cell tensors ~64 bytes per cell,
    a query ~64 bytes per dimension.
    """
    return (256 << 20) + 48 * n * dimensions + 64 * m**dimensions + 64 * queries * dimensions


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


def _privacy_pairs(e_file: Path | None, metric: str | None, shape: str | None, eps: float):
    """The pairs of Proposition 1: from an E file, or the line / L1 grid family without a file."""
    from designer.io import InputError, read_privacy_matrix
    from designer.metric.pairs import PrivacyPairs

    if (e_file is None) == (metric is None):
        raise InputError("give either --E FILE or --metric line|grid (with --shape and --eps)")
    if e_file is not None:
        return PrivacyPairs.from_matrix(read_privacy_matrix(e_file, exact=False)), str(e_file)
    if metric not in ("line", "grid") or shape is None:
        raise InputError(f"--metric {metric}: choose line or grid, with --shape M (line) or M1xM2... (grid)")
    try:
        sizes = tuple(int(part) for part in shape.lower().split("x"))
    except ValueError:
        raise InputError(f"--shape {shape}: write the domain sizes as integers, e.g. 1024 or 64x64") from None
    if min(sizes) < 1 or (metric == "line") != (len(sizes) == 1):
        raise InputError(f"--shape {shape}: a line needs one size >= 1, a grid two or more")
    if not (eps > 0 and eps < float("inf")):
        raise InputError(f"--eps must be a positive finite number, got {eps}")
    pairs = PrivacyPairs.grid_l1(sizes, eps)
    return pairs, pairs.name


def _named_or_file(name: str, names, shape: tuple[int, ...], what: str, build):
    """A named workload or strategy on the domain, or a matrix read from a CSV file."""
    from designer.io import InputError, read_matrix
    from designer.io.numbers import REAL

    if name in names:
        return build(name, shape), name
    matrix = read_matrix(Path(name), what, rule=REAL)  # entries of W and A may be negative
    m = 1
    for size in shape:
        m *= size
    if matrix.shape[1] != m:
        raise InputError(f"{name}: the {what} has {matrix.shape[1]} columns but E has {m} symbols")
    return matrix, Path(name).name


@guarded(reads=("--workload", "--E", "--strategy"), writes=("--out",))
def strategy_command(
    workload: str = typer.Option(..., "--workload", help="identity | prefix | all-range (every axis) | a CSV file W (q x m)."),
    e_file: Path = typer.Option(None, "--E", help="CSV with the m x m privacy matrix E."),
    metric: str = typer.Option(None, "--metric", help="line | grid: E = eps ||x - x'||_1 without a file (with --shape)."),
    shape: str = typer.Option(None, "--shape", help="With --metric: m (line) or m1xm2x... (grid)."),
    eps: float = typer.Option(1.0, "--eps", help="With --metric: E of one step."),
    out: Path = typer.Option(..., "--out", help="Where to write the strategy JSON."),
    strategy: str = typer.Option("prefix", "--strategy", help="A: prefix | identity | tree (every axis) | a CSV file (p x m)."),
    branching: int = typer.Option(4, "--branching", help="Branching factor b of the tree strategy."),
    optimize: str = typer.Option(None, "--optimize", help="p-identity (line E) | kronecker (grid E): optimise A, compare."),
    extra_rows: int = typer.Option(None, "--extra-rows", help="Rows added by p-identity (default m/16 per axis)."),
    n: int = typer.Option(1, "--n", help="Number of users in the reported total error."),
    as_json: bool = typer.Option(False, "--json", help="Print the JSON written to --out."),
) -> None:
    """Design the noise scales of a matrix-mechanism strategy (problem (1)) and certify it; or optimise A."""
    from designer.io import InputError, check_destinations, write_json
    from designer.metric.optimize import design_fixed, line_lower_bound, optimize_strategy
    from designer.metric.strategy import as_strategy_matrix, as_workload, certify_strategy
    from designer.metric.strategy_matrices import named_strategy
    from designer.metric.workloads import MAX_DENSE_GRAM, NAMED_WORKLOADS, named_workload

    check_destinations([out])
    if not 1 <= n <= 2**53:  # the total error is a float: n must convert exactly
        raise ValueError(f"--n must be between 1 and 2^53 = {2**53:,}, got {n}")
    if branching < 2:
        raise InputError(f"--branching must be >= 2, got {branching}")
    pairs, e_name = _privacy_pairs(e_file, metric, shape, eps)
    W, workload_name = _named_or_file(workload, NAMED_WORKLOADS, pairs.shape, "workload", named_workload)
    W = as_workload(W)
    start = time.perf_counter()
    history, comparison = None, None
    if optimize is not None:
        if optimize not in ("p-identity", "kronecker"):
            raise InputError(f"--optimize {optimize}: choose p-identity or kronecker")
        comparison = optimize_strategy(W, pairs, optimize, branching, extra_rows)
        designed, strategy_name = comparison.candidates[comparison.best], comparison.best
    else:
        A, strategy_name = _named_or_file(
            strategy, ("prefix", "identity", "tree"), pairs.shape, "strategy", lambda name, sizes: named_strategy(name, sizes, branching)
        )
        A = as_strategy_matrix(A)
        if A.shape[0] < A.shape[1]:
            raise InputError(f"{strategy}: the strategy needs at least m = {A.shape[1]} rows, got {A.shape[0]}")
        result = design_fixed(W, pairs, A)
        designed, history = result.strategy, (result.history if len(result.history) > 1 else None)
    seconds = time.perf_counter() - start
    certificate = certify_strategy(designed, pairs)
    payload = {"workload": workload_name, "strategy": strategy_name, "E": e_name, **designed.to_dict(n),
               "error_per_user": designed.error(1), "certificate": certificate.to_dict(), "seconds": seconds}
    if history is not None:
        payload["alternating_history"] = history
    if comparison is not None:
        payload["comparison"] = {
            name: {"laplace_error_per_user": candidate.laplace_error(1), "error_per_user": candidate.error(1),
                   "ratio_to_prefix": comparison.ratio(name), "certified": certify_strategy(candidate, pairs).certified}
            for name, candidate in comparison.candidates.items()
        }
        if len(pairs.shape) == 1 and pairs.m <= MAX_DENSE_GRAM and 2 <= pairs.m:
            payload["lower_bound_per_user"] = line_lower_bound(W, pairs)
    write_json(out, payload)
    if as_json:
        print_json(payload)
        return
    console = Console()
    if comparison is not None:
        table = Table(title=f"{workload_name} workload, m={pairs.m}, E: {e_name} (problem (1) error per user, Laplace)")
        for column in ("strategy", "error per user", "ratio to L_m", "certified"):
            table.add_column(column, justify="left" if column == "strategy" else "right")
        for name, row in payload["comparison"].items():
            table.add_row(name, f"{row['laplace_error_per_user']:.6g}", f"{row['ratio_to_prefix']:.4f}", "yes" if row["certified"] else "NO")
        console.print(table)
        if "lower_bound_per_user" in payload:
            bound = payload["lower_bound_per_user"]
            console.print(f"lower bound over every strategy (line E): {bound:.6g}; L_m is within a factor "
                          f"{payload['comparison']['prefix']['laplace_error_per_user'] / bound:.4f} of it")
    console.print(
        f"{workload_name} workload (q={payload['q']}), strategy {strategy_name} (p={payload['p']}), m={pairs.m}: "
        f"total error {payload['total_error']:.6g} for n={n} (Proposition 2), solved in {seconds:.3f} s",
        markup=False, emoji=False,  # the names of workload and strategy files are printed verbatim
    )
    console.print(
        f"privacy (Proposition 1, {len(pairs.pairs)} non-redundant pairs): {certificate.verdict.upper()}, "
        f"margin {certificate.margin:.3g}, tightest pair {certificate.tightest_pair}"
    )
    console.print(f"wrote {out}", markup=False, emoji=False)


def register(app: typer.Typer) -> None:
    app.command("range")(range_command)
    app.command("strategy")(strategy_command)
