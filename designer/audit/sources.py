"""Where the audited reports come from.

Three sources, each turning "draw n reports of input x" into a report array
(:mod:`designer.audit.reports`):

* :class:`PythonSampler` — a callable ``sampler(x, n, rng, **arguments)``
  named ``module:function`` (or ``path/to/file.py:function``), run in a worker
  process that is stopped when a call exceeds the time limit;
* :class:`CommandSampler` — any program: it reads one input per line on stdin
  and writes one report per line on stdout (the seed of each batch is in the
  environment variable :data:`SEED_VARIABLE`);
* :class:`ReportFile` — a fixed file of ``input,report`` lines.

The lines of a program or a file are read as their bytes, or by a declared
parser (:mod:`designer.audit.lines`). A source that draws can also answer a
*sequence* of inputs, one call (one user) each, in the order given
(:meth:`ReportSource.draw_sequence`): the state probe (:mod:`designer.audit.probe`)
interleaves inputs to see whether a report depends on the calls before it.
"""

from __future__ import annotations

import math
import os
import shlex
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

import numpy as np

from designer.audit.lines import make_reader, split_lines
from designer.audit.reports import as_report_array, as_text, unify_reports
from designer.audit.usercode import call_user, load_callable
from designer.audit.worker import Worker, WorkerTimeout
from designer.defaults import AUDIT_COMMAND_TIMEOUT

#: The command source's batch seed (an integer) is passed in this environment variable.
SEED_VARIABLE = "LDP_AUDIT_SEED"
#: Seconds a program or a Python sampler may take to answer one batch of inputs (``--timeout``).
DEFAULT_TIMEOUT = AUDIT_COMMAND_TIMEOUT


class ReportSource(ABC):
    """Draws reports of one input at a time, or of a sequence of inputs one call each."""

    description: str = "reports"
    #: The separator of vector reports read from lines (None: no lines, or scalars).
    separator: str | None = None

    @abstractmethod
    def draw(self, x: int, n: int, rng: np.random.Generator, timeout: float | None = None) -> np.ndarray:
        """``n`` reports of input ``x`` as an array (see :func:`~designer.audit.reports.as_report_array`).

        ``timeout``: seconds the call may take (at most the source's own ``--timeout``;
        a call that does not answer in time is stopped and is bad input).
        """

    @abstractmethod
    def draw_sequence(self, inputs: np.ndarray, rng: np.random.Generator, timeout: float | None = None) -> np.ndarray:
        """One report of each of ``inputs``, in that order, each from its own call (one user a call)."""

    def as_text(self, array: np.ndarray) -> np.ndarray:
        """Reports as text, as this source wrote them (:func:`~designer.audit.reports.as_text`)."""
        return as_text(array, self.separator)

    def reading(self) -> dict | None:
        """How lines were read (:mod:`designer.audit.lines`); None for a Python sampler."""
        return None

    def close(self) -> None:
        """Release what the source holds (a worker process); a source holding nothing has nothing to do."""

    def __enter__(self) -> ReportSource:
        return self

    def __exit__(self, *exception) -> None:
        self.close()


class PythonSampler(ReportSource):
    """A Python callable ``sampler(x, n, rng, **arguments) -> n reports``, run in a worker process.

    Each call must return within ``timeout`` seconds (``--timeout``, as for a
    program): the sampler runs in a child process (:class:`~designer.audit.worker.Worker`)
    that is killed when it does not answer in time. The generator is sent with
    each call and its state taken back, with the count of children its seed
    sequence spawned (``rng.spawn``), so the reports and ``rng``'s stream are
    those of a call in this process.
    """

    def __init__(self, spec: str, arguments: dict | None = None, timeout: float = DEFAULT_TIMEOUT):
        check_timeout(timeout)
        self.arguments = dict(arguments or {})
        self.description = spec + "".join(f" {key}={value!r}" for key, value in self.arguments.items())
        self.timeout = timeout
        self.worker = Worker(_SamplerCall(spec, self.arguments, load_callable(spec)))

    def draw(self, x: int, n: int, rng: np.random.Generator, timeout: float | None = None) -> np.ndarray:
        timeout = self.timeout if timeout is None else min(timeout, self.timeout)
        where = f"the sampler (input {x})"
        try:
            reports, state, spawned = self.worker.call((x, n, rng), timeout, where)
        except WorkerTimeout:
            raise ValueError(f"{where} did not return {n} reports within {timeout:.3g} s (--timeout, or the rest "
                             "of --seconds)") from None
        _take_back(rng, state, spawned)
        return reports

    def draw_sequence(self, inputs: np.ndarray, rng: np.random.Generator, timeout: float | None = None) -> np.ndarray:
        timeout = self.timeout if timeout is None else min(timeout, self.timeout)
        where = f"the sampler (a sequence of {len(inputs)} calls of one report)"
        try:
            reports, state, spawned = self.worker.call((tuple(int(x) for x in inputs), 1, rng), timeout, where)
        except WorkerTimeout:
            raise ValueError(f"{where} did not return within {timeout:.3g} s (--timeout, or the rest of "
                             "--seconds)") from None
        _take_back(rng, state, spawned)
        return reports

    def __enter__(self) -> PythonSampler:
        """Start the worker process now, before the caller starts threads (a progress bar's): a process forked
        while another thread holds a lock (of stdout, stderr, logging) would inherit it held and could hang."""
        self.worker.start()
        return self

    def close(self) -> None:
        """Stop the worker process (a later :meth:`draw` starts a new one)."""
        self.worker.stop()


