"""``ldp-designer spec``: write the E matrix of a family of context-aware LDP."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import networkx as nx
import numpy as np
import typer

from designer.commands import guarded
from designer.io import InputError, read_matrix, read_table, write_matrix_csv
from designer.spec import PrivacyMatrix


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


def read_graph(path: Path) -> nx.Graph:
    """Edges ``u,v[,weight]`` per row (undirected)."""
    graph = nx.Graph()
    table = read_table(path, "graph")
    for number, cells in zip(table.line_numbers, table):
        if len(cells) not in (2, 3):
            raise InputError(f"{path}: row {number}: expected u,v or u,v,weight")
        try:
            weight = float(cells[2]) if len(cells) == 3 else 1.0
        except ValueError:
            raise InputError(f"{path}: row {number}: bad weight {cells[2]!r}") from None
        if not weight >= 0:
            raise InputError(f"{path}: row {number}: weight {cells[2]!r} must be >= 0")
        graph.add_edge(cells[0], cells[1], weight=weight)
    return graph


@guarded
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
        if distance is not None:
            privacy = PrivacyMatrix.metric(read_matrix(distance, "distance", allow_infinite=True), eps)
        elif graph is not None:
            privacy = PrivacyMatrix.from_graph(read_graph(graph), eps)
        else:
            shape = parse_int_list(grid.replace("x", ","), "grid")
            privacy = PrivacyMatrix.grid_l1(shape, eps)
    write_matrix_csv(out, privacy.epsilon)
    typer.echo(f"wrote {privacy.name} ({privacy.k} x {privacy.k}) to {out}")


def _need(value, name: str):
    if value is None:
        raise ValueError(f"this family needs --{name}")
    return value


def register(app: typer.Typer) -> None:
    app.command("spec")(spec_command)
