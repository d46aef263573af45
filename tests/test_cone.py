"""designer.cone: C_E from non-redundant pairs, components, closed form vs enumeration, refusal."""

import itertools
import math
import time
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest

from designer.cone import DEFAULT_MAX_VERTICES, IN_PROCESS_BOUND, Cone, ConeTooLargeError, upper_bound_vertices
from designer.design.vertex import design_by_vertices
from designer.spec import PrivacyMatrix
from solvers.vertices import enumerate_cone_rays


def canonical(vertices):
    rounded = np.round(np.asarray(vertices, dtype=float), 10)
    return rounded[np.lexsort(rounded.T[::-1])]


def all_pairs_rows(privacy: PrivacyMatrix) -> np.ndarray:
    """The cone with every finite pair as a constraint (no pruning), plus q >= 0."""
    k = privacy.k
    rows = []
    for x, x_prime in itertools.permutations(range(k), 2):
        if np.isfinite(privacy.epsilon[x, x_prime]):
            row = np.zeros(k)
            row[x] = -1
            row[x_prime] = math.exp(privacy.epsilon[x, x_prime])
            rows.append(row)
    return np.vstack(rows + [np.eye(k)])


def padded_vertices(cone: Cone, **options) -> np.ndarray:
    blocks = []
    for found in cone.vertices(**options):
        padded = np.zeros((found.n_vertices, cone.privacy.k))
        padded[:, found.symbols] = found.vertices
        blocks.append(padded)
    return np.vstack(blocks)


def random_graph_metric(k: int, seed: int, neighbours: int = 3, low: float = 0.3) -> PrivacyMatrix:
    graph = nx.connected_watts_strogatz_graph(k, neighbours, 0.5, seed=seed)
    rng = np.random.default_rng(seed)
    for u, v in graph.edges:
        graph[u][v]["weight"] = float(rng.uniform(low, 1.5))
    return PrivacyMatrix.from_graph(graph)


def test_classic_cone_is_closed_form_with_all_patterns():
    cone = Cone.from_privacy(PrivacyMatrix.classic(5, 1.0))
    (component,) = cone.components
    assert component.uniform_level is not None and float(component.uniform_level) == 1.0
    assert cone.estimated_vertices() == 2**5 - 2
    closed = padded_vertices(cone)
    enumerated = padded_vertices(cone, method="enumerate")
    np.testing.assert_array_equal(canonical(closed), canonical(enumerated))
    assert set(np.round(closed.max(axis=1) / closed.min(axis=1), 12)) == {round(math.e, 12)}


@pytest.mark.parametrize(
    "privacy",
    [
        PrivacyMatrix.grid_l1((2, 3), 0.7),
        PrivacyMatrix.high_low(5, [0, 2], 1.0),
        random_graph_metric(7, seed=1),
        PrivacyMatrix([[0, 1, 3], [2, 0, 1], [1, 2.5, 0]]),
    ],
    ids=["grid", "high-low", "graph-metric", "asymmetric"],
)
def test_nonredundant_cone_equals_all_pairs_cone(privacy):
    """Pruning implied pairs keeps the cone: same rays as with every pair."""
    cone = Cone.from_privacy(privacy)
    ours = padded_vertices(cone)
    assert ours.shape[0] <= cone.estimated_vertices()  # the upper bound theorem holds
    reference = enumerate_cone_rays(all_pairs_rows(privacy)).vertices
    np.testing.assert_allclose(canonical(ours), canonical(reference), atol=1e-9)
    # every ray satisfies every original constraint q_x <= exp(E[x,x']) q_x'
    finite = np.isfinite(privacy.epsilon)
    ratios = np.exp(np.where(finite, privacy.epsilon, 0.0))
    bound = np.where(finite[None], ratios[None, :, :] * ours[:, None, :], np.inf)
    assert np.all(ours[:, :, None] <= bound * (1 + 1e-12) + 1e-15)


def test_upper_bound_theorem_values():
    assert upper_bound_vertices(6, 3) == 8  # the cube
    assert upper_bound_vertices(5, 2) == 5  # a pentagon
    metric = Cone.from_privacy(random_graph_metric(8, seed=0, neighbours=4, low=0.5))
    assert metric.vertices()[0].n_vertices == 1008 > 2**8 - 2  # more than the uniform cone: 2^d - 2 is no bound
    assert metric.vertices()[0].n_vertices <= metric.estimated_vertices()


def test_grid_uses_only_edges():
    privacy = PrivacyMatrix.grid_l1((3, 3), 1.0)
    (component,) = Cone.from_privacy(privacy).components
    assert len(component.pairs) == 2 * 12  # 12 grid edges, both directions
    assert component.uniform_level is None


