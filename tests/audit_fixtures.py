"""Shared helpers of the audit's byte and state-probe tests: the command line, the fixture clients, E files."""

from __future__ import annotations

import sys
from pathlib import Path

from typer.testing import CliRunner

from designer.cli import app

runner = CliRunner()
FIXTURES = Path(__file__).parent / "fixtures" / "audit"
SAMPLERS = FIXTURES / "samplers.py"
#: GRR as a program writing one input's reports in another spelling, or keeping state (spelling_command.py).
SPELLING = f"{sys.executable} {FIXTURES / 'spelling_command.py'}"


def audit(*arguments):
    """``ldp-designer audit ARGUMENTS`` (values written as text)."""
    return runner.invoke(app, ["audit", *map(str, arguments)])


def classic_E(path: Path, k: int, eps: float = 1.0) -> Path:
    """``path``: the k x k E of classic eps-LDP, as CSV."""
    path.write_text("\n".join(",".join("0" if i == j else f"{eps!r}" for j in range(k)) for i in range(k)) + "\n")
    return path
