"""Deploy what was certified: ``package``, ``package-hadamard``, ``package-high-low``, and the package tools.

``verify-package``, ``sample-package`` and ``export-js`` read or serve any package kind.

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

from designer.commands import guarded, print_json

REJECTED = 1
JS_CLIENT = Path(__file__).resolve().parent.parent / "deploy" / "js" / "ldp-client.mjs"
#: Above this many outputs in a symbol's support, sample-package lists only the outputs drawn.
LISTED_SUPPORT = 1 << 16
#: Most reports one sample-package run draws (memory stays bounded: reports are counted in chunks).
MAX_SAMPLED = 10**9
SIGN_HELP = "Sign the package with this Ed25519 private key (written by keygen)."
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
    from designer.deploy.signing import read_private_key

    return read_private_key(path)


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
    if sha256 is not None and (len(sha256) != 64 or any(c not in "0123456789abcdefABCDEF" for c in sha256)):
        raise ValueError(f"--sha256 must be 64 hex digits, got {sha256[:80]!r}")
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


SHUFFLE_N_HELP = "Also record the central guarantee of shuffling N reports (designer.shuffle)."
SHUFFLE_DELTA_HELP = "The delta of that central guarantee (with --shuffle-n)."
SHUFFLE_POPULATION_HELP = "Its assumption: at least this many other users hold inputs of each pair's class."


def _check_shuffle_options(shuffle_n, delta, population) -> None:
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


@guarded
def package_command(
    e_file: Path = typer.Option(..., "--E", help="CSV with k rows of k privacy levels (inf and log(r) allowed)."),
    channel_file: Path = typer.Option(..., "--channel", help="CSV with k rows of probabilities."),
    out: Path = typer.Option(..., "--out", help="Where to write the mechanism package (JSON)."),
    bits: int = typer.Option(32, "--bits", help="Each table row sums to 2^bits (8 to 64)."),
    prior_file: Path = typer.Option(None, "--prior", help="Prior for the utility loss (default uniform)."),
    sign: Path = typer.Option(None, "--sign", help=SIGN_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the package summary as one JSON object."),
    shuffle_n: int = typer.Option(None, "--shuffle-n", help=SHUFFLE_N_HELP),
    shuffle_delta: float = typer.Option(None, "--delta", help=SHUFFLE_DELTA_HELP),
    population: int = typer.Option(None, "--population", help=SHUFFLE_POPULATION_HELP),
) -> None:
    """Write a mechanism package: the channel as a certified integer table. Exit 0 written, 1 refused, 2 bad input."""
    from designer.deploy.table import check_bits

    _check_shuffle_options(shuffle_n, shuffle_delta, population)
    from designer.io import read_channel, read_privacy_matrix, read_vector

    check_bits(bits)
    key = signing_key(sign)
    privacy = read_privacy_matrix(e_file)
    channel = read_channel(channel_file)
    if channel.k != privacy.k:
        raise ValueError(f"{channel_file}: the channel has {channel.k} rows but {e_file} is {privacy.k} x {privacy.k}")
    prior = None
    if prior_file is not None:
        prior = read_vector(prior_file, "prior")
        if prior.size != privacy.k or (prior < 0).any() or abs(prior.sum() - 1) > 1e-9:
            raise ValueError(f"{prior_file}: the prior must have {privacy.k} non-negative entries summing to 1")
    prior_name = "uniform" if prior_file is None else (prior_file.name if prior_file.name != "uniform" else "file uniform")
    document = certified_package(channel, privacy, bits, out, prior, prior_name)
    document = finish_package(document, out, key, (shuffle_n, shuffle_delta, population))
    if as_json:
        print_json({"out": str(out), "sha256": document["sha256"], "bits": bits, "utility": document["utility"],
                    "certificate": {key: document["certificate"][key] for key in ("verdict", "mode", "margin")}})
    else:
        describe_package(document, out, Console())


@guarded
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


def why_violated(verification) -> str:
    """One line naming the broken constraint (table) or the failed proof steps (structured package)."""
    failed = getattr(verification, "failed", None)
    if failed is not None:
        return "; ".join(failed)
    return f"the table is not E-LDP: {verification.certificate.violations[0].describe()}"


def _verify_shuffle(checked: CheckedPackage, path: Path) -> None:
    """Re-prove a package's recorded central guarantee (designer.shuffle.package); one line on stderr."""
    from designer.shuffle.package import verify_shuffle_member

    with opening(path):
        guarantee = verify_shuffle_member(checked.document, checked.verification)
    member = checked.document["shuffle"]
    typer.echo(f"shuffle: central epsilon {member['epsilon']} at delta {member['delta']} for n = {member['n']} "
               f"re-proved (delta there <= {guarantee.delta:.6g})", err=True)


