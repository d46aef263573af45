"""solvers.vertices and solvers.linear: vertex enumeration and the LPs (generic, no privacy words)."""

import itertools
import time
from fractions import Fraction

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solvers.vertices as vertices_module
from solvers.linear import (
    LinearProgramError,
    solve_ratio_bounded_stochastic_lp,
    solve_vertex_lp,
)
from solvers.vertices import (
    EnumerationTimeoutError,
    TooManyVerticesError,
    enumerate_cone_rays,
    run_with_time_limit,
    uniform_ratio_cone_rays,
    uniform_ratio_cone_size,
)


def ratio_rows(ratios: np.ndarray) -> np.ndarray:
    """Rows of ``r[i,j] q_j - q_i >= 0`` for finite off-diagonal r, then ``q >= 0``."""
    d = ratios.shape[0]
    rows = []
    for i, j in itertools.permutations(range(d), 2):
        if np.isfinite(ratios[i, j]):
            row = np.zeros(d)
            row[j] += ratios[i, j]
            row[i] -= 1
            rows.append(row)
    return np.vstack(rows + [np.eye(d)])


def canonical(vertices: np.ndarray) -> np.ndarray:
    rounded = np.round(np.asarray(vertices, dtype=float), 10)
    return rounded[np.lexsort(rounded.T[::-1])]


@pytest.mark.parametrize("d", [2, 3, 4, 5, 7])
@pytest.mark.parametrize("ratio", [1.5, np.e, 20.0])
def test_closed_form_matches_cdd(d, ratio):
    rows = ratio_rows(np.full((d, d), ratio))
    enumerated = enumerate_cone_rays(rows)
    closed = uniform_ratio_cone_rays(d, ratio)
    assert enumerated.n_vertices == closed.shape[0] == 2**d - 2 == uniform_ratio_cone_size(d, ratio)
    np.testing.assert_array_equal(canonical(enumerated.vertices), canonical(closed))
    assert not enumerated.fallback and not enumerated.exact_used
    assert enumerated.max_violation <= 1e-12


def test_closed_form_entries_and_degenerate_cases():
    rays = uniform_ratio_cone_rays(3, 4.0)
    # Pattern 1 = coordinate 0 high: (4, 1, 1) / 6.
    np.testing.assert_allclose(rays[0], [4 / 6, 1 / 6, 1 / 6])
    np.testing.assert_allclose(rays.sum(axis=1), 1.0)
    np.testing.assert_array_equal(uniform_ratio_cone_rays(3, np.inf), np.eye(3))
    np.testing.assert_allclose(uniform_ratio_cone_rays(4, 1.0), np.full((1, 4), 0.25))
    np.testing.assert_allclose(uniform_ratio_cone_rays(1, 5.0), [[1.0]])
    assert uniform_ratio_cone_size(16, 2.0) == 65534
    with pytest.raises(ValueError, match="ratio must be >= 1"):
        uniform_ratio_cone_rays(3, 0.5)


@pytest.mark.parametrize("order", [None, "max_index", "min_index", "lex_min", "max_cutoff", "random_row"])
def test_exact_mode_and_row_orders_agree(order):
    rows = ratio_rows(np.array([[1, 2, 5], [3, 1, 2], [4, 2, 1]], dtype=float))
    floating = enumerate_cone_rays(rows, row_order=order)
    exact = enumerate_cone_rays(rows.astype(int), exact=True, row_order=order)
    assert exact.exact_used and exact.row_order == order
    np.testing.assert_allclose(canonical(floating.vertices), canonical(exact.vertices), atol=1e-12)
    for ray in exact.exact_vertices:
        assert all(isinstance(value, Fraction) for value in ray) and sum(ray) == 1
        for row in rows.astype(int):
            assert sum(Fraction(int(a)) * v for a, v in zip(row, ray)) >= 0


