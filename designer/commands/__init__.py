"""CLI commands, one module each, with shared error handling.

Each module exposes ``register(app)``. :func:`guarded` turns bad input
(``InputError``/``ValueError``) into one line on stderr and exit code 2.
"""

from __future__ import annotations

import functools
import glob
import inspect
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import typer

from designer.errors import one_line

BAD_INPUT = 2
#: Privacy levels a simulation accepts: below, e^eps rounds to 1 in double precision
#: (the estimators divide by e^eps - 1); above, e^eps overflows.
SIMULATION_EPSILON_RANGE = (1e-9, 700.0)


def fail(message: str) -> None:
    """Print one line to stderr and exit with code 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(BAD_INPUT)


@dataclass(frozen=True)
class FileOptions:
    """How a command uses the parameters that name files, declared with :func:`guarded`.

    Options are named as typed (``"--out"``), arguments in capitals (``"PLAN"``).
    ``reads``: input files (also text options that may name files: a glob, ``file.py:function``);
    ``writes``: output files; ``writes_into``: output folders the command writes files into;
    ``updates``: ``{output: input}`` pairs where the output may be that input, rewritten
    (``estimate --save-counts`` over its own ``--counts``). ``tests/test_cli_clobbering.py``
    fails when a command has a ``Path`` parameter declared in none of them.
    """

    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()
    writes_into: frozenset[str] = frozenset()
    updates: tuple[tuple[str, str], ...] = ()

    @property
    def outputs(self) -> frozenset[str]:
        return self.writes | self.writes_into

    @property
    def declared(self) -> frozenset[str]:
        return self.reads | self.outputs


def file_parameters(command: Callable) -> dict[str, tuple[str, bool]]:
    """``{parameter: (option as typed, is an output)}`` for a command's options and arguments."""
    declared = getattr(command, "file_options", FileOptions())
    found = {}
    for name, parameter in inspect.signature(command).parameters.items():
        declarations = [text for text in getattr(parameter.default, "param_decls", None) or () if text.startswith("--")]
        option = declarations[0] if declarations else name.upper()
        found[name] = (option, option in declared.outputs)
    return found


def _named_files(value) -> list:
    """The paths a parameter's value names: a ``Path``; for text, existing files it names
    (itself, a glob's matches, the file of ``file.py:function``); numbers name none."""
    if isinstance(value, (list, tuple)):
        return [path for item in value for path in _named_files(item)]
    if isinstance(value, os.PathLike):
        return [value]
    if not isinstance(value, str) or not value:
        return []
    try:
        float(value)
        return []
    except ValueError:
        pass
    if glob.has_magic(value):
        return glob.glob(value)
    return [path for path in (value, value.rpartition(":")[0]) if path and os.path.isfile(path)]


def check_no_clobbering(command: Callable, arguments: dict) -> None:
    """The output guard: before anything is read, refuse an output that names one of the run's
    inputs or another output (links resolved, inodes compared) or an existing key file.

    Every parameter not declared as an output is a possible input: a ``Path``, or text naming
    existing files (so an undeclared text option still protects the files it names).
    """
    declared = getattr(command, "file_options", FileOptions())
    outputs, inputs, files = [], [], []
    for name, (option, is_output) in file_parameters(command).items():
        value = arguments.get(name)
        if is_output:
            if isinstance(value, (str, os.PathLike)):
                outputs.append((option, value))
                files += [(option, value)] if option in declared.writes else []
        else:
            inputs += [(option, path) for path in _named_files(value)]
    if outputs:  # imported only then: designer.io brings numpy
        from designer.io import check_outputs_spare_inputs
        from designer.io.protected import refuse_key_file

        check_outputs_spare_inputs(outputs, inputs, allowed=declared.updates)
        for option, path in files:
            refuse_key_file(path, option)


def _output_option(command: Callable, arguments: dict, path: Path) -> str:
    """``"--out "`` when ``path`` is the file that option names (empty when none does)."""
    from designer.io.writing import same_file

    for name, (option, is_output) in file_parameters(command).items():
        value = arguments.get(name)
        if is_output and isinstance(value, (str, os.PathLike)) and same_file(value, path):
            return f"{option} "
    return ""


def guarded(command: Callable | None = None, *, reads: Iterable[str] = (), writes: Iterable[str] = (),
            writes_into: Iterable[str] = (), updates: dict[str, str] | None = None) -> Callable:
    """Decorator: declare the command's file parameters (:class:`FileOptions`), guard its outputs,
    and report bad input as one line and exit 2, never a traceback.

    Before the command runs, no output may name an input, another output or a key file
    (:func:`check_no_clobbering`).
    """
    if command is None:
        return functools.partial(guarded, reads=reads, writes=writes, writes_into=writes_into, updates=updates)
    command.file_options = FileOptions(frozenset(reads), frozenset(writes), frozenset(writes_into),
                                       tuple((updates or {}).items()))

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            check_no_clobbering(command, kwargs)
            return command(*args, **kwargs)
        except (ValueError, ArithmeticError, OSError) as error:
            message = one_line(error)
            written = getattr(error, "output_path", None)  # an OutputError: name the option too
            fail(message if written is None else f"{_output_option(command, kwargs, written)}{message}")
        except MemoryError as error:
            fail(f"not enough memory for this input ({one_line(error)})")

    return wrapper


def check_simulation_epsilon(epsilon: float) -> None:
    """Refuse a privacy level outside :data:`SIMULATION_EPSILON_RANGE`, naming the option."""
    low, high = SIMULATION_EPSILON_RANGE
    if not low <= epsilon <= high:
        raise ValueError(
            f"--eps must be between {low:g} and {high:g} for a simulation, got {epsilon!r} "
            "(outside that range e^eps is 1 or overflows in double precision)"
        )


def print_json(payload: dict) -> None:
    """Print one JSON object on stdout."""
    import json  # only --json runs need it (fast start)

    sys.stdout.write(json.dumps(payload) + "\n")