def print_trust(checked: CheckedPackage, policy_file: Path | None, console: Console) -> None:
    """Lines saying how the package was trusted and whether it meets the policy."""
    console.print(escape(f"  trust: {checked.trust}"))
    if checked.policy is not None:
        console.print(escape(f"  policy {policy_file}: met (the package's E is no weaker on any pair, compared "
                             "exactly, so its certificate holds for the policy too)"))


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


@guarded
def package_hadamard_command(
    block_sizes: str = typer.Option(
        ..., "--block-sizes", help="Consecutive block sizes, comma separated; SIZE*COUNT repeats (e.g. 1750*25)."
    ),
    epsilon: str = typer.Option(..., "--eps", help="Level inside a block, exact text (log(3), 1, 1/2)."),
    out: Path = typer.Option(..., "--out", help="Where to write the mechanism package (JSON)."),
    bits: int = typer.Option(32, "--bits", help="Precision of the coin: T / 2^bits (8 to 64)."),
    sign: Path = typer.Option(None, "--sign", help=SIGN_HELP),
    shuffle_n: int = typer.Option(None, "--shuffle-n", help=SHUFFLE_N_HELP),
    shuffle_delta: float = typer.Option(None, "--delta", help=SHUFFLE_DELTA_HELP),
    population: int = typer.Option(None, "--population", help=SHUFFLE_POPULATION_HELP),
) -> None:
    """Package block Hadamard response by its parameters and exact structural proof. Exit 0 written, 2 bad input."""
    from designer.deploy.structured import build_hadamard_package, parse_block_sizes

    _check_shuffle_options(shuffle_n, shuffle_delta, population)
    key = signing_key(sign)
    sizes = parsed("--block-sizes", parse_block_sizes, block_sizes)
    document = build_hadamard_package(sizes, epsilon, bits)
    document = finish_package(document, out, key, (shuffle_n, shuffle_delta, population))
    utility = document["utility"]
    Console().print(escape(
        f"package {out}: block Hadamard response, {len(sizes)} blocks, k = {sum(sizes)}, eps = {document['epsilon']}, "
        f"coin T = {document['coin']} / 2^{bits} (ideal {utility['ideal_coin']}, relative change "
        f"{float(utility['relative_coin_change']):.3g}), certified exactly (margin {document['certificate']['margin']})"
    ))
    Console().print(f"  sha256 {document['sha256']}")
    print_signature(document, Console())


