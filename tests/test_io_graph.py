"""``spec metric --graph``: weights finite and >= 0, rows in identifier order whatever the edge order, labels beside E."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from typer.testing import CliRunner

from designer.cli import app
from designer.io import InputError, read_graph, read_privacy_matrix
from designer.io.graph import node_order

runner = CliRunner()
EDGES = ["10,2,0.5", "2,1", "1,3,2", "3,10,4"]


def spec_graph(tmp_path, lines: list[str], eps: str = "1") -> tuple[int, str, str]:
    (tmp_path / "g.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "E.csv"
    out.unlink(missing_ok=True)
    result = runner.invoke(app, ["spec", "metric", "--graph", str(tmp_path / "g.csv"), "--out", str(out), "--eps", eps])
    return result.exit_code, result.stderr, out.read_text() if out.exists() else ""


def test_edge_order_does_not_change_the_written_E(tmp_path):
    written = set()
    for order in itertools.permutations(EDGES):
        for flipped in (False, True):
            lines = [",".join([*reversed(line.split(",")[:2]), *line.split(",")[2:]]) if flipped else line for line in order]
            code, _, text = spec_graph(tmp_path, lines)
            assert code == 0
            written.add(text)
    assert len(written) == 1


def test_rows_follow_sorted_identifiers_with_labels_and_shortest_paths(tmp_path):
    _, _, text = spec_graph(tmp_path, EDGES, eps="2")
    assert text.splitlines()[0] == "# labels: 1,2,3,10"  # numerically: 2 < 10
    privacy = read_privacy_matrix(tmp_path / "E.csv", exact=False)
    assert privacy.labels == ("1", "2", "3", "10")
    graph = nx.Graph()
    graph.add_weighted_edges_from([(10, 2, 0.5), (2, 1, 1.0), (1, 3, 2.0), (3, 10, 4.0)])
    for (i, a), (j, b) in itertools.product(enumerate([1, 2, 3, 10]), repeat=2):
        assert privacy.epsilon[i, j] == 2 * nx.dijkstra_path_length(graph, a, b)


def test_declared_labels_fix_the_order_and_may_add_isolated_symbols(tmp_path):
    code, _, text = spec_graph(tmp_path, ["# labels: c,a,b,z", "a,b", "b,c,2"])
    assert code == 0
    privacy = read_privacy_matrix(tmp_path / "E.csv")
    assert privacy.labels == ("c", "a", "b", "z")
    assert privacy.epsilon[0].tolist() == [0.0, 3.0, 2.0, np.inf]
    code, stderr, _ = spec_graph(tmp_path, ["# labels: a,b", "a,c"])
    assert code == 2 and "node 'c' has edges but is not in the '# labels:' line" in stderr


def test_string_identifiers_sort_as_strings():
    assert node_order(["b", "10", "a", "2"]) == ["10", "2", "a", "b"]
    assert node_order(["10", "2", "-1"]) == ["-1", "2", "10"]


@pytest.mark.parametrize(
    "weight, reason",
    [
        ("inf", "is infinite, which is not allowed here"),
        ("1e400", "is too large for a double-precision float"),
        ("-1e-300", "is negative"),
        ("nan", "is not a number >= 0"),
        ("1/2/4", "is not a number >= 0 (a fraction has one '/': write p/q)"),
    ],
)
def test_weights_must_be_finite_and_non_negative(tmp_path, weight, reason):
    code, stderr, text = spec_graph(tmp_path, ["a,b,1", f"b,c,{weight}"])
    assert code == 2 and text == ""
    assert stderr.strip() == (
        f"error: {tmp_path / 'g.csv'}: row 2, column 3: weight {weight!r} {reason} "
        "(weights are finite numbers >= 0; leave an edge out for no constraint)"
    )


def test_an_edge_repeated_with_another_weight_is_refused(tmp_path):
    code, stderr, _ = spec_graph(tmp_path, ["a,b,1", "b,a,2"])
    assert code == 2 and "row 2: edge (b, a) has weight 2.0 but row 1 gave it 1.0" in stderr
    assert spec_graph(tmp_path, ["a,b,1", "b,a,1"])[0] == 0


def test_overflowing_path_lengths_are_refused_not_unconstrained(tmp_path):
    code, stderr, text = spec_graph(tmp_path, ["1,2,1e308", "2,3,1e308"])
    assert code == 2 and text == "" and "E[1, 3] = eps x distance overflows to inf" in stderr
    assert len(stderr.strip().splitlines()) == 1


def test_unterminated_quote_in_a_graph_writes_nothing(tmp_path):
    code, stderr, text = spec_graph(tmp_path, ["a,b", '"b,c', "c,d"])
    assert code == 2 and text == "" and "row 2: a quoted value is not closed on its line" in stderr


def test_certify_refuses_files_labelling_symbols_differently(tmp_path):
    spec_graph(tmp_path, ["a,b", "b,c"])
    (tmp_path / "Q.csv").write_text("# labels: b,a,c\n" + "1/3,1/3,1/3\n" * 3)
    result = runner.invoke(app, ["certify", "--E", str(tmp_path / "E.csv"), "--channel", str(tmp_path / "Q.csv")])
    assert result.exit_code == 2 and "symbol 1 is labelled 'b' but" in result.stderr
    (tmp_path / "Q.csv").write_text("# labels: a,b,c\n" + "1/3,1/3,1/3\n" * 3)
    assert runner.invoke(app, ["certify", "--E", str(tmp_path / "E.csv"), "--channel", str(tmp_path / "Q.csv")]).exit_code == 0


def test_read_graph_refuses_rows_without_two_ends(tmp_path):
    (tmp_path / "g.csv").write_text("a,b\nc\n")
    with pytest.raises(InputError, match="row 2: expected u,v or u,v,weight, got 1 values"):
        read_graph(tmp_path / "g.csv")
