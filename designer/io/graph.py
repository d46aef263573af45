"""Reading a graph of symbols: edges ``u,v[,weight]`` (undirected), for ``spec metric --graph``.

Weights must be finite and >= 0 (an absent edge is how to say "no constraint";
``inf`` or ``1e400`` is refused rather than silently dropping the edge). The
symbols (rows of the E matrix built from the graph) are ordered by their
identifiers, never by the order of the edges: as declared by a ``# labels:``
line (which may also list symbols without edges), else sorted, numerically when
every identifier is an integer.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from designer.exact import quoted_token
from designer.io.labels import declared_labels
from designer.io.numbers import NON_NEGATIVE, parse_float_cell
from designer.io.table import read_table
from designer.io.text import InputError

if TYPE_CHECKING:  # networkx is imported when a graph is read (fast start)
    import networkx as nx


def read_graph(path: str | Path) -> nx.Graph:
    """The undirected graph of an edge file, its nodes in identifier order (see the module).

    Raises :class:`InputError` naming the row for a row without 2 or 3 values, a
    weight that is not a finite number >= 0, an edge repeated with another
    weight, or an edge whose end is missing from a ``# labels:`` line.
    """
    import networkx as nx

    path = Path(path)
    table = read_table(path, "graph", rectangular=False)
    edges: dict[frozenset, tuple[str, str, float, int]] = {}
    for number, cells in zip(table.line_numbers, table):
        if len(cells) not in (2, 3):
            raise InputError(f"{path}: row {number}: expected u,v or u,v,weight, got {len(cells)} values")
        u, v = cells[0], cells[1]
        if u == "" or v == "":
            raise InputError(f"{path}: row {number}: an edge needs two node identifiers")
        weight = 1.0
        if len(cells) == 3:
            weight, reason = parse_float_cell(cells[2], NON_NEGATIVE)
            if reason is not None:
                raise InputError(
                    f"{path}: row {number}, column 3: weight {quoted_token(cells[2])} {reason} "
                    "(weights are finite numbers >= 0; leave an edge out for no constraint)"
                )
        key = frozenset((u, v))
        if key in edges and edges[key][2] != weight:
            raise InputError(
                f"{path}: row {number}: edge ({u}, {v}) has weight {weight!r} but row {edges[key][3]} "
                f"gave it {edges[key][2]!r}"
            )
        edges.setdefault(key, (u, v, weight, number))
    declared = declared_labels(table.comments, path)
    ends = {end for u, v, _, _ in edges.values() for end in (u, v)}
    nodes = declared if declared is not None else node_order(ends)
    if declared is not None:
        missing = sorted(ends - set(declared))
        if missing:
            raise InputError(f"{path}: node {missing[0]!r} has edges but is not in the '# labels:' line")
    graph = nx.Graph()
    graph.add_nodes_from(nodes)
    graph.add_weighted_edges_from((u, v, weight) for u, v, weight, _ in edges.values())
    return graph


def node_order(identifiers) -> list[str]:
    """Identifiers sorted numerically when all are integers (``2 < 10``), else as strings."""
    identifiers = list(identifiers)
    try:
        return sorted(identifiers, key=lambda identifier: (int(identifier), identifier))
    except ValueError:
        return sorted(identifiers)
