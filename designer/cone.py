"""The cone of admissible output columns of an E-LDP channel.

A k x m channel Q is E-LDP iff every column q = Q[:, y] lies in

    C_E = { q >= 0 : q_x <= exp(E[x, x']) q_x'  for all x, x' }

(Definition 2 of context-aware-ldp.md, per-output form). Only the
non-redundant pairs of :meth:`PrivacyMatrix.nonredundant_pairs` are needed
(the others are implied along paths), and when the constraint graph splits
into components the cone is the product of the components' cones, so its
extreme rays are the rays of one component padded with zeros: a block E costs
the *sum* of its blocks' ray counts, not their product.

Within a component whose closure ``E*`` is uniform (every pair ``epsilon``) the
rays are known in closed form: the ``2^d - 2`` non-constant vectors with
entries in ``{1, e^epsilon}`` (Kairouz, Oh, Viswanath 2014; Appendix A-A of
robust-ldp-chi-square.md). Other components are enumerated with cdd
(:mod:`solvers.vertices`).

Exact mode uses rational ratios: ``r`` exactly for ``epsilon = log(r)``, and a
rigorous *lower* bound of ``exp(epsilon)`` for a rational ``epsilon`` (the cone
shrinks by less than 1e-30 relative, so its rays are provably admissible).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from designer.defaults import DEFAULT_MAX_SECONDS, DEFAULT_MAX_VERTICES
from designer.exact import ExactEpsilon, exp_bounds
from designer.spec import PrivacyMatrix
from solvers.vertices import (
    EnumerationTimeoutError,
    TooManyVerticesError,
    enumerate_cone_rays,
    uniform_ratio_cone_rays,
    uniform_ratio_cone_size,
)

#: Components whose upper bound is at most this are enumerated in-process
#: (cdd needs well under a second there; a child process costs ~20 ms).
IN_PROCESS_BOUND = 20_000
#: Bits of precision of the rational lower bound of exp(epsilon) in exact mode.
EXACT_EXP_BITS = 128


class ConeTooLargeError(TooManyVerticesError):
    """The cone has more vertices than ``max_vertices``, or enumerating it exceeded ``max_seconds``."""


class ConeTimeoutError(ConeTooLargeError, EnumerationTimeoutError):
    """Enumerating the cone exceeded ``max_seconds`` (the front door's ``auto`` then turns to column generation)."""


#: What to try instead, appended to every refusal.
SUGGESTION = (
    "use --method column-generation (mutual information: a certified channel with a proven gap, any k), "
    "a structured mechanism (randomised response, Hadamard response) or a coarser E (merge symbols, make distant pairs inf)"
)


@dataclass(frozen=True)
class ComponentVertices:
    """Vertices of one component's cone, in the component's own coordinates.

    ``vertices`` (n, d) floats summing to 1 per row; ``method`` is
    ``"closed-form"`` or ``"enumerated"``; ``seconds`` the time spent;
    ``exact_used`` whether the rays are known exactly (then
    :meth:`exact_vertex` gives them as Fractions).
    """

    symbols: np.ndarray
    vertices: np.ndarray
    method: str
    seconds: float
    exact_used: bool
    exact_vertices: list | None = None
    exact_uniform_ratio: Fraction | None = None

    @property
    def n_vertices(self) -> int:
        return self.vertices.shape[0]

    def exact_vertex(self, index: int) -> list[Fraction]:
        """Vertex ``index`` as exact rationals summing to 1 (exact mode only)."""
        if self.exact_vertices is not None:
            return self.exact_vertices[index]
        if self.exact_uniform_ratio is None:
            raise ValueError("these vertices were computed in floating point")
        d = self.symbols.size
        ratio = self.exact_uniform_ratio
        if ratio == 1 or d == 1:
            return [Fraction(1, d)] * d
        pattern = index + 1  # the order of uniform_ratio_cone_rays
        ray = [ratio if (pattern >> i) & 1 else Fraction(1) for i in range(d)]
        total = sum(ray)
        return [value / total for value in ray]


@dataclass
class ComponentCone:
    """The cone of one independent component: ``A q >= 0`` in its own coordinates.

    Attributes
    ----------
    symbols : ndarray of int
        Indices of the component's symbols in the full domain.
    pairs : ndarray (n, 2)
        Non-redundant pairs ``(x, x')`` in local indices: rows ``r q_x' - q_x >= 0``.
    levels : list of ExactEpsilon
        ``E[x, x']`` of each pair.
    uniform_level : ExactEpsilon or None
        The common value of ``E*`` on all pairs when it is uniform and finite
        (closed-form rays), else None.
    """

    symbols: np.ndarray
    pairs: np.ndarray
    levels: list
    uniform_level: ExactEpsilon | None = None
    name: str = "E"

    @property
    def dimension(self) -> int:
        return int(self.symbols.size)

    @property
    def known_vertices(self) -> int | None:
        """The exact vertex count when it is known without enumerating, else None."""
        if self.uniform_level is not None or self.dimension <= 2 or self.is_tree:
            return self.estimated_vertices()
        return None

    @property
    def is_tree(self) -> bool:
        """Whether the pairs are both directions of the d - 1 edges of a tree, every level positive.

        Then each ray has exactly one of its edge's two constraints tight (d - 1 independent tight
        rows, and both rows of an edge cannot hold at once when ``e^eps > 1``), so the cone has exactly
        ``2^(d-1)`` rays: a line of 50 has 5.6e14, known without enumerating.
        """
        d = self.dimension
        if d < 2 or len(self.pairs) != 2 * (d - 1) or any(float(level) <= 0 for level in self.levels):
            return False
        directed = {(int(a), int(b)) for a, b in self.pairs}
        return all((b, a) in directed for a, b in directed) and len(directed) == 2 * (d - 1)

    def ratios(self, exact: bool = False) -> list:
        """``exp(E[x, x'])`` for each pair: floats, or (exact) rationals rounded down."""
        return [exact_ratio(level) if exact else math.exp(float(level)) for level in self.levels]

    def inequalities(self, exact: bool = False) -> np.ndarray:
        """Rows ``a`` with ``a . q >= 0``: the ratio rows, then ``q >= 0``."""
        d = self.dimension
        zero, one = (Fraction(0), Fraction(1)) if exact else (0.0, 1.0)
        rows = []
        for (x, x_prime), ratio in zip(self.pairs, self.ratios(exact)):
            row = [zero] * d
            row[x] -= one
            row[x_prime] += ratio
            rows.append(row)
        for x in range(d):
            row = [zero] * d
            row[x] = one
            rows.append(row)
        return np.array(rows, dtype=object if exact else float)

    def estimated_vertices(self) -> int:
        """Vertex count: exact for a closed-form component or a tree (:attr:`is_tree`), else an upper bound.

        The vertices of ``{q in C : sum(q) = 1}`` (dimension ``D = d - 1``, at most
        ``n`` = pairs + d facets) number at most McMullen's upper bound
        ``C(n - ceil(D/2), floor(D/2)) + C(n - floor(D/2) - 1, ceil(D/2) - 1)``.
        It is a true bound, but loose (random graph metrics measured here:
        1,008 vertices at d=8 for a bound of 9,920; 46,024 at d=12 for 3.4e6).
        Note that ``2^d - 2`` (the uniform count) is *not* a bound: those same
        metric cones have more vertices than the uniform one.
        """
        d = self.dimension
        if self.uniform_level is not None:
            return uniform_ratio_cone_size(d, math.exp(float(self.uniform_level)))
        if d <= 2:
            return d
        if self.is_tree:
            return 2 ** (d - 1)
        return upper_bound_vertices(len(self.pairs) + d, d - 1)

    def vertices(
        self,
        exact: bool = False,
        row_order=None,
        method: str = "auto",
        max_vertices: int | None = None,
        max_seconds: float | None = None,
    ) -> ComponentVertices:
        """The cone's extreme rays normalised to sum 1 (closed form when possible).

        Raises :class:`ConeTooLargeError` when there are more than ``max_vertices``
        rays, or when an enumeration that may be large (upper bound above
        :data:`IN_PROCESS_BOUND`) has not finished in ``max_seconds``.
        """
        known = self.known_vertices
        if max_vertices is not None and known is not None and known > max_vertices:
            raise ConeTooLargeError(
                f"the cone of {self.name} has {known} vertices (component of {self.dimension} symbols), more than "
                f"max_vertices={max_vertices}; raise max_vertices (--max-vertices), {SUGGESTION}"
            )
        start = time.perf_counter()
        use_closed_form = method == "closed-form" or (method == "auto" and self.uniform_level is not None)
        if use_closed_form:
            if self.uniform_level is None:
                raise ValueError("the closed form needs a component with uniform epsilon")
            ratio = exact_ratio(self.uniform_level) if exact else math.exp(float(self.uniform_level))
            vertices = uniform_ratio_cone_rays(self.dimension, float(ratio))
            return ComponentVertices(
                self.symbols, vertices, "closed-form", time.perf_counter() - start, exact,
                exact_uniform_ratio=ratio if exact else None,
            )
        if method not in ("auto", "enumerate"):
            raise ValueError(f"unknown vertex method {method!r}; choose auto, closed-form or enumerate")
        if self.dimension == 1:
            exact_vertices = [[Fraction(1)]] if exact else None
            return ComponentVertices(self.symbols, np.ones((1, 1)), "enumerated", time.perf_counter() - start, exact, exact_vertices)
        bound = self.estimated_vertices()
        budget = max_seconds if bound > IN_PROCESS_BOUND else None
        try:
            result = enumerate_cone_rays(
                self.inequalities(exact), exact=exact, row_order=row_order, max_vertices=max_vertices, max_seconds=budget
            )
        except EnumerationTimeoutError:
            raise ConeTimeoutError(
                f"enumerating the cone of {self.name} (component of {self.dimension} symbols, {len(self.pairs)} "
                f"constraints, up to {bound} vertices by the upper bound theorem) did not finish in {budget:g} s; "
                f"raise max_seconds (--max-seconds), {SUGGESTION}"
            ) from None
        except TooManyVerticesError as error:
            raise ConeTooLargeError(
                f"the cone of {self.name}: {error} (component of {self.dimension} symbols); raise max_vertices "
                f"(--max-vertices), {SUGGESTION}"
            ) from None
        return ComponentVertices(
            self.symbols, result.vertices, "enumerated", time.perf_counter() - start, result.exact_used,
            result.exact_vertices if exact else None,
        )


@dataclass
class Cone:
    """``C_E`` as a product of component cones (see module docstring)."""

    privacy: PrivacyMatrix
    components: list[ComponentCone] = field(default_factory=list)

    @classmethod
    def from_privacy(cls, privacy: PrivacyMatrix) -> Cone:
        """Build the component cones from E's non-redundant pairs and ``components()``."""
        closure = privacy.closure().epsilon
        pairs = privacy.nonredundant_pairs()
        position = np.empty(privacy.k, dtype=np.int64)
        components = []
        for symbols in privacy.components():
            position[symbols] = np.arange(symbols.size)
            inside = np.isin(pairs[:, 0], symbols) & np.isin(pairs[:, 1], symbols)
            local = position[pairs[inside]]
            levels = [privacy.exact_epsilon[x, x_prime] for x, x_prime in pairs[inside]]
            components.append(
                ComponentCone(
                    symbols, local.reshape(-1, 2), levels, _uniform_level(privacy, closure, symbols), privacy.name
                )
            )
        return cls(privacy, components)

    def estimated_vertices(self) -> int:
        """Sum over components of :meth:`ComponentCone.estimated_vertices` (the product's rays)."""
        return int(sum(component.estimated_vertices() for component in self.components))

    def check_size(self, max_vertices: int | None = DEFAULT_MAX_VERTICES) -> None:
        """Refuse (:class:`ConeTooLargeError`) when the vertices known without enumerating are too many.

        Components counted in closed form contribute their exact count; the
        others are checked when enumerated (see :meth:`ComponentCone.vertices`).
        """
        if max_vertices is None:
            return
        known = [component for component in self.components if component.known_vertices is not None]
        total = sum(component.known_vertices for component in known)
        if total > max_vertices:
            largest = max(known, key=lambda component: component.known_vertices)
            raise ConeTooLargeError(
                f"the cone of {self.privacy.name} has at least {total} vertices (largest component: "
                f"{largest.dimension} symbols, {largest.known_vertices} vertices), more than "
                f"max_vertices={max_vertices}; raise max_vertices (--max-vertices), {SUGGESTION}"
            )

    def vertices(
        self,
        exact: bool = False,
        row_order=None,
        method: str = "auto",
        max_vertices: int | None = DEFAULT_MAX_VERTICES,
        max_seconds: float | None = DEFAULT_MAX_SECONDS,
    ) -> list[ComponentVertices]:
        """Vertices of every component (after the size check; limits as in :meth:`ComponentCone.vertices`)."""
        self.check_size(max_vertices)
        return [component.vertices(exact, row_order, method, max_vertices, max_seconds) for component in self.components]


def upper_bound_vertices(n_facets: int, dimension: int) -> int:
    """McMullen's upper bound theorem: most vertices of a D-polytope with n facets."""
    n, D = n_facets, dimension
    return math.comb(n - (D + 1) // 2, D // 2) + math.comb(n - D // 2 - 1, (D + 1) // 2 - 1)


def _uniform_level(privacy: PrivacyMatrix, closure: np.ndarray, symbols: np.ndarray) -> ExactEpsilon | None:
    """The common finite level of ``E*`` on the component, if every off-diagonal pair shares it."""
    if symbols.size == 1:
        return None
    block = closure[np.ix_(symbols, symbols)]
    off = block[~np.eye(symbols.size, dtype=bool)]
    if not np.all(np.isfinite(off)) or not np.all(off == off[0]):
        return None
    # Use an original entry equal to the closure's level, keeping its exact form.
    original = privacy.epsilon[np.ix_(symbols, symbols)]
    hits = np.argwhere((original == off[0]) & ~np.eye(symbols.size, dtype=bool))
    if hits.size == 0:
        return None
    x, x_prime = hits[0]
    return privacy.exact_epsilon[symbols[x], symbols[x_prime]]


def irrational_ratio_note(levels) -> str | None:
    """One line when exact mode meets a rational level ``eps != 0`` (``e^eps`` irrational), else None.

    :func:`exact_ratio` then uses a rigorous rational lower bound of ``e^eps``: the design is
    certified exactly for E, on a cone smaller by less than ``1e-38`` relative.
    """
    for level in levels:
        if not level.infinite and level.exp_value is None and level.value != 0:
            return (
                f"e^{level} is irrational: the design uses a {EXACT_EXP_BITS}-bit rational lower bound of it "
                "(certified exactly; write log(r) for a rational ratio r)"
            )
    return None


def exact_ratio(level: ExactEpsilon) -> Fraction:
    """``exp(level)`` exactly for ``log(r)``, else a rigorous rational lower bound."""
    if level.infinite:
        raise ValueError("no finite ratio for an infinite level")
    if level.exp_value is not None:
        return level.exp_value
    if level.value == 0:
        return Fraction(1)
    lower, _ = exp_bounds(level.value, EXACT_EXP_BITS)
    return max(lower, Fraction(1))
