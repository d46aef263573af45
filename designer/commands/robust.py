"""``ldp-designer robust`` and ``ldp-designer certify-robust``: robust LDP over a χ² confidence set.

Both read records (a CSV with a header), build F of eq. (3) from the secret and
public columns and the significance level, and work with channels whose rows are
ordered by ``(s, u)``, s and u sorted as strings (robust-ldp-chi-square.md).

Exit codes: 0 certified, 1 violated, 3 inconclusive, 2 bad input.
"""

from __future__ import annotations

import time
from enum import Enum
from pathlib import Path

import typer
from rich.console import Console

from designer.commands import guarded, print_json
from designer.io import read_channel, write_matrix_csv
from designer.robust.certify import DEFAULT_MAX_INTERVALS, DEFAULT_TOLERANCE, RobustCertificate, certify_robust
from designer.robust.confidence import ConfidenceSet
from designer.robust.polyopt import polyopt
from designer.robust.protocols import PROTOCOLS

DESIGNERS = {"polyopt": polyopt, **PROTOCOLS}
"""Protocol constructors by CLI name, each ``(confidence, epsilon) -> protocol`` with a channel."""

EXIT_CODES = {"certified": 0, "violated": 1, "inconclusive": 3}


class Protocol(str, Enum):
    polyopt = "polyopt"
    ir = "ir"
    grr_cr = "grr-cr"
    ue_cr = "ue-cr"
    srr = "srr"
    grr = "grr"


DATA = typer.Option(..., "--data", help="CSV of records with a header row.")
SECRET = typer.Option(..., "--secret", help="Column of the secret attribute S.")
PUBLIC = typer.Option(..., "--public", help="Column of the public attribute U.")
EPSILON = typer.Option(..., "--eps", help="Privacy level epsilon of (eps, F)-RLDP.")
ALPHA = typer.Option(0.05, "--alpha", help="Significance level: F is the 1 - alpha chi-square confidence set.")
JSON = typer.Option(False, "--json", help="Print one JSON object.")


def _check_epsilon(epsilon: float) -> None:
    if not 0 <= epsilon < float("inf"):
        raise ValueError(f"--eps must be a finite number >= 0, got {epsilon!r}")


def report(certificate: RobustCertificate, console: Console) -> None:
    """Print a robust certificate as a short readable report."""
    colour = {"certified": "green", "violated": "red"}.get(certificate.verdict, "yellow")
    console.print(
        f"[bold {colour}]{certificate.verdict.upper()}[/] (eps={certificate.epsilon:g}, F) in "
        f"{certificate.seconds:.3f} s: {certificate.n_triples} (y, s, s') triples, "
        f"{certificate.n_screened} by Proposition 4, {certificate.n_decoupled} by the decoupled chi-square bound, "
        f"{certificate.n_branched} by branch and bound, {certificate.n_violated} violated, "
        f"{certificate.n_inconclusive} open"
    )
    witness = certificate.to_dict().get("witness")
    if witness:
        console.print(
            f"  witness: y={witness['y']} s={witness['s']} s'={witness['s_prime']}: "
            f"log P(y|s)/P(y|s') = {witness['log_ratio']:.6g} > {certificate.epsilon:g} "
            f"under P in F (chi-square {witness['chi_square']:.6g})"
        )


@guarded
def robust_command(
    data: Path = DATA,
    secret: str = SECRET,
    public: str = PUBLIC,
    epsilon: float = EPSILON,
    alpha: float = ALPHA,
    protocol: Protocol = typer.Option(..., "--protocol", help="Which protocol to design."),
    out: Path = typer.Option(..., "--out", help="Where to write the channel CSV (rows ordered by (s, u))."),
    as_json: bool = JSON,
) -> None:
    """Design an (eps, F)-RLDP protocol from data, certify it and write its channel.

    Exit 0 certified, 1 violated, 3 inconclusive, 2 bad input.
    """
    start = time.perf_counter()
    _check_epsilon(epsilon)
    confidence = ConfidenceSet.from_csv(data, secret, public, alpha)
    try:
        designed = DESIGNERS[protocol.value](confidence, epsilon)
    except RuntimeError as error:  # a numerical back end gave up (e.g. the PolyOpt LP)
        raise ValueError(f"{protocol.value} could not be designed for {data}: {error}") from None
    if designed.channel is None:
        raise ValueError(f"protocol {protocol.value} was not materialised")
    certificate = certify_robust(designed.channel, confidence, epsilon)
    write_matrix_csv(out, designed.channel.matrix)
    seconds = time.perf_counter() - start
    if as_json:
        print_json({
            "protocol": protocol.value, "epsilon": epsilon, "alpha": alpha, "n": confidence.n,
            "secret": list(confidence.secret_labels), "public": list(confidence.public_labels),
            "utility": designed.normalised_utility, "mutual_information": designed.utility,
            "params": designed.params, "outputs": designed.channel.n_outputs,
            "verdict": certificate.verdict, "certificate": certificate.to_dict(),
            "out": str(out), "seconds": seconds,
        })
    else:
        console = Console()
        console.print(
            f"{protocol.value}: {confidence!r}, {designed.channel.n_outputs} outputs, "
            f"I(X;Y)/H(X) = {designed.normalised_utility:.6g} ({designed.utility:.6g} nats), params {designed.params}"
        )
        report(certificate, console)
        console.print(f"wrote {out} in {seconds:.3f} s")
    raise typer.Exit(EXIT_CODES[certificate.verdict])


@guarded
def certify_robust_command(
    data: Path = DATA,
    secret: str = SECRET,
    public: str = PUBLIC,
    epsilon: float = EPSILON,
    alpha: float = ALPHA,
    channel_file: Path = typer.Option(..., "--channel", help="Channel CSV, rows ordered by (s, u) sorted as strings."),
    tolerance: float = typer.Option(DEFAULT_TOLERANCE, "--tolerance", help="Slack on the column-scaled condition (2)."),
    max_intervals: int = typer.Option(
        DEFAULT_MAX_INTERVALS, "--max-intervals",
        help="Branch-and-bound budget per (y, s, s') triple; when it runs out the verdict is inconclusive.",
    ),
    as_json: bool = JSON,
) -> None:
    """Decide (eps, F)-RLDP of a channel. Exit 0 certified, 1 violated (witness P), 3 inconclusive, 2 bad input."""
    _check_epsilon(epsilon)
    if not 0 <= tolerance < 1:
        raise ValueError(f"--tolerance must be in [0, 1), got {tolerance!r}")
    if max_intervals < 1:
        raise ValueError(f"--max-intervals must be >= 1, got {max_intervals}")
    confidence = ConfidenceSet.from_csv(data, secret, public, alpha)
    channel = read_channel(channel_file)
    if channel.k != confidence.prior.size:
        raise ValueError(
            f"{channel_file}: the channel has {channel.k} rows but |S| x |U| = "
            f"{confidence.shape[0]} x {confidence.shape[1]} = {confidence.prior.size} in {data}"
        )
    certificate = certify_robust(channel, confidence, epsilon, tolerance=tolerance, max_intervals=max_intervals)
    if as_json:
        print_json(certificate.to_dict())
    else:
        report(certificate, Console())
    raise typer.Exit(EXIT_CODES[certificate.verdict])


def register(app: typer.Typer) -> None:
    app.command("robust")(robust_command)
    app.command("certify-robust")(certify_robust_command)
