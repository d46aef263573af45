"""PolyOpt: robust LDP through a polyhedral envelope of F (robust-ldp-chi-square.md, Section V).

Privacy (Theorem 11). Let ``m[s, u] = P^min_{u|s} = min_{P in F} P_{u|s}``
(Lemma 9 on the Lemma 8 ball, :meth:`ConfidenceSet.conditional_bounds`). The cone
Γ of eq. (44) is the set of ``T >= 0`` in ``R^X`` with, for all ``s1 != s2`` and
all ``u1, u2``,

    T[s1,u1] - e^eps T[s2,u2] + sum_u m[s1,u] (T[s1,u] - T[s1,u1])
                              - e^eps sum_u m[s2,u] (T[s2,u] - T[s2,u2]) <= 0.       (44)

(For ``s1 = s2`` condition (2) is trivial, and the derivation (59)–(64) of the
paper needs ``s1 != s2``; these are the ``|S|(|S|-1)|U|^2`` rows, 63 with
``q >= 0`` for |S| = |U| = 3.) Every protocol whose output columns ``Q[:, y]``
lie in Γ is (eps, F)-RLDP.

Utility (Theorem 12). With ``mu(v) = sum_x v_x P̂_x log(v_x / sum_x' v_x' P̂_x')``
(eq. 45, :func:`designer.utility.column_information`), the LP (47)

    maximise sum_v theta_v mu(v)   over theta >= 0,   sum_v theta_v v = 1_X,

over the vertices ``v`` of ``Γ̂ = {T in Γ : sum T = 1}``, gives ``Q1[x, v] = theta_v v_x``,
which maximises ``I_P̂(X; Y)`` among the protocols of Theorem 11 (``I_P̂(X;Y) = sum_y mu(Q[:, y])``).
With ``mu2(v) = min_{P in D} mu_P(v)`` over a polytope ``D`` containing F (eq. 46
with F replaced by ``D``, as the paper suggests; here ``D`` = the simplex cut by
the Lemma 9 box), the same LP gives ``Q2`` and ``L = sum theta2_v mu2(v)`` with
``inf_{P in F} I_P(X; Y(Q2)) >= L``.

How the LP is solved (``method``):

* ``"enumeration"`` — every vertex of Γ̂ by pycddlib (:mod:`solvers.vertices`)
  in exact rational arithmetic (floating-point cdd loses vertices, see
  :func:`cone_vertices`), then the vertex LP with HiGHS (:mod:`solvers.linear`).
  Optimality is *proved*: the LP dual ``y`` satisfies ``mu(v) <= y . v + r`` for
  every vertex with the reported residual ``r`` (~1e-10), so the optimum is at
  most ``y . 1 + |X| max(r, 0)`` plus a rounding allowance
  (:func:`dual_upper_bound`, :attr:`PolyOptResult.upper_bound`). Cost grows
  with the vertex count: seconds for |X| <= 9; for (|S|, |U|) = (3, 4) it did not
  finish in 11 minutes (use column generation with ``verify=True`` there).
* ``"column-generation"`` — a restricted LP over a few vertices plus a pricing
  heuristic (:mod:`solvers.column_generation`: successive linearisation of the
  convex reduced cost ``mu(v) - y . v``, each step a vertex of Γ̂). The channel is
  (eps, F)-RLDP and its utility is exact, but it is a **lower bound** on the
  PolyOpt optimum: ``optimal`` is False and ``upper_bound`` None, unless
  ``verify=True``: then the vertices of a slightly larger cone with short
  rational coefficients (:func:`outer_cone_inequalities`) are enumerated exactly
  and the LP dual is checked on them, which proves an upper bound (and
  optimality when the gap is below the tolerance).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from designer.channel import Channel
from designer.robust.confidence import ConfidenceSet
from designer.robust.protocols import check_design_epsilon
from designer.utility import column_information, entropy
from solvers.column_generation import column_generation, max_reduced_cost
from solvers.linear import LinearProgramError, solve_vertex_lp
from solvers.vertices import EnumerationTimeoutError, enumerate_cone_rays

#: Columns whose LP weight theta_v is at most this are left out of Q.
ZERO_WEIGHT = 1e-14
#: Reduced costs up to this count as non-improving (nats per unit of column mass).
PRICING_TOLERANCE = 1e-9
#: |X| up to which ``method="auto"`` enumerates every vertex.
AUTO_ENUMERATION_MAX_INPUTS = 9


@dataclass(frozen=True)
class PolyOptResult:
    """A PolyOpt protocol (the fields shared with the other robust protocols come first).

    Attributes
    ----------
    name : str
        ``"polyopt"``.
    epsilon : float
    params : dict
        JSON-ready summary: ``method``, ``exact_vertices`` (whether the vertex
        list came from exact arithmetic; None when not enumerated), ``vertices``
        (count when enumerated, else None), ``columns`` (columns the LP was solved over), ``outputs``,
        ``restricted_lps`` and ``pricing_lps`` (column generation, else None),
        ``optimal``, ``upper_bound``, ``cone_violation`` (largest relative
        violation of (44) by the channel's columns; <= 0 inside Γ), ``seconds``.
    utility : float
        ``I_P̂(X; Y)`` in nats of :attr:`channel` (Theorem 12, item 1).
    normalised_utility : float
        ``utility / H_P̂(X)``.
    channel : Channel
        ``Q1``: rows ``(s, u)`` in :attr:`ConfidenceSet.inputs` order, one column per used vertex.
    seconds : float
        Wall-clock time of the whole design.
    optimal : bool
        True when optimality among the protocols of Theorem 11 is proved.
    upper_bound : float or None
        A proved upper bound on that optimum (equal to ``utility`` up to the LP
        tolerance when ``optimal``), None when not proved.
    method : str
        ``"enumeration"`` or ``"column-generation"``.
    columns : ndarray (k, |X|)
        The vertices (or generated columns) the LP was solved over; reused by
        :func:`robust_lower_bound`.
    """

    name: str
    epsilon: float
    params: dict
    utility: float
    normalised_utility: float
    channel: Channel = field(repr=False)
    seconds: float = 0.0
    optimal: bool = False
    upper_bound: float | None = None
    method: str = "enumeration"
    columns: np.ndarray = field(default=None, repr=False)


@dataclass(frozen=True)
class RobustLowerBound:
    """Theorem 12, item 2: the protocol ``Q2`` and the bound ``L <= inf_{P in F} I_P(X; Y)``.

    Attributes
    ----------
    bound : float
        ``L = sum_v theta2_v mu2(v)`` in nats.
    channel : Channel
        ``Q2`` (its columns lie in Γ, so it is (eps, F)-RLDP).
    vertices : int
        Number of columns the LP was solved over.
    seconds : float
    """

    bound: float
    channel: Channel = field(repr=False)
    vertices: int = 0
    seconds: float = 0.0


def cone_inequalities(confidence: ConfidenceSet, epsilon: float) -> np.ndarray:
    """Rows ``a`` with ``a . T >= 0`` describing Γ (eq. 44 negated, then ``T >= 0``).

    Returns
    -------
    ndarray, shape (|S|(|S|-1)|U|^2 + |X|, |X|)
        Indexed like :attr:`ConfidenceSet.prior` (``x = s |U| + u``).
    """
    epsilon = _check_epsilon(epsilon)
    a1, a2 = confidence.shape
    m = confidence.conditional_bounds()[0]
    ratio = np.exp(epsilon)
    rows = []
    eye = np.eye(a2)
    for s1 in range(a1):
        for s2 in range(a1):
            if s1 == s2:
                continue
            # first block: T[s1,u1] (1 - M1) + m1 . T[s1]; second: -e^eps (T[s2,u2] (1 - M2) + m2 . T[s2])
            first = eye * (1.0 - m[s1].sum()) + m[s1][None, :]  # (u1, u)
            second = -ratio * (eye * (1.0 - m[s2].sum()) + m[s2][None, :])  # (u2, u)
            block = np.zeros((a2, a2, a1, a2))
            block[:, :, s1, :] = first[:, None, :]
            block[:, :, s2, :] = second[None, :, :]
            rows.append(-block.reshape(a2 * a2, a1 * a2))
    return np.vstack(rows + [np.eye(a1 * a2)])


def cone_violation(confidence: ConfidenceSet, epsilon: float, columns) -> float:
    """Largest relative violation ``max(-a . q / ||a||_inf)`` of Γ over normalised columns (<= 0: inside)."""
    rows = cone_inequalities(confidence, epsilon)
    columns = np.atleast_2d(np.asarray(columns, dtype=float))
    columns = columns / columns.sum(axis=1, keepdims=True)
    return float(np.max(-(columns @ rows.T) / np.abs(rows).max(axis=1)))


def outer_cone_inequalities(confidence: ConfidenceSet, epsilon: float, denominator: int = 2**40) -> np.ndarray:
    """Rational rows of a cone Γ'' ⊇ Γ: (44) with ``P^min`` and ``e^eps`` rounded *up* to ``k / denominator``.

    Larger ``P^min_{u|s}`` shrinks each simplex ``D_{U|s}`` of Theorem 11 and a larger
    ``e^eps`` loosens (44), so every row is implied by the true rows: Γ ⊆ Γ''. Short
    rationals keep the degenerate structure of (44) (float coefficients read exactly
    split degenerate vertices into clusters) and make exact enumeration much faster;
    the vertices of Γ̂'' bound the LP (47) over Γ from above (:func:`polyopt` with
    ``verify=True``).

    Returns
    -------
    ndarray of Fraction, shape like :func:`cone_inequalities`.
    """
    epsilon = _check_epsilon(epsilon)
    a1, a2 = confidence.shape
    m = [[Fraction(math.ceil(value * denominator), denominator) for value in row]
         for row in confidence.conditional_bounds()[0]]
    # np.exp as in cone_inequalities (so Γ'' contains that cone), one ulp up against rounding
    ratio = Fraction(math.ceil(math.nextafter(float(np.exp(epsilon)), math.inf) * denominator), denominator)
    rows = []
    for s1, s2 in itertools.permutations(range(a1), 2):
        total1, total2 = sum(m[s1]), sum(m[s2])
        for u1, u2 in itertools.product(range(a2), repeat=2):
            row = [[Fraction(0)] * a2 for _ in range(a1)]
            for u in range(a2):
                row[s1][u] += m[s1][u]
                row[s2][u] -= ratio * m[s2][u]
            row[s1][u1] += 1 - total1
            row[s2][u2] -= ratio * (1 - total2)
            rows.append([-value for block in row for value in block])
    a = a1 * a2
    rows += [[Fraction(int(i == j)) for j in range(a)] for i in range(a)]
    return np.array(rows, dtype=object)


def cone_vertices(confidence: ConfidenceSet, epsilon: float, exact: bool = True,
                  max_vertices: int | None = None) -> np.ndarray:
    """Every vertex of Γ̂ (pycddlib double description).

    Parameters
    ----------
    exact : bool
        True (default): the rows of :func:`cone_inequalities` (floats, read as
        their exact binary values) are enumerated in GMP rational arithmetic, so
        the list is complete for that cone. False: floating-point cdd, faster
        but it can silently *lose* vertices (measured: 288 of 1,416 at eps = 8,
        1,731 of 1,824 at eps = 1 on a (3,3) instance), so nothing proved from
        such a list is a proof.

    Returns
    -------
    ndarray, shape (n_vertices, |X|), rows summing to 1.
    """
    rows = cone_inequalities(confidence, epsilon)
    return enumerate_cone_rays(rows, exact=exact, row_order="lex_min", max_vertices=max_vertices).vertices


def polyopt(
    confidence: ConfidenceSet,
    epsilon: float,
    method: str = "auto",
    verify: bool = False,
    seed: int = 0,
    exact: bool = True,
) -> PolyOptResult:
    """Design ``Q1`` of Theorem 12: the best ``I_P̂(X; Y)`` among protocols with columns in Γ.

    Parameters
    ----------
    confidence : ConfidenceSet
    epsilon : float
        RLDP level, ``0 < epsilon <= MAX_EPSILON`` (700, :data:`designer.robust.protocols.MAX_EPSILON`).
    method : {"auto", "enumeration", "column-generation"}
        See the module docstring. ``"auto"`` enumerates when ``|X| <= 9``
        (about 1–5 s in exact arithmetic for |X| = 9), else generates columns.
    verify : bool
        With column generation, also bound the optimum from above
        (:func:`outer_cone_bound`): every vertex of the outer rational cone Γ'' ⊇ Γ
        (:func:`outer_cone_inequalities`) is enumerated exactly and
        ``upper_bound = y . 1 + |X| max(0, max_v mu(v) - y . v)`` (plus a rounding
        allowance, :func:`dual_upper_bound`) over them (valid because Γ̂ ⊆ conv of
        those vertices and mu is convex). :func:`verify_optimality` does the same
        after the fact, with a time budget and progress reports.
        ``optimal`` is True when ``upper_bound - utility <= |X| 1e-9``; otherwise
        the gap is proved but includes the ``2^-40`` rounding of Γ'' (measured: 6e-12
        nats on a (3,3) case).
    seed : int
        Seed of the random pricing directions (column generation).
    exact : bool
        Enumerate vertices in exact rational arithmetic (default; needed for a
        proof, see :func:`cone_vertices`). With ``exact=False`` enumeration is
        in floating point, ``optimal`` is False and ``upper_bound`` None (the
        list may be incomplete), and an infeasible vertex LP (a symptom of lost
        vertices) triggers an exact rerun.

    Returns
    -------
    PolyOptResult

    Examples
    --------
    >>> F = ConfidenceSet([[30, 10, 5], [20, 40, 15], [5, 5, 20]], alpha=0.05)
    >>> result = polyopt(F, 1.0)
    >>> result.optimal, result.params["method"], result.channel.k
    (True, 'enumeration', 9)
    """
    epsilon = _check_epsilon(epsilon)
    if method == "auto":
        method = "enumeration" if confidence.prior.size <= AUTO_ENUMERATION_MAX_INPUTS else "column-generation"
    if method not in ("enumeration", "column-generation"):
        raise ValueError(f"unknown PolyOpt method {method!r}; choose 'auto', 'enumeration' or 'column-generation'")
    start = time.perf_counter()
    prior = confidence.prior
    a = prior.size
    ones = np.ones(a)
    vertices_count = exact_vertices = None
    rounds = pricing_lps = None
    if method == "enumeration":
        columns = cone_vertices(confidence, epsilon, exact=exact)
        values = column_information(prior, columns.T)
        try:
            lp = solve_vertex_lp(columns, values, ones)
        except LinearProgramError:
            if exact:
                raise
            exact = True  # float cdd lost vertices: redo exactly
            columns = cone_vertices(confidence, epsilon, exact=True)
            values = column_information(prior, columns.T)
            lp = solve_vertex_lp(columns, values, ones)
        vertices_count, exact_vertices = columns.shape[0], bool(exact)
        upper = dual_upper_bound(columns, values, lp.duals) if exact else None
        optimal = upper is not None and upper - float(lp.objective) <= a * PRICING_TOLERANCE
    else:
        rows = cone_inequalities(confidence, epsilon)
        generated = column_generation(
            rows[:-a], lambda q: column_information(prior, q.T), lambda q: _gradient(prior, q), ones,
            initial_columns=_initial_columns(a), tolerance=PRICING_TOLERANCE, seed=seed,
        )
        columns = generated.columns
        rounds, pricing_lps = generated.iterations, generated.pricing_lps
        values = column_information(prior, columns.T)
        lp = solve_vertex_lp(columns, values, ones)
        optimal, upper = False, None
        if verify:
            proof = outer_cone_bound(confidence, epsilon, columns, lp=lp)
            vertices_count, exact_vertices = proof.vertices, True
            upper, optimal = proof.upper_bound, proof.status == "proved"
    channel = _channel(confidence, columns, lp.weights)
    utility = float(np.sum(column_information(prior, channel.matrix)))
    seconds = time.perf_counter() - start
    violation = cone_violation(confidence, epsilon, channel.matrix.T)
    params = {
        "method": method,
        "exact_vertices": exact_vertices,
        "vertices": vertices_count,
        "columns": int(columns.shape[0]),
        "outputs": int(channel.n_outputs),
        "restricted_lps": rounds,
        "pricing_lps": pricing_lps,
        "optimal": bool(optimal),
        "upper_bound": upper,
        "cone_violation": violation,
        "seconds": seconds,
    }
    return PolyOptResult(
        name="polyopt", epsilon=epsilon, params=params, utility=utility,
        normalised_utility=utility / entropy(prior), channel=channel, seconds=seconds,
        optimal=bool(optimal), upper_bound=upper, method=method, columns=columns,
    )


@dataclass(frozen=True)
class OptimalityProof:
    """A proved upper bound on the PolyOpt optimum (the LP (47) of Theorem 12), or why there is none.

    Attributes
    ----------
    status : str
        ``"proved"`` (``gap <= |X| 1e-9``: the design is optimal among the protocols of
        Theorem 11), ``"bounded"`` (a proved bound, larger gap) or ``"unfinished"`` (the
        vertex enumeration ran out of ``max_seconds``; no bound).
    utility : float
        The utility the gap is measured from: ``I_P̂(X; Y)`` of the design's channel
        (:func:`verify_optimality`) or of its LP (:func:`outer_cone_bound` alone), in nats.
    upper_bound, gap : float or None
        The bound and ``upper_bound - utility`` (None when unfinished).
    vertices : int or None
        Vertices the LP dual was checked on: every vertex of Γ̂ (``cone = "inner"``) or of
        the outer rational cone Γ'' ⊇ Γ (``cone = "outer"``); None when unfinished.
    cone : str
        ``"inner"`` (the design enumerated Γ̂ exactly: its own vertex list is the proof)
        or ``"outer"`` (:func:`outer_cone_inequalities`).
    seconds : float
        Time spent on the proof (0 when the design's enumeration was the proof).
    max_seconds : float or None
        The budget.
    """

    status: str
    utility: float
    upper_bound: float | None
    gap: float | None
    vertices: int | None
    cone: str
    seconds: float
    max_seconds: float | None = None

    def to_dict(self) -> dict:
        """JSON-ready fields (no infinities or NaN: a missing number is None)."""
        return {"status": self.status, "upper_bound": self.upper_bound, "utility": self.utility, "gap": self.gap,
                "vertices": self.vertices, "cone": self.cone, "seconds": self.seconds,
                "max_seconds": self.max_seconds}


#: Vertices per progress step of the dual check in :func:`outer_cone_bound`.
PROOF_CHUNK = 4096


def dual_upper_bound(vertices, values, duals) -> float:
    """``y . 1 + |X| max(0, max_v mu(v) - y . v)`` plus a rounding allowance: a bound on the LP (47).

    For weights ``theta >= 0`` with ``sum_v theta_v v = 1`` (so ``sum theta = |X|``, each
    vertex summing to 1), ``sum theta_v mu(v) <= y . 1 + |X| max_v (mu(v) - y . v)``
    (weak duality); when ``vertices`` contain every vertex of the cone's slice (or of a
    larger polytope, ``mu`` being convex) this bounds the optimum. The allowance covers
    the floating-point evaluation of ``mu(v)`` and ``y . v`` (``64 |X| ulp`` relative).

    Raises
    ------
    ArithmeticError
        If a value or a dual is not finite: a bound never rests on a NaN.
    """
    vertices, values, duals = (np.asarray(item, dtype=float) for item in (vertices, values, duals))
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(duals))):
        raise ArithmeticError("the PolyOpt optimality bound met a non-finite value or dual; no bound is proved")
    a = duals.size
    residual = max_reduced_cost(vertices, values, duals)
    allowance = 64 * np.finfo(float).eps * a * (1.0 + np.abs(values).max() + np.abs(duals).sum())
    return float(duals.sum() + a * (max(residual, 0.0) + allowance))


def outer_cone_bound(confidence: ConfidenceSet, epsilon: float, columns, lp=None,
                     max_seconds: float | None = None, progress=None,
                     utility: float | None = None) -> OptimalityProof:
    """Bound the PolyOpt optimum over the vertices of the outer cone Γ'' (:func:`outer_cone_inequalities`).

    The LP (47) over ``columns`` (points of Γ̂) gives duals ``y``; every vertex of
    ``Γ̂'' ⊇ Γ̂`` is enumerated in exact arithmetic and :func:`dual_upper_bound` over
    them bounds the optimum over Γ̂ (``mu`` is convex, so its maximum minus ``y . v``
    over ``Γ̂`` is attained at a vertex of the larger polytope or below).

    Parameters
    ----------
    confidence : ConfidenceSet
    epsilon : float
    columns : ndarray (k, |X|)
        The design's columns.
    lp : VertexLPResult, optional
        The LP over ``columns`` if already solved.
    max_seconds : float, optional
        Wall-clock budget of the enumeration (run in a child process); when it runs
        out the proof is ``"unfinished"``.
    progress : callable, optional
        ``progress(stage, completed, total)`` with ``stage`` in ``"enumerate"`` (no count
        is known: ``total`` None) and ``"check"`` (vertices checked of ``total``).
    utility : float, optional
        The utility the gap is measured from (default: the LP objective over ``columns``).

    Returns
    -------
    OptimalityProof
    """
    epsilon = _check_epsilon(epsilon)
    start = time.perf_counter()
    prior = confidence.prior
    columns = np.atleast_2d(np.asarray(columns, dtype=float))
    if lp is None:
        lp = solve_vertex_lp(columns, column_information(prior, columns.T), np.ones(prior.size))
    utility = float(lp.objective) if utility is None else float(utility)
    notify = progress or (lambda stage, completed, total: None)
    notify("enumerate", 0, None)
    try:
        outer = enumerate_cone_rays(outer_cone_inequalities(confidence, epsilon), exact=True,
                                    row_order="lex_min", max_seconds=max_seconds).vertices
    except EnumerationTimeoutError:
        return OptimalityProof("unfinished", utility, None, None, None, "outer",
                               time.perf_counter() - start, max_seconds)
    except MemoryError:
        raise MemoryError("the vertex enumeration of the outer cone ran out of memory") from None
    values = np.empty(outer.shape[0])
    for begin in range(0, outer.shape[0], PROOF_CHUNK):
        notify("check", begin, outer.shape[0])
        chunk = outer[begin:begin + PROOF_CHUNK]
        values[begin:begin + PROOF_CHUNK] = column_information(prior, chunk.T)
    notify("check", outer.shape[0], outer.shape[0])
    upper = dual_upper_bound(outer, values, lp.duals)
    return _proof(upper, utility, outer.shape[0], "outer", prior.size, time.perf_counter() - start, max_seconds)


def verify_optimality(confidence: ConfidenceSet, design: PolyOptResult, max_seconds: float | None = None,
                      progress=None) -> OptimalityProof:
    """The optimality proof of a PolyOpt design (the ``robust --verify`` of the command line).

    A design by exact enumeration already carries it (the LP dual checked on every
    vertex of Γ̂): it is returned as is. Otherwise (column generation, or a
    floating-point enumeration) the bound comes from :func:`outer_cone_bound`.

    Parameters
    ----------
    confidence : ConfidenceSet
        The set the design was made for.
    design : PolyOptResult
    max_seconds : float, optional
        Budget of the vertex enumeration; ``"unfinished"`` when it runs out.
    progress : callable, optional
        See :func:`outer_cone_bound`.

    Returns
    -------
    OptimalityProof
    """
    a = confidence.prior.size
    if design.upper_bound is not None:  # exact enumeration, or polyopt(verify=True): the proof is there
        cone = "inner" if design.method == "enumeration" else "outer"
        return _proof(design.upper_bound, design.utility, design.params["vertices"], cone, a, 0.0, max_seconds)
    return outer_cone_bound(confidence, design.epsilon, design.columns, max_seconds=max_seconds,
                            progress=progress, utility=design.utility)


def _proof(upper: float, utility: float, vertices: int, cone: str, a: int, seconds: float,
           max_seconds: float | None) -> OptimalityProof:
    """``"proved"`` when the gap is within the LP tolerance ``|X| PRICING_TOLERANCE``, else ``"bounded"``."""
    gap = upper - utility
    status = "proved" if gap <= a * PRICING_TOLERANCE else "bounded"
    return OptimalityProof(status, utility, upper, gap, int(vertices), cone, seconds, max_seconds)


def robust_column_information(confidence: ConfidenceSet, columns) -> np.ndarray:
    """``mu2(v) = min_{P in D} mu_P(v)`` (eq. 46 over the polytope D containing F), per column.

    ``D = {P : lower <= P <= upper, sum P = 1}`` with the Lemma 9 bounds. ``mu_P(v)
    = c . P - phi(v . P)`` with ``c_x = v_x log v_x`` and ``phi(z) = z log z``
    convex, so ``mu_P(v)`` is concave in ``(v . P, c . P)`` and its minimum over
    ``D`` is attained at a vertex of the polygon ``{(v . P, c . P) : P in D}``.
    Each polygon vertex minimises some ``alpha v . P + beta c . P`` over ``D``,
    which a greedy fill solves (lower bounds, then the remaining mass to the
    smallest keys); the greedy order only changes at the ``|X|(|X|-1)``
    directions where two keys tie, so one direction inside each arc between
    consecutive critical angles reaches every polygon vertex.

    Returns
    -------
    ndarray, shape (n_columns,)
    """
    columns = np.atleast_2d(np.asarray(columns, dtype=float))
    lower, upper = (bound.ravel() for bound in confidence.probability_bounds())
    capacity = upper - lower
    remaining = 1.0 - lower.sum()
    out = np.empty(columns.shape[0])
    for index, v in enumerate(columns):
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(v > 0, v * np.log(v), 0.0)
        dv = v[:, None] - v[None, :]
        dc = c[:, None] - c[None, :]
        # directions (cos t, sin t) with cos t dv + sin t dc = 0
        angles = np.arctan2(-dv, dc)[~np.eye(v.size, dtype=bool)]
        angles = np.unique(np.mod(np.concatenate([angles, angles + np.pi]), 2 * np.pi))
        middles = (angles + np.diff(np.append(angles, angles[0] + 2 * np.pi)) / 2) if angles.size else np.array([0.0])
        keys = np.cos(middles)[:, None] * v[None, :] + np.sin(middles)[:, None] * c[None, :]
        order = np.argsort(keys, axis=1, kind="stable")
        cap = capacity[order]
        before = np.cumsum(cap, axis=1) - cap
        fill = np.clip(remaining - before, 0.0, cap)
        points = np.tile(lower, (middles.size, 1))
        np.put_along_axis(points, order, lower[order] + fill, axis=1)
        z = points @ v
        with np.errstate(divide="ignore", invalid="ignore"):
            phi = np.where(z > 0, z * np.log(z), 0.0)
        out[index] = float(np.min(points @ c - phi))
    return out


def robust_lower_bound(confidence: ConfidenceSet, epsilon: float, columns=None) -> RobustLowerBound:
    """``Q2`` and ``L`` of Theorem 12, item 2: ``inf_{P in F} I_P(X; Y) >= L`` for ``Q2``.

    Parameters
    ----------
    confidence : ConfidenceSet
    epsilon : float
    columns : array_like (k, |X|), optional
        Points of Γ̂ to solve the LP over; default every vertex of Γ̂
        (enumeration). Any set of points of Γ̂ whose LP is feasible gives a valid
        bound (the proof only uses ``Q2[:, v] = theta_v v`` and ``mu_P >= mu2``);
        the full vertex set gives the paper's L.
    """
    epsilon = _check_epsilon(epsilon)
    start = time.perf_counter()
    columns = cone_vertices(confidence, epsilon, exact=True) if columns is None else np.atleast_2d(np.asarray(columns, dtype=float))
    values = robust_column_information(confidence, columns)
    lp = solve_vertex_lp(columns, values, np.ones(confidence.prior.size))
    channel = _channel(confidence, columns, lp.weights)
    bound = float(np.sum(robust_column_information(confidence, channel.matrix.T)))
    return RobustLowerBound(bound=bound, channel=channel, vertices=int(columns.shape[0]),
                            seconds=time.perf_counter() - start)


# ----------------------------------------------------------------------------- internals
def _check_epsilon(epsilon: float) -> float:
    """``epsilon`` if ``0 < epsilon <= MAX_EPSILON`` (:func:`designer.robust.protocols.check_design_epsilon`)."""
    epsilon = check_design_epsilon(epsilon)
    if epsilon == 0:
        raise ValueError("epsilon must be positive for PolyOpt, got 0.0 (the cone (44) is then a single ray)")
    return epsilon


def _gradient(prior: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Gradient of ``mu`` at ``q > 0``: ``P_x log(q_x / (P . q))``."""
    return prior * np.log(q / (prior @ q))


def _initial_columns(a: int) -> np.ndarray:
    """The uniform column (in Γ̂: all constraints hold with slack ``1 - e^eps <= 0``): a feasible start."""
    return np.full((1, a), 1.0 / a)


def _channel(confidence: ConfidenceSet, columns: np.ndarray, weights: np.ndarray) -> Channel:
    """``Q[x, v] = theta_v v_x`` for the used columns; rows renormalised (LP residual ~1e-10)."""
    used = np.flatnonzero(weights > ZERO_WEIGHT)
    matrix = np.maximum(columns[used] * weights[used, None], 0.0).T  # cdd vertices carry -1e-15 noise
    matrix = matrix / matrix.sum(axis=1, keepdims=True)
    outputs = [f"v{i + 1}" for i in range(used.size)]
    return Channel(matrix, confidence.input_labels, outputs)
