"""The ``ldp-designer`` command line.

Exit codes: 0 success / certified, 1 violated, 2 bad input (one clear line on
stderr, never a traceback, never a partial output file). Each command lives in
its own module under :mod:`designer.commands` and registers itself here.
"""

from __future__ import annotations

import sys

import typer

from designer.commands import BAD_INPUT
from designer.commands import certify as certify_command
from designer.commands import demo as demo_command
from designer.commands import design as design_command
from designer.commands import robust as robust_command
from designer.commands import simulate as simulate_command
from designer.commands import spec as spec_command
from designer.commands import range as range_command
from designer.commands import audit as audit_command
from designer.commands import deploy as deploy_command
from designer.commands import estimate as estimate_command
from designer.commands import sweep as sweep_command

app = typer.Typer(
    name="ldp-designer",
    help="Design, certify and deploy context-aware local differential privacy mechanisms.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

COMMAND_MODULES = [certify_command, spec_command, design_command, demo_command, robust_command, simulate_command, range_command, deploy_command, audit_command, sweep_command, estimate_command]
for module in COMMAND_MODULES:
    module.register(app)


def main() -> None:
    """Console-script entry point.

    Usage errors (an unknown option, a value of the wrong type, a missing
    required option) are one line on stderr and exit code 2, like bad input
    files; ``--help`` and no arguments print the help.
    """
    arguments = sys.argv[1:] or ["--help"]
    try:
        code = app(arguments, prog_name=app.info.name, standalone_mode=False)
    except typer.TyperException as error:  # typer's usage errors (its click layer)
        context = getattr(error, "ctx", None)
        where = context.command_path if context is not None else app.info.name
        typer.echo(f"error: {where}: {error.format_message().splitlines()[0]} (see --help)", err=True)
        code = BAD_INPUT
    except typer.Abort:
        typer.echo("aborted", err=True)
        code = 1
    sys.exit(code or 0)

if __name__ == "__main__":
    main()
