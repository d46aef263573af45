"""Run a plan's cells on Dask (or serially) and store each finished batch.

* ``scheduler=None, workers=N >= 1`` — an embedded ``distributed.LocalCluster`` of N
  single-threaded worker processes, started and closed here;
* ``scheduler="tcp://host:8786"`` — any running Dask cluster (its workers need this
  package installed, at the same version);
* ``workers=0`` — a serial loop in this process (the baseline of the benchmarks).

Cells are batched into tasks sized from measurement: the first tasks hold one cell
each; afterwards a task holds about :data:`TASK_SECONDS` of cells at the speed the
last task measured (at most :data:`MAX_TASK_CELLS`, and no more than an even share of
what is left, so the last tasks spread over the workers). Millisecond cells thus
travel hundreds to a task, and the scheduler's few milliseconds per task stay a small
fraction of the work; a cell of a second or more is a task of its own. About two
tasks per worker thread are in flight at any time.

Rows come back in completion order (``distributed.as_completed``) and are written
to the :class:`~designer.sweep.store.ResultStore` every :data:`FLUSH_SECONDS` (or
:data:`FLUSH_ROWS` rows), so an interrupted sweep (Ctrl-C, a lost client) keeps
every stored part and a rerun skips those cells. A worker that dies loses no cell:
the scheduler reruns its tasks elsewhere (up to
``distributed.scheduler.allowed-failures`` times, then the rows of that task's cells
record the ``KilledWorker`` error, and ``retry_failed`` recomputes them). A finished
sweep merges its small parts (:meth:`~designer.sweep.store.ResultStore.compact`).

Timeouts: with ``cell_timeout`` a cell runs in a daemon thread of its worker and
the task returns an error row after ``cell_timeout`` seconds. Python cannot stop a
running thread, so the abandoned computation finishes in the background and its
result is discarded; the sweep goes on.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from designer.sweep.cells import Cell, package_version
from designer.sweep.plan import Plan
from designer.sweep.runners import base_row, error_text, run_cell, warm_up
from designer.sweep.store import ResultStore

#: A part file is written every FLUSH_SECONDS, or sooner once FLUSH_ROWS rows wait.
FLUSH_ROWS = 4096
FLUSH_SECONDS = 2.0
#: Seconds of measured cell work per Dask task, and the most cells a task holds.
TASK_SECONDS = 0.25
MAX_TASK_CELLS = 2048
#: Tasks in flight per worker thread.
TASKS_PER_THREAD = 2
#: How long to wait for a remote cluster to have at least one worker.
WORKER_WAIT_SECONDS = 30.0


@dataclass
class SweepSummary:
    """What a sweep did: cells in the plan, already stored (skipped), computed now, failed.

    ``failed_stored`` counts the plan's cells whose stored row records an error after the
    run (this run's failures and earlier ones not retried); ``parts`` is the store's part
    count after compaction.
    """

    total: int
    skipped: int
    computed: int = 0
    errors: int = 0
    timed_out: int = 0
    seconds: float = 0.0
    first_errors: list[str] = field(default_factory=list)
    failed_stored: int = 0
    parts: int = 0


def execute_cell(inputs: dict, cell_hash: str, version: str, timeout: float | None = None) -> dict:
    """A cell's row, computed here; with ``timeout`` an error row after that many seconds."""
    if timeout is None:
        return run_cell(inputs, cell_hash, version)
    box: list[dict] = []
    thread = threading.Thread(target=lambda: box.append(run_cell(inputs, cell_hash, version)), daemon=True)
    thread.start()
    thread.join(timeout)
    if box:
        return box[0]
    row = base_row(inputs, cell_hash, version)
    row.update(error=f"timed out after {timeout:g} s (--cell-timeout)", seconds=float(timeout))
    return row


def execute_cells(batch: list[tuple[dict, str]], version: str, timeout: float | None = None) -> list[dict]:
    """The rows of a batch of ``(inputs, hash)`` cells, computed here one after another."""
    return [execute_cell(inputs, cell_hash, version, timeout) for inputs, cell_hash in batch]


def task_cells(rows: list[dict], remaining: int, slots: int) -> int:
    """Cells for the next task: :data:`TASK_SECONDS` at the last task's measured seconds per cell.

    Capped by :data:`MAX_TASK_CELLS` and by an even share of the ``remaining`` cells over
    the ``slots`` tasks in flight; at least 1.
    """
    per_cell = sum(row["seconds"] or 0.0 for row in rows) / max(len(rows), 1)
    wanted = int(TASK_SECONDS / per_cell) if per_cell > 0 else MAX_TASK_CELLS
    return max(1, min(wanted, MAX_TASK_CELLS, -(-remaining // slots)))


@contextlib.contextmanager
def dask_client(scheduler: str | None, workers: int):
    """A ``distributed.Client``: to ``scheduler`` if given, else to a new LocalCluster of ``workers``.

    The client is not made the default (``set_as_default=False``): a client the caller holds open
    (``with Client(address):``) stays the default one, and this client's futures are submitted
    and awaited through it explicitly (:func:`dask_rows`).

    Yields
    ------
    distributed.Client
        Closed (with the LocalCluster, if one was started) when the block ends.

    Raises
    ------
    ValueError
        The scheduler cannot be reached or has no worker (one line).
    """
    import logging

    from distributed import Client, LocalCluster

    cluster = None
    if scheduler:
        try:
            client = Client(scheduler, timeout="5s", set_as_default=False)
        except Exception as error:  # noqa: BLE001 - any connection failure is the user's address
            raise ValueError(f"cannot reach the Dask scheduler at {scheduler} ({error_text(error)})") from None
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
        except Exception:  # noqa: BLE001
            client.close()
            raise ValueError(f"the Dask scheduler at {scheduler} has no worker after {WORKER_WAIT_SECONDS:g} s") from None
    else:
        import dask

        # the workers' statistical profiler samples every thread every 10 ms: measurable
        # against millisecond cells on a small machine, and nobody reads it here
        with dask.config.set({"distributed.worker.profile.enabled": False}):
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   dashboard_address=":0", silence_logs=logging.ERROR)
        client = Client(cluster, set_as_default=False)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def dask_rows(client, cells: list[Cell], version: str, timeout: float | None) -> Iterator[dict]:
    """Submit the cells to ``client`` in measured batches (module docstring); yield rows as they complete.

    The futures are awaited on ``client``'s event loop (``as_completed(loop=client.loop)``), not on
    the default client's: waiting for a result lost with a worker on another client's loop fails
    with "... is bound to a different event loop".
    """
    from collections import deque

    from distributed import as_completed

    queue = deque(cells)
    slots = TASKS_PER_THREAD * max(sum(client.nthreads().values()), 1)
    futures: dict = {}

    def submit(size: int):
        batch = [queue.popleft() for _ in range(min(size, len(queue)))]
        future = client.submit(execute_cells, [(cell.inputs, cell.hash) for cell in batch], version, timeout,
                               key=f"sweep-cells-{batch[0].hash}-{len(batch)}", pure=False)
        futures[future] = batch
        return future

    running = as_completed([submit(1) for _ in range(min(slots, len(queue)))], loop=client.loop)
    try:
        for future in running:
            batch = futures.pop(future)
            try:
                rows = future.result()
            except Exception as error:  # noqa: BLE001 - e.g. KilledWorker after repeated worker deaths
                rows = [base_row(cell.inputs, cell.hash, version) | {"error": error_text(error)} for cell in batch]
            future.release()
            size = task_cells(rows, len(queue), slots)
            while queue and len(futures) < slots:
                running.add(submit(size))
            yield from rows
    finally:
        client.cancel(list(futures))


def run_sweep(
    plan: Plan,
    out: str | Path,
    scheduler: str | None = None,
    workers: int = 2,
    cell_timeout: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
    retry_failed: bool = False,
    store: ResultStore | None = None,
) -> SweepSummary:
    """Run every cell of ``plan`` not yet in the store at ``out``; see the module docstring.

    Parameters
    ----------
    plan : Plan
    out : str or Path
        Results directory (:class:`~designer.sweep.store.ResultStore`).
    scheduler : str, optional
        Address of a running Dask scheduler. The sweep opens its own client to it; a default
        client the caller holds open stays the default and usable.
    workers : int
        Worker processes of the embedded LocalCluster; 0 runs serially in this process.
    cell_timeout : float, optional
        Seconds after which a cell is recorded as timed out.
    progress : callable(done, todo), optional
        Called after each finished cell.
    on_start : callable(todo, skipped), optional
        Called once the cluster is up, before the first cell runs.
    retry_failed : bool
        Also recompute the cells whose stored row records an error (failed or timed out).
    store : ResultStore, optional
        The store at ``out`` (to choose where its warnings go); made here when not given.

    Returns
    -------
    SweepSummary
    """
    if cell_timeout is not None and not cell_timeout > 0:
        raise ValueError(f"--cell-timeout must be > 0, got {cell_timeout!r}")
    if workers < 0:
        raise ValueError(f"--workers must be >= 0, got {workers}")
    store = store if store is not None else ResultStore(out)
    latest = store.latest(["error"])  # one read of the store: every stored cell and whether it failed
    stored = set(latest["hash"]) - (set(latest.loc[latest["error"].notna(), "hash"]) if retry_failed else set())
    todo = [cell for cell in plan.cells if cell.hash not in stored]
    summary = SweepSummary(total=len(plan.cells), skipped=len(plan.cells) - len(todo))
    version = package_version()
    with contextlib.ExitStack() as stack:
        if scheduler or workers > 0:
            client = stack.enter_context(dask_client(scheduler, workers))
            if todo:
                try:
                    client.run(warm_up, plan.task)
                except Exception as error:  # noqa: BLE001 - e.g. a worker without this package
                    raise ValueError(f"the Dask workers cannot load the {plan.task} cells ({error_text(error)}); "
                                     f"install ldp-designer {version} on every worker") from None
            rows = dask_rows(client, todo, version, cell_timeout)
        else:
            rows = (execute_cell(cell.inputs, cell.hash, version, cell_timeout) for cell in todo)
        if on_start is not None:
            on_start(len(todo), summary.skipped)
        start = last_flush = time.monotonic()
        pending: list[dict] = []
        try:
            for row in rows:
                pending.append(row)
                _count(summary, row)
                if progress is not None:
                    progress(summary.computed, len(todo))
                if len(pending) >= FLUSH_ROWS or time.monotonic() - last_flush >= FLUSH_SECONDS:
                    store.append(pending)
                    pending, last_flush = [], time.monotonic()
        finally:
            store.append(pending)
            summary.seconds = time.monotonic() - start
    store.compact()
    summary.failed_stored = len(store.failed_hashes() & {cell.hash for cell in plan.cells})
    summary.parts = len(store.parts())
    return summary


def _count(summary: SweepSummary, row: dict) -> None:
    summary.computed += 1
    if row["error"] is not None:
        summary.errors += 1
        summary.timed_out += row["error"].startswith("timed out")
        if len(summary.first_errors) < 3:
            summary.first_errors.append(f"{row['task']} eps={row['epsilon']:g}: {row['error']}")
