"""CLI commands, one module each, with shared error handling.

Each module exposes ``register(app)``. :func:`guarded` turns bad input
(``InputError``/``ValueError``) into one line on stderr and exit code 2.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

import typer

BAD_INPUT = 2
#: Privacy levels a simulation accepts: below, e^eps rounds to 1 in double precision
#: (the estimators divide by e^eps - 1); above, e^eps overflows.
SIMULATION_EPSILON_RANGE = (1e-9, 700.0)


def fail(message: str) -> None:
    """Print one line to stderr and exit with code 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(BAD_INPUT)


def guarded(command: Callable) -> Callable:
    """Decorator: report bad input as one line and exit 2, never a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except (ValueError, ArithmeticError, OSError) as error:
            fail(str(error).splitlines()[0] if str(error) else error.__class__.__name__)
        except MemoryError as error:
            fail(f"not enough memory for this input ({str(error).splitlines()[0] if str(error) else 'MemoryError'})")

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
