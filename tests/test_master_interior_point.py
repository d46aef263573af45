"""The dense interior-point method and the master it solves past INTERIOR_CELLS, against scipy's HiGHS."""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.optimize

import solvers.ratio_lp as ratio_lp
from designer.spec import PrivacyMatrix
from solvers.dense_ipm import MAX_ITERATIONS, dense_interior_point
from solvers.linear import LinearProgramError
from solvers.ratio_lp import _Master


def random_lp(seed: int, k: int = 6, n: int = 40):
    """A feasible, bounded ``min c . w, A w = b, w >= 0`` with a dense positive ``A``."""
    rng = np.random.default_rng(seed)
    matrix = rng.uniform(0.01, 1.0, (k, n))
    return matrix, matrix @ rng.uniform(0.1, 1.0, n), rng.uniform(0.1, 1.0, n)


def cone_master(seed: int, extra: int = 200):
    """A master of column generation on the 4 x 4 grid: Laplace shapes, mixtures of them and the constant column,
    each owned by a random output; costs from the grid's L1 distance."""
    privacy = PrivacyMatrix.grid_l1((4, 4), 0.5)
    k = privacy.k
    cells = np.array(list(np.ndindex(4, 4)))
    distance = np.abs(cells[:, None, :] - cells[None, :, :]).sum(axis=2).astype(float)
    rng = np.random.default_rng(seed)
    laplace = np.exp(-privacy.closure().epsilon)
    points = np.vstack([laplace, rng.dirichlet(np.full(k, 0.3), extra) @ laplace, np.ones((1, k))])
    points /= points.sum(axis=1, keepdims=True)
    owners = np.concatenate([np.arange(k), rng.integers(0, k, extra), [0]])
    cost = distance / distance.max()
    return points, owners, np.einsum("jx,xj->j", points, cost[:, owners])


def every_column(points, costs) -> float:
    """The master over every column, by scipy's dual simplex."""
    return scipy.optimize.linprog(costs, A_eq=points.T, b_eq=np.ones(points.shape[1]), bounds=(0, None),
                                  method="highs-ds").fun


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_interior_point_dual_objective_equals_the_optimum(seed):
    """Its dual objective is the LP optimum (scipy) to 1e-9 relative, and its duals are dual feasible."""
    matrix, rhs, cost = random_lp(seed)
    result = dense_interior_point(matrix, rhs, cost)
    optimum = scipy.optimize.linprog(cost, A_eq=matrix, b_eq=rhs, bounds=(0, None), method="highs-ds").fun
    assert result.status in ("optimal", "stalled") and 0 < result.iterations < MAX_ITERATIONS
    assert result.dual_objective == pytest.approx(optimum, rel=1e-9)
    assert (cost - matrix.T @ result.duals).min() >= -1e-9
    assert np.allclose(matrix @ result.weights, rhs, rtol=1e-7) and result.weights.min() >= 0


def test_interior_point_on_a_degenerate_master_of_cone_columns():
    """A master of 217 dense columns on 16 rows (many optimal bases): the dual objective is the optimum."""
    points, _, costs = cone_master(0)
    result = dense_interior_point(points.T, np.ones(points.shape[1]), costs)
    assert result.dual_objective == pytest.approx(every_column(points, costs), rel=1e-9)
    assert (costs - points @ result.duals).min() >= -1e-9


def test_interior_point_stops_at_its_deadline():
    """A deadline already past: status "time" after no iteration, the starting point returned (weights >= 0)."""
    matrix, rhs, cost = random_lp(3)
    result = dense_interior_point(matrix, rhs, cost, deadline=time.perf_counter() - 1.0)
    assert result.status == "time" and result.iterations == 0 and result.weights.min() >= 0


@pytest.mark.parametrize("seed", [0, 1])
def test_a_large_master_is_solved_by_the_interior_point_method(seed, monkeypatch):
    """Past INTERIOR_CELLS the master's objective is the optimum over every column (scipy) to 1e-9, its multipliers
    price nothing out, and its weights meet the rows to 1e-7."""
    monkeypatch.setattr(ratio_lp, "INTERIOR_CELLS", 1)
    points, owners, costs = cone_master(seed)
    master = _Master(points.shape[1])
    master.add(points, owners, costs)
    objective, duals, weights, finished = master.solve()
    assert finished and objective == pytest.approx(every_column(points, costs), rel=1e-9)
    assert (costs - points @ duals).min() >= -1e-9
    assert np.abs(points.T @ weights - 1.0).max() <= 1e-7 and weights.min() >= 0


def test_an_interior_point_master_out_of_time_keeps_its_earlier_answer(monkeypatch):
    """Held to a deadline already past, a first solve raises when asked to; a re-solve returns the earlier answer,
    padded with zeros for the columns added since."""
    monkeypatch.setattr(ratio_lp, "INTERIOR_CELLS", 1)
    points, owners, costs = cone_master(3, extra=60)
    k = points.shape[1]
    master = _Master(k)
    master.add(points[-1:], owners[-1:], costs[-1:])
    master.add(points[:k], owners[:k], costs[:k])
    with pytest.raises(LinearProgramError, match="within the time budget"):
        master.solve(deadline=time.perf_counter() - 1.0, first_by_deadline=True)
    earlier, duals, _, finished = master.solve(deadline=time.perf_counter() - 1.0)  # no answer yet: solved
    assert finished
    master.add(points[k:-1], owners[k:-1], costs[k:-1])
    objective, late_duals, padded, finished = master.solve(deadline=time.perf_counter() - 1.0)
    assert not finished and objective == earlier and np.array_equal(late_duals, duals)
    assert padded.shape == (points.shape[0],) and not padded[k + 1:].any()


def test_column_generation_with_interior_point_masters_is_certified_at_the_lp_optimum(monkeypatch):
    """Every master by the interior-point method on a 3 x 4 grid: the channel (its interior weights repaired) is
    certified, and its expected loss is the edge-only LP's optimum (scipy) within the gap."""
    from designer.design.expected_loss import design_expected_loss

    monkeypatch.setattr(ratio_lp, "INTERIOR_CELLS", 1)
    privacy = PrivacyMatrix.grid_l1((3, 4), 0.5)
    cells = np.array(list(np.ndindex(3, 4)))
    distance = np.abs(cells[:, None, :] - cells[None, :, :]).sum(axis=2).astype(float)
    k = privacy.k
    rows = []
    for a, b in zip(*np.nonzero(distance == 1)):  # the grid's edges, ratio e^0.5 (Bordenabe et al.)
        for y in range(k):
            row = np.zeros(k * k)
            row[a * k + y], row[b * k + y] = 1.0, -np.exp(0.5)
            rows.append(row)
    optimum = scipy.optimize.linprog((distance / k).ravel(), A_ub=np.array(rows), b_ub=np.zeros(len(rows)),
                                     A_eq=np.kron(np.eye(k), np.ones(k)), b_eq=np.ones(k), bounds=(0, None),
                                     method="highs-ds").fun
    result = design_expected_loss(privacy, distance, None, method="column-generation")
    assert result.certified and result.gap <= 1e-6
    assert result.lower_bound <= optimum + 1e-12 and result.objective == pytest.approx(optimum, rel=1e-6)
