"""Deploy what was certified: ``package``, ``package-hadamard``, ``package-high-low``, and the package tools.

``verify-package``, ``sample-package`` and ``export-js`` read or serve any package kind.

Exit codes:

* ``package`` — 0 package written; 1 refused (the channel is not E-LDP, or no
  table at ``--bits`` certifies: one line on stderr, nothing written); 2 bad input.
* ``verify-package`` — 0 certified (structure, SHA-256 and the exact re-certification
  all pass); 1 rejected: SHA-256 mismatch (tampered), a table that is not E-LDP, or a
  stored certificate that disagrees with the recomputed one; 2 bad input: unreadable,
  malformed or truncated JSON, another format or schema version, a missing/unknown
  member, a table entry that is not a decimal integer, a row not summing to ``2^bits``,
  a bad E entry.
* ``package-hadamard``, ``package-high-low`` — 0 written; 2 bad input.
* ``sample-package`` — 0 sampled; 1 tampered; 2 bad input.
* ``export-js`` — 0 written; 2 bad input (missing folder).

Heavy modules (the certifier, numpy, randomgen) load inside the commands.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from designer.commands import guarded, print_json

REJECTED = 1
JS_CLIENT = Path(__file__).resolve().parent.parent / "deploy" / "js" / "ldp-client.mjs"


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


@guarded
def package_command(
    e_file: Path = typer.Option(..., "--E", help="CSV with k rows of k privacy levels (inf and log(r) allowed)."),
    channel_file: Path = typer.Option(..., "--channel", help="CSV with k rows of probabilities."),
    out: Path = typer.Option(..., "--out", help="Where to write the mechanism package (JSON)."),
    bits: int = typer.Option(32, "--bits", help="Each table row sums to 2^bits (8 to 64)."),
    prior_file: Path = typer.Option(None, "--prior", help="Prior for the utility loss (default uniform)."),
    as_json: bool = typer.Option(False, "--json", help="Print the package summary as one JSON object."),
) -> None:
    """Write a mechanism package: the channel as a certified integer table. Exit 0 written, 1 refused, 2 bad input."""
    from designer.deploy.table import check_bits
    from designer.io import read_channel, read_privacy_matrix, read_vector

    check_bits(bits)
    privacy = read_privacy_matrix(e_file)
    channel = read_channel(channel_file)
    if channel.k != privacy.k:
        raise ValueError(f"{channel_file}: the channel has {channel.k} rows but {e_file} is {privacy.k} x {privacy.k}")
    prior = None
    if prior_file is not None:
        prior = read_vector(prior_file, "prior")
        if prior.size != privacy.k or (prior < 0).any() or abs(prior.sum() - 1) > 1e-9:
            raise ValueError(f"{prior_file}: the prior must have {privacy.k} non-negative entries summing to 1")
    from designer.deploy.package import write_package

    document = certified_package(channel, privacy, bits, out, prior, prior_file.name if prior_file else "uniform")
    write_package(out, document)
    if as_json:
        print_json({"out": str(out), "sha256": document["sha256"], "bits": bits, "utility": document["utility"],
                    "certificate": {key: document["certificate"][key] for key in ("verdict", "mode", "margin")}})
    else:
        describe_package(document, out, Console())


@guarded
def verify_package_command(
    path: Path = typer.Argument(..., help="The mechanism package (JSON)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Re-certify a package from scratch. Exit 0 certified, 1 tampered or violated, 2 bad input."""
    from designer.deploy.package import read_package, verify_package

    document = read_package(path)
    if document.get("kind") in ("block-hadamard", "high-low-hadamard"):
        _verify_structured(document, path, as_json)
        return
    with opening(path):
        verification = verify_package(document)
    certificate = verification.certificate
    if as_json:
        print_json({"path": str(path), "sha256": verification.digest, **certificate.to_dict()})
    else:
        console = Console()
        colour = "green" if certificate.certified else "red"
        console.print(
            f"[bold {colour}]{certificate.verdict.upper()}[/] (exact proof, from scratch) "
            + escape(f"{path}: sha256 ok, {verification.table.k}-input {verification.table.bits}-bit table, ")
            + f"margin min(E - E_R) = {certificate.margin:.6g}"
        )
    if not certificate.certified:
        violation = certificate.violations[0]
        reject(
            f"{path}: the table is not E-LDP: x={violation.x}, x'={violation.x_prime}, witness y={violation.y}, "
            f"log-ratio {violation.log_ratio:.6g} > E = {violation.level_text}"
        )


