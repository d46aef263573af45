"""Where the audited reports come from, and how they become arrays.

Three sources, each turning "draw n reports of input x" into a report array:

* :class:`PythonSampler` — a callable ``sampler(x, n, rng, **arguments)``
  named ``module:function`` (or ``path/to/file.py:function``);
* :class:`CommandSampler` — any program: it reads one input per line on stdin
  and writes one report per line on stdout (the seed of each batch is in the
  environment variable :data:`SEED_VARIABLE`);
* :class:`ReportFile` — a fixed file of ``input,report`` lines.

Reports may be integers, floats, strings, or vectors/tuples (unary-encoding bit
vectors, OLH ``(value, seed)`` pairs, Laplace histograms). :func:`as_report_array`
turns them into a 1-D array (scalar reports) or a 2-D numeric array (one row
per vector report); anything else (ragged tuples) becomes a 1-D object array of
tuples, which are hashable events.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import shlex
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

import numpy as np

#: The command source's batch seed (an integer) is passed in this environment variable.
SEED_VARIABLE = "LDP_AUDIT_SEED"


class ReportSource(ABC):
    """Draws reports of one input at a time."""

    description: str = "reports"

    @abstractmethod
    def draw(self, x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` reports of input ``x`` as an array (see :func:`as_report_array`)."""


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
    except ValueError:
        raise
    except BaseException as error:  # the module's own code may raise anything, even SystemExit
        raise ValueError(f"{what} {spec!r}: cannot import {module_name}: {_one_line(error)}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ValueError(f"{what} {spec!r}: {module_name} has no function {function_name!r}")
    return function


def as_report_array(raw, n: int, where: str) -> np.ndarray:
    """Check that ``raw`` holds ``n`` reports and return them as an array.

    Scalars give a 1-D array; equal-length numeric vectors a 2-D ``(n, d)``
    array; ragged or mixed reports a 1-D object array of tuples.
    """
    if isinstance(raw, (str, bytes)) or not hasattr(raw, "__len__"):
        raise ValueError(f"{where} returned {type(raw).__name__}, expected a sequence of {n} reports")
    if len(raw) != n:
        raise ValueError(f"{where} returned {len(raw)} reports for n = {n}")
    try:
        array = np.asarray(raw)
    except ValueError:  # ragged
        array = None
    if array is not None and array.dtype != object and array.ndim >= 1:
        if array.ndim == 1:
            return array
        if np.issubdtype(array.dtype, np.number) or array.dtype == bool:
            return array.reshape(n, -1)
    reports = np.empty(n, dtype=object)
    for index, report in enumerate(raw):
        reports[index] = _hashable(report, where)
    return reports


def concatenate_reports(parts: list[np.ndarray], where: str) -> np.ndarray:
    """Join report arrays of successive batches (vectors must keep their length)."""
    if not parts:
        return np.empty(0)
    shapes = {part.shape[1:] for part in parts}
    if len(shapes) > 1:
        raise ValueError(f"{where} returned reports of different shapes: {sorted(shapes)}")
    return np.concatenate(parts)


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
    """A Python callable ``sampler(x, n, rng, **arguments) -> n reports``."""

    def __init__(self, spec: str, arguments: dict | None = None):
        self.function = load_callable(spec)
        self.arguments = dict(arguments or {})
        self.description = spec + "".join(f" {key}={value!r}" for key, value in self.arguments.items())

    def draw(self, x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        where = f"the sampler (input {x})"
        try:
            raw = self.function(x, n, rng, **self.arguments)
        except Exception as error:
            raise ValueError(f"{where} raised {type(error).__name__}: {_one_line(error)}") from None
        return as_report_array(raw, n, where)


class CommandSampler(ReportSource):
    """A program reading inputs on stdin (one per line) and writing one report per line."""

    def __init__(self, command: str, timeout: float | None = None):
        self.arguments = shlex.split(command)
        if not self.arguments:
            raise ValueError("--command is empty")
        self.description = command
        self.timeout = timeout

    def draw(self, x: int, n: int, rng: np.random.Generator) -> np.ndarray:
        environment = dict(os.environ, **{SEED_VARIABLE: str(int(rng.integers(2**63 - 1)))})
        where = f"command {self.description!r} (input {x})"
        try:
            finished = subprocess.run(
                self.arguments,
                input=f"{x}\n" * n,
                capture_output=True,
                text=True,
                env=environment,
                timeout=self.timeout,
                check=False,
            )
        except FileNotFoundError:
            raise ValueError(f"command {self.arguments[0]!r} not found") from None
        except subprocess.TimeoutExpired:
            raise ValueError(f"{where} did not finish within {self.timeout:g} s") from None
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
        self.reports = {
            x: as_report_array(reports, len(reports), f"{path} (input {x})") for x, reports in grouped.items() if reports
        }
        self.missing = missing


def _hashable(report, where: str):
    if isinstance(report, np.ndarray):
        return tuple(report.ravel().tolist())
    if isinstance(report, np.generic):
        return report.item()
    if isinstance(report, (list, tuple)):
        return tuple(_hashable(part, where) for part in report)
    try:
        hash(report)
    except TypeError:
        raise ValueError(f"{where} returned an unhashable report of type {type(report).__name__}") from None
    return report


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__

