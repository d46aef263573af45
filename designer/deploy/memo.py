"""Memoizing client for packages with a longitudinal policy, standard library only (``sqlite3``, ``secrets``).

Copy this file and ``sampler.py`` next to a package::

    from memo import MemoStore, MemoizedClient
    client = MemoizedClient(document, MemoStore("ldp-memo.sqlite3", document["sha256"]), public_key=KEY)
    report = client.report("yes")      # same permanent response for "yes" on every call and after restarts

What the client keeps (the threat model is in docs/longitudinal.md):

* the **permanent response** of each value, drawn once from the package's table (exactly, as
  :class:`sampler.TableSampler` draws) the first time that value is reported, and reused on every
  later report of that value, so that all reports of any number of rounds are a post-processing
  of one draw (the long-term guarantee is the package's E);
* the number of reports made in the current period (``floor(unix time / period_seconds)``):
  a report beyond the policy's ``rounds_per_period`` is refused (:class:`RoundsExceeded`).

Every round reports the instantaneous stage ``Q2[permanent response, :]`` (one uniform integer of
``bits`` bits against the row's integer thresholds: exact), or the permanent response itself when the
policy has no instantaneous stage.

The store (:class:`MemoStore`) is one SQLite file for one package: it records the package's SHA-256
and refuses to open for another package (:class:`StoreMismatch`); rows are keyed by (package hash,
value). Every read-modify-write runs in one ``BEGIN IMMEDIATE`` transaction (SQLite's write lock,
waiting up to ``timeout`` seconds for another process), so two processes sharing a store agree on
each permanent response and never exceed the period's rounds together; a transaction is written
atomically (SQLite's journal) or not at all. The file must stay secret: whoever reads it learns the
permanent responses, which is what the long-term level protects.
"""

from __future__ import annotations

import bisect
import secrets
import sqlite3
import time

try:  # inside ldp-designer
    from designer.deploy.sampler import PackageError, TableSampler, _cumulative, _decimal, _labels, check_common
except ImportError:  # copied beside sampler.py
    from sampler import PackageError, TableSampler, _cumulative, _decimal, _labels, check_common

MEMBER = "longitudinal"
MEMBERS = ("memoization", "rounds_per_period", "period_seconds", "report_E", "instantaneous")
STAGE_MEMBERS = ("bits", "outputs", "table")
MIN_BITS, MAX_BITS = 8, 64
#: Seconds a store waits for another process's transaction before giving up.
DEFAULT_TIMEOUT = 30.0


class StoreMismatch(PackageError):
    """The store was made for another package (its SHA-256 differs)."""


class RoundsExceeded(RuntimeError):
    """The policy's ``rounds_per_period`` reports were already made in this period."""


def check_longitudinal(member, k: int, m: int) -> list[list[int]] | None:
    """Check a ``longitudinal`` member (``k`` inputs, ``m`` outputs of the package); return the instantaneous
    table as integers (None without an instantaneous stage). :class:`PackageError` names the first problem."""
    if not isinstance(member, dict) or set(member) != set(MEMBERS):
        raise PackageError(f"longitudinal must have exactly the members {', '.join(MEMBERS)}")
    if member["memoization"] != "required":
        raise PackageError(f"longitudinal.memoization must be \"required\", got {member['memoization']!r}")
    for name in ("rounds_per_period", "period_seconds"):
        if _decimal(member[name], f"longitudinal.{name}") < 1:
            raise PackageError(f"longitudinal.{name} must be at least 1")
    levels = member["report_E"]
    if not isinstance(levels, list) or len(levels) != k or not all(
            isinstance(row, list) and len(row) == k and all(isinstance(entry, str) for entry in row) for row in levels):
        raise PackageError(f"longitudinal.report_E must be {k} x {k} exact levels written as text")
    stage = member["instantaneous"]
    if stage is None:
        return None
    if not isinstance(stage, dict) or set(stage) != set(STAGE_MEMBERS):
        raise PackageError(f"longitudinal.instantaneous must be null or have exactly the members "
                           f"{', '.join(STAGE_MEMBERS)}")
    bits = stage["bits"]
    if type(bits) is not int or not MIN_BITS <= bits <= MAX_BITS:
        raise PackageError(f"longitudinal.instantaneous.bits must be an integer from {MIN_BITS} to {MAX_BITS}")
    outputs = _labels(stage, "outputs")
    rows = stage["table"]
    if not isinstance(rows, list) or len(rows) != m:
        raise PackageError(f"longitudinal.instantaneous.table must have {m} rows (one per output of the package)")
    table = []
    for y, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != len(outputs):
            raise PackageError(f"longitudinal.instantaneous.table row {y} must have {len(outputs)} entries")
        values = [_decimal(entry, f"longitudinal.instantaneous.table row {y}, column {z}") for z, entry in enumerate(row)]
        if sum(values) != 1 << bits:
            raise PackageError(f"longitudinal.instantaneous.table row {y} sums to {sum(values)}, not 2^{bits}")
        table.append(values)
    return table


