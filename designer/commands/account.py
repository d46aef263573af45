"""``account``: a user's privacy loss after T rounds of a channel or package, memoized or not.

Exit codes: 0 computed; 1 the package is tampered (hash mismatch); 2 bad input.
Heavy modules (numpy, scipy, dp_accounting, matplotlib) load inside the command.
"""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from designer.commands import guarded, print_json

#: Largest k whose per-pair matrices are written with --json.
MATRIX_LIMIT = 64


@guarded(reads=("--channel", "--package"), writes=("--plot",))
def account_command(
    channel_file: Path = typer.Option(None, "--channel", help="CSV with k rows of probabilities (one report)."),
    package_file: Path = typer.Option(None, "--package", help="A table package (with its longitudinal stage, if any)."),
    rounds: int = typer.Option(..., "--rounds", help="Number of rounds T (reports per user)."),
    memoized: bool = typer.Option(False, "--memoized", help="The permanent response is drawn once per value and kept."),
    changes: int = typer.Option(0, "--changes", help="At most this many changes of the true value (with --memoized)."),
    delta: float = typer.Option(..., "--delta", help="Target delta of the (epsilon, delta) level."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    plot: Path = typer.Option(None, "--plot", help="Save the worst pair's loss over rounds (PNG, PDF, SVG)."),
) -> None:
    """Privacy loss over T rounds: basic composition, exact (epsilon, delta), the memoized bound. Exit 0, 1, 2."""
    from designer.longitudinal.accounting import account_rounds, plot_account

    report, permanent, source = _stages(channel_file, package_file)
    account = account_rounds(report, rounds, delta, permanent=permanent, memoized=memoized, changes=changes)
    if plot is not None:
        plot_account(account, report, plot, f"{source}: {rounds} rounds")
    payload = {"source": source, **account.to_dict(matrices=report.k <= MATRIX_LIMIT)}
    if as_json:
        print_json(payload)
    else:
        _print(payload, Console())


def _stages(channel_file: Path | None, package_file: Path | None):
    """(report channel, permanent channel, description) of the one source given."""
    if (channel_file is None) == (package_file is None):
        raise ValueError("give exactly one of --channel and --package")
    if package_file is not None:
        from designer.commands.deploy import opening
        from designer.deploy.package import read_package
        from designer.longitudinal.policy import package_stages

        document = read_package(package_file)
        with opening(package_file):
            stages = package_stages(document)
        report = stages.report()
        return report, stages.permanent, f"{package_file}: {stages.describe()}"
    from designer.io import read_channel

    channel = read_channel(channel_file, exact=False)
    return channel, None, f"{channel_file}: channel, {channel.k} inputs x {channel.n_outputs} outputs"


def _text(value) -> str:
    return "inf" if value == "inf" or (isinstance(value, float) and math.isinf(value)) else f"{value:.6g}"


def _print(payload: dict, console: Console) -> None:
    schedule = f"{payload['rounds']} round(s), " + ("memoized" if payload["memoized"] else "not memoized")
    if payload["changes"]:
        schedule += f", at most {payload['changes']} change(s) of the value"
    console.print(escape(f"{payload['source']}: {schedule}"))
    console.print(f"  one report: epsilon {_text(payload['report_epsilon'])}; permanent stage (memoized, any number "
                  f"of rounds): {_text(payload['long_term_epsilon'])}")
    console.print(f"  [bold]basic composition: epsilon {_text(payload['basic_epsilon'])}[/] (delta = 0)")
    pair = payload["worst_pair"]
    console.print(f"  [bold]epsilon {_text(payload['epsilon'])} at delta = {payload['delta']:g}[/] ({payload['method']}); "
                  + escape(f"worst pair x = {pair['inputs'][0]}, x' = {pair['inputs'][1]}"))
    console.print(escape(f"  bound: {payload['bound']}"))


def register(app: typer.Typer) -> None:
    app.command("account")(account_command)
