"""The ``ldp-designer`` command line.

Exit codes: 0 success / certified, 1 violated, 2 bad input (one clear line on
stderr, never a traceback, never a partial output file). Each command lives in
its own module under :mod:`designer.commands` and registers itself here.
"""

from __future__ import annotations

import typer

from designer.commands import certify as certify_command
from designer.commands import demo as demo_command
from designer.commands import design as design_command
from designer.commands import robust as robust_command
from designer.commands import simulate as simulate_command
from designer.commands import spec as spec_command
from designer.commands import range as range_command

app = typer.Typer(
    name="ldp-designer",
    help="Design, certify and deploy context-aware local differential privacy mechanisms.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

COMMAND_MODULES = [certify_command, spec_command, design_command, demo_command, robust_command, simulate_command, range_command]
for module in COMMAND_MODULES:
    module.register(app)


def main() -> None:
    """Console-script entry point."""
    app()

if __name__ == "__main__":
    main()
