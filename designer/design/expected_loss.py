"""The E-LDP channel of least expected loss, with a proven lower bound (Bordenabe, Chatzikokolakis, Palamidessi, CCS 2014).

Minimise ``sum_x prior_x sum_y Q[x, y] loss[x, y]`` over E-LDP channels. Every column of Q lies in
the cone ``C_E``; only the non-redundant pairs of E are constraints (for a graph metric: its edges,
as Bordenabe et al. observe). Five methods; ``method="auto"`` picks one of the first three:

- ``"closed-form"``: E is ``epsilon |i - j|`` after a relabelling and the loss is non-decreasing in
  ``|i - r|``: the truncated geometric mechanism with the consumer's optimal remap is optimal
  (Ghosh, Roughgarden, Sundararajan, STOC 2009; :mod:`designer.design.geometric`);
- ``"direct"``: the k x m LP at once (:func:`solvers.linear.solve_ratio_bounded_stochastic_lp`,
  Clarabel, then HiGHS when Clarabel's solve is inaccurate or its bound is not within the gap);
  auto uses it while ``k m <= DIRECT_MAX_ENTRIES``;
- ``"column-generation"``: the LP by output, never built at once (:mod:`designer.design.loss_decomposition`);
  under auto, when a sixth of the budget (or half the interior-point method's estimated time, if less) leaves
  the gap open, the interior-point method takes the rest if it is expected to finish in it, else the
  first-order method (:mod:`designer.design.handover`);
- ``"interior-point"``: the whole edge-only LP by an interior-point method that keeps its blocks (one per
  output; :mod:`designer.design.block_interior`), exact on irregular graphs of a few hundred values;
- ``"first-order"``: the whole edge-only LP by a primal-dual hybrid gradient method (HiGHS's PDLP;
  :mod:`designer.design.first_order`), for large irregular graphs where the master of column generation stalls.

Whatever the method, the channel is repaired onto the cone (raised, then lowered:
:mod:`designer.design.repair`) and certified; its expected loss is the **upper bound**. The methods' channels
are tried least expected loss first; when none certifies, the least dear of them mixed with the uniform channel
by the least weight that certifies (:func:`designer.design.repair.certified_mixture`) is returned. The
**lower bound** is LP duality evaluated with outward rounding from the solver's multipliers
(:func:`solvers.ratio_lp.lagrangian_lower_bound`), or, for the closed form, the theorem. An
inaccurate solver status is never an error: the bounds say how good the channel is.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from designer.channel import Channel
from designer.defaults import DEFAULT_LOSS_GAP, DEFAULT_MAX_SECONDS, EXPECTED_LOSS_METHODS
from designer.design.repair import (
    TRUNCATION_LEVEL,
    certified_mixture,
    certify_design,
    check_design_levels,
    default_uniform,
    repair_into_cone,
    within_doubles,
)
from designer.design.progress import best_so_far, closes
from designer.design.result import DesignResult, json_float
from designer.spec import PrivacyMatrix

#: ``method="auto"`` solves the direct LP while ``k m`` is at most this (k = m = 50), else by output.
DIRECT_MAX_ENTRIES = 2_500


@dataclass
class ExpectedLossDesign(DesignResult):
    """A certified channel with a bracket ``lower_bound <= optimum <= upper_bound`` of the least expected loss.

    ``objective`` (the upper bound) is the certified channel's own expected loss. ``method`` is the
    method that produced it and ``reason`` why it was chosen; ``bound`` says where the lower bound
    comes from; ``stopped`` why an LP method stopped (``"gap"``, ``"priced out"``, ``"time"``, ``"solved"``).
    """

    lower_bound: float = -math.inf
    method: str = ""
    reason: str = ""
    bound: str = ""
    stopped: str = ""
    history: list = field(default_factory=list)

    @property
    def upper_bound(self) -> float:
        return self.objective

    @property
    def gap(self) -> float:
        """``(upper - lower) / |upper|`` (0 when both are 0)."""
        width = self.objective - self.lower_bound
        return width / abs(self.objective) if self.objective else (0.0 if width <= 0 else math.inf)

    def summary(self) -> dict:
        return {
            **super().summary(),
            "lower_bound": json_float(self.lower_bound),
            "upper_bound": self.objective,
            "gap": json_float(self.gap),
            "method": self.method,
            "method_reason": self.reason,
            "bound": self.bound,
            "stopped": self.stopped,
            "history": self.history,
        }


def design_expected_loss(
    privacy: PrivacyMatrix,
    loss,
    prior=None,
    method: str = "auto",
    max_seconds: float = DEFAULT_MAX_SECONDS,
    progress: Callable[[float, float, float], None] | None = None,
    gap: float = DEFAULT_LOSS_GAP,
    constraints: str = "nonredundant",
    backend: str = "clarabel",
) -> ExpectedLossDesign:
    """The E-LDP channel of least expected loss ``sum_x prior_x sum_y Q[x,y] loss[x,y]`` (module docstring).

    Parameters
    ----------
    privacy : PrivacyMatrix
    loss : array_like (k, m)
        Finite loss of reporting y when the truth is x (outputs indexed like the columns).
    prior : array_like (k,), optional
        Default uniform.
    method : {"auto", "closed-form", "direct", "column-generation", "interior-point", "first-order"}
    max_seconds : float
        Wall-clock budget of the LP methods; on time out the certified channel so far is returned
        with its bounds (``stopped="time"``).
    progress : callable, optional
        ``progress(lower, upper, seconds)`` after each solve or round: the largest proven lower bound and the
        least expected loss of an E-LDP channel found so far (:func:`designer.design.progress.best_so_far`).
    gap : float
        The LP methods stop when ``(upper - lower) <= gap * upper``.
    constraints : {"nonredundant", "all-pairs"}
        ``"nonredundant"``: :meth:`PrivacyMatrix.nonredundant_pairs` (for a graph metric, the edges);
        ``"all-pairs"``: every finite pair (same optimum, for comparison; direct LP only).
    backend : {"clarabel", "highs"}
        First solver of the direct LP; the other is tried when the first fails or misses the gap.

    Returns
    -------
    ExpectedLossDesign
    """
    start = time.perf_counter()
    check_design_levels(privacy, nonredundant_only=True)
    k = privacy.k
    loss = np.asarray(loss, dtype=float)
    if loss.ndim != 2 or loss.shape[0] != k:
        raise ValueError(f"loss must have {k} rows (one per input), got shape {loss.shape}")
    if not np.all(np.isfinite(loss)):
        raise ValueError("loss entries must be finite")
    prior = default_uniform(prior, k)
    if method not in EXPECTED_LOSS_METHODS:
        raise ValueError(f"method must be one of {', '.join(EXPECTED_LOSS_METHODS)}, got {method!r}")
    if constraints not in ("nonredundant", "all-pairs"):
        raise ValueError(f"constraints must be 'nonredundant' or 'all-pairs', got {constraints!r}")
    if backend not in ("clarabel", "highs"):
        raise ValueError(f"unknown backend {backend!r}; choose 'clarabel' or 'highs'")
    requested = method
    method, reason, line = route_expected_loss(privacy, loss, method, constraints)
    repaired_in = within_doubles(privacy)  # E, or its truncation when E reaches beyond the doubles
    if repaired_in is not privacy:
        reason += f"; the channel repaired into E truncated at level {TRUNCATION_LEVEL:g} (E reaches beyond the doubles)"
    progress = best_so_far(progress)  # phases each report their own bounds; show the best of each so far
    timings = {}
    if method == "closed-form":
        from designer.design.geometric import design_line

        matrix = design_line(*line, loss, prior)
        lower = None  # the returned channel's own loss: the closed form is optimal
        if repaired_in is not privacy:  # entries beyond the doubles underflowed to 0: raised to the truncation
            lower = float(np.sum(prior[:, None] * loss * matrix))  # the optimum (its underflowed terms are below e^-708)
            matrix = repair_into_cone(repaired_in, matrix)
        channel = Channel(matrix)
        bound, stopped, history = "closed form optimal (Ghosh, Roughgarden, Sundararajan 2009)", "solved", []
        methods = [f"truncated geometric mechanism, epsilon {line[1]:g}, with the optimal remap"]
        certificate = _certified(channel, privacy, timings)
    else:
        cost = prior[:, None] * loss
        remaining = max_seconds - (time.perf_counter() - start)
        if method == "direct":
            solved = _direct(privacy, cost, constraints, backend, gap, max_seconds, progress, start)
        elif method == "first-order":
            from designer.design.first_order import first_order

            solved = first_order(privacy, cost, gap, remaining, progress)
        elif method == "interior-point":
            from designer.design.block_interior import block_interior

            solved = block_interior(privacy, cost, gap, remaining, progress)
        elif requested == "auto":
            from designer.design.handover import by_output_then_whole_lp

            solved = by_output_then_whole_lp(privacy, cost, gap, remaining, progress)
        else:
            from designer.design.loss_decomposition import decompose_by_output

            solved = decompose_by_output(privacy, cost, gap, remaining, progress)
        candidates, lower, stopped, history, methods = solved
        unconstrained = unconstrained_lower_bound(cost)  # above the LP bound at an optimum of 0 (LP: -1e-14)
        lower, unconstrained_bound = max(lower, unconstrained), unconstrained >= lower
        timings["repair"] = 0.0
        refused = []  # the repaired candidates that did not certify
        for matrix in candidates:  # least objective first; the first whose repair certifies is kept
            tick = time.perf_counter()
            channel = Channel(repair_into_cone(repaired_in, matrix))
            timings["repair"] += time.perf_counter() - tick
            certificate = _certified(channel, privacy, timings)
            if certificate.verdict == "certified":
                break
            refused.append(channel.matrix)
        else:  # none certified: the least expected loss among their mixtures with the uniform channel, if any
            mixtures = [found[0] for found in (certified_mixture(privacy, matrix) for matrix in refused) if found]
            if mixtures:
                channel = Channel(min(mixtures, key=lambda mixed: float(np.sum(cost * mixed))))
                certificate = _certified(channel, privacy, timings)
        bound = ("every input's cheapest output (no channel does better)" if unconstrained_bound
                 else "LP duality (the solver's multipliers, outward rounding)")
    objective = float(np.sum(prior[:, None] * loss * channel.matrix))
    return ExpectedLossDesign(
        channel=channel,
        privacy=privacy,
        utility="expected-loss",
        objective=objective,
        duals=None,
        dual_residual=None,
        duality_gap=None,
        n_vertices=0,
        n_outputs=channel.n_outputs,
        seconds=time.perf_counter() - start,
        certificate=certificate,
        methods=methods,
        timings=timings,
        lower_bound=objective if lower is None else min(lower, objective),
        method=method,
        reason=reason,
        bound=bound,
        stopped=stopped,
        history=history,
    )


def unconstrained_lower_bound(cost: np.ndarray) -> float:
    """``sum_x min_y cost[x, y]`` rounded down: no channel, E-LDP or not, has a lower expected loss (each row is a
    probability vector). It is the bound when the optimum is 0 (an output of no loss for every input), where the
    LP bounds' outward rounding leaves -1e-14 and the relative gap would be infinite.

    ``math.fsum`` rounds the exact sum once, so one step down bounds it; an exact sum of doubles that rounds to 0
    is 0.
    """
    total = math.fsum(np.asarray(cost, dtype=float).min(axis=1))
    return total if total == 0.0 else math.nextafter(total, -math.inf)


def route_expected_loss(privacy: PrivacyMatrix, loss: np.ndarray, method: str = "auto",
                        constraints: str = "nonredundant") -> tuple[str, str, tuple | None]:
    """``(method, reason, line)``: which method :func:`design_expected_loss` runs and why.

    ``line`` is ``(order, epsilon)`` of :func:`designer.design.geometric.line_order` for the closed form.
    An explicit ``"closed-form"`` that does not apply raises ValueError naming the reason.
    """
    from designer.design.geometric import line_order, monotone_about_truth

    k, m = loss.shape
    line = None
    why_not = "all-pairs constraints were asked for" if constraints == "all-pairs" else None
    if why_not is None and method in ("auto", "closed-form"):
        line = line_order(privacy)
        if line is None:
            why_not = "E is not epsilon |i - j| under any relabelling"
        elif not monotone_about_truth(loss[np.ix_(line[0], line[0])] if m == k else loss):
            why_not = "the loss is not k x k and non-decreasing in |i - r| (in the line's order)"
            line = None
    if method == "closed-form":
        if line is None:
            raise ValueError(f"the closed form does not apply: {why_not}")
        return "closed-form", "requested", line
    if method != "auto":
        return method, "requested", None
    if line is not None:
        return "closed-form", "E is epsilon |i - j| after relabelling and the loss is monotone in |i - r|", line
    if k * m <= DIRECT_MAX_ENTRIES or constraints == "all-pairs":
        return "direct", f"k m = {k * m} <= {DIRECT_MAX_ENTRIES} ({why_not})", None
    return "column-generation", (f"k m = {k * m} > {DIRECT_MAX_ENTRIES}: the LP by output, then, if the gap is open "
                                 f"after a sixth of the budget (or half the interior-point method's estimate), the "
                                 f"interior-point method if its estimate fits the budget left, else a first-order "
                                 f"method ({why_not})"), None


def _certified(channel: Channel, privacy: PrivacyMatrix, timings: dict):
    """The float certificate of ``channel``, its seconds added to ``timings["certify"]``."""
    tick = time.perf_counter()
    certificate = certify_design(channel, privacy, exact=False)
    timings["certify"] = timings.get("certify", 0.0) + time.perf_counter() - tick
    return certificate


def _direct(privacy, cost, constraints, backend, gap, max_seconds, progress, start):
    """The direct LP (module docstring): the first backend, the other when it fails; refined by output when the gap is missed.

    An inaccurate solve (Clarabel's ``AlmostSolved``) is kept when its bound is within ``gap``; else its
    repaired channel seeds column generation by output, whose first pricing round gives exact pair
    multipliers for the bound (a few rounds usually close it). When both solvers fail, column
    generation starts from its own columns.
    """
    from designer.design.loss_decomposition import constraint_pairs, decompose_by_output
    from solvers.linear import solve_ratio_bounded_stochastic_lp_by_either
    from solvers.ratio_lp import lagrangian_lower_bound

    pairs, ratios, bound_ratios = constraint_pairs(privacy, constraints)
    history = []
    solution, name, notes = solve_ratio_bounded_stochastic_lp_by_either(
        cost, pairs, ratios, (backend, "highs" if backend == "clarabel" else "clarabel"),
        max_seconds - (time.perf_counter() - start))
    seed = None
    lower = -math.inf
    if solution is not None:
        cone = within_doubles(privacy)  # as the candidates' repair
        seed = repair_into_cone(cone, solution.matrix)
        upper = float(np.sum(cost * seed))
        lower = max(lagrangian_lower_bound(cost, pairs, bound_ratios, solution.pair_duals),
                    unconstrained_lower_bound(cost))
        history.append({"backend": name, "status": solution.status, "upper": upper, "lower_bound": lower,
                        "seconds": round(time.perf_counter() - start, 3)})
        notes.append(f"direct LP, {solution.n_constraints} ratio constraints ({constraints}, {name}, {solution.status})")
        if progress is not None:
            progress(lower, upper, time.perf_counter() - start)
        if closes(lower, upper, gap):
            return [seed], lower, "gap", history, notes
        if constraints == "all-pairs":  # a comparison of constraint sets: the solver's answer, not refined
            return [seed], lower, "solved", history, notes
        if time.perf_counter() - start > max_seconds:
            return [seed], lower, "time", history, notes
        width = (upper - lower) / abs(upper) if upper else math.inf
        notes.append(f"gap {width:.1e} above {gap:g}: refined by column generation by output")
    candidates, refined, stopped, more_history, more_notes = decompose_by_output(
        privacy, cost, gap, max_seconds - (time.perf_counter() - start), progress, seed)
    return candidates, max(lower, refined), stopped, history + more_history, notes + more_notes
