"""Column generation with a certified gap: subset columns, bound tightening, and the bracket of the enumerated optimum."""

import numpy as np
import pytest

from designer.design.vertex import design_by_vertices
from designer.design.gap import design_with_gap
from designer.design.gap.closure_columns import subset_columns, subset_pricing
from designer.design.gap.column_generation import classic_columns, closure_column_generation
from designer.spec import PrivacyMatrix
from designer.utility import F_DIVERGENCES, column_information
from solvers.convex_maximization import SeparableConvexMax
from solvers.linear import solve_vertex_lp
from solvers.vertices import enumerate_cone_rays

from reference import random_privacy


def cone_rows(privacy: PrivacyMatrix) -> np.ndarray:
    pairs = privacy.nonredundant_pairs()
    rows = np.zeros((len(pairs), privacy.k))
    rows[np.arange(len(pairs)), pairs[:, 0]] = -1.0
    rows[np.arange(len(pairs)), pairs[:, 1]] = np.exp(privacy.epsilon[pairs[:, 0], pairs[:, 1]])
    return rows


@pytest.mark.parametrize("high", [False, True])
def test_subset_columns_lie_in_the_cone_and_equal_their_formula(high):
    privacy = random_privacy(9, 3)
    closure = privacy.closure().epsilon
    subsets = np.random.default_rng(0).random((40, 9)) < 0.4
    subsets[:, 2] = True
    columns = subset_columns(closure, subsets, high)
    ratios = columns[:, :, None] / columns[:, None, :]
    assert np.all(ratios <= np.exp(privacy.epsilon)[None] * (1 + 1e-12))
    s = np.flatnonzero(subsets[0])
    expected = np.exp(closure[:, s]).min(axis=1) if high else np.exp(-closure[s, :]).max(axis=0)
    np.testing.assert_allclose(columns[0], expected, rtol=1e-15)
    np.testing.assert_allclose(columns[:, 2], 1.0, rtol=1e-15)  # 1 on S


def test_subset_pricing_returns_local_maxima_with_positive_reduced_cost():
    privacy = random_privacy(8, 1)
    prior = np.full(8, 1 / 8)
    start = classic_columns(privacy)
    master = solve_vertex_lp(start, column_information(prior, start.T), np.ones(8))
    found = subset_pricing(privacy.closure().epsilon, prior, master.duals, np.eye(8, dtype=bool))
    assert found.shape[0] > 0
    np.testing.assert_allclose(found @ prior, 1.0, rtol=1e-12)
    costs = column_information(prior, found.T) - found @ master.duals
    assert np.all(costs > 1e-9)


def test_subset_columns_reach_most_of_the_enumerated_optimum():
    privacy = random_privacy(8, 8)
    prior = np.full(8, 1 / 8)
    exact = design_by_vertices(privacy).objective  # 0.145604 by vertex enumeration
    seed = np.vstack([np.ones((1, 8)), classic_columns(privacy)])
    classic = solve_vertex_lp(seed, column_information(prior, seed.T), np.ones(8)).objective
    columns = closure_column_generation(privacy, prior, seed, deadline=np.inf)
    reached = solve_vertex_lp(columns, column_information(prior, columns.T), np.ones(8)).objective
    assert exact == pytest.approx(0.145604, abs=1e-6)
    assert classic < 0.6 * exact and 0.95 * exact < reached <= exact + 1e-12  # measured 0.14136 from 0.0341


def test_bound_tightening_shrinks_the_pricing_bound_and_keeps_it_valid():
    privacy = random_privacy(8, 8)
    prior = np.full(8, 1 / 8)
    seed = np.vstack([np.ones((1, 8)), classic_columns(privacy)])
    duals = solve_vertex_lp(seed, column_information(prior, seed.T), np.ones(8)).duals
    rays = enumerate_cone_rays(cone_rows(privacy)).vertices  # every vertex of the slice: the exact max
    vertices = rays / (rays @ prior)[:, None]
    exact = float(np.max(column_information(prior, vertices.T) - vertices @ duals))
    bounds = []
    for ratios in (None, np.exp(privacy.closure().epsilon)):
        pricing = SeparableConvexMax(cone_rows(privacy), prior, prior, ratios=ratios)
        lower, upper = pricing.coordinate_range()
        result = pricing.run(-duals, lower, upper, F_DIVERGENCES["kl"], tolerance=0.0, max_seconds=60, max_nodes=60)
        assert result.best <= exact + 1e-12 <= result.upper + 2e-12
        bounds.append(result.upper - exact)
    assert bounds[1] < 0.5 * bounds[0]


# the threaded case at k = 7 searches 1,335 nodes (random_privacy(8, 8): 2,533 nodes and twice the CPU)
@pytest.mark.parametrize("k, seed, threads", [(7, 7, 1), (7, 8, 2)])
def test_certified_bounds_bracket_the_enumerated_optimum(k, seed, threads):
    privacy = random_privacy(k, seed)
    exact = design_by_vertices(privacy).objective
    result = design_with_gap(privacy, gap_tolerance=1e-4, max_seconds=300, threads=threads)  # closes in ~1 s
    assert result.threads == threads and result.summary()["threads"] == threads
    assert result.certified and result.stopped == "gap"
    assert result.lower <= exact + 1e-9 <= result.upper + 2e-9
    assert result.gap <= 1e-4


