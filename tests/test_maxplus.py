import networkx as nx
import numpy as np
import pytest

from solvers.maxplus import max_log_ratio, min_plus_closure, min_plus_product
from reference import brute_force_tight, random_channel


@pytest.mark.parametrize("zeros", [0.0, 0.3])
@pytest.mark.parametrize("chunk_bytes", [64, 8 * 2**20])
def test_max_log_ratio_matches_the_definition(zeros, chunk_bytes):
    rng = np.random.default_rng(1)
    matrix = random_channel(rng, 9, 7, zeros)
    values, witness = max_log_ratio(matrix, chunk_bytes=chunk_bytes, workers=2)
    np.fill_diagonal(values, 0.0)
    expected = brute_force_tight(matrix)
    assert np.allclose(np.maximum(values, 0), expected, rtol=0, atol=1e-12)
    # the witness attains the maximum
    for x in range(9):
        for x_prime in range(9):
            if x != x_prime and expected[x, x_prime] > 0:
                a, b = matrix[x, witness[x, x_prime]], matrix[x_prime, witness[x, x_prime]]
                got = np.inf if b == 0 else np.log(a / b)
                assert got == pytest.approx(expected[x, x_prime], abs=1e-12)


def test_min_plus_closure_matches_networkx_with_zero_weights_and_asymmetry():
    rng = np.random.default_rng(2)
    k = 12
    weights = np.where(rng.random((k, k)) < 0.35, rng.integers(0, 4, (k, k)).astype(float), np.inf)
    np.fill_diagonal(weights, 0.0)
    graph = nx.DiGraph()
    graph.add_nodes_from(range(k))
    graph.add_weighted_edges_from((i, j, weights[i, j]) for i in range(k) for j in range(k) if np.isfinite(weights[i, j]))
    expected = nx.floyd_warshall_numpy(graph, nodelist=range(k))
    assert np.array_equal(min_plus_closure(weights), expected)


def test_min_plus_product_small():
    left = np.array([[0.0, 2.0], [np.inf, 1.0]])
    right = np.array([[1.0, 5.0], [0.5, np.inf]])
    assert np.array_equal(min_plus_product(left, right), np.array([[1.0, 5.0], [1.5, np.inf]]))
