"""``ldp-designer verify-package`` and ``sample-package``: re-prove a package from scratch, then draw reports from it."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from designer.commands import guarded, print_json
from designer.commands.deploy import (
    POLICY_HELP,
    PUBLIC_KEY_HELP,
    SHA256_HELP,
    CheckedPackage,
    check_package,
    opening,
    print_trust,
    reject,
    why_violated,
)

#: Above this many outputs in a symbol's support, sample-package lists only the outputs drawn.
LISTED_SUPPORT = 1 << 16
#: Most reports one sample-package run draws (memory stays bounded: reports are counted in chunks).
MAX_SAMPLED = 10**9


@guarded(reads=("PATH", "--E", "--public-key"))
def verify_package_command(
    path: Path = typer.Argument(..., help="The mechanism package (JSON)."),
    policy_file: Path = typer.Option(None, "--E", help=POLICY_HELP),
    public_key: Path = typer.Option(None, "--public-key", help=PUBLIC_KEY_HELP),
    sha256: str = typer.Option(None, "--sha256", help=SHA256_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Re-certify a package from scratch. Exit 0 certified, 1 tampered, untrusted, violated or weaker than --E, 2 bad input."""
    checked = check_package(path, policy_file, public_key, sha256)
    if "shuffle" in checked.document:
        _verify_shuffle(checked, path)
    extra = {"trust": checked.trust, "policy": None if checked.policy is None else checked.policy.to_dict()}
    if "longitudinal" in checked.document:
        extra["longitudinal"] = _verify_longitudinal(checked, path)
    if checked.document["kind"] != "table":
        _verify_structured(checked, path, as_json, extra)
        return
    verification = checked.verification
    certificate = verification.certificate
    if as_json:
        print_json({"path": str(path), "sha256": verification.sha256, **certificate.to_dict(), **extra})
    else:
        console = Console()
        colour = "green" if certificate.certified else "red"
        console.print(
            f"[bold {colour}]{certificate.verdict.upper()}[/] (exact proof, from scratch) "
            + escape(f"{path}: sha256 ok, {verification.table.k}-input {verification.table.bits}-bit table, ")
            + f"margin min(E - E_R) = {certificate.margin:.6g}"
        )
        print_trust(checked, policy_file, console)
    if not certificate.certified:
        reject(f"{path}: {why_violated(verification)}")


def _verify_shuffle(checked: CheckedPackage, path: Path) -> None:
    """Re-prove a package's recorded central guarantee (designer.shuffle.package); one line on stderr."""
    from designer.shuffle.package import verify_shuffle_member

    with opening(path):
        guarantee = verify_shuffle_member(checked.document, checked.verification)
    member = checked.document["shuffle"]
    typer.echo(f"shuffle: central epsilon {member['epsilon']} at delta {member['delta']} for n = {member['n']} "
               f"re-proved (delta there <= {guarantee.delta:.6g})", err=True)


def _verify_longitudinal(checked: CheckedPackage, path: Path) -> dict:
    """Re-certify a package's longitudinal policy (designer.longitudinal.policy); one line on stderr."""
    from designer.longitudinal.policy import verify_longitudinal

    with opening(path):
        summary = verify_longitudinal(checked.document, checked.verification)
    typer.echo(f"longitudinal: memoization required, at most {summary['rounds_per_period']} report(s) per "
               f"{summary['period_seconds']} s; one report re-certified against report_E (epsilon "
               f"{summary['report_epsilon']:.6g}), long term {summary['long_term_epsilon']:.6g}", err=True)
    return summary


