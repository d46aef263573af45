"""``ldp-designer robust`` and ``ldp-designer certify-robust``: robust LDP over a χ² confidence set.

Both read records (a CSV with a header), build F of eq. (3) from the secret and
public columns and the significance level, and work with channels whose rows are
ordered by ``(s, u)``, s and u sorted as strings (robust-ldp-chi-square.md).

Exit codes: 0 certified, 1 violated, 3 inconclusive, 2 bad input. ``robust --verify``
(PolyOpt) also proves an upper bound on the optimum (Theorem 12's LP;
:func:`designer.robust.polyopt.verify_optimality`), reported as ``verification`` in
``--json``; it does not change the exit code. ``robust`` designs for ``eps <= 700``
(:data:`designer.robust.protocols.MAX_EPSILON`); ``certify-robust`` takes any finite eps.
"""

from __future__ import annotations

import functools
import time
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from designer.commands import guarded, print_json
from designer.commands.progress import ProofProgress
from designer.defaults import ROBUST_MAX_INTERVALS, ROBUST_TOLERANCE

if TYPE_CHECKING:
    from designer.robust.certify import RobustCertificate


def designers() -> dict:
    """Protocol constructors by CLI name, each ``(confidence, epsilon) -> protocol`` with a channel."""
    from designer.robust.polyopt import polyopt
    from designer.robust.protocols import PROTOCOLS

    return {"polyopt": polyopt, **PROTOCOLS}


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


class PolyOptMethod(str, Enum):
    auto = "auto"
    enumeration = "enumeration"
    column_generation = "column-generation"


def _check_epsilon(epsilon: float) -> None:
    if not 0 <= epsilon < float("inf"):
        raise ValueError(f"--eps must be a finite number >= 0, got {epsilon!r}")


def _check_design_options(epsilon: float, protocol: Protocol, method: PolyOptMethod, verify: bool,
                          max_seconds: float | None) -> None:
    """Refuse, in one line, options a design cannot honour (before any work is done)."""
    from designer.robust.protocols import MAX_EPSILON

    _check_epsilon(epsilon)
    if epsilon > MAX_EPSILON:
        raise ValueError(
            f"--eps {epsilon:g} is too large to design a channel: at most {MAX_EPSILON:g} (beyond, e^-eps "
            f"underflows in double precision; a channel designed at {MAX_EPSILON:g} is private at any larger eps)"
        )
    if protocol is not Protocol.polyopt:
        for name, used in (("--verify", verify), ("--method", method is not PolyOptMethod.auto)):
            if used:
                raise ValueError(f"{name} applies to --protocol polyopt only (got --protocol {protocol.value})")
    if max_seconds is not None:
        if not verify:
            raise ValueError("--max-seconds is the budget of --verify: add --verify")
        if not 0 < max_seconds < float("inf"):
            raise ValueError(f"--max-seconds must be a positive number of seconds, got {max_seconds!r}")


def describe_proof(proof) -> str:
    """One line for an :class:`designer.robust.polyopt.OptimalityProof`."""
    if proof.status == "unfinished":
        return (f"optimality: not proved, the vertex enumeration did not finish within --max-seconds "
                f"{proof.max_seconds:g} (the channel is still certified; raise the budget to prove it)")
    cone = "every vertex of the cone (44)" if proof.cone == "inner" else "every vertex of the outer cone"
    verdict = "proved optimal" if proof.status == "proved" else "bounded (not proved optimal)"
    return (f"optimality: {verdict}: upper bound {proof.upper_bound:.12g} nats, gap {proof.gap:.3g}, "
            f"{proof.vertices} vertices ({cone}), {proof.seconds:.3f} s")


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
        log_ratio = "inf (P(y|s') = 0)" if witness["log_ratio"] is None else f"{witness['log_ratio']:.6g}"
        console.print(
            f"  witness: y={witness['y']} s={witness['s']} s'={witness['s_prime']}: "
            f"log P(y|s)/P(y|s') = {log_ratio} > {certificate.epsilon:g} "
            f"under P in F (chi-square {witness['chi_square']:.6g})",
            markup=False, emoji=False,  # the labels come from the data file: print them verbatim
        )