def pricing_case(k: int, seed: int):
    """The slice of a random E, the classic-seed master's duals and the exact pricing maximum over every vertex."""
    privacy = random_privacy(k, seed)
    prior = np.full(k, 1 / k)
    seed_columns = np.vstack([np.ones((1, k)), classic_columns(privacy)])
    duals = solve_vertex_lp(seed_columns, column_information(prior, seed_columns.T), np.ones(k)).duals
    rays = enumerate_cone_rays(cone_rows(privacy)).vertices
    vertices = rays / (rays @ prior)[:, None]
    exact = float(np.max(column_information(prior, vertices.T) - vertices @ duals))
    pricing = SeparableConvexMax(cone_rows(privacy), prior, prior, ratios=np.exp(privacy.closure().epsilon))
    return pricing, duals, vertices, exact


def test_resumed_search_continues_the_tree_and_tightens_the_bound():
    pricing, duals, _, exact = pricing_case(9, 3)  # 7,741 vertices: the search is still open after 300 nodes
    lower, upper = pricing.coordinate_range()
    kl = F_DIVERGENCES["kl"]
    first = pricing.run(-duals, lower, upper, kl, tolerance=0.0, max_seconds=60, max_nodes=150)
    resumed = pricing.run(-duals, lower, upper, kl, tolerance=0.0, max_seconds=60, max_nodes=150, resume=first)
    restarted = pricing.run(-duals, lower, upper, kl, tolerance=0.0, max_seconds=60, max_nodes=150)
    whole = pricing.run(-duals, lower, upper, kl, tolerance=0.0, max_seconds=60, max_nodes=300)
    for result in (first, resumed, restarted, whole):
        assert result.best <= exact + 1e-12 <= result.upper
    assert restarted.upper == pytest.approx(first.upper, abs=1e-12)  # a restart forgets the search
    assert resumed.upper == pytest.approx(whole.upper, abs=1e-9)  # 150 + 150 resumed nodes = 300 nodes
    assert resumed.upper - exact < 0.8 * (first.upper - exact)
    with pytest.raises(ValueError, match="same linear term"):
        pricing.run(-2 * duals, lower, upper, kl, resume=first)


def test_lp_bounds_hold_for_every_vertex_and_are_close_to_the_lp_optimum():
    pricing, _, vertices, _ = pricing_case(8, 8)
    rng = np.random.default_rng(1)
    lower, upper = pricing.coordinate_range()
    assert np.all(vertices >= lower - 1e-15) and np.all(vertices <= upper + 1e-15)  # the box holds the slice
    for _ in range(20):
        cost = rng.normal(size=8)
        bound, point, _, feasible = pricing.solve(cost, lower, upper)
        assert feasible
        assert np.max(vertices @ cost) <= bound <= np.max(vertices @ cost) + 1e-8
        assert cost @ point <= bound


def test_lagrangian_bound_is_rounded_up():
    from fractions import Fraction

    from designer.design.gap.column_generation import lagrangian_bound

    duals = np.random.default_rng(3).normal(size=200) / 7
    bound = lagrangian_bound(duals, 0.1)
    exact = sum(Fraction(y) for y in duals) + Fraction(0.1)
    assert Fraction(bound) >= exact and bound - float(exact) < 1e-15
    assert lagrangian_bound(duals, -1.0) >= float(sum(Fraction(y) for y in duals))


def test_threaded_search_bounds_the_enumerated_maximum_and_is_deterministic():
    pricing, duals, _, exact = pricing_case(9, 3)
    privacy, prior = random_privacy(9, 3), np.full(9, 1 / 9)
    searches = [SeparableConvexMax(cone_rows(privacy), prior, prior, ratios=np.exp(privacy.closure().epsilon),
                                   threads=2) for _ in range(2)]  # fresh models: a warm HiGHS basis may move last bits
    threaded = searches[0]
    lower, upper = pricing.coordinate_range()
    kl = F_DIVERGENCES["kl"]
    serial = pricing.run(-duals, lower, upper, kl, tolerance=0.0, max_seconds=60, max_nodes=300)
    runs = [search.run(-duals, lower, upper, kl, tolerance=0.0, max_seconds=60, max_nodes=300) for search in searches]
    resumed = threaded.run(-duals, lower, upper, kl, tolerance=0.0, max_seconds=60, max_nodes=300, resume=runs[0])
    for result in (*runs, resumed):
        assert result.best <= exact + 1e-12 <= result.upper
    assert runs[0].nodes == 300 and runs[0].upper == runs[1].upper and runs[0].best == runs[1].best  # deterministic
    assert len(runs[0].open_nodes) == len(runs[1].open_nodes)
    assert resumed.upper <= runs[0].upper and resumed.upper - exact < 0.8 * (runs[0].upper - exact)
    # 4 leaves per thread at once instead of 1: the same best-first frontier up to the last batch
    assert runs[0].upper - exact < 1.1 * (serial.upper - exact)
    closed = threaded.run(-duals, lower, upper, kl, tolerance=1e-9, max_seconds=60)
    assert closed.finished and closed.best <= exact + 1e-12 and closed.upper - closed.best <= 1e-9
    assert closed.best == pytest.approx(exact, abs=1e-9)
    with pytest.raises(ValueError, match="threads must be at least 1"):
        SeparableConvexMax(cone_rows(privacy), prior, prior, threads=0)
