"""Privacy specifications: the E matrix of context-aware LDP.

Definition 2 (context-aware-ldp.md, eq. 4): a channel Q is E-LDP when
``Q(S | x) <= exp(E[x, x']) Q(S | x')`` for all inputs x, x' and output sets S.
``E`` is a k x k matrix with non-negative entries, zero diagonal, ``inf``
allowed (no constraint) and not necessarily symmetric.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from designer.exact import LARGEST_LEVEL, ExactEpsilon, parse_rational, ratio_level
from solvers.maxplus import min_plus_closure, min_plus_product

if TYPE_CHECKING:  # networkx is imported where a graph is needed (fast start)
    import networkx as nx

#: Relative tolerance when deciding that a path through other symbols implies a
#: pair's constraint (path length <= E * (1 + REDUNDANCY_RTOL)).
REDUNDANCY_RTOL = 1e-12


class PrivacyMatrix:
    """The privacy matrix ``E`` of E-LDP (Definition 2 of context-aware-ldp.md).

    Parameters
    ----------
    epsilon : array_like, shape (k, k)
        ``epsilon[x, x']`` bounds ``log Q(S|x) - log Q(S|x')``. Entries may be
        numbers, ``inf``, or strings read exactly (``"1/2"``, ``"log(3)"``,
        ``"inf"``); exact entries are kept for the exact certifier.
    labels : sequence of str, optional
        Names of the k input symbols (default ``"0" .. "k-1"``).
    name : str, optional
        A short description used in reports.
    exact_epsilon : ndarray of object, shape (k, k), optional
        The exact entries when ``epsilon`` holds their floats already (as
        :func:`designer.io.read_privacy_matrix` gives them): each an
        :class:`~designer.exact.ExactEpsilon`, the text of a plain decimal
        (``"0.25"``) or a coprime integer pair ``(p, q)`` for ``log(p/q)``, read only
        when :attr:`exact_epsilon` or :meth:`exact_levels` needs it. Nothing is parsed again: the floats must be ``float(level)`` of
        the exact entries (faithful, as the exact certifier's filter assumes); only
        the float matrix is checked (square, ``>= 0``, zero diagonal).

    Raises
    ------
    ValueError
        If the matrix is not square, has a negative or NaN entry, or a non-zero
        diagonal entry; the message names the row, column and value.
    """

    def __init__(
        self,
        epsilon,
        labels: Sequence[str] | None = None,
        name: str | None = None,
        exact_epsilon: np.ndarray | None = None,
    ):
        numeric = _as_numeric(epsilon)
        if exact_epsilon is not None:
            if numeric is None:
                raise ValueError("with exact_epsilon, epsilon must be the float matrix")
            values, exact = _validated_numeric(numeric), np.asarray(exact_epsilon, dtype=object)
            if exact.shape != values.shape:
                raise ValueError(f"the float E {values.shape} and the exact E {exact.shape} differ in shape")
        elif numeric is not None:
            values, exact = _validated_numeric(numeric), None
        else:
            values, exact = _parsed_exact(np.asarray(epsilon, dtype=object))
        values.setflags(write=False)
        self._epsilon = values
        self._exact = exact
        self._lazy = exact_epsilon is not None
        self._closure: PrivacyMatrix | None = None
        self._truncations: dict[float, PrivacyMatrix] = {}
        self._nonredundant: np.ndarray | None = None
        k = values.shape[0]
        self.labels: tuple[str, ...] = tuple(str(label) for label in labels) if labels is not None else tuple(
            str(i) for i in range(k)
        )
        if len(self.labels) != k:
            raise ValueError(f"{len(self.labels)} labels for a {k} x {k} E matrix")
        self.name = name or f"E ({k} symbols)"

    # ------------------------------------------------------------------ basics
    @property
    def epsilon(self) -> np.ndarray:
        """The (read-only) float matrix ``E``; ``inf`` means unconstrained."""
        return self._epsilon

    @property
    def exact_epsilon(self) -> np.ndarray:
        """The entries as :class:`~designer.exact.ExactEpsilon` (object array).

        For a matrix given as numbers, each float is taken at its exact binary value.
        """
        if self._exact is None:
            flat = [ExactEpsilon.parse(value) for value in self._epsilon.ravel().tolist()]
            self._exact = np.array(flat + [None], dtype=object)[:-1].reshape(self._epsilon.shape)
        elif self._lazy:  # read the plain decimals still kept as text
            exact = np.empty(self._exact.size, dtype=object)
            exact[:] = _levels(self._exact.ravel().tolist())
            self._exact, self._lazy = exact.reshape(self._exact.shape), False
        return self._exact

    def exact_levels(self, rows: np.ndarray, columns: np.ndarray) -> list[ExactEpsilon]:
        """The exact entries ``E[rows[i], columns[i]]`` (only these are read when E is lazy).

        Equal to ``exact_epsilon[rows, columns].tolist()`` without building the whole
        exact matrix: the exact certifier needs the levels of a few undecided pairs.
        """
        if self._exact is None:
            return [ExactEpsilon.parse(value) for value in self._epsilon[rows, columns].tolist()]
        return _levels(self._exact[rows, columns].tolist())

    def exact_exp_ratios(self, rows: np.ndarray, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``exp(E[rows[i], columns[i]])`` as integers where it is rational, without building the levels.

        Returns ``(rational, numerators, denominators)``: a boolean array and two object arrays of
        coprime Python integers (``1, 1`` for a level 0; ``0, 1`` where ``exp`` is irrational, a
        non-zero rational level, or infinite). What the exact certifier compares ratios of
        channel entries with: a tight E of a million ``log(p/q)`` levels is read as integer pairs
        and never becomes a million level objects.
        """
        entries = self._epsilon[rows, columns].tolist() if self._exact is None else self._exact[rows, columns].tolist()
        ratios = [_exp_ratio(entry) for entry in entries]
        rational = np.fromiter((ratio is not None for ratio in ratios), dtype=bool, count=len(ratios))
        numerators, denominators = np.zeros(len(ratios), dtype=object), np.ones(len(ratios), dtype=object)
        chosen = np.flatnonzero(rational)
        numerators[chosen] = [ratios[index][0] for index in chosen.tolist()]
        denominators[chosen] = [ratios[index][1] for index in chosen.tolist()]
        return rational, numerators, denominators

    @property
    def k(self) -> int:
        """Number of input symbols."""
        return self._epsilon.shape[0]

    def __repr__(self) -> str:
        return f"PrivacyMatrix(k={self.k}, name={self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PrivacyMatrix) and np.array_equal(self._epsilon, other._epsilon)

    __hash__ = None  # mutable-looking container semantics; compare by value only

    @property
    def is_symmetric(self) -> bool:
        """Whether ``E[x, x'] == E[x', x]`` for all pairs."""
        return bool(np.array_equal(self._epsilon, self._epsilon.T))

    def __add__(self, other: "PrivacyMatrix") -> "PrivacyMatrix":
        """``E1 + E2``: the guarantee of adaptive composition (Proposition 2)."""
        if self.k != other.k:
            raise ValueError(f"cannot add E matrices of sizes {self.k} and {other.k}")
        return PrivacyMatrix(_sum_levels(self._epsilon, other._epsilon), self.labels, f"{self.name} + {other.name}")

    def product(self, other: "PrivacyMatrix") -> "PrivacyMatrix":
        """E of a parallel composition on the product domain ``X1 x X2``.

        Running an E1-LDP channel on x1 and an E2-LDP channel on x2 independently
        is E-LDP with ``E[(x1,x2),(x1',x2')] = E1[x1,x1'] + E2[x2,x2']`` (the
        likelihood ratio factorises; Proposition 2 applied to the two parts).
        Symbols are ordered with x1 major.
        """
        combined = _sum_levels(self._epsilon[:, None, :, None], other._epsilon[None, :, None, :])
        k = self.k * other.k
        labels = [f"({a},{b})" for a, b in itertools.product(self.labels, other.labels)]
        return PrivacyMatrix(combined.reshape(k, k), labels, f"{self.name} x {other.name}")

    # ------------------------------------------------------------ constructors
    @classmethod
    def classic(cls, k: int, epsilon: float, labels: Sequence[str] | None = None) -> "PrivacyMatrix":
        """Classic epsilon-LDP (Definition 1): every off-diagonal entry is ``epsilon``."""
        _check_k(k)
        _check_level(epsilon)
        values = np.full((k, k), float(epsilon))
        np.fill_diagonal(values, 0.0)
        return cls(values, labels, f"{epsilon:g}-LDP on {k} symbols")

    @classmethod
    def high_low(
        cls, k: int, sensitive: Iterable[int], epsilon: float, labels: Sequence[str] | None = None
    ) -> "PrivacyMatrix":
        """High-low LDP (Definition 3): ``E[x, x'] = epsilon`` if x is sensitive, else inf."""
        _check_k(k)
        _check_level(epsilon)
        sensitive = sorted(set(int(x) for x in sensitive))
        if not sensitive or sensitive[0] < 0 or sensitive[-1] >= k:
            raise ValueError(f"sensitive symbols must be a non-empty subset of 0..{k - 1}, got {sensitive}")
        values = np.full((k, k), np.inf)
        values[sensitive, :] = float(epsilon)
        np.fill_diagonal(values, 0.0)
        return cls(values, labels, f"high-low {epsilon:g}-LDP, {len(sensitive)} sensitive of {k}")

    @classmethod
    def block(
        cls, partition: Sequence[Sequence[int]] | Sequence[int], epsilon: float, labels: Sequence[str] | None = None
    ) -> "PrivacyMatrix":
        """Block-structured LDP (Definition 4): ``epsilon`` inside a block, inf across.

        ``partition`` is either a list of blocks (lists of symbols covering
        0..k-1 exactly once) or a list of block sizes (consecutive blocks).
        """
        _check_level(epsilon)
        blocks = block_partition(partition)
        k = sum(len(block) for block in blocks)
        values = np.full((k, k), np.inf)
        for block in blocks:
            values[np.ix_(block, block)] = float(epsilon)
        np.fill_diagonal(values, 0.0)
        return cls(values, labels, f"block {epsilon:g}-LDP, {len(blocks)} blocks, k={k}")

    @classmethod
    def metric(cls, distance, epsilon: float = 1.0, labels: Sequence[str] | None = None) -> "PrivacyMatrix":
        """Metric LDP: ``E = epsilon * d`` for a distance matrix ``d``.

        Symmetric E matrices are metric-based LDP (context-aware-ldp.md, Section 3;
        metric-ldp-range-counting.md, Section II).
        """
        _check_level(epsilon)
        distance = np.asarray(distance, dtype=float)
        if distance.ndim != 2 or distance.shape[0] != distance.shape[1]:
            raise ValueError(f"distance must be square, got shape {distance.shape}")
        bad = np.argwhere(~(distance >= 0))
        if bad.size:
            x, y = bad[0]
            raise ValueError(f"distance row {x}, column {y}: value {float(distance[x, y])!r} is negative or NaN")
        with np.errstate(invalid="ignore", over="ignore"):
            values = np.where(distance == 0, 0.0, float(epsilon) * distance)
        overflow = np.isinf(values) & np.isfinite(distance)
        if overflow.any():  # a finite level beyond the double range stays a constraint, held exactly
            values = values.astype(object)
            for x, y in zip(*np.nonzero(overflow)):
                level = Fraction(float(epsilon)) * Fraction(float(distance[x, y]))
                values[x, y] = f"{level.numerator}/{level.denominator}"
        return cls(values, labels, f"metric {epsilon:g}-LDP, k={distance.shape[0]}")

    @classmethod
    def from_graph(cls, graph: nx.Graph, epsilon: float = 1.0, weight: str = "weight") -> "PrivacyMatrix":
        """Metric LDP from shortest paths on a (di)graph: ``E = epsilon * d_G``.

        Edge weights default to 1. Nodes are ordered as ``list(graph.nodes)``;
        unreachable pairs get ``inf``.
        """
        import networkx as nx

        nodes = list(graph.nodes)
        if not nodes:
            raise ValueError("the graph has no nodes")
        for u, v, data in graph.edges(data=True):
            w = data.get(weight, 1.0)
            if not (w >= 0):
                raise ValueError(f"edge ({u}, {v}) has weight {w!r}; weights must be >= 0")
        distance = nx.floyd_warshall_numpy(graph, nodelist=nodes, weight=weight)
        result = cls.metric(distance, epsilon, [str(node) for node in nodes])
        result.name = f"graph metric {epsilon:g}-LDP, {len(nodes)} nodes"
        return result

    @classmethod
    def grid_l1(cls, shape: Sequence[int], epsilon: float = 1.0) -> "PrivacyMatrix":
        """Metric LDP with the L1 distance on a grid ``[m_1] x ... x [m_D]``.

        ``E[x, x'] = epsilon * ||x - x'||_1`` (metric-ldp-range-counting.md,
        Section IV). Cells are ordered row-major (C order); labels are the
        cell coordinates.
        """
        shape = tuple(int(m) for m in shape)
        if not shape or min(shape) < 1:
            raise ValueError(f"grid shape must be positive integers, got {shape}")
        cells = np.array(list(np.ndindex(*shape)))
        distance = np.abs(cells[:, None, :] - cells[None, :, :]).sum(axis=2)
        labels = ["(" + ",".join(str(c) for c in cell) + ")" for cell in cells]
        result = cls.metric(distance, epsilon, labels)
        result.name = f"L1 grid {'x'.join(map(str, shape))} {epsilon:g}-LDP"
        return result

    # ------------------------------------------------- closure and structure
    def closure(self) -> "PrivacyMatrix":
        """Shortest-path closure ``E*[x, x'] = min over paths x -> ... -> x'`` of the sum of E.

        Ratio constraints chain along paths (``Q[x,y] <= e^{E[x,z]} Q[z,y] <=
        e^{E[x,z] + E[z,x']} Q[x',y]``), so E and E* admit exactly the same
        channels; E* is the tightest matrix with that property. Computed once (E is read-only).
        """
        if self._closure is None:
            self._closure = PrivacyMatrix(min_plus_closure(self._epsilon), self.labels, f"closure of {self.name}")
        return self._closure

    def truncated_closure(self, level: float) -> "PrivacyMatrix":
        """``min(E*, level)`` entrywise (``inf`` entries too), computed once per level.

        A metric below E* (``min(d, c)`` keeps the triangle inequality: a side at ``c`` bounds the other side,
        and otherwise the closure's own triangle inequality holds), so every channel it admits is E-LDP, and it
        is its own closure (not computed again: O(k^3), about a second at k = 1,000).
        """
        truncated = self._truncations.get(level)
        if truncated is None:
            truncated = PrivacyMatrix(np.minimum(self.closure().epsilon, level), self.labels,
                                      f"{self.name}, truncated at level {level:g}")
            truncated._closure = truncated
            self._truncations[level] = truncated
        return truncated

    def nonredundant_pairs(self) -> np.ndarray:
        """The ordered pairs ``(x, x')`` whose constraint no other constraints imply.

        A finite pair is redundant when ``E[x, x'] > E*[x, x']`` (a path is
        tighter) or when a symbol z with ``E*[x, z] > 0`` and ``E*[z, x'] > 0``
        gives ``E*[x, z] + E*[z, x'] <= E[x, x']`` (the triangle test). Requiring
        both legs positive makes the implication well-founded (each leg is
        strictly shorter), so the kept pairs imply every dropped one even with
        ties and zero entries. Without zero levels in the closure the kept set
        is also minimal (dropping any pair changes the closure); for a graph
        metric it is exactly the graph's shortest-path edges.

        Returns
        -------
        ndarray of int, shape (n_pairs, 2)
            Read-only, computed once (an O(k^3) min-plus product: about 5 s at k = 1,600, and a design asks for
            the pairs from several places).
        """
        if self._nonredundant is not None:
            return self._nonredundant
        values = self._epsilon
        closed = self.closure().epsilon  # cached: design needs the closure too (O(k^3) each)
        positive = np.where(closed > 0, closed, np.inf)
        np.fill_diagonal(positive, np.inf)
        via = min_plus_product(positive, positive)
        slack = REDUNDANCY_RTOL * np.where(np.isfinite(values), values, 0.0)
        finite = np.isfinite(values) & ~np.eye(self.k, dtype=bool)
        tight = values <= closed + slack
        implied = via <= values + slack
        keep = finite & tight & ~implied
        self._nonredundant = np.argwhere(keep)
        self._nonredundant.setflags(write=False)
        return self._nonredundant

    def components(self) -> list[np.ndarray]:
        """Independent components of the constraint graph.

        Symbols x, x' are joined when ``E[x, x']`` or ``E[x', x]`` is finite.
        Different components share no constraint, so the admissible cone is the
        product of the components' cones (e.g. the blocks of BSLDP).
        Components are returned as sorted index arrays, ordered by smallest symbol.
        Breadth-first search on the boolean adjacency matrix (no graph library:
        ``design`` pays no networkx import for it).
        """
        linked = np.isfinite(self._epsilon)
        linked |= linked.T
        unseen = np.ones(self.k, dtype=bool)
        parts = []
        for seed in range(self.k):
            if not unseen[seed]:
                continue
            frontier = np.zeros(self.k, dtype=bool)
            frontier[seed] = True
            unseen[seed] = False
            members = frontier.copy()
            while frontier.any():
                frontier = linked[frontier].any(axis=0) & unseen
                unseen &= ~frontier
                members |= frontier
            parts.append(np.flatnonzero(members))
        return parts

    def restrict(self, symbols: Sequence[int]) -> "PrivacyMatrix":
        """The sub-matrix on a subset of symbols (e.g. one component)."""
        symbols = list(symbols)
        grid = np.ix_(symbols, symbols)
        exact = None if self._exact is None else self._exact[grid]
        return PrivacyMatrix(self._epsilon[grid], [self.labels[s] for s in symbols], f"{self.name} restricted", exact)


def _sum_levels(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Float levels added; two finite levels whose sum overflows give the finite stand-in
    :data:`~designer.exact.LARGEST_LEVEL`, never ``inf`` (which would drop the constraint)."""
    with np.errstate(over="ignore"):
        total = np.add(first, second)
    total[np.isinf(total) & np.isfinite(first) & np.isfinite(second)] = LARGEST_LEVEL
    return total


def _levels(entries: list) -> list[ExactEpsilon]:
    """Exact levels from lazy entries: a plain decimal's text becomes its rational level, a coprime
    pair ``(p, q)`` the level ``log(p/q)``."""
    return [ExactEpsilon(value=parse_rational(entry)) if type(entry) is str else
            ratio_level(entry) if type(entry) is tuple else entry for entry in entries]


def _exp_ratio(entry) -> tuple[int, int] | None:
    """``exp`` of a lazy entry as coprime integers ``(p, q)`` when it is rational (``log(p/q)``, or 0), else None."""
    if type(entry) is tuple:
        return entry
    if type(entry) is str:
        return (1, 1) if parse_rational(entry) == 0 else None
    if type(entry) is float:
        return (1, 1) if entry == 0 else None
    if entry.exp_value is not None:
        return entry.exp_value.numerator, entry.exp_value.denominator
    return (1, 1) if entry.value == 0 else None


def _as_numeric(epsilon) -> np.ndarray | None:
    """The input as a float array when it is purely numeric, else None (exact parsing)."""
    if isinstance(epsilon, np.ndarray) and epsilon.dtype.kind in "biuf":
        return epsilon.astype(float)
    if isinstance(epsilon, np.ndarray):
        return None
    try:
        array = np.asarray(epsilon)
    except ValueError:
        return None
    return array.astype(float) if array.dtype.kind in "biuf" else None


def _check_square(shape: tuple[int, ...]) -> None:
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"E must be a square k x k matrix, got shape {shape}")
    if shape[0] == 0:
        raise ValueError("E must have at least one row")


def _validated_numeric(values: np.ndarray) -> np.ndarray:
    _check_square(values.shape)
    bad = np.argwhere(~(values >= 0))  # negative or NaN
    if bad.size:
        x, x_prime = bad[0]
        raise ValueError(f"E row {x}, column {x_prime}: value {float(values[x, x_prime])!r} must be >= 0 (inf allowed)")
    diagonal = np.flatnonzero(np.diag(values) != 0)
    if diagonal.size:
        x = diagonal[0]
        raise ValueError(f"E row {x}, column {x}: diagonal must be 0, got {float(values[x, x])!r}")
    return values.copy()


def _parsed_exact(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    _check_square(raw.shape)
    exact = np.empty(raw.shape, dtype=object)
    for (x, x_prime), entry in np.ndenumerate(raw):
        try:
            if isinstance(entry, (float, np.floating)) and np.isnan(entry):
                raise ValueError("NaN is not a privacy level")
            exact[x, x_prime] = ExactEpsilon.parse(float(entry) if isinstance(entry, np.floating) else entry)
        except (ValueError, TypeError) as error:
            raise ValueError(f"E row {x}, column {x_prime}: value {entry!r}: {error}") from None
    values = np.array([float(entry) for entry in exact.ravel()]).reshape(raw.shape)
    for x in range(raw.shape[0]):
        if values[x, x] != 0:
            raise ValueError(f"E row {x}, column {x}: diagonal must be 0, got {raw[x, x]!r}")
    return values, exact


def _check_k(k: int) -> None:
    if int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")


def _check_level(epsilon: float) -> None:
    if not (float(epsilon) >= 0):
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")


def block_partition(partition) -> list[list[int]]:
    """Normalise a partition: a list of blocks (symbol lists) or of consecutive block sizes.

    Returns the blocks as sorted symbol lists; raises ``ValueError`` unless they are
    non-empty and cover ``0..k-1`` exactly once.
    """
    items = list(partition)
    if not items:
        raise ValueError("the partition is empty")
    if all(np.ndim(item) == 0 for item in items):
        sizes = [int(size) for size in items]
        if min(sizes) < 1:
            raise ValueError(f"block sizes must be positive, got {sizes}")
        bounds = np.cumsum([0] + sizes)
        return [list(range(bounds[i], bounds[i + 1])) for i in range(len(sizes))]
    blocks = [sorted(int(x) for x in block) for block in items]
    flat = sorted(itertools.chain.from_iterable(blocks))
    if flat != list(range(len(flat))) or any(not block for block in blocks):
        raise ValueError("blocks must be non-empty and cover 0..k-1 exactly once")
    return blocks