def test_equalities_and_errors():
    result = enumerate_cone_rays(np.eye(3), equalities=[[1, -1, 0]])
    np.testing.assert_allclose(canonical(result.vertices), [[0, 0, 1], [0.5, 0.5, 0]])
    with pytest.raises(ValueError, match="not pointed"):
        enumerate_cone_rays([[1.0, 0.0]])
    with pytest.raises(ValueError, match="unknown row order 'fastest'; choose one of max_index"):
        enumerate_cone_rays(np.eye(2), row_order="fastest")
    with pytest.raises(TooManyVerticesError, match="14 extreme rays, more than max_vertices=10"):
        enumerate_cone_rays(ratio_rows(np.full((4, 4), 2.0)), max_vertices=10)
    with pytest.raises(ValueError, match="finite"):
        enumerate_cone_rays([[np.inf, 1.0], [0.0, 1.0]])


def test_float_failure_falls_back_to_exact(monkeypatch):
    real = vertices_module._enumerate

    def broken(rows, n_equalities, order, exact):
        found, exact_rays = real(rows, n_equalities, order, exact)
        return (found if exact else found + np.array([0.5, -0.5, 0.0])), exact_rays

    monkeypatch.setattr(vertices_module, "_enumerate", broken)
    rows = ratio_rows(np.full((3, 3), 2.0))
    result = enumerate_cone_rays(rows)
    assert result.fallback and result.exact_used
    np.testing.assert_allclose(canonical(result.vertices), canonical(uniform_ratio_cone_rays(3, 2.0)))


@settings(max_examples=15, deadline=None)
@given(st.integers(3, 5), st.integers(0, 10_000))
def test_random_ratio_cones_float_equals_exact(d, seed):
    rng = np.random.default_rng(seed)
    ratios = np.exp(rng.uniform(0.1, 2.0, (d, d)))
    ratios[rng.random((d, d)) < 0.3] = np.inf
    floating = enumerate_cone_rays(ratio_rows(ratios))
    exact = enumerate_cone_rays(ratio_rows(ratios), exact=True)
    np.testing.assert_allclose(canonical(floating.vertices), canonical(exact.vertices), atol=1e-9)
    assert np.all(ratio_rows(ratios) @ floating.vertices.T >= -1e-12)


# ------------------------------------------------------------------ vertex LP
def brute_force_vertex_lp(vertices, values, rhs):
    """Best basic feasible solution over all d-subsets of columns."""
    best = -np.inf
    n, d = vertices.shape
    for subset in itertools.combinations(range(n), d):
        basis = vertices[list(subset)].T
        if abs(np.linalg.det(basis)) < 1e-12:
            continue
        weights = np.linalg.solve(basis, rhs)
        if np.all(weights >= -1e-12):
            best = max(best, float(values[list(subset)] @ weights))
    return best


@pytest.mark.parametrize("seed", range(5))
def test_vertex_lp_matches_brute_force_and_cvxpy(seed):
    rng = np.random.default_rng(seed)
    vertices = rng.random((8, 3)) + np.vstack([np.eye(3), np.zeros((5, 3))])
    vertices /= vertices.sum(axis=1, keepdims=True)
    values = rng.random(8)
    rhs = np.ones(3)
    highs = solve_vertex_lp(vertices, values, rhs)
    modelled = solve_vertex_lp(vertices, values, rhs, backend="cvxpy")
    expected = brute_force_vertex_lp(vertices, values, rhs)
    assert highs.objective == pytest.approx(expected, abs=1e-9)
    assert modelled.objective == pytest.approx(expected, abs=1e-7)
    for result in (highs, modelled):
        assert result.dual_residual <= 1e-7  # dual feasible: vertices @ y >= values
        assert abs(result.gap) <= 1e-7  # strong duality: rhs . y = objective
        assert result.primal_residual <= 1e-9
    assert np.count_nonzero(highs.weights > 1e-12) <= 3


