"""``ldp-designer spec``: write the E matrix of a family of context-aware LDP."""

from __future__ import annotations

import math
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from designer.commands import guarded

if TYPE_CHECKING:
    from designer.spec import PrivacyMatrix


#: Peak bytes per entry of E while ``spec`` builds and writes it (measured: 24).
SPEC_BYTES_PER_ENTRY = 32


class Family(str, Enum):
    ldp = "ldp"
    high_low = "high-low"
    block = "block"
    metric = "metric"


def parse_int_list(text: str, what: str) -> list[int]:
    """``"3"`` -> [3]; ``"1,2,5"`` -> [1, 2, 5]."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--{what}: expected integers separated by commas, got {text!r}") from None
    if not values:
        raise ValueError(f"--{what}: no values in {text!r}")
    return values


def equal_block_sizes(k: int, n_blocks: int) -> list[int]:
    """Sizes of ``n_blocks`` consecutive blocks of (nearly) equal size covering k symbols."""
    if not 1 <= n_blocks <= k:
        raise ValueError(f"cannot split {k} symbols into {n_blocks} blocks")
    base, extra = divmod(k, n_blocks)
    return [base + (1 if i < extra else 0) for i in range(n_blocks)]


@guarded(reads=("--distance", "--graph"), writes=("--out",))
def spec_command(
    family: Family = typer.Argument(..., help="ldp | high-low | block | metric"),
    out: Path = typer.Option(..., "--out", help="Where to write E as CSV."),
    eps: float = typer.Option(1.0, "--eps", min=0.0, help="Privacy level epsilon."),
    k: int = typer.Option(None, "--k", min=1, help="Domain size (ldp, high-low, block with --blocks M)."),
    sensitive: str = typer.Option(None, "--sensitive", help="high-low: S (the first S symbols) or a list 0,4,7."),
    blocks: str = typer.Option(None, "--blocks", help="block: M (M equal blocks of k) or sizes 3,5,2."),
    distance: Path = typer.Option(None, "--distance", help="metric: CSV of a k x k distance matrix."),
    graph: Path = typer.Option(None, "--graph", help="metric: CSV of edges u,v[,weight] (shortest paths)."),
    grid: str = typer.Option(None, "--grid", help="metric: L1 grid shape, e.g. 4x4 or 8x8x2."),
) -> None:
    """Write the E matrix of a privacy family to CSV."""
    from designer.io import labelled_writer, matrix_csv_writer, write_files
    from designer.simulation import check_memory
    from designer.spec import PrivacyMatrix

    if not math.isfinite(eps):
        raise ValueError(f"--eps must be a finite number >= 0, got {eps!r} (an infinite level is no constraint)")
    eps += 0.0  # -0.0 -> 0.0
    if k is not None:  # E is k x k floats (8 bytes) plus the family's bookkeeping, ~24 bytes per entry
        check_memory(SPEC_BYTES_PER_ENTRY * k * k, f"--k {k:,} (a {k:,} x {k:,} E matrix)")
    if family is Family.ldp:
        privacy = PrivacyMatrix.classic(_need(k, "k"), eps)
    elif family is Family.high_low:
        chosen = parse_int_list(_need(sensitive, "sensitive"), "sensitive")
        symbols = range(chosen[0]) if len(chosen) == 1 else chosen
        privacy = PrivacyMatrix.high_low(_need(k, "k"), symbols, eps)
    elif family is Family.block:
        sizes = parse_int_list(_need(blocks, "blocks"), "blocks")
        if len(sizes) == 1:
            sizes = equal_block_sizes(_need(k, "k"), sizes[0])
        elif k is not None and sum(sizes) != k:
            raise ValueError(f"--blocks sizes add up to {sum(sizes)}, not --k {k}")
        privacy = PrivacyMatrix.block(sizes, eps)
    else:
        given = [option for option in (distance, graph, grid) if option is not None]
        if len(given) != 1:
            raise ValueError("metric needs exactly one of --distance, --graph, --grid")
        privacy = metric_privacy(distance, graph, grid, eps)
    writer = matrix_csv_writer(privacy.epsilon)
    if privacy.labels != tuple(str(index) for index in range(privacy.k)):
        writer = labelled_writer(privacy.labels, writer)  # a "# labels:" line names the rows
    write_files([(out, writer)])
    typer.echo(f"wrote {privacy.name} ({privacy.k} x {privacy.k}) to {out}")


def metric_privacy(distance: Path | None, graph: Path | None, grid: str | None, eps: float) -> PrivacyMatrix:
    """``E = eps * d`` for a distance file, a graph file (shortest paths) or an L1 grid.

    Rows follow the distance file (and its ``# labels:`` line), the graph's node
    identifiers (declared or sorted; :func:`designer.io.read_graph`) or the grid
    cells in C order. A finite distance whose product with ``eps`` (or a path
    length that) overflows to ``inf`` is refused: ``inf`` would mean no constraint.
    """
    import numpy as np

    from designer.io import read_graph, read_numbers
    from designer.io.numbers import NON_NEGATIVE_OR_INFINITE
    from designer.spec import PrivacyMatrix

    if distance is not None:
        table = read_numbers(distance, "distance", NON_NEGATIVE_OR_INFINITE)
        rows, columns = table.values.shape
        labels = table.labels(rows) if rows == columns else None
        with np.errstate(over="ignore"):
            privacy = PrivacyMatrix.metric(table.values, eps, labels)
        constrained, source = np.isfinite(table.values), f"{distance}"
    elif graph is not None:
        import networkx as nx

        network = read_graph(graph)
        with np.errstate(over="ignore"):  # an overflowing path length is refused below
            privacy = PrivacyMatrix.from_graph(network, eps)
        index = {node: position for position, node in enumerate(network.nodes)}
        component = np.empty(len(index), dtype=np.int64)
        for number, nodes in enumerate(nx.connected_components(network)):
            component[[index[node] for node in nodes]] = number
        constrained, source = component[:, None] == component[None, :], f"{graph} (shortest path lengths)"
    else:
        shape = parse_int_list(grid.replace("x", ","), "grid")
        with np.errstate(over="ignore"):
            privacy = PrivacyMatrix.grid_l1(shape, eps)
        constrained, source = np.ones((privacy.k, privacy.k), dtype=bool), "the grid"
    overflow = np.argwhere(constrained & ~np.isfinite(privacy.epsilon))
    if overflow.size:
        x, x_prime = overflow[0]
        raise ValueError(
            f"E[{privacy.labels[x]}, {privacy.labels[x_prime]}] = eps x distance overflows to inf for {source} "
            f"and --eps {eps:g}, which would mean no constraint; use smaller distances or eps"
        )
    return privacy


def _need(value, name: str):
    if value is None:
        raise ValueError(f"this family needs --{name}")
    return value


def register(app: typer.Typer) -> None:
    app.command("spec")(spec_command)
