import math

import networkx as nx
import numpy as np
import pytest

from designer import Channel, PrivacyMatrix, certify
from reference import random_channel


def test_classic_high_low_block_follow_definitions_1_3_4():
    classic = PrivacyMatrix.classic(4, 0.7)
    assert np.array_equal(classic.epsilon, 0.7 * (1 - np.eye(4)))

    high_low = PrivacyMatrix.high_low(5, [1, 3], 2.0)  # Definition 3: rows of A get eps, rows of B inf
    for x in range(5):
        for x_prime in range(5):
            expected = 0.0 if x == x_prime else (2.0 if x in (1, 3) else math.inf)
            assert high_low.epsilon[x, x_prime] == expected

    block = PrivacyMatrix.block([2, 3], 1.5)  # Definition 4: eps inside a block, inf across
    assert block.epsilon[0, 1] == 1.5 and block.epsilon[2, 4] == 1.5
    assert block.epsilon[1, 2] == math.inf and block.epsilon[4, 0] == math.inf
    assert PrivacyMatrix.block([[0, 3], [1, 2, 4]], 1.0).epsilon[0, 3] == 1.0


def test_metric_constructors():
    graph = nx.Graph()
    graph.add_weighted_edges_from([("a", "b", 1.0), ("b", "c", 2.0), ("a", "c", 5.0)])
    from_graph = PrivacyMatrix.from_graph(graph, epsilon=0.5)
    assert from_graph.labels == ("a", "b", "c")
    assert from_graph.epsilon[0, 2] == pytest.approx(1.5)  # via b: 0.5 * (1 + 2)
    grid = PrivacyMatrix.grid_l1((3, 4), epsilon=0.25)
    assert grid.k == 12
    # cell (0,0) -> (2,3): L1 distance 5
    assert grid.epsilon[0, 11] == pytest.approx(1.25)
    assert grid.is_symmetric


@pytest.mark.parametrize(
    "values, fragment",
    [
        ([[0, -1], [1, 0]], "row 0, column 1"),
        ([[0, float("nan")], [1, 0]], "row 0, column 1"),
        ([[1, 1], [1, 0]], "diagonal"),
        ([[0, 1, 2], [1, 0, 2]], "square"),
        ([[0, "banana"], [1, 0]], "banana"),
    ],
)
def test_invalid_matrices_are_rejected_with_location(values, fragment):
    with pytest.raises(ValueError, match=fragment):
        PrivacyMatrix(values)


def test_exact_entries_are_kept():
    privacy = PrivacyMatrix([[0, "log(3)"], ["1/2", 0]])
    assert privacy.epsilon[0, 1] == pytest.approx(math.log(3))
    assert privacy.exact_epsilon[0, 1].exp_value == 3
    assert privacy.exact_epsilon[1, 0].value == pytest.approx(0.5)


def _random_privacy(rng, k, density=0.5):
    values = np.where(rng.random((k, k)) < density, rng.integers(0, 5, (k, k)) * 0.5, np.inf)
    np.fill_diagonal(values, 0.0)
    return PrivacyMatrix(values)


def test_closure_matches_networkx_and_admits_the_same_channels():
    rng = np.random.default_rng(3)
    for _ in range(20):
        privacy = _random_privacy(rng, 7)
        closed = privacy.closure()
        graph = nx.DiGraph()
        graph.add_nodes_from(range(7))
        graph.add_weighted_edges_from(
            (i, j, privacy.epsilon[i, j]) for i in range(7) for j in range(7) if i != j and np.isfinite(privacy.epsilon[i, j])
        )
        assert np.array_equal(closed.epsilon, nx.floyd_warshall_numpy(graph, nodelist=range(7)))
        for _ in range(20):
            channel = Channel(random_channel(rng, 7, 5, zero_fraction=0.4))
            assert certify(channel, privacy).certified == certify(channel, closed).certified


def _closure_from_pairs(privacy, pairs):
    restricted = np.full((privacy.k, privacy.k), np.inf)
    for x, x_prime in pairs:
        restricted[x, x_prime] = privacy.epsilon[x, x_prime]
    return PrivacyMatrix(np.where(np.eye(privacy.k, dtype=bool), 0.0, restricted)).closure().epsilon


