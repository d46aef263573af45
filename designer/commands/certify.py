"""``ldp-designer certify``: decide E-LDP for a channel file against an E file."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from designer.certify import Certificate, certify
from designer.commands import guarded, print_json
from designer.io import read_channel, read_privacy_matrix

VIOLATED = 1


def report(certificate: Certificate, console: Console, title: str = "", limit: int = 10) -> None:
    """Print a certificate as a short readable report."""
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
        ratio = f" (ratio {violation.exact_ratio} exactly)" if violation.exact_ratio is not None else ""
        console.print(
            escape(
                f"  violated: x={violation.x} x'={violation.x_prime} witness y={violation.y}: "
                f"log Q[x,y]/Q[x',y] = {violation.log_ratio:.6g}{ratio} > E = {violation.allowed:.6g}"
            )
        )
    if len(certificate.violations) > limit:
        console.print(f"  ... and {len(certificate.violations) - limit} more violating pairs")


@guarded
def certify_command(
    e_file: Path = typer.Option(..., "--E", help="CSV with k rows of k privacy levels (inf and log(r) allowed)."),
    channel_file: Path = typer.Option(..., "--channel", help="CSV with k rows of probabilities."),
    exact: bool = typer.Option(False, "--exact", help="Decide every comparison exactly (a proof)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Certify that a channel satisfies E-LDP. Exit 0 certified, 1 violated, 2 bad input."""
    privacy = read_privacy_matrix(e_file)
    channel = read_channel(channel_file)
    if channel.k != privacy.k:
        raise ValueError(f"{channel_file}: the channel has {channel.k} rows but {e_file} is {privacy.k} x {privacy.k}")
    certificate = certify(channel, privacy, exact=exact)
    if as_json:
        print_json(certificate.to_dict())
    else:
        report(certificate, Console())
    if not certificate.certified:
        raise typer.Exit(VIOLATED)


def register(app: typer.Typer) -> None:
    app.command("certify")(certify_command)
