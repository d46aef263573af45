"""Which route designs a channel: the front door's one decision (:func:`choose_route`).

Routes (``Route.method``) and when ``method="auto"`` takes each, in this order:

1. ``"closed-form"`` — an entry of :data:`designer.design.closed_form.CLOSED_FORMS` that applies
   (and runs under auto); ``method="closed-form"`` also tries the others, and refuses when none applies.
2. ``"expected-loss"`` — the utility is the expected loss:
   :func:`designer.design.expected_loss.design_expected_loss` on the dense E (the truncated
   geometric closed form on a line, the direct LP, or column generation by output at scale).
3. ``"symmetry"`` — the orbit LP of :func:`designer.design.symmetry.design_symmetric`: E given by
   classes (:class:`~designer.design.symmetry.ClassStructure`), or a dense E above
   :data:`ENUMERATION_K` symbols whose twin classes (with the prior and alternative) make it
   row-constant with at most :data:`~designer.design.symmetry.orbits.MAX_ORBITS` orbits.
4. ``"enumerate"`` — the vertex LP of :func:`designer.design.vertex.design_by_vertices`: a dense E
   up to :data:`ENUMERATION_K` symbols (small-k results unchanged), or one whose symmetry is lost
   up to :data:`COLUMN_GENERATION_K` symbols. Under ``auto``, where column generation fits
   (:func:`column_generation_fits`), the enumeration gets :data:`ENUMERATION_SHARE` of the budget, and
   one that does not finish in it, or an E with a level beyond the double range, hands the rest of the
   budget to column generation instead of refusing (the method's reason says so); otherwise, and past
   ``max_vertices`` (the user's own limit), it refuses.
5. ``"column-generation"`` — :func:`designer.design.gap.design_with_gap`, a certified channel
   with a proven upper bound: symmetry lost above :data:`COLUMN_GENERATION_K` symbols, for mutual
   information in floating point under a positive prior (else enumeration, which refuses politely).

``method`` may name a route: ``"enumerate"`` never uses the orbit LP, ``"symmetry"`` insists on
it (:class:`~designer.design.symmetry.SymmetryLostError` when E has no row-constant twin classes),
``"column-generation"`` runs it on any E (mutual information, float). For the expected loss ``method``
names one of :data:`designer.defaults.EXPECTED_LOSS_METHODS` (``"closed-form"``, ``"direct"``,
``"column-generation"``, ``"interior-point"``, ``"first-order"``), passed on to :func:`designer.design.expected_loss.design_expected_loss`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from designer.defaults import DESIGN_METHODS, EXPECTED_LOSS_METHODS, ROUTE_METHODS
from designer.design.closed_form import CLOSED_FORMS, ClosedForm
from designer.design.problem import Problem
from designer.design.repair import MAX_FLOAT_DESIGN_LEVEL
from designer.design.symmetry.classes import ClassStructure, twin_classes
from designer.design.symmetry.orbits import SymmetryLostError, check_orbit_count, row_levels

#: The front door's methods: "auto" and the routes one may ask for.
METHODS = DESIGN_METHODS
#: Dense E up to this many symbols are enumerated under ``auto`` (classic LDP: 65,534 vertices).
ENUMERATION_K = 16
#: Share of ``max_seconds`` an enumeration gets under ``auto`` when column generation can take over (a metric
#: line of 16 values at epsilon 1 did not finish in 30 s, where column generation closes a 1% gap in seconds).
ENUMERATION_SHARE = 0.5
#: Dense E without symmetry above this many symbols go to column generation under ``auto``
#: (classic LDP at k = 20 already has 1,048,574 vertices; a random E's cone grows as fast).
COLUMN_GENERATION_K = 20


@dataclass(frozen=True)
class Route:
    """The chosen route: its method, why, and what it runs on (the structure for the orbit LP, else dense E)."""

    method: str
    reason: str
    structure: ClassStructure | None = None
    form: ClosedForm | None = None


def choose_route(problem: Problem, method: str = "auto") -> Route:
    """The route for ``problem`` and the one-line reason (module docstring).

    Raises
    ------
    ValueError
        An unknown method, a method that does not fit the utility, a class level beyond the
        orbit LP's range, or no closed form for ``method="closed-form"``.
    SymmetryLostError
        ``method="symmetry"`` on an E without a row-constant class structure.
    """
    if method not in METHODS:
        raise ValueError(f"--method must be one of {', '.join(METHODS)}, got {method!r}")
    if problem.utility == "expected-loss":
        if method not in EXPECTED_LOSS_METHODS:
            raise ValueError(f"--method {method} does not design for the expected loss; use one of "
                             f"{', '.join(EXPECTED_LOSS_METHODS)}")
        return Route("expected-loss", "expected loss: the line's closed form, the direct LP, column generation by "
                     "output, an interior-point method by blocks or a first-order method (designer.design.expected_loss "
                     "says which and why)")
    if method not in ROUTE_METHODS:
        raise ValueError(f"--method {method} designs for the expected loss only (--utility expected-loss)")
    if method in ("auto", "closed-form"):
        for form in CLOSED_FORMS:
            reason = form.applies(problem) if form.under_auto or method == "closed-form" else None
            if reason:
                return Route("closed-form", f"closed form ({form.name}): {reason}", form=form)
        if method == "closed-form":
            raise ValueError(f"no closed form applies to this E and utility (known: {', '.join(f.name for f in CLOSED_FORMS)})")
    if method == "column-generation":
        if problem.utility != "mutual-information" or problem.exact:
            raise ValueError("--method column-generation designs for mutual information in floating point (no --exact)")
        return Route("column-generation", "column generation with certified bounds (asked for)")
    exact = " (exact)" if problem.exact else ""
    if isinstance(problem.privacy, ClassStructure):
        if method == "enumerate":
            return Route("enumerate", "vertex enumeration" + exact)
        check_class_levels(problem.privacy)
        structure = problem.privacy.with_distributions(problem.prior, problem.alternative)
        return Route("symmetry", "symmetry: classes given, orbit LP" + exact, structure)
    k = problem.k
    if method == "enumerate" or (method == "auto" and k <= ENUMERATION_K):
        return Route("enumerate", f"vertex enumeration{exact}" + ("" if method == "enumerate" else f" (dense E, k = {k} <= {ENUMERATION_K})"))
    structure = twin_classes(problem.privacy, problem.prior, problem.alternative)
    try:
        epsilon, components = row_levels(structure)
        check_orbit_count(structure, epsilon, components)
    except SymmetryLostError as error:
        if method == "symmetry":
            raise
        lost = f"symmetry lost ({structure.r} twin classes: {error})"
        if k > COLUMN_GENERATION_K and column_generation_fits(problem):
            return Route("column-generation", f"{lost}; k = {k} > {COLUMN_GENERATION_K}: column generation with certified bounds")
        return Route("enumerate", f"{lost}; vertex enumeration{exact}")
    check_class_levels(structure)
    note = f"symmetry: {structure.r} twin classes of sizes {_sizes(structure)}, orbit LP"
    if problem.exact:
        from designer.design.symmetry.exact import with_exact_levels

        structure = with_exact_levels(problem.privacy, structure)
        if structure is None:
            return Route("enumerate", "symmetry lost for --exact (a twin class holds differently written levels); "
                                      "vertex enumeration (exact)")
    return Route("symmetry", note + exact, structure)


def column_generation_fits(problem: Problem) -> bool:
    """Whether column generation with certified bounds can design ``problem``: mutual information, in floating
    point, under a positive prior (also the fallback of an enumeration under ``auto`` that cannot finish)."""
    return problem.utility == "mutual-information" and not problem.exact and (
        problem.prior is None or bool(np.all(np.asarray(problem.prior) > 0)))


def check_class_levels(structure: ClassStructure) -> None:
    """Refuse class levels the orbit LP (in floats) cannot represent: finite levels above
    :data:`~designer.design.repair.MAX_FLOAT_DESIGN_LEVEL` (``e^-level`` would be subnormal).

    Up to it the orbit LP runs on scaled orbits (:meth:`~designer.design.symmetry.orbits.Orbits.scale`):
    classic LDP at eps = 40 or 700 is designed and certified."""
    too_large = np.argwhere(np.isfinite(structure.levels) & (structure.levels > MAX_FLOAT_DESIGN_LEVEL))
    if too_large.size:
        a, b = too_large[0]
        raise ValueError(
            f"class level row {a}, column {b}: level {structure.exact_level(a, b)} is beyond the double range "
            f"(orbit-LP designs accept finite levels up to {MAX_FLOAT_DESIGN_LEVEL:.2f}); lower it, or write inf "
            "if the pair needs no constraint"
        )


def _sizes(structure: ClassStructure) -> str:
    sizes = structure.sizes.tolist()
    return ", ".join(map(str, sizes[:6])) + (", ..." if len(sizes) > 6 else "")