@guarded
def package_high_low_command(
    k: int = typer.Option(..., "--k", help="Domain size: symbols 0..k-1."),
    sensitive: str = typer.Option(
        ..., "--sensitive", help="The sensitive symbols A: comma separated, FIRST-LAST ranges (e.g. 0-99,250)."
    ),
    epsilon: str = typer.Option(
        ..., "--eps", help="Level of high-low LDP (Definition 3), exact text (log(3), 1, 1/2)."
    ),
    out: Path = typer.Option(..., "--out", help="Where to write the mechanism package (JSON)."),
    bits: int = typer.Option(32, "--bits", help="Precision of the coin and keep thresholds: T / 2^bits (8 to 64)."),
    sign: Path = typer.Option(None, "--sign", help=SIGN_HELP),
    shuffle_n: int = typer.Option(None, "--shuffle-n", help=SHUFFLE_N_HELP),
    shuffle_delta: float = typer.Option(None, "--delta", help=SHUFFLE_DELTA_HELP),
    population: int = typer.Option(None, "--population", help=SHUFFLE_POPULATION_HELP),
) -> None:
    """Package high-low Hadamard response by its parameters and exact structural proof. Exit 0 written, 2 bad input."""
    from designer.deploy.structured import build_high_low_package, parse_symbols

    _check_shuffle_options(shuffle_n, shuffle_delta, population)
    key = signing_key(sign)
    symbols = parsed("--sensitive", parse_symbols, sensitive)
    document = build_high_low_package(k, symbols, epsilon, bits)
    document = finish_package(document, out, key, (shuffle_n, shuffle_delta, population))
    utility = document["utility"]
    Console().print(escape(
        f"package {out}: high-low Hadamard response, k = {k}, {len(symbols)} sensitive, eps = {document['epsilon']}, "
        f"coin T = {document['coin']}, keep K = {document['keep']} (/ 2^{bits}; ideal coin {utility['ideal_coin']}, "
        f"relative change {float(utility['relative_coin_change']):.3g}), certified exactly "
        f"(margin {document['certificate']['margin']})"
    ))
    Console().print(f"  sha256 {document['sha256']}")
    print_signature(document, Console())


@guarded
def sample_package_command(
    path: Path = typer.Argument(..., help="The mechanism package (JSON)."),
    input_label: str = typer.Option(..., "--input", help="Input label to draw reports for."),
    n: int = typer.Option(1000, "--n", help="Number of reports."),
    seed: int = typer.Option(
        None, "--seed", help="Reproducible simulation with numpy's PCG64 (NOT cryptographic); default ChaCha20."
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


@guarded
def keygen_command(
    out: Path = typer.Option(..., "--out", help="Private key file to create (mode 0600); the public key goes to OUT.pub."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Create an Ed25519 key pair for signing packages (never overwrites a key). Exit 0 written, 2 bad input."""
    import base64

    from designer.deploy.sampler import key_fingerprint
    from designer.deploy.signing import generate_key_files

    private_path, public_path, public = generate_key_files(out)
    encoded = base64.b64encode(public).decode("ascii")
    if as_json:
        print_json({"private_key": str(private_path), "public_key": str(public_path), "public_key_base64": encoded,
                    "fingerprint": key_fingerprint(public)})
        return
    console = Console()
    console.print(escape(f"private key {private_path} (mode 0600: keep it secret; package --sign {private_path})"))
    console.print(escape(f"public key  {public_path}: {encoded} (fingerprint {key_fingerprint(public)}; give it "
                         f"to the clients: verify-package --public-key {public_path})"))


@guarded
def export_js_command(
    out: Path = typer.Option(..., "--out", help="Folder to write ldp-client.mjs into."),
) -> None:
    """Write the JavaScript client (an ES module, no dependencies) into a folder."""
    from designer.io.writing import write_files

    if not out.is_dir():
        raise ValueError(f"--out {out} is not an existing folder")
    text = JS_CLIENT.read_text()
    target = out / JS_CLIENT.name
    write_files([(target, lambda handle: handle.write(text))])
    Console().print(escape(f"wrote {target} (ES module: import {{ loadPackage }} from './{JS_CLIENT.name}')"))


def register(app: typer.Typer) -> None:
    app.command("package")(package_command)
    app.command("package-hadamard")(package_hadamard_command)
    app.command("package-high-low")(package_high_low_command)
    app.command("verify-package")(verify_package_command)
    app.command("sample-package")(sample_package_command)
    app.command("export-js")(export_js_command)
    app.command("keygen")(keygen_command)