def test_blocks_cost_the_sum_of_their_parts():
    privacy = PrivacyMatrix.block([2, 3, 4], 1.0)
    cone = Cone.from_privacy(privacy)
    assert [c.dimension for c in cone.components] == [2, 3, 4]
    assert cone.estimated_vertices() == 2 + 6 + 14
    vertices = padded_vertices(cone)
    assert vertices.shape == (22, 9)
    # each ray lives in one block
    supports = {tuple(np.flatnonzero(v > 0)) for v in vertices}
    assert all(set(s) <= {0, 1} or set(s) <= {2, 3, 4} or set(s) <= {5, 6, 7, 8} for s in supports)


def test_refuses_a_too_large_cone_before_enumerating():
    cone = Cone.from_privacy(PrivacyMatrix.classic(20, 1.0))
    with pytest.raises(ConeTooLargeError, match=r"at least 1048574 vertices .* max_vertices=1000000; raise max_vertices"):
        cone.vertices()
    grid = Cone.from_privacy(PrivacyMatrix.grid_l1((4, 4), 1.0))
    grid.check_size(1000)  # nothing is known in closed form: the count is checked after enumerating
    with pytest.raises(ConeTooLargeError, match="more than max_vertices=1000.*structured mechanism"):
        grid.vertices(max_vertices=1000)
    grid.check_size(None)


@pytest.mark.parametrize(
    "privacy, vertices",
    [
        (PrivacyMatrix.grid_l1((3, 4), 0.5), 374),
        (PrivacyMatrix.high_low(16, [0, 1], 1.0), 17),
        (PrivacyMatrix.high_low(30, [0, 1], 1.0), 31),
    ],
)
def test_loose_upper_bounds_do_not_refuse_small_structured_cones(privacy, vertices):
    cone = Cone.from_privacy(privacy)
    assert cone.estimated_vertices() > DEFAULT_MAX_VERTICES  # McMullen's bound alone would refuse these
    found = cone.vertices()
    assert sum(component.n_vertices for component in found) == vertices
    result = design_by_vertices(privacy)
    assert result.certified and result.n_vertices == vertices


def test_enumeration_that_may_be_large_is_stopped_by_its_time_budget():
    graph = nx.connected_watts_strogatz_graph(12, 4, 0.3, seed=3)
    rng = np.random.default_rng(3)
    for u, v in graph.edges:
        graph.edges[u, v]["weight"] = rng.uniform(0.5, 1.5)
    (component,) = Cone.from_privacy(PrivacyMatrix.from_graph(graph, 1.0)).components
    assert component.estimated_vertices() > IN_PROCESS_BOUND  # so it runs in a child process
    started = time.perf_counter()
    with pytest.raises(ConeTooLargeError, match=r"did not finish in 0.3 s; raise max_seconds \(--max-seconds\)"):
        component.vertices(max_seconds=0.3)
    assert time.perf_counter() - started < 5


def test_exact_ratios_and_vertices():
    privacy = PrivacyMatrix([[0, "log(3)", "log(3)"], ["log(3)", 0, "log(3)"], ["log(3)", "log(3)", 0]])
    (component,) = Cone.from_privacy(privacy).components
    assert component.ratios(exact=True) == [Fraction(3)] * 6
    found = component.vertices(exact=True)
    for index in range(found.n_vertices):
        exact = found.exact_vertex(index)
        assert sum(exact) == 1 and max(exact) / min(exact) == 3
        np.testing.assert_allclose([float(v) for v in exact], found.vertices[index], atol=1e-15)
    (rational,) = Cone.from_privacy(PrivacyMatrix.classic(3, 1.0)).components
    lower = rational.ratios(exact=True)[0]
    e_50_digits = Fraction("2.71828182845904523536028747135266249775724709369995")
    assert isinstance(lower, Fraction) and lower < e_50_digits and e_50_digits - lower < Fraction(1, 10**30)
    high_low = [[0, "log(2)", "log(2)", "log(2)"]] + [["inf"] * x + [0] + ["inf"] * (3 - x) for x in (1, 2, 3)]
    enumerated = Cone.from_privacy(PrivacyMatrix(high_low)).vertices(exact=True)[0]
    assert enumerated.method == "enumerated" and enumerated.exact_used
    for index in range(enumerated.n_vertices):
        ray = enumerated.exact_vertex(index)
        assert all(ray[0] <= 2 * ray[x] for x in range(4))
