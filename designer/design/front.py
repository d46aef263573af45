"""The front door: :func:`design_channel`, one call for every E, utility and size.

It checks the problem (:class:`designer.design.problem.Problem`), picks the route
(:func:`designer.design.routes.choose_route`: closed form, vertex enumeration, orbit LP, column
generation with bounds, expected-loss LP), runs it, moves a float channel inside E so that the exact
certifier certifies it as returned (:mod:`designer.design.interior`), certifies what it returns and
states the bounds on the optimum with the kind of proof behind each (:class:`designer.design.outcome.Design`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from designer.certify import certify
from designer.channel import Channel
from designer.defaults import DEFAULT_INFORMATION_GAP, DEFAULT_LOSS_GAP, DEFAULT_MAX_SECONDS, DEFAULT_MAX_VERTICES
from designer.design.interior import move_inside
from designer.design.outcome import Bound, Design
from designer.design.problem import Problem
from designer.design.routes import ENUMERATION_SHARE, Route, choose_route, column_generation_fits
from designer.errors import one_line

if TYPE_CHECKING:
    from designer.design.symmetry.classes import ClassStructure
    from designer.spec import PrivacyMatrix

#: Units of roundoff a float dual bound is raised by (:func:`_rounded_up`).
DUAL_ROUNDING = 64


def design_channel(
    privacy: PrivacyMatrix | ClassStructure,
    utility: str = "mutual-information",
    prior=None,
    *,
    alternative=None,
    loss=None,
    method: str = "auto",
    exact: bool = False,
    gap: float | None = None,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    max_vertices: int | None = DEFAULT_MAX_VERTICES,
    threads: int | None = None,
    progress: Callable[[float, float, float], None] | None = None,
    row_order: str | None = None,
) -> Design:
    """The optimal E-LDP channel for ``privacy``, by whichever route fits (see :mod:`designer.design.routes`).

    Parameters
    ----------
    privacy : PrivacyMatrix or ClassStructure
        E, dense or by classes (families, class files: k = 10^5 and beyond).
    utility : str
        ``"mutual-information"`` (default), an f-divergence (``"kl"``, ``"chi-square"``,
        ``"hellinger"``, ``"total-variation"``: ``D_f(prior Q || alternative Q)``) or ``"expected-loss"``.
    prior : array_like (k,), optional
        Input distribution (default uniform).
    alternative : array_like (k,), optional
        The f-divergences' second distribution (default uniform).
    loss : array_like (k, m), optional
        The expected-loss utility's loss (default 0/1 loss, outputs = inputs).
    method : str
        ``"auto"`` (default) or a route: ``"closed-form"``, ``"enumerate"``, ``"symmetry"``,
        ``"column-generation"``; for the expected loss, one of its methods (``"closed-form"``, ``"direct"``,
        ``"column-generation"``, ``"interior-point"``, ``"first-order"``:
        :func:`designer.design.expected_loss.design_expected_loss`).
    exact : bool
        Exact rational channel and exact certificate (vertex and orbit routes).
    gap, max_seconds, threads, progress
        Column generation and the expected loss's LPs: stop at ``(upper - lower) / upper <= gap`` (default
        :data:`designer.defaults.DEFAULT_INFORMATION_GAP` for mutual information,
        :data:`designer.defaults.DEFAULT_LOSS_GAP` for the expected loss) or after ``max_seconds``;
        ``progress(lower, upper, seconds)`` after every round. ``max_seconds`` also bounds each
        vertex enumeration.
    max_vertices, row_order
        Vertex enumeration: refuse cones with more vertices; cdd's row order.

    Returns
    -------
    Design
        The channel (or class-level design), its value, ``lower <= optimum <= upper`` with the kind of
        proof behind each, the method and why, the certificate of what is returned, the route's result.

    Raises
    ------
    ValueError
        Bad input, in one line naming what is wrong (also when a route refuses: too many vertices,
        symmetry lost).
    """
    start = time.perf_counter()
    problem = Problem(privacy, utility, _vector(prior), _vector(alternative), loss, exact).checked()
    route = choose_route(problem, method)
    runner = {"closed-form": _closed_form, "enumerate": _enumerate, "symmetry": _symmetric,
              "column-generation": _column_generation, "expected-loss": _expected_loss}[route.method]
    if gap is None:
        gap = DEFAULT_LOSS_GAP if problem.utility == "expected-loss" else DEFAULT_INFORMATION_GAP
    options = {"gap": gap, "max_seconds": max_seconds, "max_vertices": max_vertices, "threads": threads,
               "progress": progress, "row_order": row_order, "method": method}
    design = runner(problem, route, options)
    design.seconds = time.perf_counter() - start
    return design


# ------------------------------------------------------------------ the routes
def _closed_form(problem: Problem, route: Route, options: dict) -> Design:
    result = route.form.design(problem)
    privacy = problem.densified()
    value = _value_function(problem)
    optimum = value(result.channel.matrix)
    channel, interior, certificate = _inside(result.channel, privacy, certify(result.channel, privacy).tight_epsilon)
    objective = value(channel.matrix)
    return Design(
        route.method, route.reason, problem.privacy, problem.utility, channel, objective,
        Bound(objective, "certified channel", "the returned channel's utility"),
        Bound(optimum, "closed form", f"{result.theorem}: the closed form is optimal"),
        certificate, result, interior, optimum - objective,
    )


def _enumerate(problem: Problem, route: Route, options: dict) -> Design:
    from designer.design.repair import check_design_levels
    from designer.design.vertex import design_by_vertices
    from solvers.vertices import EnumerationTimeoutError

    start = time.perf_counter()
    privacy = problem.densified()
    fallback = options["method"] == "auto" and column_generation_fits(problem)
    if fallback:
        check_design_levels(privacy, nonredundant_only=True)  # a constrained level beyond the doubles: refused
        try:
            check_design_levels(privacy)
        except ValueError as error:  # only implied levels beyond the doubles: column generation takes any
            return _handed_over(problem, route, options, start, error)
    try:
        result = design_by_vertices(
            privacy, problem.utility, problem.prior, problem.alternative, exact=problem.exact,
            row_order=options["row_order"], max_vertices=options["max_vertices"],
            max_seconds=ENUMERATION_SHARE * options["max_seconds"] if fallback else options["max_seconds"],
        )
    except ValueError as error:
        if fallback and isinstance(error, EnumerationTimeoutError):  # not finished in its share of the budget
            return _handed_over(problem, route, options, start, error)
        if not route.reason.startswith("symmetry lost"):
            raise
        raise ValueError(f"{route.reason}: {one_line(error)}") from None
    value = _value_function(problem)
    dual = Bound(_rounded_up(result.dual_bound), "dual", f"vertex LP dual over all {result.n_vertices:,} vertices, made feasible "
                                            f"(residual {result.dual_residual:.1e})")
    if problem.exact or not result.certified:
        objective = value(result.channel.matrix)
        return Design(route.method, route.reason, problem.privacy, problem.utility, result.channel, objective,
                      Bound(objective, "certified channel", "the exact channel's utility"), dual,
                      result.certificate, result, timings=result.timings)
    channel, interior, certificate = _inside(result.channel, privacy, result.certificate.tight_epsilon)
    objective = value(channel.matrix)
    return Design(route.method, route.reason, problem.privacy, problem.utility, channel, objective,
                  Bound(objective, "certified channel", "the returned channel's utility"), dual, certificate, result,
                  interior, value(result.channel.matrix) - objective, timings=result.timings)


def _handed_over(problem: Problem, route: Route, options: dict, start: float, error: ValueError) -> Design:
    """Column generation for the budget left, where ``auto``'s enumeration refused with ``error`` (routes module)."""
    remaining = max(options["max_seconds"] - (time.perf_counter() - start), 0.0)
    refusal = one_line(error).split("; ")[0]  # what stopped it, without the advice that follows
    reason = f"{route.reason}: {refusal}; column generation with certified bounds instead, for the {remaining:.0f} s left"
    return _column_generation(problem, Route("column-generation", reason), {**options, "max_seconds": remaining})


