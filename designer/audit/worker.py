"""User code run in a child process, so that a call that never returns can be stopped at a time limit.

A Python sampler is user code: a call that loops or sleeps forever would hang
the audit, and a thread cannot be stopped from outside (a "deadline" thread
would only stop *waiting*, leaving the call running and holding the CPU and the
interpreter). :class:`Worker` therefore runs the code in one long-lived child
process (forked where the platform allows, so nothing is imported again; else
spawned). Each call sends its arguments and waits at most ``timeout`` seconds
for the answer; on time-out the process is killed (``SIGKILL``: user code
cannot ignore it) and the next call starts a new one. Ctrl-C is left to the
parent, which stops the worker on its way out. A fork copies the locks other
threads hold at that moment (of stdout, stderr, logging), held for ever in the
child: a caller about to start threads (the audit's progress bar) starts the
worker first (:meth:`Worker.start`). The forkserver start method would avoid
that too, but costs about 0.23 s a start against 6 ms (the module imported
again) and needs a ``__main__`` guard in the caller's script.
"""

from __future__ import annotations

import multiprocessing
import signal
import weakref
from collections.abc import Callable

from designer.errors import one_line

#: Start method of the workers: fork where the platform allows (no re-import), else spawn.
START_METHOD = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
#: Seconds a killed (or ending) worker is given to be reaped.
REAP_SECONDS = 5.0


class WorkerTimeout(ValueError):
    """A call did not answer within its time limit (the worker was killed)."""


class Worker:
    """Calls ``target(*arguments)`` in a child process, each call within a time limit.

    Parameters
    ----------
    target : callable
        Run in the child; picklable when the start method is spawn. Its
        ``ValueError`` (and any other ``Exception``) comes back as a ``ValueError``
        with the same one-line message (other exception types are named).
    """

    def __init__(self, target: Callable):
        self.target = target
        self._process = None
        self._connection = None
        self._finalizer = None

    def call(self, arguments: tuple, timeout: float, where: str):
        """``target(*arguments)`` run in the worker; ``ValueError`` naming ``where`` if it ends the worker,
        :class:`WorkerTimeout` if it does not answer within ``timeout`` seconds."""
        self.start()
        try:
            self._connection.send(arguments)
            answered = self._connection.poll(timeout)
        except OSError:  # the worker is gone: the answer below says how it ended
            answered = True
        except BaseException:  # Ctrl-C while waiting: the call may still run; stop it
            self.stop()
            raise
        if not answered:
            self.stop()
            raise WorkerTimeout(f"{where} did not return within {timeout:.3g} s")
        try:
            status, value = self._connection.recv()
        except (EOFError, OSError):
            process = self._process
            process.join(REAP_SECONDS)  # it closed its end: let it finish exiting, to read its own exit code
            self.stop()
            raise ValueError(f"{where} ended its worker process (exit code {process.exitcode}) instead of "
                             "returning") from None
        if status == "error":
            raise ValueError(value)
        return value

    def stop(self) -> None:
        """Kill the worker (if any); the next call starts a new one."""
        if self._finalizer is not None:
            self._finalizer()
        self._process = self._connection = self._finalizer = None

    def start(self) -> None:
        """Start the worker now if none runs (else the first call does): a caller about to start threads
        forks it first, so that it holds none of their locks."""
        if self._process is not None:
            return
        context = multiprocessing.get_context(START_METHOD)
        ours, theirs = context.Pipe()
        process = context.Process(target=_serve, args=(theirs, ours, self.target), daemon=True,
                                  name="ldp-designer sampler")
        process.start()
        theirs.close()
        self._process, self._connection = process, ours
        self._finalizer = weakref.finalize(self, _kill, process, ours)


def _kill(process, connection) -> None:
    connection.close()
    if process.is_alive():
        process.kill()
    process.join(REAP_SECONDS)


def _serve(connection, parent_end, target: Callable) -> None:
    """The worker's loop: one answer ``("ok", value)`` or ``("error", message)`` per request, until the parent
    closes its end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it kills this process
    parent_end.close()  # else a parent that dies would leave this loop waiting forever
    while True:
        try:
            arguments = connection.recv()
        except (EOFError, OSError):
            return
        try:
            answer = ("ok", target(*arguments))
        except ValueError as error:
            answer = ("error", one_line(error))
        except Exception as error:  # noqa: BLE001 - user code: any failure is reported, never a traceback
            answer = ("error", f"{type(error).__name__}: {one_line(error)}")
        try:
            connection.send(answer)
        except Exception as error:  # noqa: BLE001 - an answer that cannot be pickled
            connection.send(("error", f"the answer cannot be passed back from the worker process: "
                                      f"{type(error).__name__}: {one_line(error)}"))