def _take_back(rng: np.random.Generator, state: dict, spawned: int | None) -> None:
    """The generator's state after a call in the worker, and the children its seed sequence spawned there
    (``rng.spawn``: spawned here too, so that the next ones differ)."""
    rng.bit_generator.state = state
    if spawned is not None:
        seed_sequence = rng.bit_generator.seed_seq
        seed_sequence.spawn(spawned - seed_sequence.n_children_spawned)


class _SamplerCall:
    """The worker's side of :class:`PythonSampler`: ``n`` reports of ``x`` (or, ``x`` a tuple of inputs, one
    report of each, a call each), then the generator's state and the children its seed sequence has spawned
    (``rng.spawn``) after them."""

    def __init__(self, spec: str, arguments: dict, function: Callable):
        self.spec, self.arguments, self.function = spec, arguments, function

    def __getstate__(self) -> dict:  # spawned workers load the function again (one from a file cannot be pickled)
        return {**self.__dict__, "function": None}

    def __call__(self, x: int | tuple, n: int, rng: np.random.Generator) -> tuple[np.ndarray, dict, int | None]:
        if self.function is None:
            self.function = load_callable(self.spec)
        if isinstance(x, tuple):
            reports = as_report_array([self._one(value, rng) for value in x], len(x), "the sampler's sequence")
        else:
            reports = self._draw(x, n, rng)
        spawned = getattr(rng.bit_generator.seed_seq, "n_children_spawned", None)  # None: a seedless sequence
        return reports, rng.bit_generator.state, spawned

    def _draw(self, x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        where = f"the sampler (input {x})"
        return as_report_array(call_user(self.function, where, x, n, rng, **self.arguments), n, where)

    def _one(self, x: int, rng: np.random.Generator):
        """The one report of a call ``sampler(x, 1, rng)`` (checked as a sequence of one report)."""
        raw = call_user(self.function, f"the sampler (input {x})", x, 1, rng, **self.arguments)
        if isinstance(raw, (str, bytes)) or not hasattr(raw, "__len__") or len(raw) != 1:
            as_report_array(raw, 1, f"the sampler (input {x})")  # raises, naming what is wrong
        return raw[0]


def check_timeout(timeout: float) -> None:
    """Refuse a ``--timeout`` that is not a positive finite number of seconds."""
    if not (math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"--timeout must be a positive number of seconds, got {timeout}")


class CommandSampler(ReportSource):
    """A program reading inputs on stdin (one per line) and writing one report per line.

    Its lines are read by ``reader`` (:func:`~designer.audit.lines.make_reader` of ``--parser``): as their
    bytes by default. The reader keeps what it learnt (the vectors' separator, the respellings seen) across
    calls, so a source asked again and again reads every answer alike.
    """

    def __init__(self, command: str, timeout: float = DEFAULT_TIMEOUT, parser: str | None = None):
        self.arguments = shlex.split(command)
        if not self.arguments:
            raise ValueError("--command is empty")
        check_timeout(timeout)
        self.description = command
        self.timeout = timeout
        self.reader = make_reader(parser)

    @property
    def separator(self) -> str | None:
        return self.reader.separator

    def as_text(self, array: np.ndarray) -> np.ndarray:
        return self.reader.as_text(array)

    def reading(self) -> dict:
        return self.reader.describe()

    def draw(self, x: int, n: int, rng: np.random.Generator, timeout: float | None = None) -> np.ndarray:
        return self._run(f"{x}\n" * n, n, x, f"command {self.description!r} (input {x})", timeout, rng)

    def draw_sequence(self, inputs: np.ndarray, rng: np.random.Generator, timeout: float | None = None) -> np.ndarray:
        where = f"command {self.description!r} (a sequence of {len(inputs)} inputs)"
        return self._run("".join(f"{int(x)}\n" for x in inputs), len(inputs), -1, where, timeout, rng)

    def _run(self, stdin: str, n: int, x: int, where: str, timeout: float | None,
             rng: np.random.Generator) -> np.ndarray:
        """One run of the program on ``stdin`` (``n`` lines), its ``n`` report lines read (``x``: their input,
        -1 for a sequence)."""
        timeout = self.timeout if timeout is None else min(timeout, self.timeout)
        environment = dict(os.environ, **{SEED_VARIABLE: str(int(rng.integers(2**63 - 1)))})
        try:
            finished = subprocess.run(self.arguments, input=stdin.encode(), capture_output=True, env=environment,
                                      timeout=timeout, check=False)
        except FileNotFoundError:
            raise ValueError(f"command {self.arguments[0]!r} not found") from None
        except subprocess.TimeoutExpired:
            raise ValueError(f"{where} did not answer {n} inputs within {timeout:.3g} s (--timeout, or the rest "
                             "of --seconds)") from None
        if finished.returncode != 0:
            message = finished.stderr.decode(errors="replace").strip().splitlines()
            detail = f": {message[-1]}" if message else ""
            raise ValueError(f"{where} exited with status {finished.returncode}{detail}")
        lines = split_lines(finished.stdout)
        if len(lines) != n:
            raise ValueError(f"{where} wrote {len(lines)} lines for {n} inputs (one report a line, every line a "
                             "report)")
        return self.reader.read(lines, x, where)


class ReportFile:
    """Fixed reports from a file of ``input,report`` lines (``#`` comments, blank lines, an optional header).

    The report is everything after the first comma up to the end of the line, read by ``reader`` (as its
    bytes by default; a ``\r`` that ends every line, a Windows file's, is dropped: it tells nothing).
    """

    separator = None

    def __init__(self, path: str | Path, k: int, parser: str | None = None):
        self.path = Path(path)
        self.description = str(path)
        self.reader = make_reader(parser)
        if not self.path.is_file():
            raise ValueError(f"--reports {path}: no such file")
        grouped = self._lines(k)
        missing = [x for x, reports in grouped.items() if not reports]
        if len(missing) == k:
            raise ValueError(f"{path}: no input,report lines")
        self.reports = unify_reports({x: self.reader.read(lines, x, f"{path} (input {x})")
                                      for x, lines in grouped.items() if lines}, separator=self.reader.separator)
        self.separator = self.reader.separator
        self.missing = missing

    def reading(self) -> dict:
        return self.reader.describe()

    def _lines(self, k: int) -> dict[int, list[str]]:
        """Every input's report lines (numbered errors for a malformed line)."""
        grouped: dict[int, list[str]] = {x: [] for x in range(k)}
        rows = split_lines(self.path.read_bytes())
        data = [(number, line) for number, line in enumerate(rows, start=1)
                if line.strip() and not line.lstrip().startswith("#")]
        carriage = bool(data) and all(line.endswith("\r") for _, line in data)
        seen_data = False
        for number, line in data:
            line = line[:-1] if carriage else line
            head, separator, rest = line.partition(",")
            try:
                x = int(head)
            except ValueError:
                if not seen_data:  # a header line
                    seen_data = True
                    continue
                raise ValueError(f"{self.path}: line {number}: input {head!r} is not an integer") from None
            seen_data = True
            if not separator or not rest:
                raise ValueError(f"{self.path}: line {number}: expected input,report")
            if not 0 <= x < k:
                raise ValueError(f"{self.path}: line {number}: input {x} outside 0..{k - 1} (E is {k} x {k})")
            grouped[x].append(rest)
        return grouped
