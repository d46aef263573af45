"""Set-up shared by every test module."""

from __future__ import annotations

import functools

import pytest
import typer.testing


@pytest.fixture(scope="session", autouse=True)
def one_click_command_per_app():
    """Typer's ``CliRunner.invoke`` builds the app's Click command again on every call (25 ms for
    ``designer.cli.app``: its commands, their options and Pydantic adapters; about 800 calls in the suite,
    15 to 30 CPU s measured); a program builds it once, and so does this session, once per app. Each call
    still parses and runs in full on that command. Warnings while building are still checked:
    ``tests/test_fuzz_inputs.py`` builds each command it runs inside a run that fails on any warning."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer.testing, "_get_command", functools.cache(typer.testing._get_command))
        yield
