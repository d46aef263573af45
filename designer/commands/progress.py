"""Progress displays of long commands on stderr (nothing when stderr is not a terminal; stdout stays clean for ``--json``)."""

from __future__ import annotations

import sys
import time

from rich.console import Console


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


class ProofProgress:
    """A rich progress display on stderr for ``robust --verify`` (nothing when stderr is not a terminal).

    Stdout is left alone, so ``--json`` output stays one JSON object. The vertex
    enumeration (cdd) reports nothing while it runs: with a budget it runs in a child
    process and the bar shows the seconds used of the budget, without one the line
    shows the stage only; the check of the LP dual on the vertices advances a bar.
    There is no rich refresh thread: :meth:`run` refreshes from the main thread while
    the work runs in a worker thread.
    """

    def __init__(self, enabled: bool, budget: float | None = None):
        self._progress = None
        self._budget = budget
        self._stage_start = time.perf_counter()
        self._enumerating = False
        if enabled and stderr_is_terminal():
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(),
                MofNCompleteColumn(), TimeElapsedColumn(),
                console=Console(stderr=True), transient=True, auto_refresh=False,
            )
        self._task = None

    def __enter__(self) -> ProofProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()

    def stage(self, description: str, total: float | None = None, completed: float = 0) -> None:
        """Show one stage (an indeterminate bar when ``total`` is None)."""
        if self._progress is None:
            return
        if self._task is None:
            self._task = self._progress.add_task(description, total=total, completed=completed)
        else:
            self._progress.update(self._task, description=description, total=total, completed=completed)
        self._stage_start = time.perf_counter()
        self._progress.refresh()

    def run(self, function):
        """``function()`` in a worker thread while this thread refreshes the display (directly when hidden)."""
        if self._progress is None:
            return function()
        import threading

        outcome: dict = {}

        def work() -> None:
            try:
                outcome["value"] = function()
            except BaseException as error:  # re-raised in the calling thread
                outcome["error"] = error

        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(0.1)
            if self._enumerating and self._budget is not None:
                used = min(time.perf_counter() - self._stage_start, self._budget)
                self._progress.update(self._task, completed=used)
            self._progress.refresh()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    def proof(self, stage: str, completed: int, total: int | None) -> None:
        """The ``progress`` callback of :func:`designer.robust.polyopt.verify_optimality`."""
        self._enumerating = stage == "enumerate"
        if self._enumerating and self._budget is not None:
            self.stage(f"proof: enumerating vertices (s of {self._budget:g} s)", self._budget)
        elif self._enumerating:
            self.stage("proof: enumerating vertices")
        else:
            self.stage(f"proof: checking the dual on {total} vertices", total, completed)