def _symmetric(problem: Problem, route: Route, options: dict) -> Design:
    from designer.design.symmetry import SymmetryLostError, design_symmetric

    structure = route.structure
    try:
        result = design_symmetric(structure, problem.utility, exact=problem.exact)
    except SymmetryLostError as error:
        raise ValueError(f"symmetry lost ({structure.r} classes after splitting by the distributions): {error}") from None
    residual = max(result.dual_residual, 0.0)
    # every orbit representative is scaled to largest entry 1, so 1 . v >= 1 and y + residual is feasible
    upper = Bound(_rounded_up(float(result.structure.sizes @ result.duals) + structure.k * residual), "dual",
                  f"orbit LP dual over all {result.n_orbits:,} orbits, made feasible (residual {result.dual_residual:.1e})")
    lower = Bound(result.objective, "certified channel", "the design's utility")
    if result.bracket is not None:
        lower = Bound(result.bracket.lower, "exact bracket", "the exact channel's mutual information (Arb, rounded down)")
        upper = Bound(result.bracket.upper, "exact bracket", "the orbit LP dual made feasible at the true e^eps (Arb, rounded up)")
    if result.channel is None or problem.exact or not result.certified:
        return Design(route.method, route.reason, problem.privacy, problem.utility, result.channel, result.objective,
                      lower, upper, result.certificate, result, timings=result.timings)
    channel, interior, certificate = _inside_structure(result)
    value = _value_function(problem, result.structure)
    objective = value(channel.matrix)
    return Design(route.method, route.reason, problem.privacy, problem.utility, channel, objective,
                  Bound(objective, "certified channel", "the returned channel's utility"), upper, certificate, result,
                  interior, value(result.channel.matrix) - objective, timings=result.timings)