@guarded(reads=("--data", "--sign"), writes=("--out", "--package"))
def robust_command(
    data: Path = DATA,
    secret: str = SECRET,
    public: str = PUBLIC,
    epsilon: float = EPSILON,
    alpha: float = ALPHA,
    protocol: Protocol = typer.Option(..., "--protocol", help="Which protocol to design."),
    out: Path = typer.Option(..., "--out", help="Where to write the channel CSV (rows ordered by (s, u))."),
    as_json: bool = JSON,
    package: Path = typer.Option(
        None, "--package", help="Also write a mechanism package (32-bit table, RLDP re-certified; see package)."
    ),
    sign: Path = typer.Option(None, "--sign", help="Sign the --package with this Ed25519 private key (keygen)."),
    method: PolyOptMethod = typer.Option(
        PolyOptMethod.auto, "--method",
        help="PolyOpt only: enumerate every vertex (auto: when |S||U| <= 9) or generate columns.",
    ),
    verify: bool = typer.Option(
        False, "--verify",
        help="PolyOpt only: prove an upper bound on the optimum (exact vertex enumeration); reported with its gap.",
    ),
    max_seconds: float = typer.Option(
        None, "--max-seconds",
        help="Budget of the --verify vertex enumeration in seconds; when it runs out the proof is 'unfinished'.",
    ),
) -> None:
    """Design an (eps, F)-RLDP protocol from data, certify it and write its channel.

    Exit 0 certified, 1 violated, 3 inconclusive, 2 bad input. With --verify (PolyOpt)
    the optimality proof is reported too; it does not change the exit code.
    """
    from designer.io import check_destinations, write_matrix_csv
    from designer.robust.certify import certify_robust
    from designer.robust.confidence import ConfidenceSet

    start = time.perf_counter()
    _check_design_options(epsilon, protocol, method, verify, max_seconds)
    check_destinations([path for path in (out, package) if path is not None])  # before any work
    from designer.commands.deploy import signing_key

    key = signing_key(sign)
    design = designers()[protocol.value]
    if protocol is Protocol.polyopt:
        design = functools.partial(design, method=method.value)
    confidence = ConfidenceSet.from_csv(data, secret, public, alpha)
    progress = ProofProgress(enabled=verify, budget=max_seconds)
    step = "designed"
    try:
        with progress:
            progress.stage(f"designing {protocol.value}")
            designed = progress.run(lambda: design(confidence, epsilon))
            if designed.channel is None:
                raise ValueError(f"protocol {protocol.value} was not materialised")
            progress.stage("certifying (eps, F)-RLDP")
            certificate = progress.run(lambda: certify_robust(designed.channel, confidence, epsilon))
            proof = None
            if verify:
                from designer.robust.polyopt import verify_optimality

                step = "proved optimal (--verify)"
                proof = progress.run(lambda: verify_optimality(confidence, designed, max_seconds=max_seconds,
                                                               progress=progress.proof))
    except RuntimeError as error:  # a numerical back end gave up (e.g. the PolyOpt LP, the enumeration)
        raise ValueError(f"{protocol.value} could not be {step} for {data}: {error}") from None
    document = None
    if package is not None and certificate.verdict == "certified":
        from designer.commands.deploy import robust_package, seal

        document = seal(robust_package(designed.channel, confidence, epsilon, package), key)
    write_matrix_csv(out, designed.channel.matrix)
    if document is not None:
        from designer.deploy.package import write_package

        write_package(package, document)
    seconds = time.perf_counter() - start
    if as_json:
        print_json({
            "protocol": protocol.value, "epsilon": epsilon, "alpha": alpha, "n": confidence.n,
            "secret": list(confidence.secret_labels), "public": list(confidence.public_labels),
            "utility": designed.normalised_utility, "mutual_information": designed.utility,
            "params": designed.params, "outputs": designed.channel.n_outputs,
            "verdict": certificate.verdict, "certificate": certificate.to_dict(),
            "verification": None if proof is None else proof.to_dict(),
            "out": str(out), "seconds": seconds,
        })
    else:
        console = Console()
        console.print(
            f"{protocol.value}: {confidence!r}, {designed.channel.n_outputs} outputs, "
            f"I(X;Y)/H(X) = {designed.normalised_utility:.6g} ({designed.utility:.6g} nats), params {designed.params}"
        )
        report(certificate, console)
        if proof is not None:
            console.print(describe_proof(proof), markup=False, emoji=False)
        console.print(f"wrote {out} in {seconds:.3f} s", markup=False, emoji=False)
    raise typer.Exit(EXIT_CODES[certificate.verdict])


@guarded(reads=("--data", "--channel"))
def certify_robust_command(
    data: Path = DATA,
    secret: str = SECRET,
    public: str = PUBLIC,
    epsilon: float = EPSILON,
    alpha: float = ALPHA,
    channel_file: Path = typer.Option(..., "--channel", help="Channel CSV, rows ordered by (s, u) sorted as strings."),
    tolerance: float = typer.Option(ROBUST_TOLERANCE, "--tolerance", help="Slack on the column-scaled condition (2)."),
    max_intervals: int = typer.Option(
        ROBUST_MAX_INTERVALS, "--max-intervals",
        help="Branch-and-bound budget per (y, s, s') triple; when it runs out the verdict is inconclusive.",
    ),
    as_json: bool = JSON,
) -> None:
    """Decide (eps, F)-RLDP of a channel. Exit 0 certified, 1 violated (witness P), 3 inconclusive, 2 bad input."""
    from designer.io import read_channel
    from designer.robust.certify import certify_robust
    from designer.robust.confidence import ConfidenceSet

    _check_epsilon(epsilon)
    if not 0 <= tolerance < 1:
        raise ValueError(f"--tolerance must be in [0, 1), got {tolerance!r}")
    if max_intervals < 1:
        raise ValueError(f"--max-intervals must be >= 1, got {max_intervals}")
    confidence = ConfidenceSet.from_csv(data, secret, public, alpha)
    channel = read_channel(channel_file, exact=False)
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