class MemoStore:
    """A SQLite file holding one package's permanent responses and its reports per period (see module docstring).

    Parameters
    ----------
    path : str
        The store file (created if missing; ``":memory:"`` for a store that lives as long as this object).
    package_sha256 : str
        The package the store serves; a store made for another package is refused (:class:`StoreMismatch`).
    timeout : float
        Seconds to wait for another process holding the store's write lock.
    """

    def __init__(self, path: str, package_sha256: str, timeout: float = DEFAULT_TIMEOUT):
        self.package = package_sha256
        self._connection = sqlite3.connect(path, timeout=timeout, isolation_level=None)
        with self._transaction() as cursor:
            cursor.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            cursor.execute("CREATE TABLE IF NOT EXISTS permanent (package TEXT NOT NULL, value TEXT NOT NULL, "
                           "response INTEGER NOT NULL, PRIMARY KEY (package, value))")
            cursor.execute("CREATE TABLE IF NOT EXISTS reports (package TEXT NOT NULL, period INTEGER NOT NULL, "
                           "count INTEGER NOT NULL, PRIMARY KEY (package, period))")
            cursor.execute("INSERT OR IGNORE INTO meta VALUES ('package', ?)", (package_sha256,))
            stored = cursor.execute("SELECT value FROM meta WHERE key = 'package'").fetchone()[0]
        if stored != package_sha256:
            self.close()
            raise StoreMismatch(f"the memo store {path} was made for the package {stored[:16]}..., not for "
                                f"{package_sha256[:16]}...: a store serves one package")

    def _transaction(self):
        return _Immediate(self._connection)

    def permanent(self, value: str, draw) -> int:
        """The permanent response of ``value``: the stored one, or ``draw()`` stored now (one transaction)."""
        with self._transaction() as cursor:
            row = cursor.execute("SELECT response FROM permanent WHERE package = ? AND value = ?",
                                 (self.package, value)).fetchone()
            if row is not None:
                return row[0]
            response = draw()
            cursor.execute("INSERT INTO permanent VALUES (?, ?, ?)", (self.package, value, response))
            return response

    def take_round(self, period: int, limit: int) -> int:
        """Count one report in ``period``; :class:`RoundsExceeded` if ``limit`` were already made. Returns the count."""
        with self._transaction() as cursor:
            row = cursor.execute("SELECT count FROM reports WHERE package = ? AND period = ?",
                                 (self.package, period)).fetchone()
            count = 0 if row is None else row[0]
            if count >= limit:
                raise RoundsExceeded(f"{limit} report(s) already made in this period (the package's policy allows "
                                     f"{limit} per period)")
            cursor.execute("INSERT OR REPLACE INTO reports VALUES (?, ?, ?)", (self.package, period, count + 1))
            return count + 1

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> MemoStore:
        return self

    def __exit__(self, *exception) -> None:
        self.close()


class _Immediate:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an exception): one atomic read-modify-write."""

    def __init__(self, connection: sqlite3.Connection):
        self.connection = connection

    def __enter__(self) -> sqlite3.Cursor:
        self.cursor = self.connection.cursor()
        self.cursor.execute("BEGIN IMMEDIATE")
        return self.cursor

    def __exit__(self, kind, error, trace) -> None:
        self.cursor.execute("ROLLBACK" if kind is not None else "COMMIT")


class MemoizedClient:
    """Reports of a table package under its longitudinal policy (see the module docstring).

    Parameters
    ----------
    document : dict
        A parsed table package with a ``longitudinal`` member.
    store : MemoStore
        The store of this package.
    clock : callable, optional
        Seconds since the epoch (default :func:`time.time`).
    **trust
        What the caller trusts: ``public_key=``, ``sha256=`` or ``allow_unauthenticated=True``
        (:func:`sampler.authenticate`); one is required.
    """

    def __init__(self, document: dict, store: MemoStore, clock=time.time, **trust):
        self.sampler = TableSampler(document, **trust)
        if check_common(document) != "table" or MEMBER not in document:
            raise PackageError("a memoizing client needs a table package with a longitudinal member")
        if store.package != document["sha256"]:
            raise StoreMismatch(f"the memo store serves the package {store.package[:16]}..., not this one "
                                f"({document['sha256'][:16]}...)")
        member = document[MEMBER]
        table = check_longitudinal(member, len(self.sampler.inputs), self.sampler.n_outputs)
        self.store, self.clock = store, clock
        self.rounds_per_period, self.period_seconds = int(member["rounds_per_period"]), int(member["period_seconds"])
        self.outputs = list(member["instantaneous"]["outputs"]) if table is not None else self.sampler.outputs
        self.bits = None if table is None else member["instantaneous"]["bits"]
        self.thresholds = None if table is None else [_cumulative(row) for row in table]

    def permanent(self, x: int) -> int:
        """The permanent response (output index of the package's table) of input index ``x``, drawn once."""
        return self.store.permanent(self.sampler.inputs[x], lambda: self.sampler.sample(x))

    def sample(self, x: int) -> int:
        """One report (output index) of input index ``x`` in this round; :class:`RoundsExceeded` beyond the policy."""
        if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < len(self.sampler.inputs):
            raise ValueError(f"input index must be an integer in 0..{len(self.sampler.inputs) - 1}, got {x!r}")
        self.store.take_round(int(self.clock() // self.period_seconds), self.rounds_per_period)
        response = self.permanent(x)
        if self.thresholds is None:
            return response
        return bisect.bisect_right(self.thresholds[response], secrets.randbits(self.bits))

    def report(self, label: str) -> str:
        """One report (output label) of an input label."""
        if label not in self.sampler._index:
            raise ValueError(f"unknown input label {label!r}")
        return self.outputs[self.sample(self.sampler._index[label])]
