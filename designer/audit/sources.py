"""Where the audited reports come from, and how they become arrays.

Three sources, each turning "draw n reports of input x" into a report array:

* :class:`PythonSampler` — a callable ``sampler(x, n, rng, **arguments)``
  named ``module:function`` (or ``path/to/file.py:function``), run in a worker
  process that is stopped when a call exceeds the time limit;
* :class:`CommandSampler` — any program: it reads one input per line on stdin
  and writes one report per line on stdout (the seed of each batch is in the
  environment variable :data:`SEED_VARIABLE`);
* :class:`ReportFile` — a fixed file of ``input,report`` lines.

Reports may be integers, floats, strings, or vectors/tuples (unary-encoding bit
vectors, OLH ``(value, seed)`` pairs, Laplace histograms). :func:`as_report_array`
turns them into a 1-D array (scalar reports) or a 2-D numeric array (one row
per vector report); scalars that include text become text (the alphabet is
the set of distinct values as text). Missing reports, NaN and vectors of
different lengths are refused, naming the input and the report.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import math
import os
import shlex
import signal
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

import numpy as np

from designer.audit.worker import Worker, WorkerTimeout
from designer.defaults import AUDIT_COMMAND_TIMEOUT
from designer.errors import one_line

#: The command source's batch seed (an integer) is passed in this environment variable.
SEED_VARIABLE = "LDP_AUDIT_SEED"
#: Seconds a program or a Python sampler may take to answer one batch of inputs (``--timeout``).
DEFAULT_TIMEOUT = AUDIT_COMMAND_TIMEOUT


class ReportSource(ABC):
    """Draws reports of one input at a time."""

    description: str = "reports"

    @abstractmethod
    def draw(self, x: int, n: int, rng: np.random.Generator, timeout: float | None = None) -> np.ndarray:
        """``n`` reports of input ``x`` as an array (see :func:`as_report_array`).

        ``timeout``: seconds the call may take (at most the source's own ``--timeout``;
        a call that does not answer in time is stopped and is bad input).
        """

    def close(self) -> None:
        """Release what the source holds (a worker process); a source holding nothing has nothing to do."""

    def __enter__(self) -> ReportSource:
        return self

    def __exit__(self, *exception) -> None:
        self.close()


def parse_arguments(pairs: list[str] | None) -> dict:
    """``["eps=1", "protocol=OUE"]`` -> ``{"eps": 1, "protocol": "OUE"}`` (Python literals, else text)."""
    arguments = {}
    for pair in pairs or []:
        key, separator, text = pair.partition("=")
        key = key.strip()
        if not separator or not key.isidentifier():
            raise ValueError(f"--arg {pair!r}: expected key=value with a Python identifier as key")
        try:
            arguments[key] = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            arguments[key] = text.strip()
    return arguments


def load_callable(spec: str, what: str = "sampler") -> Callable:
    """The function named ``module:function`` or ``path/to/file.py:function``."""
    module_name, separator, function_name = spec.rpartition(":")
    if not separator or not module_name or not function_name:
        raise ValueError(f"{what} {spec!r}: expected module:function or path/to/file.py:function")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise ValueError(f"{what} {spec!r}: no file {module_name}")
            loader_spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(loader_spec)
            loader_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except (ValueError, KeyboardInterrupt):
        raise
    except BaseException as error:  # the module's own code may raise anything, even SystemExit
        raise ValueError(f"{what} {spec!r}: cannot import {module_name}: {one_line(error)}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ValueError(f"{what} {spec!r}: {module_name} has no function {function_name!r}")
    return function


def call_user(function: Callable, where: str, *arguments, **keywords):
    """Call user code; its exceptions and exits become one-line ``ValueError`` (Ctrl-C still interrupts).

    A ``sys.exit(0)`` inside a sampler must not end the audit as "no violation
    found", nor ``sys.exit(1)`` as "violated": both are bad input. A ``KeyboardInterrupt``
    raised by the code itself in the worker process (which ignores SIGINT, so no Ctrl-C
    can cause it) is bad input too; in the main process it stops the audit like Ctrl-C.
    """
    try:
        return function(*arguments, **keywords)
    except SystemExit as error:
        raise ValueError(f"{where} called sys.exit({error.code!r}) instead of returning") from None
    except KeyboardInterrupt as error:
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # a real Ctrl-C may have raised it: stop
            raise
        # the worker process ignores SIGINT (designer.audit.worker): the code raised it itself
        raise ValueError(f"{where} raised KeyboardInterrupt{': ' + one_line(error) if str(error) else ''} "
                         "(not a Ctrl-C: the code raised it itself)") from None
    except Exception as error:
        raise ValueError(f"{where} raised {type(error).__name__}: {one_line(error)}") from None


def as_report_array(raw, n: int, where: str) -> np.ndarray:
    """Check that ``raw`` holds ``n`` well-formed reports and return them as an array.

    Numeric scalars give a 1-D numeric array; equal-length numeric vectors a
    2-D ``(n, d)`` array; scalars that include text a 1-D object array of text
    (every value as text: ``0, 1, "debug"`` is the alphabet ``"0", "1", "debug"``).
    A missing report (``None``), a NaN, vectors of different lengths, or
    vectors mixed with scalars are refused naming ``where`` and the report.
    """
    if isinstance(raw, (str, bytes)) or not hasattr(raw, "__len__"):
        raise ValueError(f"{where} returned {type(raw).__name__}, expected a sequence of {n} reports")
    if len(raw) != n:
        raise ValueError(f"{where} returned {len(raw)} reports for n = {n}")
    if isinstance(raw, list) and raw and all(isinstance(report, np.ndarray) and report.dtype.kind in "iuf"
                                             and report.shape == raw[0].shape for report in raw):
        raw = np.stack(raw)  # vectors from a numpy client: one copy, no per-value check
    if isinstance(raw, np.ndarray) and raw.dtype != object:
        array = raw.reshape(n, -1) if raw.ndim > 1 else raw
        if array.dtype.kind in "US":
            return as_text(array)
        if array.dtype.kind == "b":
            array = array.astype(np.int8)
        if array.dtype.kind not in "iuf":
            raise ValueError(f"{where} returned reports of type {array.dtype}, expected numbers, text or vectors")
        _refuse_nan(array, where)
        return compact_integers(array)
    items = [_plain(report) for report in raw]
    vectors = [index for index, report in enumerate(items) if isinstance(report, tuple)]
    for index, report in enumerate(items):
        if report is None:
            raise ValueError(f"{where}: report {index} is missing (None)")
        if isinstance(report, float) and math.isnan(report):
            raise ValueError(f"{where}: report {index} is NaN")
    if vectors:
        if len(vectors) < n:
            scalar = next(index for index, report in enumerate(items) if not isinstance(report, tuple))
            raise ValueError(f"{where}: report {scalar} is a scalar but report {vectors[0]} is a vector")
        return _vectors(items, where)
    if any(isinstance(report, str) for report in items):
        return as_text(np.array(items, dtype=object))
    array = np.asarray(items)
    if array.dtype == object:  # integers beyond 64 bits, or other hashable values: kept as they are
        return np.array(items, dtype=object)
    return compact_integers(array)


def compact_integers(array: np.ndarray) -> np.ndarray:
    """Integer reports in the smallest signed type that holds them (bit vectors: one byte a coordinate).

    Float vectors are converted only when every value is a small integer (|v| < 128, no -0.0): the
    map is then one to one on the values present, so no event is lost (float scalars are kept: they
    may meet text reports, where ``0.0`` and ``0`` differ). 16 million 16-bit unary-encoding
    reports take 256 MB instead of 2 GB.
    """
    if array.dtype.kind == "f" and array.ndim == 2 and array.size:
        small = np.abs(array) < 128
        if small.all() and np.all(array == np.round(array)) and not np.any(np.signbit(array) & (array == 0)):
            return array.astype(np.int8)
        return array
    if array.dtype.kind not in "iu" or array.size == 0 or array.dtype.itemsize == 1:
        return array
    low, high = int(array.min()), int(array.max())
    for kind in (np.int8, np.int16, np.int32):
        if np.iinfo(kind).min <= low and high <= np.iinfo(kind).max:
            return array.astype(kind) if np.dtype(kind).itemsize < array.dtype.itemsize else array
    return array


def _plain(report):
    """A report as a Python scalar, text, or a tuple of plain values."""
    if isinstance(report, np.ndarray):
        return tuple(_plain(value) for value in report.ravel().tolist())
    if isinstance(report, np.generic):
        return report.item()
    if isinstance(report, (list, tuple)):
        return tuple(_plain(value) for value in report)
    if isinstance(report, bool):
        return int(report)
    return report


def _vectors(items: list[tuple], where: str) -> np.ndarray:
    """Equal-length vectors of numbers as a 2-D array (the first report of another length is named)."""
    length = len(items[0])
    for index, report in enumerate(items):
        if len(report) != length:
            raise ValueError(f"{where}: report {index} has {len(report)} coordinates, report 0 has {length}")
        for value in report:
            if value is None or isinstance(value, (str, tuple)) or not isinstance(value, (int, float)):
                raise ValueError(f"{where}: report {index} has a coordinate {value!r} that is not a number")
            if isinstance(value, float) and math.isnan(value):
                raise ValueError(f"{where}: report {index} has a NaN coordinate")
    try:
        integers = all(isinstance(v, int) for r in items for v in r)
        return compact_integers(np.asarray(items, dtype=np.int64 if integers else float))
    except OverflowError:  # integers beyond 64 bits (a long hash): exact, as Python integers
        return np.array(items, dtype=object).reshape(len(items), length)


def _refuse_nan(array: np.ndarray, where: str) -> None:
    if array.dtype.kind == "f":
        bad = np.flatnonzero(np.isnan(array).reshape(len(array), -1).any(axis=1))
        if bad.size:
            raise ValueError(f"{where}: report {int(bad[0])} is NaN")


def as_text(array: np.ndarray) -> np.ndarray:
    """Scalar reports as a 1-D object array of ``str`` (the alphabet of mixed reports is their text)."""
    if array.ndim != 1:
        raise ValueError("text reports must be scalars, not vectors")
    text = np.empty(len(array), dtype=object)
    text[:] = [str(value) for value in array.tolist()]
    return text


def unify_reports(reports: dict[int, np.ndarray], label: str = "input") -> dict[int, np.ndarray]:
    """Reports of all inputs in one representation: text everywhere as soon as one input has text.

    Vector reports must have the same length for every input (the first input
    of another length is named).
    """
    arrays = {x: values if isinstance(values, np.ndarray) else as_report_array(values, len(values), f"{label} {x}")
              for x, values in reports.items()}
    shapes = {x: values.shape[1:] for x, values in arrays.items()}
    first = next(iter(shapes.values()), ())
    for x, shape in shapes.items():
        if shape != first:
            def describe(s):
                return f"vectors of {s[0]} coordinates" if s else "scalars"

            raise ValueError(f"reports of {label} {x} are {describe(shape)}, those of {label} "
                             f"{next(iter(shapes))} are {describe(first)}")
    if any(is_text(values) for values in arrays.values()):
        return {x: values if is_text(values) else as_text(values) for x, values in arrays.items()}
    return arrays


def is_text(values: np.ndarray) -> bool:
    return values.dtype == object and values.ndim == 1 and len(values) > 0 and isinstance(values[0], str)


def concatenate_reports(parts: list[np.ndarray], where: str) -> np.ndarray:
    """Join report arrays of successive batches (vectors must keep their length; text makes all text)."""
    if not parts:
        return np.empty(0)
    try:
        unified = unify_reports(dict(enumerate(parts)), "batch")
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    return np.concatenate(list(unified.values()))


def parse_report(text: str):
    """A report written as text: an integer, a float, a tuple (``0,1,1`` or ``0 1 1``) or the text itself."""
    text = text.strip()
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    parts = text.replace(",", " ").split()
    if len(parts) > 1:
        values = [parse_report(part) for part in parts]
        if all(isinstance(value, (int, float)) for value in values):
            return tuple(values)
    return text


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
        rng.bit_generator.state = state
        if spawned is not None:  # children the sampler spawned (rng.spawn) are spawned here too: the next differ
            seed_sequence = rng.bit_generator.seed_seq
            seed_sequence.spawn(spawned - seed_sequence.n_children_spawned)
        return reports

    def __enter__(self) -> PythonSampler:
        """Start the worker process now, before the caller starts threads (a progress bar's): a process forked
        while another thread holds a lock (of stdout, stderr, logging) would inherit it held and could hang."""
        self.worker.start()
        return self

    def close(self) -> None:
        """Stop the worker process (a later :meth:`draw` starts a new one)."""
        self.worker.stop()


class _SamplerCall:
    """The worker's side of :class:`PythonSampler`: ``n`` reports of ``x``, then the generator's state and the
    children its seed sequence has spawned (``rng.spawn``) after them."""

    def __init__(self, spec: str, arguments: dict, function: Callable):
        self.spec, self.arguments, self.function = spec, arguments, function

    def __getstate__(self) -> dict:  # spawned workers load the function again (one from a file cannot be pickled)
        return {**self.__dict__, "function": None}

    def __call__(self, x: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, dict, int | None]:
        if self.function is None:
            self.function = load_callable(self.spec)
        where = f"the sampler (input {x})"
        reports = as_report_array(call_user(self.function, where, x, n, rng, **self.arguments), n, where)
        spawned = getattr(rng.bit_generator.seed_seq, "n_children_spawned", None)  # None: a seedless sequence
        return reports, rng.bit_generator.state, spawned


def check_timeout(timeout: float) -> None:
    """Refuse a ``--timeout`` that is not a positive finite number of seconds."""
    if not (math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"--timeout must be a positive number of seconds, got {timeout}")


class CommandSampler(ReportSource):
    """A program reading inputs on stdin (one per line) and writing one report per line."""

    def __init__(self, command: str, timeout: float = DEFAULT_TIMEOUT):
        self.arguments = shlex.split(command)
        if not self.arguments:
            raise ValueError("--command is empty")
        check_timeout(timeout)
        self.description = command
        self.timeout = timeout

    def draw(self, x: int, n: int, rng: np.random.Generator, timeout: float | None = None) -> np.ndarray:
        timeout = self.timeout if timeout is None else min(timeout, self.timeout)
        environment = dict(os.environ, **{SEED_VARIABLE: str(int(rng.integers(2**63 - 1)))})
        where = f"command {self.description!r} (input {x})"
        try:
            finished = subprocess.run(
                self.arguments,
                input=f"{x}\n" * n,
                capture_output=True,
                text=True,
                env=environment,
                timeout=timeout,
                check=False,
            )
        except FileNotFoundError:
            raise ValueError(f"command {self.arguments[0]!r} not found") from None
        except subprocess.TimeoutExpired:
            raise ValueError(f"{where} did not answer {n} inputs within {timeout:.3g} s (--timeout, or the rest "
                             "of --seconds)") from None
        if finished.returncode != 0:
            message = finished.stderr.strip().splitlines()
            detail = f": {message[-1]}" if message else ""
            raise ValueError(f"{where} exited with status {finished.returncode}{detail}")
        lines = [line for line in finished.stdout.splitlines() if line.strip()]
        return as_report_array([parse_report(line) for line in lines], n, where)


class ReportFile:
    """Fixed reports from a file of ``input,report`` lines (``#`` comments, an optional header).

    The report is everything after the first comma, parsed by :func:`parse_report`.
    """

    def __init__(self, path: str | Path, k: int):
        self.path = Path(path)
        self.description = str(path)
        grouped: dict[int, list] = {x: [] for x in range(k)}
        if not self.path.is_file():
            raise ValueError(f"--reports {path}: no such file")
        with open(self.path, encoding="utf-8") as handle:
            seen_data = False
            for number, line in enumerate(handle, start=1):
                stripped = line.strip()
                if not stripped or stripped.startswith("#"):
                    continue
                head, separator, rest = stripped.partition(",")
                try:
                    x = int(head)
                except ValueError:
                    if not seen_data:  # a header line
                        seen_data = True
                        continue
                    raise ValueError(f"{path}: line {number}: input {head!r} is not an integer") from None
                seen_data = True
                if not separator or not rest.strip():
                    raise ValueError(f"{path}: line {number}: expected input,report")
                if not 0 <= x < k:
                    raise ValueError(f"{path}: line {number}: input {x} outside 0..{k - 1} (E is {k} x {k})")
                grouped[x].append(parse_report(rest))
        missing = [x for x, reports in grouped.items() if not reports]
        if len(missing) == k:
            raise ValueError(f"{path}: no input,report lines")
        self.reports = unify_reports({
            x: as_report_array(reports, len(reports), f"{path} (input {x})") for x, reports in grouped.items() if reports
        })
        self.missing = missing
