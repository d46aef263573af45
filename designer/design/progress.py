"""Progress of a design: ``progress(lower, upper, seconds)`` callbacks, shifted in time and kept to the best so far,
and when a bracket ``[lower, upper]`` is closed."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import TypeVar

Result = TypeVar("Result")

#: ``progress(lower, upper, seconds)``, as :func:`designer.design.expected_loss.design_expected_loss` takes it: a
#: proven lower bound on the least expected loss, the expected loss of an E-LDP channel, the seconds since the start.
Progress = Callable[[float, float, float], None] | None
#: Seconds between the reports of :func:`while_running`.
HEARTBEAT_SECONDS = 2.0


def closes(lower: float, upper: float, gap: float) -> bool:
    """Whether the bracket ``[lower, upper]`` is within the relative ``gap``: ``upper - lower <= gap |upper|``."""
    return upper - lower <= gap * abs(upper)


def shifted(progress: Progress, seconds: float) -> Progress:
    """``progress`` with ``seconds`` added to its time (a later phase reports the time since the design began)."""
    if progress is None:
        return None
    return lambda lower, upper, since: progress(lower, upper, since + seconds)


def best_so_far(progress: Progress) -> Progress:
    """``progress`` reporting the largest lower bound and the smallest upper bound reported so far.

    A design runs in phases (column generation by output, a first-order method, column generation again
    from its multipliers), each with its own bounds: a phase's first round can report a bound of -9.4 after
    an earlier phase proved 0.126 (the 1,000-node random geometric graph). Every lower bound reported is
    proven and every upper bound is the expected loss of an E-LDP channel, so the best of each is valid too,
    and the display never moves backwards.
    """
    if progress is None:
        return None
    best = [-math.inf, math.inf]

    def report(lower: float, upper: float, seconds: float) -> None:
        best[0], best[1] = max(best[0], lower), min(best[1], upper)
        progress(best[0], best[1], seconds)

    return report


def while_running(action: Callable[[], Result], progress: Progress, lower: float, upper: float, start: float,
                  every: float | None = None) -> Result:
    """``action()``, reporting ``progress(lower, upper, seconds since start)`` every ``every`` seconds meanwhile.

    For a solver call that reports nothing for minutes but releases the GIL (HiGHS's PDLP: 240 s at 1,000
    nodes), so that a progress bar keeps moving with the bounds it has. The reports come from a helper
    thread, which stops before this returns. Default ``every``: :data:`HEARTBEAT_SECONDS`.
    """
    if progress is None:
        return action()
    every = HEARTBEAT_SECONDS if every is None else every
    done = threading.Event()

    def beat() -> None:
        while not done.wait(every):
            progress(lower, upper, time.perf_counter() - start)

    helper = threading.Thread(target=beat, daemon=True)
    helper.start()
    try:
        return action()
    finally:
        done.set()
        helper.join()