def test_vertex_lp_errors():
    with pytest.raises(ValueError, match="shapes disagree"):
        solve_vertex_lp(np.eye(2), [1.0], [1.0, 1.0])
    with pytest.raises(LinearProgramError, match="not solved"):
        solve_vertex_lp(np.array([[1.0, 0.0]]), [1.0], [1.0, 1.0])  # second coordinate unreachable
    with pytest.raises(ValueError, match="unknown backend"):
        solve_vertex_lp(np.eye(2), [1.0, 1.0], [1.0, 1.0], backend="glpk")


# ------------------------------------------------------- ratio-bounded LP
@pytest.mark.parametrize("backend, atol", [("highs", 1e-12), ("clarabel", 1e-7)])
def test_stochastic_lp_without_pairs_picks_cheapest_column(backend, atol):
    """HiGHS returns the vertex; Clarabel (interior point) is within its tolerance of it."""
    cost = np.array([[3.0, 1.0, 2.0], [0.5, 4.0, 1.0]])
    result = solve_ratio_bounded_stochastic_lp(cost, np.empty((0, 2), dtype=int), [], backend=backend)
    np.testing.assert_allclose(result.matrix, [[0, 1, 0], [1, 0, 0]], atol=atol)
    assert result.objective == pytest.approx(1.5, abs=atol)


@pytest.mark.parametrize("backend", ["highs", "clarabel"])
def test_stochastic_lp_matches_cvxpy_model(backend):
    rng = np.random.default_rng(3)
    k, m = 4, 5
    cost = rng.random((k, m))
    pairs = np.array([(a, b) for a in range(k) for b in range(k) if a != b])
    ratios = np.exp(rng.uniform(0.2, 1.5, len(pairs)))
    result = solve_ratio_bounded_stochastic_lp(cost, pairs, ratios, backend=backend)
    matrix = cp.Variable((k, m), nonneg=True)
    constraints = [cp.sum(matrix, axis=1) == 1]
    constraints += [matrix[a, :] <= r * matrix[b, :] for (a, b), r in zip(pairs, ratios)]
    problem = cp.Problem(cp.Minimize(cp.sum(cp.multiply(cost, matrix))), constraints)
    problem.solve(solver=cp.HIGHS)
    assert result.objective == pytest.approx(problem.value, abs=1e-7)
    assert result.n_constraints == len(pairs) * m
    for (a, b), r in zip(pairs, ratios):
        assert np.all(result.matrix[a] <= r * result.matrix[b] + 1e-9)
    with pytest.raises(ValueError, match="pair indices"):
        solve_ratio_bounded_stochastic_lp(cost, [[0, 9]], [2.0], backend=backend)
    with pytest.raises(ValueError, match="unknown backend"):
        solve_ratio_bounded_stochastic_lp(cost, pairs, ratios, backend="glpk")


def test_time_limited_enumeration_matches_in_process_and_stops_on_time():
    rows = ratio_rows(np.full((5, 5), 2.0))
    direct = enumerate_cone_rays(rows)
    child = enumerate_cone_rays(rows, max_seconds=30)  # forked child, result pickled back
    assert np.array_equal(direct.vertices, child.vertices) and child.n_vertices == 30
    exact = enumerate_cone_rays(rows, exact=True, max_seconds=30)
    assert exact.exact_vertices is not None and all(sum(vertex) == 1 for vertex in exact.exact_vertices)
    with pytest.raises(TooManyVerticesError, match="30 extreme rays, more than max_vertices=10"):
        enumerate_cone_rays(rows, max_vertices=10, max_seconds=30)  # the child's error is re-raised
    with pytest.raises(ValueError, match="max_seconds must be > 0"):
        enumerate_cone_rays(rows, max_seconds=0)


def test_run_with_time_limit_stops_a_long_call():
    started = time.perf_counter()
    with pytest.raises(EnumerationTimeoutError, match="did not finish in 0.2 s"):
        run_with_time_limit(0.2, time.sleep, 30)
    assert time.perf_counter() - started < 5
