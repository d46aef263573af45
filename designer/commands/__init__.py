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
from collections.abc import Callable
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


#: Options that name files a command writes (besides any ``--*-out``); every other
#: ``Path`` parameter, and a text option naming an existing file, is an input.
OUTPUT_OPTIONS = frozenset({"--out", "--summary", "--package", "--plot"})


def file_parameters(command: Callable) -> dict[str, tuple[str, bool]]:
    """``{parameter: (option as typed, is an output)}`` for a command's options and arguments."""
    found = {}
    for name, parameter in inspect.signature(command).parameters.items():
        declarations = [text for text in getattr(parameter.default, "param_decls", None) or () if text.startswith("--")]
        option = declarations[0] if declarations else name.upper()
        is_output = option not in getattr(command, "input_options", ()) and (
            option in OUTPUT_OPTIONS or option.endswith("-out"))
        found[name] = (option, is_output)
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
    """Refuse a run whose output path names one of its inputs (or another output), before any reading."""
    outputs, inputs = [], []
    for name, (option, is_output) in file_parameters(command).items():
        value = arguments.get(name)
        if is_output:
            outputs += [(option, value)] if isinstance(value, (str, os.PathLike)) else []
        else:
            inputs += [(option, path) for path in _named_files(value)]
    if outputs:  # imported only then: designer.io brings numpy
        from designer.io import check_outputs_spare_inputs

        check_outputs_spare_inputs(outputs, inputs)


def _output_option(command: Callable, arguments: dict, path: Path) -> str:
    """``"--out "`` when ``path`` is the file that option names (empty when none does)."""
    from designer.io.writing import same_file

    for name, (option, is_output) in file_parameters(command).items():
        value = arguments.get(name)
        if is_output and isinstance(value, (str, os.PathLike)) and same_file(value, path):
            return f"{option} "
    return ""


def guarded(command: Callable | None = None, *, inputs: frozenset[str] = frozenset()) -> Callable:
    """Decorator: report bad input as one line and exit 2, never a traceback.

    Before the command runs, no output may name an input (:func:`check_no_clobbering`).
    ``inputs`` names options that this command reads although :data:`OUTPUT_OPTIONS`
    lists them as outputs elsewhere (``shuffle --package`` reads a package).
    """
    if command is None:
        return functools.partial(guarded, inputs=inputs)
    command.input_options = frozenset(inputs)

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
