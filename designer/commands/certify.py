"""``ldp-designer certify``: decide E-LDP for a channel file against an E file."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape

from designer.commands import guarded, print_json

if TYPE_CHECKING:
    from designer.certify import Certificate, Violation

VIOLATED = 1
#: Longest numerator or denominator printed in full in a report (longer: ``~1.2e-30000``).
RATIO_DIGITS = 60


def report(certificate: Certificate, console: Console, title: str = "", limit: int = 10) -> None:
    """Print a certificate as a short readable report.

    Numbers are printed consistently with the verdict: a negative margin shows
    its leading digits (``-3.2e-17``, never ``0``), and a violation's log-ratio
    and level get as many digits as it takes to show the log-ratio above the
    level (exact mode computes both decimals from the exact rationals). A ratio
    too long to print in full is shown as ``~1.2e-30000``.
    """
    from designer.exact import describe_fraction

    colour = "green" if certificate.certified else "red"
    head = f"[bold {colour}]{certificate.verdict.upper()}[/] ({certificate.mode} mode"
    head += f", tolerance {certificate.tolerance:g})" if certificate.mode == "float" else ", exact proof)"
    console.print(f"{title}{head}  margin min(E - E_Q) = {certificate.margin:.6g}")
    if certificate.n_within_tolerance:
        console.print(
            f"  note: {certificate.n_within_tolerance} pair(s) exceed E by less than the tolerance; "
            "run with --exact for a proof"
        )
    for violation in certificate.violations[:limit]:
        log_ratio, allowed = _separated(violation)
        shown_excess = violation.excess is not None and sys.float_info.min <= violation.excess < math.inf
        details = [f"by {violation.excess:.2g}"] if shown_excess else []  # a smaller one shows in the log-ratio
        if violation.exact_ratio is not None:
            ratio = describe_fraction(violation.exact_ratio, RATIO_DIGITS)
            details.append(f"ratio {ratio}" if ratio.startswith("~") else f"ratio {ratio} exactly")
        suffix = f" ({'; '.join(details)})" if details else ""
        console.print(
            escape(
                f"  violated: x={violation.x} x'={violation.x_prime} witness y={violation.y}: "
                f"log Q[x,y]/Q[x',y] = {log_ratio} > E = {allowed}{suffix}"
            )
        )
    if len(certificate.violations) > limit:
        console.print(f"  ... and {len(certificate.violations) - limit} more violating pairs")


def _separated(violation: Violation) -> tuple[str, str]:
    """A violation's log-ratio and level as text, with enough digits to tell them apart."""
    from designer.exact import separating_decimals

    if math.isinf(violation.log_ratio):
        return "inf", violation.level_text
    if violation.exact_ratio is not None and violation.level is not None:
        return separating_decimals(violation.exact_ratio, violation.level)
    for digits in range(6, 18):
        log_ratio, allowed = f"{violation.log_ratio:.{digits}g}", f"{violation.allowed:.{digits}g}"
        if float(log_ratio) > float(allowed):
            break
    return log_ratio, allowed


@guarded(reads=("--E", "--channel"))
def certify_command(
    e_file: Path = typer.Option(..., "--E", help="CSV with k rows of k privacy levels (inf and log(r) allowed)."),
    channel_file: Path = typer.Option(..., "--channel", help="CSV with k rows of probabilities."),
    exact: bool = typer.Option(False, "--exact", help="Decide every comparison exactly (a proof)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Certify that a channel satisfies E-LDP. Exit 0 certified, 1 violated, 2 bad input."""
    from designer.certify import certify
    from designer.io import check_same_labels, read_channel, read_privacy_matrix

    privacy = read_privacy_matrix(e_file, exact=exact)
    channel = read_channel(channel_file, exact=exact)
    if channel.k != privacy.k:
        raise ValueError(f"{channel_file}: the channel has {channel.k} rows but {e_file} is {privacy.k} x {privacy.k}")
    check_same_labels(channel.input_labels, privacy.labels, channel_file, e_file)
    certificate = certify(channel, privacy, exact=exact)
    if as_json:
        print_json(certificate.to_dict())
    else:
        report(certificate, Console())
    if not certificate.certified:
        raise typer.Exit(VIOLATED)


def register(app: typer.Typer) -> None:
    app.command("certify")(certify_command)