def _column_generation(problem: Problem, route: Route, options: dict) -> Design:
    from designer.design.gap import design_with_gap
    from designer.utility import mutual_information

    privacy = problem.densified()
    result = design_with_gap(privacy, problem.prior, options["gap"], options["max_seconds"], options["progress"],
                             options["threads"])
    relaxation = np.isfinite(result.relaxation_bound) and result.relaxation_bound <= result.upper
    upper = Bound(result.upper, "relaxation" if relaxation else "Lagrangian",
                  "orbit LP of the row-constant relaxation E' >= E* (Arb)" if relaxation
                  else "master duals plus the branch and bound's proven pricing bound")
    prior = problem.prior_or_uniform()
    if not result.certified:
        return Design(route.method, route.reason, problem.privacy, problem.utility, result.channel, result.lower,
                      Bound(result.lower, "certified channel", "not certified"), upper, result.certificate, result)
    channel, interior, certificate = _inside(result.channel, privacy, result.certificate.tight_epsilon)
    objective = mutual_information(prior, channel)
    return Design(route.method, route.reason, problem.privacy, problem.utility, channel, objective,
                  Bound(objective, "certified channel", "the returned channel's mutual information"), upper,
                  certificate, result, interior, mutual_information(prior, result.channel) - objective)


def _expected_loss(problem: Problem, route: Route, options: dict) -> Design:
    from designer.design.expected_loss import design_expected_loss

    privacy = problem.densified()
    loss = np.asarray(problem.loss, dtype=float) if problem.loss is not None else 1.0 - np.eye(privacy.k)
    result = design_expected_loss(privacy, loss, problem.prior, method=options["method"],
                                  max_seconds=options["max_seconds"], progress=options["progress"], gap=options["gap"])
    prior = problem.prior_or_uniform()
    kind = "closed form" if result.method == "closed-form" else "Lagrangian"
    lower = Bound(result.lower_bound, kind, result.bound)
    reason = f"expected loss, {result.method}: {result.reason}"
    if not result.certified:
        return Design(route.method, reason, problem.privacy, problem.utility, result.channel, result.objective,
                      lower, Bound(result.objective, "certified channel", "not certified"), result.certificate, result)
    channel, interior, certificate = _inside(result.channel, privacy, result.certificate.tight_epsilon)
    objective = float(np.sum(prior[:, None] * loss * channel.matrix))
    return Design(route.method, reason, problem.privacy, problem.utility, channel, objective, lower,
                  Bound(objective, "certified channel", "the returned channel's expected loss"), certificate, result,
                  interior, objective - result.objective, timings=result.timings)


# ------------------------------------------------------------------ helpers
def _inside(channel: Channel, privacy: PrivacyMatrix, tight: np.ndarray):
    """The channel moved inside E, how, and its float certificate (the move is the exact argument: a float
    design loads no python-flint, and the exact certifier costs seconds at k = 1000)."""
    interior = move_inside(channel.matrix, tight, privacy.epsilon)
    moved = Channel(interior.matrix)
    return moved, interior, certify(moved, privacy)


def _inside_structure(result):
    """:func:`_inside` for an orbit design: by the row-constant levels when ``k^2 m`` is large."""
    from designer.design.symmetry.certify import FULL_CERTIFIER_WORK, certify_row_constant, row_tight_levels
    from designer.design.symmetry.orbits import row_levels

    structure, matrix = result.structure, result.channel.matrix
    k, m = matrix.shape
    if k * k * m <= FULL_CERTIFIER_WORK:
        privacy = structure.privacy()
        return _inside(result.channel, privacy, certify(result.channel, privacy).tight_epsilon)
    epsilon, components = row_levels(structure)
    tight = row_tight_levels(matrix, structure, components)
    interior = move_inside(matrix, tight[:, None], structure.expand(epsilon)[:, None])
    return Channel(interior.matrix), interior, certify_row_constant(interior.matrix, structure, epsilon, components)


def _value_function(problem: Problem, structure=None) -> Callable[[np.ndarray], float]:
    """The utility of a (k, m) channel matrix: the sum of the column utility over its columns."""
    from designer.design.vertex import column_utility

    if structure is not None:
        prior = structure.expand(structure.prior)
        alternative = None if structure.alternative is None else structure.expand(structure.alternative)
    else:
        prior, alternative = problem.prior_or_uniform(), problem.alternative
    mu = column_utility(problem.utility, prior, alternative)
    return lambda matrix: float(np.sum(mu(np.asarray(matrix, dtype=float))))


def _rounded_up(bound: float) -> float:
    """A float dual bound raised by :data:`DUAL_ROUNDING` units of roundoff (relative, and absolute near 0), more than
    the rounding of the utility's float evaluation, which the returned design's value has too."""
    return bound + DUAL_ROUNDING * 2.0**-53 * (1.0 + abs(bound))


def _vector(values) -> np.ndarray | None:
    return None if values is None else np.asarray(values, dtype=float).ravel()
