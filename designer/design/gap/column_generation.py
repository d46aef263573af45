"""Column generation with a certified gap: a certified channel (lower bound) and a proven upper bound.

The mutual-information design LP over the cone's vertices (:mod:`designer.design.vertex`)
is solved over a *restricted* set of columns (the master LP); its duals y price
new columns, and the same pricing problem gives an upper bound on the optimum.

Upper bound (Lagrangian / column-generation bound; Lasdon, *Optimization Theory for
Large Systems*, 1970, Sec. 3.6; Lübbecke and Desrosiers, Oper. Res. 2005, Sec. 2.1).
Take any y in R^k and let

    rho(y) = max { mu(v) - y . v : v in C_E, p . v = 1 }

(p the prior, positive). Any E-LDP channel Q has columns ``q_j = t_j v_j`` with
``v_j`` in C_E, ``p . v_j = 1`` and ``t_j = p . q_j >= 0``, and ``sum_j t_j = p . Q 1 = 1``.
``mu`` is positively homogeneous, so

    I_p(Q) = sum_j t_j mu(v_j) <= sum_j t_j (y . v_j + rho(y)) = y . 1 + rho(y),

because ``sum_j t_j v_j = Q 1 = 1``. Hence ``OPT <= sum(y) + rho_bar`` for every proven
upper bound ``rho_bar >= rho(y)``. With ``p . v = 1`` the output mass is 1, so
``mu(v) = sum_x p_x v_x log v_x``: the pricing problem is a separable convex
maximisation over a polytope, bounded by branch and bound over concave envelopes
(:mod:`solvers.convex_maximization`, every node bound proven by weak duality and rounded outward),
whose incumbent points are the new columns. A round that adds no column keeps the same duals, so
the next round resumes the same search tree; ``sum(y) + rho_bar`` is rounded up
(:func:`lagrangian_bound`).
At the master's optimal duals, ``sum(y)`` is the master's value and ``rho(y) >= 0``;
the bound closes as pricing finds nothing.

Columns come first from subset (max-plus) columns of the closure priced by local search
(:mod:`designer.design.gap.closure_columns`, up to :data:`SUBSET_SHARE` of the budget, seeded with the
optimal classic ``min E``-LDP channel, :func:`classic_columns`), then from the linearisation
heuristic of :mod:`solvers.column_generation` (until :data:`HEURISTIC_SHARE` of the budget), then
from the branch and bound's incumbents.

Two searches can bound rho: the single tree over the slice, and the same search split by the
slice's smallest coordinate (:mod:`solvers.argmin_split`), which pins the scale of every point and
closes on cones whose vertices have few levels (classic E under a non-uniform prior, where the
symmetry reduction is lost), but only multiplies the work when the levels are many (random E). For
``k <= SPLIT_MAX_K`` the first round gives each :data:`TRIAL_NODES_PER_INPUT` times k nodes from the same duals (a
deterministic choice); both bounds are proven and the smaller counts; the split's search goes on only
when its excess over the best point is below :data:`SPLIT_ADVANTAGE` times the single tree's, else the
single tree's does (``GapDesign.pricing`` names it).

Second upper bound (a relaxation with symmetry): every E-LDP channel satisfies
``Q[x, y] <= e^{E*[x, x']} Q[x', y] <= e^{eps'_x} Q[x', y]`` with ``eps'_x >= max_{x'} E*[x, x']``,
so it is E'-LDP for the row-constant ``E'[x, x'] = eps'_x`` and ``OPT(E) <= OPT(E')``. Rounding the
row maxima of the closure up to a grid of a few levels makes E' class-structured, and the orbit
LP (:mod:`designer.design.symmetry`) gives ``OPT(E')`` exactly (:func:`symmetric_relaxation_bound`).
The orbit LP is capped at about a tenth of the time budget (:data:`ORBITS_PER_SECOND`); the columns of
the orbit LP are scaled to sum 1, so levels of 49 and more (a line of 50 at epsilon = 1) stay finite.
Third upper bound, finite at any epsilon x diameter: ``I(X; Y) <= H(X)`` (:func:`entropy_upper_bound`).
The reported upper bound is the smallest of the three.

Lower bound: the master's channel, repaired onto the cone (:func:`designer.design.repair.repair_into_cone`:
raised into it first, since a pricing vertex's entries far below the solver's tolerance, ``e^{-49}`` on a line
of 50 at epsilon 1, come back as 0 and lowering alone would pull whole columns to them, then projected) and certified
(:func:`designer.certify.certify`); its own mutual information is reported.
The gap is ``(upper - lower) / upper``; a run that stops on its time budget says
so and is never called optimal.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from designer.certify import Certificate, certify
from designer.channel import Channel
from designer.design.gap.closure_columns import subset_pricing
from designer.design.repair import (
    MAX_FLOAT_DESIGN_LEVEL,
    TRUNCATION_LEVEL,
    check_design_levels,
    merge_proportional_columns,
    raise_into_cone,
    repair_into_cone,
    within_doubles,
)
from designer.spec import PrivacyMatrix
from designer.utility import F_DIVERGENCES, column_information, mutual_information
from solvers.argmin_split import ArgminSplit
from solvers.column_generation import column_generation
from solvers.convex_maximization import SeparableConvexMax
from solvers.linear import solve_vertex_lp

#: Pair constraints above this level are left out of the pricing's LPs, whose coefficients would span more than
#: ``e^MAX_LP_LEVEL`` (HiGHS refuses a matrix entry above 1e15, ``e^34.5``: an 8 x 8 grid at epsilon 40 gave "bound LP
#: not solved: Empty"). Leaving constraints out enlarges the polytope, so every bound stays an upper bound; the
#: columns it yields are raised into E's cone (:func:`admitted`), which moves an entry only where a left-out
#: pair is violated, by less than ``e^-MAX_LP_LEVEL`` times its neighbour.
MAX_LP_LEVEL = 30.0
#: Reduced costs above this add a column to the master.
REDUCED_COST_TOLERANCE = 1e-9
#: Most levels of the row-constant relaxation (fewer when the orbit LP would be too large).
RELAXATION_LEVELS = 6
#: Largest orbit LP solved for the relaxation bound (about a second on a quiet machine).
RELAXATION_ORBITS = 100_000
#: Orbits per second of the relaxation bound (orbit LP and its Arb proof), rounded down from 5,200 measured
#: under load (85,683 orbits in 16.5 s, line k = 50, epsilon = 1): with RELAXATION_SHARE it caps the orbit LP so
#: that the bound takes about a tenth of the budget and ``max_seconds`` holds.
ORBITS_PER_SECOND = 2_000
#: Share of the time budget for the relaxation bound.
RELAXATION_SHARE = 0.1
#: Share of the time budget given first to the linearisation heuristic of solvers.column_generation
#: (it stops earlier when a pricing round finds no improving column); the rest goes to the bound.
HEURISTIC_SHARE = 0.3
#: Share of the time budget (at most) for column generation over subset columns (designer.design.gap.closure_columns).
SUBSET_SHARE = 0.25
#: Midpoints of this many random pairs of basic columns start the heuristic's ascents per round
#: (all pairs cost O(k^2) ascents per round: 30-60 s per round at k = 50).
PAIR_STARTS = 16
#: Branch and bound stops when its own bracket is this share of the gap tolerance (times the master's value).
PRICING_SHARE = 0.25
#: Seconds of branch and bound in the first pricing round (doubled every round).
ROUND_SECONDS = 2.0
#: Largest k for which the first pricing round also tries the search split by the smallest coordinate
#: (solvers.argmin_split: k pieces, k root LPs; measured 31 s of roots at k = 200).
SPLIT_MAX_K = 100
#: The split is kept when its bound's excess over the best point found is below this share of the single
#: tree's: on few-level cones it is far below (0.03 on classic eps = 1, Zipf prior, k = 50); on random E it
#: was 0.92 after the trial, and over a long search the single tree proves more (benchmarks/RESULTS.md).
SPLIT_ADVANTAGE = 0.5
#: Seconds per input the split's root LPs may take (0.056 measured at k = 100 under load 9; 31 s at k = 200 on a quiet
#: machine is 0.155): the trial runs only when the time left is at least twice this times k, since every piece's
#: root is solved before the split's bound exists, so a short budget would be overrun.
SPLIT_ROOT_SECONDS = 0.2
#: Nodes per input that each of the two searches gets in that first round (equal node counts: a
#: deterministic choice; the split needs ~8 bisections of each piece's scale before it pays).
TRIAL_NODES_PER_INPUT = 40
#: Default thread count of the branch and bound: its node bookkeeping runs in Python under the GIL (about
#: a quarter of a node's time at k = 50), so threads beyond a few add little (measured only up to 2 here).
MAX_DEFAULT_THREADS = 4


@dataclass
class GapDesign:
    """A certified channel and a proven bracket ``lower <= OPT <= upper`` of the optimal mutual information."""

    channel: Channel
    certificate: Certificate
    lower: float
    upper: float
    columns: int
    rounds: int
    nodes: int
    seconds: float
    stopped: str
    relaxation_bound: float = np.inf
    history: list = field(default_factory=list)
    pricing: str = "single tree"
    threads: int = 1

    @property
    def gap(self) -> float:
        """Relative gap ``(upper - lower) / upper``."""
        return (self.upper - self.lower) / self.upper if self.upper > 0 else 0.0

    @property
    def certified(self) -> bool:
        return self.certificate.certified

    def summary(self) -> dict:
        return {
            "E": None,
            "lower": self.lower,
            "upper": self.upper,
            "relaxation_bound": self.relaxation_bound if np.isfinite(self.relaxation_bound) else None,
            "gap": self.gap,
            "optimal": False if self.stopped != "gap" else self.gap == 0,
            "stopped": self.stopped,
            "certified": self.certified,
            "certificate_mode": self.certificate.mode,
            "margin": float(self.certificate.margin),
            "columns": self.columns,
            "n_outputs": self.channel.n_outputs,
            "rounds": self.rounds,
            "nodes": self.nodes,
            "pricing": self.pricing,
            "threads": self.threads,
            "seconds": round(self.seconds, 3),
            "history": self.history,
        }


def design_with_gap(
    privacy: PrivacyMatrix,
    prior=None,
    gap_tolerance: float = 0.01,
    max_seconds: float = 600.0,
    progress: Callable[[float, float, float], None] | None = None,
    threads: int | None = None,
) -> GapDesign:
    """Column generation for the mutual-information design with certified bounds (module docstring).

    Parameters
    ----------
    privacy : PrivacyMatrix
    prior : array_like (k,), optional
        Positive input distribution (default uniform).
    gap_tolerance : float
        Stop when ``(upper - lower) / upper <= gap_tolerance``.
    max_seconds : float
        Wall-clock budget; the bounds at that moment are returned (``stopped="time"``). A pricing
        search that exhausts its tree without a new column ends the run (``stopped="pricing"``).
    progress : callable, optional
        Called as ``progress(lower, upper, seconds)`` after every round.
    threads : int, optional
        Threads of the branch and bound (:class:`solvers.convex_maximization.SeparableConvexMax`); default
        :func:`default_threads`. The bound means the same for every count; more threads split more nodes
        in the same time.
    """
    start = time.perf_counter()
    check_design_levels(privacy, nonredundant_only=True)
    k = privacy.k
    threads = default_threads() if threads is None else int(threads)  # SeparableConvexMax refuses fewer than 1
    prior = np.full(k, 1.0 / k) if prior is None else np.asarray(prior, dtype=float)
    if np.any(prior <= 0):
        raise ValueError("the gap bound needs a positive prior (every symbol has probability > 0)")
    pairs = privacy.nonredundant_pairs()
    steep = privacy.epsilon[pairs[:, 0], pairs[:, 1]] > MAX_LP_LEVEL
    pairs = pairs[~steep]  # left out of the LPs: a relaxation; the columns are raised into E's cone (admitted)
    inequalities = np.zeros((len(pairs), k))
    inequalities[np.arange(len(pairs)), pairs[:, 0]] = -1.0
    # e^E raised by 16 relative machine epsilons, more than numpy's exp error (at most 4 ulp with SVML,
    # numpy PR 19478) plus the product's rounding: the pricing polytope contains the true cone's slice,
    # so a bound over it is a bound over the cone
    ratios = np.exp(privacy.epsilon[pairs[:, 0], pairs[:, 1]]) * (1.0 + 16 * np.finfo(float).eps)
    inequalities[np.arange(len(pairs)), pairs[:, 1]] = ratios
    with np.errstate(over="ignore"):  # a ratio beyond the doubles is inf: the box is not tightened by it
        closure_ratios = np.exp(privacy.closure().epsilon)
    pricing = SeparableConvexMax(inequalities, prior, prior, ratios=closure_ratios, threads=threads)
    lower_box, upper_box = pricing.coordinate_range()
    # tried once, in the first round, next to the single tree; it goes on only when far ahead (SPLIT_ADVANTAGE)
    split = ArgminSplit(sparse.csr_matrix(inequalities), prior, prior, closure_ratios, threads=threads) if k <= SPLIT_MAX_K else None
    pricing_name = "single tree"
    columns = closure_column_generation(privacy, prior, np.vstack([np.ones((1, k)), classic_columns(privacy)]),
                                        start + SUBSET_SHARE * max_seconds)
    seeded = column_generation(  # linearisation pricing (a heuristic): good columns fast, no bound
        inequalities, lambda c: column_information(prior, c.T), lambda q: prior * np.log(q / (prior @ q)),
        np.ones(k), columns / columns.sum(axis=1, keepdims=True), random_starts=8, ascent_steps=10, confirm_rounds=1,
        max_seconds=max(start + HEURISTIC_SHARE * max_seconds - time.perf_counter(), 0.0), pair_starts=PAIR_STARTS,
    )
    columns = admitted(privacy, seeded.columns, steep.any())
    values = column_information(prior, columns.T)
    orbit_budget = min(RELAXATION_ORBITS, int(ORBITS_PER_SECOND * RELAXATION_SHARE * max_seconds))
    relaxed = min(symmetric_relaxation_bound(privacy, prior, orbit_budget), entropy_upper_bound(prior))
    upper, rounds, nodes, budget = relaxed, 0, 0, ROUND_SECONDS
    history = []
    stopped = "time"
    master, result = None, None
    while True:
        rounds += 1
        if master is None:
            master = solve_vertex_lp(columns, values, np.ones(k))
            result = None  # new duals: the search starts again from the root box
        remaining = max_seconds - (time.perf_counter() - start)
        search = {"tolerance": max(PRICING_SHARE * gap_tolerance * master.objective, 1e-9),
                  "max_seconds": max(min(budget, remaining), 0.05), "keep_points": REDUCED_COST_TOLERANCE}
        if split is not None and remaining < 2 * SPLIT_ROOT_SECONDS * k:
            split = None  # not enough time left for its k root LPs
        if split is not None:  # the trial: equal node counts, not the round's seconds
            search.update(max_nodes=TRIAL_NODES_PER_INPUT * k, max_seconds=max(remaining, 0.05))
        result = pricing.run(-master.duals, lower_box, upper_box, F_DIVERGENCES["kl"], resume=result, **search)
        nodes += result.nodes
        proven = result.upper
        found = list(result.points)
        if split is not None:  # both bounds are proven (the smaller counts); the split goes on only when far ahead
            search["max_seconds"] = max(max_seconds - (time.perf_counter() - start), 0.05)
            other = split.run(-master.duals, lower_box, upper_box, F_DIVERGENCES["kl"], **search)
            nodes += other.nodes
            found += other.points
            best, proven = max(result.best, other.best), min(result.upper, other.upper)
            if other.upper - best < SPLIT_ADVANTAGE * (result.upper - best):
                pricing, result, pricing_name = split, other, "split by the smallest coordinate"
            split = None
        upper = min(upper, lagrangian_bound(master.duals, proven))
        lower = master.objective
        history.append({"round": rounds, "master": lower, "upper": upper, "columns": int(columns.shape[0])})
        if progress is not None:
            progress(lower, upper, time.perf_counter() - start)
        if (upper - lower) <= gap_tolerance * upper:
            stopped = "gap"
            break
        if time.perf_counter() - start >= max_seconds:
            break
        new = list(admitted(privacy, np.array([q / q.sum() for q in found]), steep.any())) if found else []
        budget *= 2  # the bound needs ever longer searches as the master's duals settle
        if not new:
            if result.finished:  # the search is exhausted at these duals: its bound is final
                stopped = "pricing"
                break
            continue  # same duals: the next round resumes this search
        new = np.unique(np.round(np.vstack(new), 14), axis=0)
        columns = np.vstack([columns, new])
        values = np.concatenate([values, column_information(prior, new.T)])
        master = None
    weights = master.weights
    keep = weights > 0
    matrix = merge_proportional_columns((columns[keep] * weights[keep, None]).T)
    repaired_in = within_doubles(privacy)  # E, or its truncation: no entry raised to a subnormal e^-E* (k = 300 line)
    matrix = repair_into_cone(repaired_in, matrix)
    channel = Channel(matrix)
    certificate = certify(channel, privacy)
    certified_value = mutual_information(prior, channel)
    return GapDesign(
        channel=channel,
        certificate=certificate,
        lower=min(certified_value, upper),
        upper=upper,
        columns=int(columns.shape[0]),
        rounds=rounds,
        nodes=nodes,
        seconds=time.perf_counter() - start,
        stopped=stopped,
        relaxation_bound=relaxed,
        history=history,
        pricing=pricing_name,
        threads=threads,
    )


def default_threads() -> int:
    """The CPUs this process may run on (``os.sched_getaffinity`` where the platform has it), at most
    :data:`MAX_DEFAULT_THREADS`."""
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(available, MAX_DEFAULT_THREADS))


def lagrangian_bound(duals: np.ndarray, pricing_bound: float) -> float:
    """``sum(y) + max(rho_bar, 0)`` rounded upward (module docstring): a proven bound in floating point.

    ``math.fsum`` is correctly rounded (error <= half an ulp) and so is the addition, so two steps
    up (:func:`math.nextafter`) cover both roundings.
    """
    total = math.fsum(duals) + max(pricing_bound, 0.0)
    return math.nextafter(math.nextafter(total, math.inf), math.inf)


def closure_column_generation(privacy: PrivacyMatrix, prior: np.ndarray, columns: np.ndarray, deadline: float,
                               random_starts: int = 32, seed: int = 0) -> np.ndarray:
    """Column generation over the subset columns of :mod:`designer.design.gap.closure_columns` until no start improves.

    Starts per round: the sets ``{x : v_x > median(v)}`` of the master's basic columns and random
    subsets of densities 5-50%; stops at ``deadline`` (a ``time.perf_counter()`` value). Returns
    every column (the given ones first), each a point of the cone.
    """
    rng = np.random.default_rng(seed)
    closure = privacy.truncated_closure(TRUNCATION_LEVEL).epsilon  # a metric below E*, at any E (floored columns)
    values = column_information(prior, columns.T)
    while time.perf_counter() < deadline:
        master = solve_vertex_lp(columns, values, np.ones(privacy.k))
        basic = columns[master.weights > 0]
        starts = np.vstack([basic > np.median(basic, axis=1, keepdims=True),
                            rng.random((random_starts, privacy.k)) < rng.uniform(0.05, 0.5, (random_starts, 1))])
        new = subset_pricing(closure, prior, master.duals, starts)
        if new.shape[0] == 0:
            break
        columns = np.vstack([columns, new])
        values = np.concatenate([values, column_information(prior, new.T)])
    return columns


def admitted(privacy: PrivacyMatrix, columns: np.ndarray, raise_first: bool) -> np.ndarray:
    """The columns (rows of ``columns``) as the master takes them: raised into E's cone first when the pricing
    left pairs out (``raise_first``, :data:`MAX_LP_LEVEL`; :func:`designer.design.repair.raise_into_cone`, whose
    underflowed entries the floor restores), then :func:`floored`."""
    columns = np.atleast_2d(np.asarray(columns, dtype=float))
    return floored(raise_into_cone(privacy, columns.T).T if raise_first else columns)


def floored(columns: np.ndarray) -> np.ndarray:
    """Each column (row of ``columns``) raised to at least ``e^-TRUNCATION_LEVEL`` times its largest entry.

    Beyond the double range a column of the cone underflows (``exp(-E*[c, x])`` on a line of 60 values at
    epsilon 20 reaches ``e^-1180``): zeros next to positive entries, which the final repair could only make
    E-LDP by losing most of the information (1.69 nats certified against an upper bound of 4.09 there, before
    the floor; 4.0943445 of 4.0943446 with it).

    Still a point of E's cone: the cone is closed under the entrywise maximum (``v_x <= r v_x'`` and
    ``w_x <= r w_x'`` give ``max(v, w)_x <= r max(v, w)_x'``) and holds every constant column. Its entries
    then span at most ``e^TRUNCATION_LEVEL``, so it lies in the cone of ``min(E*, TRUNCATION_LEVEL)`` (a truncated
    metric), and a column already inside that range is returned unchanged.
    """
    columns = np.asarray(columns, dtype=float)
    return np.maximum(columns, columns.max(axis=-1, keepdims=True) * math.exp(-TRUNCATION_LEVEL))


def entropy_upper_bound(prior: np.ndarray) -> float:
    """``H(prior)`` rounded up: ``I(X; Y) <= H(X)`` for every channel, a finite bound at any epsilon x diameter.

    Each term ``-p log p`` is within a few ulps; the sum is raised by ``4 k`` machine epsilons of itself.
    """
    positive = prior[prior > 0]
    total = math.fsum(-positive * np.log(positive))
    return math.nextafter(total * (1.0 + 4 * prior.size * np.finfo(float).eps), math.inf)


def symmetric_relaxation_bound(privacy: PrivacyMatrix, prior: np.ndarray, max_orbits: int = RELAXATION_ORBITS) -> float:
    """An upper bound on ``OPT(E')`` for the row-constant relaxation E' >= E* of the module docstring (inf if none).

    ``max_orbits`` caps the orbit LP (fewer levels, a looser bound, when the budget is short).

    The orbit LP's float duals are made feasible and evaluated in Arb
    (:func:`designer.design.symmetry.exact.information_upper_bound`), so the bound is proven, not the LP's float value.

    Row maxima of E* are rounded up to the finest grid of at most :data:`RELAXATION_LEVELS` levels
    whose classes (equal level and equal prior) keep the orbit LP within its orbit limit. E* is a
    floating-point min-plus closure: each entry is a sum of at most k - 1 entries of E, which can
    round below the true path sum by up to ``(k - 2) u`` relative (``u = 2^-53``), so the row maxima are
    first raised by ``2 k`` machine epsilons; then ``E' >= E*`` holds for the true closure too.
    """
    from designer.design.symmetry import ClassStructure, SymmetryLostError
    from designer.design.symmetry.design import solve_orbits
    from designer.design.symmetry.exact import information_upper_bound

    k = privacy.k
    closure = privacy.closure().epsilon.copy()
    np.fill_diagonal(closure, -np.inf)
    row_max = closure.max(axis=1) * (1.0 + 2.0 * k * np.finfo(float).eps) if k > 1 else np.zeros(1)
    row_max[row_max > MAX_FLOAT_DESIGN_LEVEL] = np.inf  # beyond the orbit LP's doubles: unconstrained, still a relaxation
    finite = np.isfinite(row_max)
    for levels in range(RELAXATION_LEVELS, 0, -1):
        relaxed = row_max.copy()
        if finite.any():
            grid = np.linspace(row_max[finite].min(), row_max[finite].max(), levels)
            relaxed[finite] = grid[np.searchsorted(grid, row_max[finite] - 1e-12 * np.abs(row_max[finite]))]
            relaxed[finite] = np.maximum(relaxed[finite], row_max[finite])
        keys = np.stack([relaxed, prior], axis=1)
        _, label = np.unique(keys, axis=0, return_inverse=True)
        label = label.ravel()
        groups = [np.flatnonzero(label == a) for a in range(label.max() + 1)]
        level_of = np.array([relaxed[group[0]] for group in groups])
        if math.prod(group.size + 1 for group, level in zip(groups, level_of) if 0 < level < np.inf) > max_orbits:
            continue
        structure = ClassStructure(
            [group.size for group in groups], np.repeat(level_of[:, None], len(groups), axis=1),
            np.array([prior[group[0]] for group in groups]), members=groups, name=f"relaxation of {privacy.name}",
        )
        try:
            optimum = solve_orbits(structure)  # the orbits, enumerated once for the LP and for the proof
        except SymmetryLostError:
            continue
        return information_upper_bound(structure, optimum.components, optimum.epsilon, optimum.orbits, optimum.duals)
    return np.inf


def classic_columns(privacy: PrivacyMatrix) -> np.ndarray:
    """Columns of the optimal classic ``eps_min``-LDP channel (uniform prior), ``eps_min = min E``.

    It is E-LDP (``e^{eps_min} <= e^{E[x, x']}``), so the master starts at least at its value;
    its k cyclic shifts come from the orbit LP (:func:`designer.design.symmetry.design_symmetric`).
    """
    from designer.design.symmetry import ClassStructure, design_symmetric

    k = privacy.k
    smallest = float(np.min(privacy.epsilon[~np.eye(k, dtype=bool)])) if k > 1 else 0.0
    design = design_symmetric(ClassStructure.classic(k, smallest))
    columns = design.channel.matrix.T
    return columns / columns.sum(axis=1, keepdims=True)
