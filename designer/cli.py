"""The ``ldp-designer`` command line.

Exit codes: 0 success / certified, 1 violated, 2 bad input (one clear line on
stderr, never a traceback, never a partial output file). Each command lives in
its own module under :mod:`designer.commands` and registers itself with
``register(app)``. A run of one command imports only that command's module
(:data:`COMMANDS` says which); ``--help``, an unknown command and the module
attribute ``app`` (built on first access) register every command.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

import typer
from typer.main import get_group

from designer.commands import BAD_INPUT
from designer.errors import first_line

NAME = "ldp-designer"
#: The modules under :mod:`designer.commands`, in the order ``--help`` lists their commands.
COMMAND_MODULES = ["certify", "spec", "design", "demo", "robust", "simulate", "range", "package", "verify", "keys", "audit", "sweep", "estimate", "shuffle", "account"]
#: The module whose ``register`` adds each command (``tests/test_cli_lazy_commands.py`` checks it).
COMMANDS = {
    "certify": "certify",
    "spec": "spec",
    "design": "design",
    "demo": "demo",
    "robust": "robust",
    "certify-robust": "robust",
    "simulate": "simulate",
    "range": "range",
    "strategy": "range",
    "package": "package",
    "package-hadamard": "package",
    "verify-package": "verify",
    "sample-package": "verify",
    "package-high-low": "package",
    "export-js": "keys",
    "keygen": "keys",
    "audit": "audit",
    "sweep": "sweep",
    "estimate": "estimate",
    "shuffle": "shuffle",
    "account": "account",
}


def build_app(modules: Sequence[str] = COMMAND_MODULES) -> typer.Typer:
    """The Typer app with the commands registered by ``modules`` (names under :mod:`designer.commands`)."""
    app = typer.Typer(
        name=NAME,
        help="Design, certify and deploy context-aware local differential privacy mechanisms.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    for module in modules:
        importlib.import_module(f"designer.commands.{module}").register(app)
    return app


def __getattr__(name: str) -> object:
    """``app``, the app with every command, built on first access (PEP 562)."""
    if name == "app":
        app = globals()["app"] = build_app()
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Console-script entry point.

    Usage errors (an unknown option, a value of the wrong type, a missing
    required option) are one line on stderr and exit code 2, like bad input
    files; ``--help`` and no arguments print the help.
    """
    arguments = sys.argv[1:] or ["--help"]
    module = COMMANDS.get(arguments[0])
    # a group even with one command, so that the command is still named on the command line
    # (with pretty exceptions off, ``app(...)`` adds nothing else to this call)
    command = get_group(build_app(COMMAND_MODULES if module is None else [module]))
    try:
        code = command(arguments, prog_name=NAME, standalone_mode=False)
    except typer.TyperException as error:  # typer's usage errors (its click layer)
        context = getattr(error, "ctx", None)
        where = context.command_path if context is not None else NAME
        typer.echo(f"error: {where}: {first_line(error.format_message(), type(error).__name__)} (see --help)", err=True)
        code = BAD_INPUT
    except typer.Abort:
        typer.echo("aborted", err=True)
        code = 1
    sys.exit(code or 0)

if __name__ == "__main__":
    main()
