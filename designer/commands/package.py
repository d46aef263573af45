"""``ldp-designer package``, ``package-hadamard``, ``package-high-low``: deploy what was certified as a mechanism package."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from designer.commands import guarded, print_json
from designer.commands.deploy import (
    PACKAGE_OUT_OPTION,
    SHUFFLE_DELTA_OPTION,
    SHUFFLE_N_OPTION,
    SHUFFLE_POPULATION_OPTION,
    SIGN_OPTION,
    certified_package,
    check_shuffle_options,
    describe_package,
    finish_package,
    parsed,
    print_signature,
    reject,
    signing_key,
)


@guarded(reads=("--E", "--channel", "--prior", "--sign", "--report-E", "--instantaneous"), writes=("--out",))
def package_command(
    e_file: Path = typer.Option(..., "--E", help="CSV with k rows of k privacy levels (inf and log(r) allowed)."),
    channel_file: Path = typer.Option(..., "--channel", help="CSV with k rows of probabilities."),
    out: Path = PACKAGE_OUT_OPTION,
    bits: int = typer.Option(32, "--bits", help="Each table row sums to 2^bits (8 to 64)."),
    prior_file: Path = typer.Option(None, "--prior", help="Prior for the utility loss (default uniform)."),
    sign: Path = SIGN_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the package summary as one JSON object."),
    shuffle_n: int = SHUFFLE_N_OPTION,
    shuffle_delta: float = SHUFFLE_DELTA_OPTION,
    population: int = SHUFFLE_POPULATION_OPTION,
    report_e: Path = typer.Option(None, "--report-E", help="Record a longitudinal policy: memoization required, one report E1-LDP for this E1 (CSV)."),
    instantaneous: Path = typer.Option(None, "--instantaneous", help="The instantaneous stage Q2 (CSV, one row per output of --channel) run every round on the memoized response."),
    instantaneous_bits: int = typer.Option(32, "--instantaneous-bits", help="Each row of Q2 sums to 2^bits (8 to 64)."),
    rounds_per_period: int = typer.Option(1, "--rounds-per-period", help="Clients refuse more reports per period."),
    period_seconds: int = typer.Option(86400, "--period-seconds", help="Length of a period in seconds (default a day)."),
) -> None:
    """Write a mechanism package: the channel as a certified integer table. Exit 0 written, 1 refused, 2 bad input."""
    from designer.deploy.table import check_bits

    check_shuffle_options(shuffle_n, shuffle_delta, population)
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
    if report_e is not None:
        record_longitudinal(document, out, report_e, instantaneous, instantaneous_bits, rounds_per_period,
                            period_seconds)
    elif instantaneous is not None:
        raise ValueError("--instantaneous goes with --report-E (the level one report is certified against)")
    document = finish_package(document, out, key, (shuffle_n, shuffle_delta, population))
    if as_json:
        print_json({"out": str(out), "sha256": document["sha256"], "bits": bits, "utility": document["utility"],
                    "certificate": {key: document["certificate"][key] for key in ("verdict", "mode", "margin")}})
    else:
        describe_package(document, out, Console())


@guarded(reads=("--sign",), writes=("--out",))
def package_hadamard_command(
    block_sizes: str = typer.Option(
        ..., "--block-sizes", help="Consecutive block sizes, comma separated; SIZE*COUNT repeats (e.g. 1750*25)."
    ),
    epsilon: str = typer.Option(..., "--eps", help="Level inside a block, exact text (log(3), 1, 1/2)."),
    out: Path = PACKAGE_OUT_OPTION,
    bits: int = typer.Option(32, "--bits", help="Precision of the coin: T / 2^bits (8 to 64)."),
    sign: Path = SIGN_OPTION,
    shuffle_n: int = SHUFFLE_N_OPTION,
    shuffle_delta: float = SHUFFLE_DELTA_OPTION,
    population: int = SHUFFLE_POPULATION_OPTION,
) -> None:
    """Package block Hadamard response by its parameters and exact structural proof. Exit 0 written, 2 bad input."""
    from designer.deploy.structured import build_hadamard_package, parse_block_sizes

    check_shuffle_options(shuffle_n, shuffle_delta, population)
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


@guarded(reads=("--sign",), writes=("--out",))
def package_high_low_command(
    k: int = typer.Option(..., "--k", help="Domain size: symbols 0..k-1."),
    sensitive: str = typer.Option(
        ..., "--sensitive", help="The sensitive symbols A: comma separated, FIRST-LAST ranges (e.g. 0-99,250)."
    ),
    epsilon: str = typer.Option(
        ..., "--eps", help="Level of high-low LDP (Definition 3), exact text (log(3), 1, 1/2)."
    ),
    out: Path = PACKAGE_OUT_OPTION,
    bits: int = typer.Option(32, "--bits", help="Precision of the coin and keep thresholds: T / 2^bits (8 to 64)."),
    sign: Path = SIGN_OPTION,
    shuffle_n: int = SHUFFLE_N_OPTION,
    shuffle_delta: float = SHUFFLE_DELTA_OPTION,
    population: int = SHUFFLE_POPULATION_OPTION,
) -> None:
    """Package high-low Hadamard response by its parameters and exact structural proof. Exit 0 written, 2 bad input."""
    from designer.deploy.structured import build_high_low_package, parse_symbols

    check_shuffle_options(shuffle_n, shuffle_delta, population)
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


def record_longitudinal(document: dict, out: Path, report_e: Path, instantaneous: Path | None, bits: int,
                        rounds_per_period: int, period_seconds: int) -> None:
    """Add the longitudinal member (designer.longitudinal.policy); a report that is not E1-LDP exits 1."""
    from designer.deploy.table import check_bits
    from designer.io import read_channel, read_privacy_matrix
    from designer.longitudinal.policy import PolicyRefused, add_longitudinal_member, instantaneous_table

    for option, value in (("--rounds-per-period", rounds_per_period), ("--period-seconds", period_seconds)):
        if value < 1:
            raise ValueError(f"{option} must be at least 1, got {value}")
    check_bits(bits)
    report_privacy = read_privacy_matrix(report_e)
    if report_privacy.k != len(document["inputs"]):
        raise ValueError(f"{report_e}: E1 is {report_privacy.k} x {report_privacy.k} but the package has "
                         f"{len(document['inputs'])} inputs")
    stage = None
    if instantaneous is not None:
        channel = read_channel(instantaneous)
        if channel.k != len(document["outputs"]):
            raise ValueError(f"{instantaneous}: Q2 has {channel.k} rows but the package has "
                             f"{len(document['outputs'])} outputs")
        stage = instantaneous_table(channel, bits)
    try:
        add_longitudinal_member(document, report_privacy, rounds_per_period, period_seconds, stage)
    except PolicyRefused as error:
        reject(f"{out} not written: {error}")


def register(app: typer.Typer) -> None:
    app.command("package")(package_command)
    app.command("package-hadamard")(package_hadamard_command)
    app.command("package-high-low")(package_high_low_command)