def _verify_structured(document: dict, path: Path, as_json: bool) -> None:
    """verify-package for a block-hadamard or high-low-hadamard package: re-prove its structural privacy exactly."""
    from designer.deploy.structured import verify_structured_package

    with opening(path):
        verification = verify_structured_package(document)
    verdict = "certified" if verification.certified else "violated"
    if as_json:
        print_json({"path": str(path), "sha256": document["sha256"], "verdict": verdict, "mode": "exact",
                    "margin": verification.margin, "proof": list(verification.proof)})
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
    if not verification.certified:
        reject(f"{path}: {'; '.join(verification.failed)}")


@guarded
def package_hadamard_command(
    block_sizes: str = typer.Option(
        ..., "--block-sizes", help="Consecutive block sizes, comma separated; SIZE*COUNT repeats (e.g. 1750*25)."
    ),
    epsilon: str = typer.Option(..., "--eps", help="Level inside a block, exact text (log(3), 1, 1/2)."),
    out: Path = typer.Option(..., "--out", help="Where to write the mechanism package (JSON)."),
    bits: int = typer.Option(32, "--bits", help="Precision of the coin: T / 2^bits (8 to 64)."),
) -> None:
    """Package block Hadamard response by its parameters and exact structural proof. Exit 0 written, 2 bad input."""
    from designer.deploy.package import write_package
    from designer.deploy.structured import build_hadamard_package

    sizes = []
    for item in block_sizes.split(","):
        size, _, count = item.strip().partition("*")
        try:
            sizes.extend([int(size)] * (int(count) if count else 1))
        except ValueError:
            raise ValueError(f"--block-sizes: {item.strip()!r} is not SIZE or SIZE*COUNT") from None
    if len(sizes) > 1 << 20:
        raise ValueError(f"--block-sizes: {len(sizes)} blocks is too many (at most 2^20)")
    document = build_hadamard_package(sizes, epsilon, bits)
    write_package(out, document)
    utility = document["utility"]
    Console().print(escape(
        f"package {out}: block Hadamard response, {len(sizes)} blocks, k = {sum(sizes)}, eps = {document['epsilon']}, "
        f"coin T = {document['coin']} / 2^{bits} (ideal {utility['ideal_coin']}, relative change "
        f"{float(utility['relative_coin_change']):.3g}), certified exactly (margin {document['certificate']['margin']})"
    ))
    Console().print(f"  sha256 {document['sha256']}")


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
) -> None:
    """Package high-low Hadamard response by its parameters and exact structural proof. Exit 0 written, 2 bad input."""
    from designer.deploy.package import write_package
    from designer.deploy.structured import build_high_low_package, parse_symbols

    try:
        symbols = parse_symbols(sensitive)
    except ValueError as error:
        raise ValueError(f"--sensitive: {error}") from None
    document = build_high_low_package(k, symbols, epsilon, bits)
    write_package(out, document)
    utility = document["utility"]
    Console().print(escape(
        f"package {out}: high-low Hadamard response, k = {k}, {len(symbols)} sensitive, eps = {document['epsilon']}, "
        f"coin T = {document['coin']}, keep K = {document['keep']} (/ 2^{bits}; ideal coin {utility['ideal_coin']}, "
        f"relative change {float(utility['relative_coin_change']):.3g}), certified exactly "
        f"(margin {document['certificate']['margin']})"
    ))
    Console().print(f"  sha256 {document['sha256']}")


@guarded
def sample_package_command(
    path: Path = typer.Argument(..., help="The mechanism package (JSON)."),
    input_label: str = typer.Option(..., "--input", help="Input label to draw reports for."),
    n: int = typer.Option(1000, "--n", help="Number of reports."),
    seed: int = typer.Option(
        None, "--seed", help="Reproducible simulation with numpy's PCG64 (NOT cryptographic); default ChaCha20."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Draw n reports exactly from a package and print their counts. Exit 0, 1 tampered, 2 bad input."""
    import numpy as np

    from designer.deploy.package import read_package
    from designer.deploy.vectorised import VectorisedSampler

    if n < 1:
        raise ValueError(f"--n must be >= 1, got {n}")
    document = read_package(path)
    with opening(path):
        sampler = VectorisedSampler(document, seed)
    try:
        x = sampler.input_index(input_label)
    except ValueError as error:
        raise ValueError(f"--input: {error}") from None
    support = sampler.support(x)
    counts = sampler.counts(x, n)[support].tolist()
    labels = [sampler.output_label(int(y)) for y in support]
    if as_json:
        print_json({"input": input_label, "n": n, "generator": sampler.generator_name,
                    "counts": dict(zip(labels, counts))})
        return
    console = Console()
    console.print(escape(f"{n} reports for input {input_label!r} from {path}; generator: {sampler.generator_name}"))
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
