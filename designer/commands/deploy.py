"""What the package commands share: reading, trusting, sealing and describing mechanism packages.

The commands live in :mod:`designer.commands.package` (``package``, ``package-hadamard``,
``package-high-low``), :mod:`designer.commands.verify` (``verify-package``, ``sample-package``)
and :mod:`designer.commands.keys` (``keygen``, ``export-js``); ``verify-package``,
``sample-package`` and ``export-js`` read or serve any package kind.

Exit codes:

* ``package`` — 0 package written; 1 refused (the channel is not E-LDP, or no
  table at ``--bits`` certifies: one line on stderr, nothing written); 2 bad input.
* ``verify-package`` — 0 certified (structure, SHA-256, the trust asked for with
  ``--public-key`` / ``--sha256``, the exact re-certification and the policy ``--E`` all
  pass); 1 rejected: SHA-256 mismatch (tampered), not signed by the trusted key or not the
  pinned hash, a table that is not E-LDP, a stored certificate or utility number that
  disagrees with the recomputed one, or a package weaker than the policy; 2 bad input: unreadable,
  malformed or truncated JSON, another format or schema version, a missing/unknown
  member, a table entry that is not a decimal integer, a row not summing to ``2^bits``,
  a bad E entry.
* ``package-hadamard``, ``package-high-low`` — 0 written; 2 bad input.
* ``sample-package`` — 0 sampled; 1 rejected (every check of ``verify-package``, run
  before any report is drawn); 2 bad input.
* ``export-js`` — 0 written; 2 bad input (missing folder).
* ``keygen`` — 0 written; 2 bad input (a key file that exists is never overwritten).

Heavy modules (the certifier, numpy, randomgen) load inside the commands.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

REJECTED = 1
#: The options every package command takes (one declaration, shared).
SIGN_OPTION = typer.Option(None, "--sign", help="Sign the package with this Ed25519 private key (written by keygen).")
PACKAGE_OUT_OPTION = typer.Option(..., "--out", help="Where to write the mechanism package (JSON).")
POLICY_HELP = "The organisation's policy E (CSV, k x k): the package's E must be no weaker anywhere."
PUBLIC_KEY_HELP = "Trust only a package signed by this Ed25519 public key (KEY.pub from keygen)."
SHA256_HELP = "Trust only the package with this SHA-256 (64 hex digits, pinned)."


def reject(message: str) -> None:
    """Print one line ``rejected: ...`` on stderr and exit 1."""
    typer.echo(f"rejected: {message}", err=True)
    raise typer.Exit(REJECTED)


@contextmanager
def opening(path: Path):
    """Open a package at ``path``: tampered exits 1 (``rejected: path: ...``), malformed is bad input naming ``path``."""
    from designer.deploy.sampler import PackageError, PackageTampered

    try:
        yield
    except PackageTampered as error:
        reject(f"{path}: {error}")
    except PackageError as error:
        raise ValueError(f"{path}: {error}") from None


def signing_key(path: Path | None):
    """The Ed25519 private key of ``--sign`` (read before any work; ``None`` without ``--sign``)."""
    if path is None:
        return None
    from designer.deploy.signing import private_key_warning, read_private_key

    key = read_private_key(path)
    warning = private_key_warning(path)
    if warning is not None:
        typer.echo(f"warning: --sign {warning}", err=True)
    return key


def seal(document: dict, key) -> dict:
    """The package signed with ``key`` (from :func:`signing_key`), or unchanged when there is none."""
    if key is None:
        return document
    from designer.deploy.signing import sign_package

    return sign_package(document, key)


@dataclass
class CheckedPackage:
    """What :func:`check_package` established: the verification, how the package was trusted, the policy check."""

    document: dict
    verification: object
    certified: bool
    trust: str
    policy: object | None


def check_package(path: Path, policy_file: Path | None, public_key_file: Path | None,
                  sha256: str | None) -> CheckedPackage:
    """Read a package and run every check of verify-package (see the module docstring for exit codes).

    Order: the policy and key files are read first (bad input, exit 2); then the package's
    structure (2), hash (1) and exact re-certification against its own E (a violation is
    returned, ``certified`` False, for the caller to print; a stored number that differs
    from the recomputed one exits 1), authentication by ``--public-key`` / ``--sha256`` (1),
    and the policy (1).
    """
    from designer.deploy.package import read_package, verify_package
    from designer.deploy.sampler import authenticate, check_common
    from designer.deploy.structured import verify_structured_package

    policy = None
    if policy_file is not None:
        from designer.io import read_privacy_matrix

        policy = read_privacy_matrix(policy_file)
    key = None
    if public_key_file is not None:
        from designer.deploy.signing import read_public_key

        key = read_public_key(public_key_file)
    if sha256 is not None:
        from designer.deploy.sampler import PackageError, pinned_digest

        try:
            pinned_digest(sha256)
        except PackageError as error:
            raise ValueError(f"--sha256: {error}") from None
    document = read_package(path)
    with opening(path):
        if check_common(document) == "table":
            verification = verify_package(document)
        else:
            verification = verify_structured_package(document)
        trust = authenticate(document, key, sha256, allow_unauthenticated=True) if key or sha256 else (
            "not authenticated (no --public-key or --sha256): the hash proves integrity, not authorship")
    certified = verification.certified
    check = None
    if certified and policy is not None:
        from designer.deploy.policy import check_policy

        with opening(path):
            check = check_policy(document, policy, verification)
        if not check.met:
            reject(f"{path}: does not meet the policy {policy_file}: {check.failure()}")
    return CheckedPackage(document, verification, certified, trust, check)


def certified_package(channel, privacy, bits: int, out: Path, prior=None, prior_name: str = "uniform") -> dict:
    """The package document of ``channel`` rounded to a certified ``bits``-bit table (nothing is written).

    Refusal (:class:`designer.deploy.table.TableRefused`) exits 1 with one line naming ``out``.
    """
    from designer.deploy.package import build_package
    from designer.deploy.table import TableRefused, deployable_table

    try:
        deployable = deployable_table(channel, privacy, bits, prior)
    except TableRefused as error:
        reject(f"{out} not written: {error}")
    return build_package(deployable, prior_name)


#: Added to a robust channel's tight E to form the plain E-LDP level its package certifies.
ROBUST_PACKAGE_SLACK = 1e-6


def robust_package(channel, confidence, epsilon: float, out: Path) -> dict:
    """Package an (eps, F)-RLDP channel (robust-ldp-chi-square.md) as a certified 32-bit table.

    The package's E is the channel's tight E plus :data:`ROBUST_PACKAGE_SLACK` (a plain
    E-LDP guarantee on the (s, u) rows, certified exactly for the table); the rounded
    table's (eps, F)-RLDP is then re-decided by the robust certifier, and a table
    that is not certified there is refused (exit 1, nothing written).
    """
    import numpy as np

    from designer.deploy.package import load_package
    from designer.robust.certify import certify_robust
    from designer.spec import PrivacyMatrix

    tight = channel.tight_privacy().epsilon
    levels = np.where(np.isfinite(tight), tight + ROBUST_PACKAGE_SLACK, np.inf)
    np.fill_diagonal(levels, 0.0)
    privacy = PrivacyMatrix(levels, channel.input_labels, "tight E of the robust channel + 1e-6")
    document = certified_package(channel, privacy, 32, out)
    _, table = load_package(document)
    robust = certify_robust(table.channel(), confidence, epsilon)
    if robust.verdict != "certified":
        reject(f"{out} not written: the 32-bit table of the channel is {robust.verdict} for (eps={epsilon:g}, F)-RLDP")
    return document


SHUFFLE_N_OPTION = typer.Option(None, "--shuffle-n", help="Also record the central guarantee of shuffling N reports (designer.shuffle).")
SHUFFLE_DELTA_OPTION = typer.Option(None, "--delta", help="The delta of that central guarantee (with --shuffle-n).")
SHUFFLE_POPULATION_OPTION = typer.Option(
    None, "--population", help="Its assumption: at least this many other users hold inputs of each pair's class."
)


def check_shuffle_options(shuffle_n, delta, population) -> None:
    if (shuffle_n is None) != (delta is None) or (population is not None and shuffle_n is None):
        raise ValueError("--shuffle-n and --delta go together (and --population needs them)")


def _record_shuffle(document: dict, shuffle_n, delta, population) -> None:
    """Add the ``shuffle`` member (central guarantee) to a built package and re-hash it, if asked."""
    if shuffle_n is not None:
        from designer.shuffle.package import add_shuffle_member

        add_shuffle_member(document, shuffle_n, delta, population)


def parsed(option: str, parser, text: str):
    """``parser(text)``, with a parse error naming the option."""
    try:
        return parser(text)
    except ValueError as error:
        raise ValueError(f"{option}: {error}") from None


def finish_package(document: dict, out: Path, key, shuffle: tuple) -> dict:
    """Record the shuffled guarantee if asked (``shuffle`` = n, delta, population), sign, write atomically; the package."""
    from designer.deploy.package import write_package

    _record_shuffle(document, *shuffle)
    document = seal(document, key)
    write_package(out, document)
    return document


def describe_package(document: dict, out: Path, console: Console) -> None:
    """Print what a package holds: size, rounding method, loss, hash."""
    utility = document["utility"]
    weight = f", mixing weight {utility['mixing_weight']}" if utility["rounding"] == "mixed" else ""
    console.print(
        escape(
            f"package {out}: {len(document['inputs'])} inputs x {len(document['outputs'])} outputs, "
            f"{document['bits']}-bit table, certified exactly (margin {document['certificate']['margin']})"
        )
    )
    console.print(
        f"  rounding {utility['rounding']}{weight}: max total variation {float(utility['max_total_variation']):.3g}, "
        f"max relative change {float(utility['max_relative_change']):.3g}, "
        f"relative mutual-information loss {float(utility['relative_utility_loss']):.3g}"
    )
    console.print(f"  sha256 {document['sha256']}")
    print_signature(document, console)


def print_signature(document: dict, console: Console) -> None:
    """One line naming the signing key, for a signed package."""
    from designer.deploy.sampler import SIGNATURE, key_fingerprint, signature_bytes

    if SIGNATURE in document:
        console.print(f"  signed (Ed25519) by key {key_fingerprint(signature_bytes(document)[0])}")


def why_violated(verification) -> str:
    """One line naming the broken constraint (table) or the failed proof steps (structured package)."""
    failed = getattr(verification, "failed", None)
    if failed is not None:
        return "; ".join(failed)
    return f"the table is not E-LDP: {verification.certificate.violations[0].describe()}"


def print_trust(checked: CheckedPackage, policy_file: Path | None, console: Console) -> None:
    """Lines saying how the package was trusted and whether it meets the policy."""
    console.print(escape(f"  trust: {checked.trust}"))
    if checked.policy is not None:
        console.print(escape(f"  policy {policy_file}: met (the package's E is no weaker on any pair, compared "
                             "exactly, so its certificate holds for the policy too)"))