def test_nonredundant_pairs_imply_every_constraint():
    rng = np.random.default_rng(4)
    for _ in range(40):
        privacy = _random_privacy(rng, 8, density=0.6)  # integers * 0.5: many ties and zeros
        pairs = privacy.nonredundant_pairs()
        assert np.allclose(_closure_from_pairs(privacy, pairs), privacy.closure().epsilon)


def test_nonredundant_pairs_are_minimal_without_zero_levels():
    rng = np.random.default_rng(6)
    for _ in range(30):
        values = np.where(rng.random((7, 7)) < 0.6, rng.integers(1, 5, (7, 7)) * 0.5, np.inf)  # ties, no zeros
        np.fill_diagonal(values, 0.0)
        privacy = PrivacyMatrix(values)
        pairs = privacy.nonredundant_pairs()
        for index in range(len(pairs)):
            fewer = np.delete(pairs, index, axis=0)
            assert not np.allclose(_closure_from_pairs(privacy, fewer), privacy.closure().epsilon)


def test_nonredundant_pairs_of_graph_metrics_are_its_edges():
    grid = PrivacyMatrix.grid_l1((4, 5), epsilon=0.3)
    pairs = {tuple(p) for p in grid.nonredundant_pairs().tolist()}
    # computed once (an O(k^3) product), and read-only so that no caller edits the cached array
    assert grid.nonredundant_pairs() is grid.nonredundant_pairs() and not grid.nonredundant_pairs().flags.writeable
    graph = nx.grid_2d_graph(4, 5)
    cells = list(np.ndindex(4, 5))
    edges = {(cells.index(a), cells.index(b)) for a, b in graph.edges} | {(cells.index(b), cells.index(a)) for a, b in graph.edges}
    assert pairs == edges

    rng = np.random.default_rng(5)
    random_graph = nx.connected_watts_strogatz_graph(14, 4, 0.3, seed=5)
    for u, v in random_graph.edges:
        random_graph[u][v]["weight"] = float(rng.uniform(1, 2))  # generic weights: every edge is a shortest path
    metric = PrivacyMatrix.from_graph(random_graph, epsilon=1.0)
    pairs = {tuple(p) for p in metric.nonredundant_pairs().tolist()}
    nodes = list(random_graph.nodes)
    shortest_edges = set()
    for u, v, w in random_graph.edges(data="weight"):
        if w <= nx.dijkstra_path_length(random_graph, u, v) + 1e-12:
            i, j = nodes.index(u), nodes.index(v)
            shortest_edges |= {(i, j), (j, i)}
    assert pairs == shortest_edges


def test_components_of_block_and_high_low():
    block = PrivacyMatrix.block([[0, 4], [1, 2], [3]], 1.0)
    assert [c.tolist() for c in block.components()] == [[0, 4], [1, 2], [3]]
    assert len(PrivacyMatrix.high_low(6, [0], 1.0).components()) == 1
    sub = block.restrict([1, 2])
    assert sub.k == 2 and sub.epsilon[0, 1] == 1.0


def test_sum_and_product():
    a = PrivacyMatrix.classic(2, 1.0)
    b = PrivacyMatrix([[0, 2.0], [0.5, 0]])
    assert np.array_equal((a + b).epsilon, [[0, 3.0], [1.5, 0]])
    product = a.product(b)
    assert product.k == 4
    # (x1, x2) = (0, 0) vs (1, 1): E1[0,1] + E2[0,1]
    assert product.epsilon[0, 3] == 3.0
    assert product.epsilon[3, 0] == 1.5


def test_metric_level_beyond_double_stays_an_exact_constraint():
    """eps * d above the double range is a finite level held exactly, never inf (which would be no constraint)."""
    from fractions import Fraction

    privacy = PrivacyMatrix.metric([[0, 1e300], [2, 0]], 1e10)
    level = privacy.exact_epsilon[0, 1]
    assert not level.infinite and level.beyond_double and level.value == Fraction(1e300) * Fraction(1e10)
    assert privacy.epsilon[0, 1] == np.finfo(float).max and privacy.epsilon[1, 0] == 2e10
    # the identity channel (an infinite log-ratio) breaks it; under an inf level it would pass
    verdict = certify(Channel(np.eye(2)), privacy, exact=True)
    assert not verdict.certified and {(v.x, v.x_prime) for v in verdict.violations} == {(0, 1), (1, 0)}
