"""Class structure of E: inputs that are interchangeable (twins), with class-level levels.

A partition of the inputs into classes ``C_1 .. C_r`` is a *class structure* of E
(and of the prior and the utility's second distribution) when every permutation
of the inputs that maps each class onto itself preserves all of them. That holds
iff E depends only on the classes,

    E[x, x'] = L[c(x), c(x')]   for x != x'  (L[a, a]: two distinct members of a),

and the distributions are constant on classes. The group of such permutations is
``Sym(C_1) x ... x Sym(C_r)``; the design LP is invariant under it (see
:mod:`designer.design.symmetry.orbits`).

From a dense E, classes are *twin classes*: x and x' are twins at level c when
``E[x, x'] = E[x', x] = c`` and their rows and columns agree everywhere else. With
the diagonal set to c, twins have identical rows and columns, so grouping equal
rows (and columns, prior, alternative) of ``E + c on the diagonal`` finds them, for
each candidate level c. Every transposition of twins is an automorphism, so the
classes generate a group of symmetries of the LP. (An equitable partition from
colour refinement is coarser and is *not* enough: in a block E all symbols get one
colour although only the permutations that keep blocks together preserve E.)

Families give their class structure without any dense matrix
(:meth:`ClassStructure.classic`, :meth:`~ClassStructure.high_low`,
:meth:`~ClassStructure.block`, :meth:`~ClassStructure.utility_optimized`), and a JSON
file gives it directly (:func:`designer.design.symmetry.files.read_class_structure`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from designer.exact import ExactEpsilon
from designer.spec import PrivacyMatrix, block_partition

#: Candidate twin levels tried on a dense E (the most frequent off-diagonal values).
MAX_TWIN_LEVELS = 16
#: Largest k for which a class structure materialises its dense E.
MAX_DENSE_K = 20_000


@dataclass
class ClassStructure:
    """Inputs partitioned into classes of interchangeable symbols.

    Attributes
    ----------
    sizes : ndarray of int (r,)
        Class sizes ``n_a``.
    levels : ndarray (r, r)
        ``levels[a, b] = E[x, x']`` for x in class a, x' in class b, x != x'
        (``levels[a, a]`` is used only when ``n_a >= 2``); ``inf`` allowed.
    prior : ndarray (r,)
        Probability of *each member* of class a (so ``sum(sizes * prior) = 1``).
    alternative : ndarray (r,) or None
        Per-member probability of the second distribution of f-divergence utilities.
    members : list of ndarray or None
        The symbols of each class (None: consecutive classes in order).
    name : str
    exact_levels : ndarray of ExactEpsilon (r, r) or None
        The levels as written (``log(3)``, ``1/2``) for exact designs; None: the
        floats of ``levels`` at their exact binary values.
    """

    sizes: np.ndarray
    levels: np.ndarray
    prior: np.ndarray
    alternative: np.ndarray | None = None
    members: list | None = None
    name: str = "E"
    exact_levels: np.ndarray | None = None

    def __post_init__(self):
        self.sizes = np.asarray(self.sizes, dtype=np.int64)
        self.levels = np.asarray(self.levels, dtype=float)
        self.prior = np.asarray(self.prior, dtype=float)
        r = self.sizes.size
        if r == 0 or self.sizes.min() < 1:
            raise ValueError(f"class sizes must be positive integers, got {self.sizes.tolist()}")
        if self.levels.shape != (r, r):
            raise ValueError(f"class levels must be {r} x {r} (one row per class), got shape {self.levels.shape}")
        bad = np.argwhere(~(self.levels >= 0))
        if bad.size:
            a, b = bad[0]
            raise ValueError(f"class level row {a}, column {b}: {self.levels[a, b]!r} must be >= 0 (inf allowed)")
        for what, values in (("prior", self.prior), ("alternative", self.alternative)):
            if values is None:
                continue
            values = np.asarray(values, dtype=float)
            if values.shape != (r,) or np.any(~(values >= 0)) or abs(float(values @ self.sizes) - 1) > 1e-9:
                raise ValueError(f"the {what} must give each of the {r} classes a per-member probability >= 0, summing to 1")
        if self.alternative is not None:
            self.alternative = np.asarray(self.alternative, dtype=float)

    # ----------------------------------------------------------------- basics
    @property
    def r(self) -> int:
        """Number of classes."""
        return int(self.sizes.size)

    @property
    def k(self) -> int:
        """Number of input symbols."""
        return int(self.sizes.sum())

    def class_members(self) -> list[np.ndarray]:
        """The symbols of each class (consecutive ranges when ``members`` is None)."""
        if self.members is not None:
            return [np.asarray(m, dtype=np.int64) for m in self.members]
        bounds = np.concatenate([[0], np.cumsum(self.sizes)])
        return [np.arange(bounds[a], bounds[a + 1]) for a in range(self.r)]

    def class_of(self) -> np.ndarray:
        """``c(x)`` for every symbol."""
        result = np.empty(self.k, dtype=np.int64)
        for a, members in enumerate(self.class_members()):
            result[members] = a
        return result

    def expand(self, per_class: np.ndarray) -> np.ndarray:
        """A per-class vector as a per-symbol one."""
        return np.asarray(per_class)[self.class_of()]

    def privacy(self) -> PrivacyMatrix:
        """The dense E (refused above :data:`MAX_DENSE_K` symbols)."""
        if self.k > MAX_DENSE_K:
            raise ValueError(f"a dense E of {self.k:,} symbols would need {8 * self.k**2 / 1e9:.1f} GB; use the class structure")
        c = self.class_of()
        values = self.levels[np.ix_(c, c)].copy()
        np.fill_diagonal(values, 0.0)
        exact = None
        if self.exact_levels is not None:
            exact = self.exact_levels[np.ix_(c, c)]
            np.fill_diagonal(exact, ExactEpsilon(value=Fraction(0)))
        return PrivacyMatrix(values, name=self.name, exact_epsilon=exact)

    def exact_level(self, a: int, b: int) -> ExactEpsilon:
        """``levels[a, b]`` exactly (:attr:`exact_levels`, else the float's binary value)."""
        if self.exact_levels is not None:
            return self.exact_levels[a, b]
        return ExactEpsilon.parse(float(self.levels[a, b]))

    def linked(self) -> np.ndarray:
        """``linked[a, b]``: some member of a constrains some member of b or back (finite level)."""
        finite = np.isfinite(self.levels)
        finite &= ~np.eye(self.r, dtype=bool) | (self.sizes[:, None] >= 2)
        return finite | finite.T

    # ----------------------------------------------------------- constructors
    @classmethod
    def classic(cls, k: int, epsilon, prior=None) -> ClassStructure:
        """Classic epsilon-LDP (Definition 1): one class (``epsilon`` a number or text such as ``"log(3)"``)."""
        level = _level(epsilon)
        return cls(
            [k], [[float(level)]], _uniform([k]) if prior is None else prior, name=f"{_text(level)}-LDP on {k} symbols",
            exact_levels=_exact_matrix([[level]]),
        )

    @classmethod
    def high_low(cls, k: int, sensitive: int, epsilon) -> ClassStructure:
        """High-low LDP (Definition 3) with the first ``sensitive`` symbols in A: classes A and B."""
        level = _level(epsilon)
        if not 1 <= sensitive <= k:
            raise ValueError(f"the number of sensitive symbols must be in 1..{k}, got {sensitive}")
        if sensitive == k:
            return cls.classic(k, level)
        exact = _exact_matrix([[level, level], [_INFINITE, _INFINITE]])
        name = f"high-low {_text(level)}-LDP, {sensitive} sensitive of {k}"
        sizes = [sensitive, k - sensitive]
        return cls(sizes, _floats(exact), _uniform(sizes), name=name, exact_levels=exact)

    @classmethod
    def utility_optimized(cls, w: int, v: int, epsilon) -> ClassStructure:
        """The E of utility-optimized LDP on ``w`` symbols with ``v`` sensitive ones.

        Utility-optimized LDP (Murakami and Kawamoto, USENIX Security 2019) asks
        ``Q(S|x) <= e^eps Q(S|x')`` on protected outputs for all x, x' and lets an
        invertible output reveal one non-sensitive symbol. Every such channel (uRR,
        uRAP) is E-LDP for the high-low E with the sensitive set as A (on an
        invertible output sensitive rows are 0), so this is :meth:`high_low` with
        ``k = w``, ``s = v``: its optimum bounds every utility-optimized mechanism.
        """
        structure = cls.high_low(w, v, epsilon)
        structure.name = f"utility-optimized {_text(_level(epsilon))}-LDP, {v} sensitive of {w}"
        return structure

    @classmethod
    def block(cls, sizes, epsilon) -> ClassStructure:
        """Block-structured LDP (Definition 4) with consecutive blocks of the given sizes."""
        level = _level(epsilon)
        blocks = block_partition(sizes)
        r = len(blocks)
        exact = _exact_matrix([[level if a == b else _INFINITE for b in range(r)] for a in range(r)])
        block_sizes = [len(block) for block in blocks]
        k = sum(block_sizes)
        name = f"block {_text(level)}-LDP, {r} blocks, k={k}"
        return cls(block_sizes, _floats(exact), _uniform(block_sizes), name=name, exact_levels=exact)

    def with_distributions(self, prior=None, alternative=None) -> ClassStructure:
        """The same E with per-symbol distributions; classes split where a distribution varies.

        Splitting a class keeps every permutation inside a part a symmetry (E depends only on
        the classes), so the reduction survives wherever the distributions are constant on
        the parts; the parts may be many (then the orbit LP refuses, see
        :func:`designer.design.symmetry.orbits.enumerate_orbits`).
        """
        if prior is None and alternative is None:
            return self
        columns = []
        for what, values in (("prior", prior), ("alternative", alternative)):
            if values is None:
                continue
            values = np.asarray(values, dtype=float).ravel()
            if values.size != self.k:
                raise ValueError(f"the {what} has {values.size} entries but E has {self.k} symbols")
            columns.append(values)
        origin = self.class_of()
        keys = np.column_stack([origin.astype(float), *columns])
        _, first, label = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        label = label.ravel()
        order = np.argsort(first)  # parts in the order of their first symbol
        groups = [np.flatnonzero(label == a) for a in order]
        first = first[order]
        parent = origin[first]
        per_symbol_prior = self.expand(self.prior) if prior is None else np.asarray(prior, dtype=float).ravel()
        alt = None
        if alternative is not None:
            alt = np.asarray(alternative, dtype=float).ravel()[first]
        elif self.alternative is not None:
            alt = self.alternative[parent]
        exact = None if self.exact_levels is None else self.exact_levels[np.ix_(parent, parent)]
        return ClassStructure(
            [group.size for group in groups], self.levels[np.ix_(parent, parent)], per_symbol_prior[first], alt,
            groups, self.name, exact,
        )


def twin_classes(privacy: PrivacyMatrix, prior=None, alternative=None) -> ClassStructure:
    """The twin classes of a dense E (and of the distributions), see the module docstring.

    Candidate levels are the :data:`MAX_TWIN_LEVELS` most frequent off-diagonal
    values of E; symbols left over are singleton classes (always valid).
    """
    values = privacy.epsilon
    k = privacy.k
    prior = _uniform([k])[0] * np.ones(k) if prior is None else np.asarray(prior, dtype=float)
    extra = [prior[:, None]] + ([] if alternative is None else [np.asarray(alternative, dtype=float)[:, None]])
    assigned = np.full(k, -1, dtype=np.int64)
    groups: list[np.ndarray] = []
    levels_of_group: list[float] = []
    off = values[~np.eye(k, dtype=bool)]
    if off.size:
        candidates, counts = np.unique(off, return_counts=True)
        candidates = candidates[np.argsort(-counts)][:MAX_TWIN_LEVELS]
    else:
        candidates = np.empty(0)
    for level in candidates:
        free = np.flatnonzero(assigned < 0)
        if free.size < 2:
            break
        shifted = values.copy()
        np.fill_diagonal(shifted, level)
        keys = np.hstack([shifted[free], shifted[:, free].T] + [column[free] for column in extra])
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        for label in np.flatnonzero(np.bincount(inverse) >= 2):
            group = free[inverse == label]
            assigned[group] = len(groups)
            groups.append(group)
            levels_of_group.append(float(level))
    for x in np.flatnonzero(assigned < 0):
        assigned[x] = len(groups)
        groups.append(np.array([x]))
        levels_of_group.append(np.inf)
    order = np.argsort([group[0] for group in groups])
    groups = [groups[i] for i in order]
    within = [levels_of_group[i] for i in order]
    representatives = np.array([group[0] for group in groups])
    levels = values[np.ix_(representatives, representatives)].copy()
    np.fill_diagonal(levels, within)
    sizes = np.array([group.size for group in groups])
    alt = None if alternative is None else np.asarray(alternative, dtype=float)[representatives]
    return ClassStructure(sizes, levels, prior[representatives], alt, groups, privacy.name)


def _uniform(sizes) -> np.ndarray:
    return np.full(len(sizes), 1.0 / sum(sizes))


_INFINITE = ExactEpsilon(infinite=True)


def _level(epsilon) -> ExactEpsilon:
    """A family's epsilon, read exactly (a number, ``"log(3)"``, ``"1/2"``); finite and >= 0."""
    level = ExactEpsilon.parse(epsilon)
    if level.infinite or level.beyond_double:
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon!r}")
    return level


def _text(level: ExactEpsilon) -> str:
    return str(level) if level.exp_value is not None else f"{float(level):g}"


def _exact_matrix(rows) -> np.ndarray:
    matrix = np.empty((len(rows), len(rows)), dtype=object)
    for a, row in enumerate(rows):
        matrix[a, :] = row
    return matrix


def _floats(exact: np.ndarray) -> np.ndarray:
    return np.array([[float(level) for level in row] for row in exact])
