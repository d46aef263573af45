"""Native solvers that never write to the process's standard output.

The command line's ``--json`` promises exactly one JSON document on stdout, and
solver libraries print from C++: highspy 1.16 writes its banner ("Running HiGHS
... Copyright") while ``highspy.Highs()`` is being constructed (its Python
constructor enables callbacks, which logs the header), before any option can be
set, and CVXPY constructs ``Highs()`` inside ``Problem.solve``. HiGHS's documented
switch, ``output_flag = false``, silences everything after it is set
(ERGO-Code/HiGHS#1702), so every solver is built here with the process's
file descriptor 1 pointed at the null device, and ``output_flag`` is set before
the model is passed.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import highspy

_REDIRECT = threading.Lock()


def _flush_native() -> None:
    """Flush C stdio buffers (``fflush(NULL)``), so buffered native output lands where fd 1 points now."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to flush (not on Linux/macOS): nothing buffered there
        pass


@contextmanager
def stdout_silenced() -> Iterator[None]:
    """Point file descriptor 1 at the null device for the block (native libraries' prints vanish).

    Python's own ``sys.stdout`` is flushed first and native buffers on both sides, so
    nothing written before or after the block is lost or reordered. Serialised by a
    lock (the descriptor is process-wide); keep the block short.
    """
    with _REDIRECT:
        try:
            sys.stdout.flush()
        except (AttributeError, ValueError, OSError):  # replaced or closed stdout: nothing of ours pending
            pass
        _flush_native()
        saved = os.dup(1)
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, 1)
            finally:
                os.close(null)
            yield
        finally:
            _flush_native()
            os.dup2(saved, 1)
            os.close(saved)


def silent_highs() -> "highspy.Highs":
    """A ``highspy.Highs`` instance with ``output_flag`` false, whose construction printed nothing."""
    import highspy

    with stdout_silenced():
        highs = highspy.Highs()
        highs.setOptionValue("output_flag", False)
    return highs
