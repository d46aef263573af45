"""Extreme rays of a polyhedral cone ``{q : A q >= 0, B q = 0}`` (pycddlib 3.x).

API
---
``enumerate_cone_rays(inequalities, equalities=None, exact=False, row_order=None,
max_vertices=None, tolerance=VALIDATION_TOLERANCE, max_seconds=None) -> VertexEnumeration``

* ``inequalities``: array (r, d), each row ``a`` means ``a . q >= 0``. Entries are
  floats, or (for ``exact=True``) anything :class:`fractions.Fraction` accepts
  (ints, Fractions, floats read as their exact binary value).
* ``equalities``: optional array (e, d), each row ``b`` means ``b . q = 0``.
* The cone must be pointed (no line in it; e.g. include ``q >= 0`` rows).
  Returned ``vertices`` are its extreme rays normalised to sum 1, i.e. the
  vertices of the polytope ``{q in cone : sum(q) = 1}``, so every ray must have a
  positive coordinate sum (true whenever ``q >= 0`` is implied).
* ``exact=False`` runs cdd in floating point, then checks every vertex against
  every row (``a . v >= -tolerance * ||a||_inf``, ``|b . v| <= tolerance *
  ||b||_inf``); on failure (or a cdd error) it reruns in exact GMP rational
  arithmetic (``cdd.gmp``) and reports ``exact_used=True``, ``fallback=True``.
* ``row_order``: a :class:`cdd.RowOrderType` member or its name
  (``"max_index"``, ``"min_index"``, ``"min_cutoff"``, ``"max_cutoff"``,
  ``"mix_cutoff"``, ``"lex_min"``, ``"lex_max"``, ``"random_row"``); the
  order of the double description method's row insertions, which can change
  its running time by orders of magnitude.
* ``max_vertices``: refuse (``TooManyVerticesError``) when the result has more
  rays than this. Estimating the count *before* enumerating is the caller's job
  (it knows the structure); this is the backstop.
* ``max_seconds``: run the enumeration in a forked child process and stop it
  (``EnumerationTimeoutError``) when it has not finished in that many seconds
  of wall-clock time; cdd cannot be interrupted from inside, and the double
  description method gives no reliable early estimate of its own running time.

``uniform_ratio_cone_rays(d, ratio) -> ndarray`` gives, without enumeration, the
extreme rays of ``{q >= 0 : q_i <= ratio * q_j for all i, j}``: the ``2^d - 2``
vectors with entries in ``{1, ratio}``, not all equal (Kairouz, Oh, Viswanath
2014, Theorem 4 / "staircase" patterns; robust-ldp-chi-square.md, Appendix A-A).
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pycddlib is imported where a cone is enumerated
    import cdd

#: Relative tolerance of the float validation ``a . v >= -tol * ||a||_inf``.
VALIDATION_TOLERANCE = 1e-9


class TooManyVerticesError(ValueError):
    """The cone has (or would have) more extreme rays than allowed."""


class EnumerationTimeoutError(TooManyVerticesError):
    """The enumeration did not finish within ``max_seconds``."""


@dataclass(frozen=True)
class VertexEnumeration:
    """Extreme rays of a cone, normalised to sum 1.

    Attributes
    ----------
    vertices : ndarray, shape (n, d)
        One ray per row, entries summing to 1, sorted lexicographically.
    seconds : float
        Wall-clock time of the enumeration (including a fallback rerun).
    exact_used : bool
        Whether the returned rays come from exact GMP arithmetic.
    fallback : bool
        Whether a float run failed validation and exact arithmetic was used instead.
    row_order : str or None
        The cdd row order used (None: cdd's default).
    max_violation : float
        Largest relative violation ``max(-a.v / ||a||_inf)`` of an inequality
        (or ``|b.v| / ||b||_inf`` of an equality) over the returned rays, in
        floats (<= 0 means all satisfied).
    exact_vertices : list of list of Fraction, or None
        When ``exact_used``: the same rays as exact rationals summing to 1, in
        the order of ``vertices``.
    """

    vertices: np.ndarray
    seconds: float
    exact_used: bool
    fallback: bool
    row_order: str | None
    max_violation: float
    exact_vertices: list | None = None

    @property
    def n_vertices(self) -> int:
        return self.vertices.shape[0]


def enumerate_cone_rays(
    inequalities,
    equalities=None,
    exact: bool = False,
    row_order: cdd.RowOrderType | str | None = None,
    max_vertices: int | None = None,
    tolerance: float = VALIDATION_TOLERANCE,
    max_seconds: float | None = None,
) -> VertexEnumeration:
    """Extreme rays of ``{q : A q >= 0, B q = 0}`` by the double description method.

    See the module docstring for the contract. Raises ``ValueError`` for a
    malformed input or a cone that is not pointed,
    :class:`TooManyVerticesError` when the ray count exceeds ``max_vertices``,
    and :class:`EnumerationTimeoutError` when ``max_seconds`` runs out.
    """
    if max_seconds is not None:
        return run_with_time_limit(
            max_seconds, enumerate_cone_rays, inequalities, equalities, exact, row_order, max_vertices, tolerance
        )
    rows, n_equalities, _ = _stack_rows(inequalities, equalities)
    order = _row_order(row_order)
    start = time.perf_counter()
    fallback = False
    if exact:
        vertices, exact_vertices = _enumerate(rows, n_equalities, order, exact=True)
    else:
        try:
            vertices, exact_vertices = _enumerate(rows, n_equalities, order, exact=False)
            ok = _max_violation(rows, n_equalities, vertices) <= tolerance
        except (RuntimeError, ValueError, ArithmeticError):
            ok = False
        if not ok:
            fallback = True
            vertices, exact_vertices = _enumerate(rows, n_equalities, order, exact=True)
    seconds = time.perf_counter() - start
    if max_vertices is not None and vertices.shape[0] > max_vertices:
        raise TooManyVerticesError(f"the cone has {vertices.shape[0]} extreme rays, more than max_vertices={max_vertices}")
    return VertexEnumeration(
        vertices=vertices,
        seconds=seconds,
        exact_used=exact or fallback,
        fallback=fallback,
        row_order=order.name.lower() if order is not None else None,
        max_violation=_max_violation(rows, n_equalities, vertices),
        exact_vertices=exact_vertices,
    )


def run_with_time_limit(seconds: float, function: Callable, *arguments):
    """``function(*arguments)`` in a forked child process, stopped after ``seconds``.

    The result (or the exception) comes back pickled through a pipe. Raises
    :class:`EnumerationTimeoutError` when time runs out, ``RuntimeError`` when
    the child dies without answering (e.g. killed for lack of memory).
    """
    if not seconds > 0:
        raise ValueError(f"max_seconds must be > 0, got {seconds!r}")
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)

    def child() -> None:
        try:
            outcome = ("result", function(*arguments))
        except Exception as error:  # sent back and re-raised in the parent
            outcome = ("error", error)
        try:
            sender.send(outcome)
        except Exception as error:  # an exception that cannot be pickled
            sender.send(("error", RuntimeError(f"{outcome[1].__class__.__name__}: {outcome[1]} ({error})")))

    process = context.Process(target=child, daemon=True)
    process.start()
    sender.close()
    try:
        if not receiver.poll(seconds):
            raise EnumerationTimeoutError(f"the vertex enumeration did not finish in {seconds:g} s")
        kind, payload = receiver.recv()
    except EOFError:
        raise RuntimeError(f"the vertex enumeration process ended without an answer (exit code {process.exitcode})") from None
    finally:
        if process.is_alive():
            process.terminate()
        process.join()
        receiver.close()
    if kind == "error":
        raise payload
    return payload


def uniform_ratio_cone_rays(d: int, ratio: float) -> np.ndarray:
    """Extreme rays of ``{q >= 0 : q_i <= ratio * q_j for all i, j}``, normalised to sum 1.

    For ``ratio > 1`` and ``d >= 2`` these are the ``2^d - 2`` vectors with
    entries in ``{1, ratio}`` that are not constant (Kairouz, Oh, Viswanath
    2014; robust-ldp-chi-square.md, Appendix A-A): at an extreme ray every
    coordinate sits at the lower or the upper end of the allowed range. For
    ``ratio == 1`` (or ``d == 1``) the cone is the single ray ``(1, ..., 1)``;
    for ``ratio == inf`` it is the orthant, with the unit vectors as rays.
    Rows are ordered by the binary pattern (bit i set = coordinate i high).
    """
    d = int(d)
    if d < 1:
        raise ValueError(f"dimension must be >= 1, got {d}")
    if not ratio >= 1:
        raise ValueError(f"ratio must be >= 1, got {ratio!r}")
    if np.isinf(ratio):
        return np.eye(d)
    if ratio == 1 or d == 1:
        return np.full((1, d), 1.0 / d)
    if d > 30:
        raise TooManyVerticesError(f"2^{d} - 2 rays cannot be listed")
    patterns = np.arange(1, 2**d - 1, dtype=np.int64)
    high = ((patterns[:, None] >> np.arange(d)) & 1).astype(bool)
    rays = np.where(high, 1.0, 1.0 / float(ratio))  # scaled by 1/ratio: no overflow up to the largest double
    return rays / rays.sum(axis=1, keepdims=True)


def uniform_ratio_cone_size(d: int, ratio: float) -> int:
    """Number of rays :func:`uniform_ratio_cone_rays` returns, without building them."""
    if np.isinf(ratio):
        return int(d)
    if ratio == 1 or d == 1:
        return 1
    return 2 ** int(d) - 2


# ---------------------------------------------------------------- internals
def _stack_rows(inequalities, equalities) -> tuple[list[list], int, int]:
    """Rows with equalities first (cdd's lin_set), as Python lists of exact-able numbers."""
    parts = []
    for what, block in (("equalities", equalities), ("inequalities", inequalities)):
        if block is None:
            parts.append(np.empty((0, 0), dtype=object))
            continue
        array = np.asarray(block, dtype=object)
        if array.ndim != 2:
            raise ValueError(f"{what} must be a 2-D array, got {array.ndim} dimensions")
        parts.append(array)
    equal, inequal = parts
    d = inequal.shape[1] if inequal.size else equal.shape[1] if equal.size else 0
    if d == 0 or inequal.shape[0] == 0:
        raise ValueError("need at least one inequality row with at least one column")
    if equal.size and equal.shape[1] != d:
        raise ValueError(f"equalities have {equal.shape[1]} columns, inequalities {d}")
    rows = [list(row) for row in equal] + [list(row) for row in inequal]
    for row in rows:
        for value in row:
            if not np.isfinite(float(value)):
                raise ValueError(f"cone coefficients must be finite, got {value!r}")
    return rows, equal.shape[0] if equal.size else 0, d


def _row_order(row_order) -> cdd.RowOrderType | None:
    import cdd

    if row_order is None or isinstance(row_order, cdd.RowOrderType):
        return row_order
    try:
        return cdd.RowOrderType[str(row_order).upper()]
    except KeyError:
        names = ", ".join(member.name.lower() for member in cdd.RowOrderType)
        raise ValueError(f"unknown row order {row_order!r}; choose one of {names}") from None


def _enumerate(rows: list[list], n_equalities: int, order, exact: bool) -> tuple[np.ndarray, list | None]:
    """Rays normalised to sum 1, sorted lexicographically: floats, and Fractions when exact."""
    import cdd
    import cdd.gmp

    if exact:
        module = cdd.gmp
        array = [[Fraction(0)] + [Fraction(v) for v in row] for row in rows]
    else:
        module = cdd
        array = [[0.0] + [float(v) for v in row] for row in rows]
    matrix = module.matrix_from_array(array, lin_set=set(range(n_equalities)), rep_type=module.RepType.INEQUALITY)
    if order is None:
        polyhedron = module.polyhedron_from_matrix(matrix)
    else:
        polyhedron = module.polyhedron_from_matrix(matrix, row_order=order)
    generators = module.copy_generators(polyhedron)
    if generators.lin_set:
        raise ValueError("the cone contains a line (not pointed); add bounds such as q >= 0")
    rays = [row[1:] for row in generators.array if row[0] == 0]
    d = len(rows[0])
    if not rays:
        return np.empty((0, d)), ([] if exact else None)
    totals = [sum(ray) for ray in rays]
    if any(total <= 0 for total in totals):
        raise ValueError("a ray of the cone has a non-positive coordinate sum; cannot normalise")
    exact_rays = None
    if exact:
        exact_rays = [[value / total for value in ray] for ray, total in zip(rays, totals)]
        vertices = np.array([[float(value) for value in ray] for ray in exact_rays])
    else:
        vertices = np.array(rays, dtype=float) / np.array(totals)[:, None]
        vertices[np.abs(vertices) < 1e-15] = 0.0
    order_index = np.lexsort(vertices.T[::-1])
    if exact_rays is not None:
        exact_rays = [exact_rays[i] for i in order_index]
    return vertices[order_index], exact_rays


def _max_violation(rows: list[list], n_equalities: int, vertices: np.ndarray) -> float:
    if vertices.shape[0] == 0:
        return 0.0
    matrix = np.array([[float(v) for v in row] for row in rows])
    scale = np.abs(matrix).max(axis=1)
    scale[scale == 0] = 1.0
    products = (vertices @ matrix.T) / scale  # (n, rows)
    worst = 0.0
    if n_equalities:
        worst = max(worst, float(np.abs(products[:, :n_equalities]).max()))
    if products.shape[1] > n_equalities:
        worst = max(worst, float((-products[:, n_equalities:]).max()))
    return worst
