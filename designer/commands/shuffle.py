"""``shuffle``: the central (epsilon, delta) guarantee of shuffling n reports of a channel or package.

Exit codes: 0 computed; 1 the package is tampered (hash or proof mismatch); 2 bad input.
Heavy modules (numpy, scipy, python-flint) load inside the command.
"""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from designer.commands import guarded, print_json

#: Largest k whose full per-pair matrix is printed (and written with --json).
MATRIX_LIMIT = 64


def _number(value: float):
    """A JSON number, or the text ``"inf"``."""
    return "inf" if math.isinf(value) else value


@guarded(reads=("--channel", "--E", "--package"))
def shuffle_command(
    channel_file: Path = typer.Option(None, "--channel", help="CSV with k rows of probabilities."),
    e_file: Path = typer.Option(None, "--E", help="CSV of E: which directions are protected (finite entries)."),
    package_file: Path = typer.Option(None, "--package", help="A mechanism package (table, block or high-low Hadamard, orbit)."),
    n: int = typer.Option(..., "--n", help="Number of shuffled reports (users)."),
    delta: float = typer.Option(None, "--delta", help="Target delta: prints the central epsilon."),
    epsilon: float = typer.Option(None, "--epsilon", help="Target epsilon instead: prints the central delta."),
    population: int = typer.Option(
        None, "--population",
        help="Assume at least this many other users hold inputs of each pair's class (e.g. its block).",
    ),
    generic: bool = typer.Option(
        False, "--generic", help="Also print the generic bound (FMT, from the largest local level alone; with --delta).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Central privacy after shuffling n reports (replace-one neighbours). Exit 0, 1 tampered package, 2 bad input."""
    from designer.shuffle.analysis import shuffle_guarantee

    pairs, source = _pairs(channel_file, e_file, package_file)
    guarantee = shuffle_guarantee(pairs, n, delta=delta, epsilon=epsilon, population=population, generic=generic)
    payload = _payload(guarantee, source)
    if as_json:
        print_json(payload)
    else:
        _print(guarantee, payload, Console())


def _pairs(channel_file: Path | None, e_file: Path | None, package_file: Path | None):
    from designer.shuffle.sources import channel_pairs

    if (channel_file is None) == (package_file is None):
        raise ValueError("give exactly one of --channel and --package")
    if package_file is not None:
        if e_file is not None:
            raise ValueError("--E goes with --channel (a package holds its own E)")
        from designer.commands.deploy import opening
        from designer.deploy.package import read_package
        from designer.shuffle.sources import package_pairs

        document = read_package(package_file)
        with opening(package_file):
            pairs, description = package_pairs(document)
        return pairs, f"{package_file}: {description}"
    from designer.io import read_channel, read_privacy_matrix

    channel = read_channel(channel_file)
    privacy = read_privacy_matrix(e_file) if e_file is not None else None
    try:
        pairs = channel_pairs(channel, privacy)
    except ValueError as error:
        raise ValueError(f"{channel_file}: {error}") from None
    return pairs, f"{channel_file}: channel, {channel.k} inputs x {channel.n_outputs} outputs"


def _payload(guarantee, source: str) -> dict:
    given_epsilon = guarantee.epsilon_given
    payload = {
        "source": source, "n": guarantee.n, "neighbours": "replace-one",
        "epsilon": _number(guarantee.epsilon), "delta": guarantee.delta,
        ("delta_lower" if given_epsilon else "epsilon_lower"): _number(guarantee.lower),
        "assumption": guarantee.assumption, "population": guarantee.population,
        "bound": "proved upper bound (outward rounding)" + ("; delta computed at the given epsilon" if given_epsilon else ""),
    }
    if not math.isnan(guarantee.generic):
        payload["generic_epsilon"] = _number(guarantee.generic)
    key = "delta" if given_epsilon else "epsilon"
    classes = []
    for result in guarantee.pairs:
        pair = result.pair
        entry = {"pair": pair.name, key: [_number(v) for v in result.value], "source": list(result.source),
                 "protected": list(pair.protected)}
        if result.reason:
            entry["reason"] = result.reason
        classes.append(entry)
    payload["pairs"] = classes
    labelled = [result for result in guarantee.pairs if result.pair.pairs]
    if labelled:
        k = 1 + max(x for result in labelled for pair in result.pair.pairs for x in pair)
        if k <= MATRIX_LIMIT:
            matrix = [[0.0] * k for _ in range(k)]
            for result in labelled:
                for (x, x2), value in zip(result.pair.pairs, result.value):
                    matrix[x][x2] = _number(value)
            payload[f"{key}_matrix"] = matrix
    return payload


def _print(guarantee, payload: dict, console: Console) -> None:
    given_epsilon = guarantee.epsilon_given
    console.print(escape(f"shuffling n = {guarantee.n} reports of {payload['source']} (replace-one neighbours)"))
    console.print(escape(f"  assumption: {guarantee.assumption}"))
    if given_epsilon:
        console.print(f"  [bold]central delta <= {guarantee.delta:.6g}[/] at epsilon = {guarantee.epsilon:g} "
                      f"(proved); a concrete test reaches delta >= {guarantee.lower:.6g}")
    else:
        console.print(f"  [bold]central epsilon <= {guarantee.epsilon:.6g}[/] at delta = {guarantee.delta:g} "
                      f"(proved); a concrete test needs epsilon >= {guarantee.lower:.6g}")
        if "generic_epsilon" in payload:
            console.print(f"  generic bound from the local level alone (Feldman-McMillan-Talwar): {guarantee.generic:.6g}")
    key = "delta" if given_epsilon else "epsilon"

    def largest(entry: dict) -> tuple[float, float]:
        """Protected directions first (the guarantee is their maximum), then the rest."""
        protected = [float(v) for v, is_protected in zip(entry[key], entry["protected"]) if is_protected]
        return -max(protected, default=-1.0), -max(float(v) for v in entry[key])

    shown = payload["pairs"] if len(payload["pairs"]) <= 12 else sorted(payload["pairs"], key=largest)[:12]
    if len(payload["pairs"]) > 12:
        console.print(f"  the 12 pairs with the largest central {key} over their protected directions (of "
                      f"{len(payload['pairs'])}; --json lists all):")
    for entry in shown:
        values = ", ".join("inf" if v == "inf" else f"{v:.6g}" for v in entry[key])
        protected = "" if all(entry["protected"]) else f" (protected: {entry['protected']})"
        reason = f": {entry['reason']}" if "reason" in entry else ""
        console.print(escape(f"  {entry['pair']}: {key} {values} ({'/'.join(entry['source'])}){protected}{reason}"))


def register(app: typer.Typer) -> None:
    app.command("shuffle")(shuffle_command)