def _verify_structured(checked: CheckedPackage, path: Path, as_json: bool, extra: dict) -> None:
    """verify-package for a block-hadamard or high-low-hadamard package: its structural privacy, re-proved exactly."""
    document, verification = checked.document, checked.verification
    verdict = "certified" if verification.certified else "violated"
    if as_json:
        print_json({"path": str(path), "sha256": document["sha256"], "verdict": verdict, "mode": "exact",
                    "margin": verification.margin, "proof": list(verification.proof), **extra})
    else:
        console = Console()
        colour = "green" if verification.certified else "red"
        console.print(
            f"[bold {colour}]{verdict.upper()}[/] (exact structural proof, from scratch) "
            + escape(f"{path}: sha256 ok, {verification.mechanism}, k = {verification.k}, "
                     f"{verification.n_outputs} outputs")
        )
        for step in verification.proof:
            console.print(escape(f"  {step}"))
        print_trust(checked, None, console)
    if not verification.certified:
        reject(f"{path}: {why_violated(verification)}")


@guarded(reads=("PATH", "--E", "--public-key"))
def sample_package_command(
    path: Path = typer.Argument(..., help="The mechanism package (JSON)."),
    input_label: str = typer.Option(..., "--input", help="Input label to draw reports for."),
    n: int = typer.Option(1000, "--n", help="Number of reports."),
    seed: int = typer.Option(
        None, "--seed", min=0, help="Reproducible simulation with numpy's PCG64 (NOT cryptographic); default ChaCha20."
    ),
    policy_file: Path = typer.Option(None, "--E", help=POLICY_HELP),
    public_key: Path = typer.Option(None, "--public-key", help=PUBLIC_KEY_HELP),
    sha256: str = typer.Option(None, "--sha256", help=SHA256_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Re-verify a package, then draw n reports exactly and print their counts. Exit 0, 1 rejected, 2 bad input."""
    import numpy as np

    from designer.deploy.vectorised import VectorisedSampler

    if n < 1:
        raise ValueError(f"--n must be >= 1, got {n}")
    if n > MAX_SAMPLED:
        raise ValueError(f"--n {n} is more than {MAX_SAMPLED} reports per run (about {n / 1e7:.0f} s of sampling)")
    checked = check_package(path, policy_file, public_key, sha256)
    if not checked.certified:
        reject(f"{path}: not sampled: {why_violated(checked.verification)}")
    with opening(path):
        sampler = VectorisedSampler(checked.document, seed, allow_unauthenticated=True)  # checked just above
    try:
        x = sampler.input_index(input_label)
    except ValueError as error:
        raise ValueError(f"--input: {error}") from None
    size = sampler.support_size(x)
    outputs, drawn = sampler.drawn_counts(x, n)
    if size <= LISTED_SUPPORT:
        support = sampler.support(x)
        found = dict(zip(outputs.tolist(), drawn.tolist()))
        counts = [found.get(y, 0) for y in support.tolist()]
    else:
        support, counts = outputs, drawn.tolist()
    labels = [sampler.output_label(int(y)) for y in support]
    if as_json:
        print_json({"input": input_label, "n": n, "generator": sampler.generator_name, "trust": checked.trust,
                    "support": size, "counts": dict(zip(labels, counts))})
        return
    console = Console()
    console.print(escape(f"{n} reports for input {input_label!r} from {path}; generator: {sampler.generator_name}"))
    console.print(escape(f"  re-verified from scratch; trust: {checked.trust}"
                         + (f"; policy {policy_file} met" if checked.policy is not None else "")))
    if size > LISTED_SUPPORT:
        console.print(f"  the input can report {size} outputs; the {len(labels)} drawn are listed")
    if sampler.kind == "table":
        for label, count in zip(labels, counts):
            console.print(escape(f"  {label}: {count}"))
        return
    runs = np.split(np.arange(support.size), np.flatnonzero(np.diff(support) != 1) + 1)
    for run in runs:
        first, last = int(support[run[0]]), int(support[run[-1]])
        shown = f"outputs {first}..{last}" if last > first else f"output {first}"
        console.print(escape(f"  {shown}: {[counts[i] for i in run]}"))


def register(app: typer.Typer) -> None:
    app.command("verify-package")(verify_package_command)
    app.command("sample-package")(sample_package_command)
