"""Longitudinal audits (``audit --rounds T``): each simulated user is one client instance asked T times.

With ``--rounds T`` the ``--sampler`` function is a *client factory*: ``f(rng, **args)``
returns one client instance, a callable ``client(x) -> report``. Every simulated user of
input x gets a fresh instance (its own state: a memo, a counter) and is asked T times; the
user's report is the joint vector of the T reports (a round's vector report is flattened in).
The audit then tests the declared E, the claimed *long-term* level, on these joint reports:
any event on the T reports is an event of the user's whole history (Definition 2 applied to the
channel ``x -> (Z_1, ..., Z_T)``). A client that memoizes its permanent response keeps the
joint reports a post-processing of one draw and passes; a client that re-randomises every
round leaks more with every round and is caught (benchmarks/RESULTS.md, "Privacy over time").
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from designer.audit.reports import as_report_array
from designer.audit.sources import PythonSampler, check_timeout
from designer.audit.usercode import call_user, load_callable
from designer.audit.worker import Worker
from designer.defaults import AUDIT_COMMAND_TIMEOUT


class RoundsSampler(PythonSampler):
    """A client factory ``f(rng, **arguments)`` run in a worker process; each drawn report is one user's T rounds."""

    def __init__(self, spec: str, arguments: dict | None, rounds: int, timeout: float = AUDIT_COMMAND_TIMEOUT):
        if isinstance(rounds, bool) or int(rounds) != rounds or rounds < 1:
            raise ValueError(f"--rounds must be a positive integer, got {rounds!r}")
        check_timeout(timeout)
        self.arguments = dict(arguments or {})
        self.description = (f"{spec}" + "".join(f" {key}={value!r}" for key, value in self.arguments.items())
                            + f", {rounds} rounds per user")
        self.timeout = timeout
        self.worker = Worker(_RoundsCall(spec, self.arguments, int(rounds), load_callable(spec, "client factory")))


class _RoundsCall:
    """The worker's side of :class:`RoundsSampler`: ``n`` users of input ``x``, each a fresh client asked T times."""

    def __init__(self, spec: str, arguments: dict, rounds: int, function: Callable):
        self.spec, self.arguments, self.rounds, self.function = spec, arguments, rounds, function

    def __getstate__(self) -> dict:
        return {**self.__dict__, "function": None}

    def __call__(self, x: int | tuple, n: int, rng: np.random.Generator):
        """``n`` users of input ``x``; or, ``x`` a tuple of inputs (the state probe), one user of each."""
        if self.function is None:
            self.function = load_callable(self.spec, "client factory")
        inputs = x if isinstance(x, tuple) else (x,) * n
        where = "the client factory" + ("" if isinstance(x, tuple) else f" (input {x})")
        reports = as_report_array([self._user(value, rng) for value in inputs], len(inputs), where)
        spawned = getattr(rng.bit_generator.seed_seq, "n_children_spawned", None)
        return reports, rng.bit_generator.state, spawned

    def _user(self, x: int, rng: np.random.Generator) -> tuple:
        """One user of input ``x``: a fresh client asked :attr:`rounds` times, its joint report."""
        where = f"the client factory (input {x})"
        client = call_user(self.function, where, rng, **self.arguments)
        if not callable(client):
            raise ValueError(f"{where} returned {type(client).__name__}, not a client: with --rounds the sampler "
                             "is a factory f(rng, **args) returning client(x) -> report")
        return joint_report([call_user(client, f"a client (input {x})", x) for _ in range(self.rounds)])


def joint_report(reports: list) -> tuple:
    """The T reports of one user as one vector (vector reports flattened, round after round)."""
    joint = []
    for report in reports:
        if isinstance(report, (list, tuple, np.ndarray)):
            joint.extend(np.ravel(np.asarray(report, dtype=object)).tolist())
        else:
            joint.append(report.item() if isinstance(report, np.generic) else report)
    return tuple(joint)
