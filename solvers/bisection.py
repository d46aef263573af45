"""Bisection on a monotone predicate, and raising a float estimate until a rigorous check accepts it.

Both are plain numerics (no privacy semantics): the shuffle analysis uses them to find the
smallest ``epsilon`` whose ``delta`` bound is met, and the largest whose lower bound exceeds it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


def boundary(passes: Callable[[float], bool], low: float, high: float, relative: float = 1e-10,
             most_steps: int = 200) -> tuple[float, float]:
    """Bracket the boundary of a monotone predicate by bisection.

    Parameters
    ----------
    passes : callable
        ``passes(t)`` is False below some point and True above it; ``passes(high)`` must be True and
        ``passes(low)`` False (the caller checks the ends it needs).
    low, high : float
        The initial bracket.
    relative : float
        Stop when ``high - low <= relative * high`` (or when the midpoint is no longer representable).
    most_steps : int
        At most this many evaluations.

    Returns
    -------
    ``(low, high)``: ``passes(low)`` is False and ``passes(high)`` True (as far as evaluated).
    """
    for _ in range(most_steps):
        middle = 0.5 * (low + high)
        if middle in (low, high) or high - low <= relative * high:
            break
        if passes(middle):
            high = middle
        else:
            low = middle
    return low, high


def first_proved(estimate: float, steps: Iterable[float], proved: Callable[[float], float],
                 target: float) -> tuple[float, float] | None:
    """Raise a float estimate by relative ``steps`` until its rigorous value is at most ``target``.

    Each candidate is ``estimate * (1 + step)`` (``step`` itself when the estimate is 0);
    returns the first candidate with ``proved(candidate) <= target`` and that value, or None.
    """
    for step in steps:
        candidate = estimate * (1 + step) if estimate > 0 else step
        value = proved(candidate)
        if value <= target:
            return candidate, value
    return None
