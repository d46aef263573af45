"""``ldp-designer design``: the optimal E-LDP channel for an E file (and a prior or a loss)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape

from designer.commands import fail, guarded, print_json
from designer.defaults import DEFAULT_MAX_SECONDS, DEFAULT_MAX_VERTICES, VERTEX_UTILITIES

if TYPE_CHECKING:
    import numpy as np

    from designer.design import DesignResult
    from designer.spec import PrivacyMatrix

UTILITY_CHOICES = (*VERTEX_UTILITIES, "expected-loss")
NOT_CERTIFIED = 1


def report(result: DesignResult, console: Console, title: str = "") -> None:
    """Print a design result as a short readable report."""
    colour = "green" if result.certified else "red"
    what = "expected loss" if result.utility == "expected-loss" else f"{result.utility} (nats)"
    console.print(
        f"{escape(title)}[bold]{escape(result.privacy.name)}[/]: optimal {what} = {result.objective:.6g}", emoji=False
    )
    vertices = f"{result.n_vertices} vertices ({', '.join(sorted(set(result.methods)))}), " if result.n_vertices else ""
    console.print(f"  {vertices}{result.n_outputs} outputs, {result.seconds:.3g} s")
    console.print(
        f"  [{colour}]{result.certificate.verdict}[/] ({result.certificate.mode} certifier, "
        f"margin min(E - E_Q) = {result.certificate.margin:.3g})"
    )
    if result.duals is not None:
        console.print(
            f"  optimality: dual residual {result.dual_residual:.1e}, duality gap {result.duality_gap:.1e}"
        )


def _read_distribution(path: Path | None, what: str, privacy: PrivacyMatrix) -> np.ndarray | None:
    if path is None:
        return None
    import numpy as np

    from designer.io import read_vector

    values = read_vector(path, what)
    if values.size != privacy.k:
        raise ValueError(f"{path}: the {what} has {values.size} entries but E is {privacy.k} x {privacy.k}")
    if np.any(values < 0) or abs(values.sum() - 1) > 1e-9:
        raise ValueError(f"{path}: the {what} must be non-negative and sum to 1 (sums to {float(values.sum())!r})")
    return values


@guarded
def design_command(
    e_file: Path = typer.Option(..., "--E", help="CSV with k rows of k privacy levels (inf and log(r) allowed)."),
    out: Path = typer.Option(..., "--out", help="Where to write the channel CSV (rows inputs, columns outputs)."),
    prior_file: Path = typer.Option(None, "--prior", help="k probabilities, one row or one column (default uniform)."),
    utility: str = typer.Option(
        "mutual-information", "--utility", help=f"One of: {', '.join(UTILITY_CHOICES)}."
    ),
    alternative_file: Path = typer.Option(
        None, "--alternative", help="Second input distribution for f-divergence utilities (kl, chi-square, ...)."
    ),
    loss_file: Path = typer.Option(
        None, "--loss", help="k x m loss matrix for expected-loss (default 0/1 loss, outputs = inputs)."
    ),
    exact: bool = typer.Option(False, "--exact", help="Exact rational vertices and channel; certify exactly."),
    max_vertices: int = typer.Option(
        DEFAULT_MAX_VERTICES, "--max-vertices", help="Refuse cones with more vertices than this."
    ),
    max_seconds: float = typer.Option(
        DEFAULT_MAX_SECONDS, "--max-seconds", help="Stop a vertex enumeration that takes longer than this."
    ),
    row_order: str = typer.Option(None, "--row-order", help="cdd row order (e.g. max_cutoff, lex_min)."),
    summary_file: Path = typer.Option(None, "--summary", help="Also write the JSON summary to this file."),
    as_json: bool = typer.Option(False, "--json", help="Print the JSON summary on stdout."),
    package: Path = typer.Option(
        None, "--package", help="Also write a mechanism package (exactly certified 32-bit table, see package)."
    ),
    sign: Path = typer.Option(None, "--sign", help="Sign the --package with this Ed25519 private key (keygen)."),
) -> None:
    """Design the optimal E-LDP channel and certify it. Exit 0 certified, 1 not certified, 2 bad input."""
    import numpy as np

    from designer.design import design_channel, design_expected_loss
    from designer.io import check_destinations, read_matrix, read_privacy_matrix
    from solvers.linear import LinearProgramError

    if utility not in UTILITY_CHOICES:
        fail(f"--utility must be one of {', '.join(UTILITY_CHOICES)}, got {utility!r}")
    check_destinations([path for path in (out, summary_file, package) if path is not None])
    from designer.commands.deploy import signing_key

    key = signing_key(sign)
    privacy = read_privacy_matrix(e_file)
    prior = _read_distribution(prior_file, "prior", privacy)
    try:
        if utility == "expected-loss":
            if exact:
                fail("--exact applies to vertex designs (mutual information, f-divergences), not expected-loss")
            loss = read_matrix(loss_file, "loss") if loss_file else 1.0 - np.eye(privacy.k)
            if loss.shape[0] != privacy.k:
                fail(f"{loss_file}: the loss has {loss.shape[0]} rows but E is {privacy.k} x {privacy.k}")
            result = design_expected_loss(privacy, loss, prior)
        else:
            alternative = _read_distribution(alternative_file, "alternative", privacy)
            result = design_channel(
                privacy, utility, prior, alternative, exact=exact, row_order=row_order,
                max_vertices=max_vertices, max_seconds=max_seconds,
            )
    except LinearProgramError as error:
        fail(str(error))
    if not result.certified:
        report(result, Console(stderr=True))
        raise typer.Exit(NOT_CERTIFIED)
    document = None
    if package is not None:
        from designer.commands.deploy import certified_package, seal

        document = seal(certified_package(result.channel, privacy, 32, package, prior), key)
    result.save(out, summary_file)
    if document is not None:
        from designer.deploy.package import write_package

        write_package(package, document)
    if as_json:
        print_json(result.summary())
    else:
        console = Console()
        report(result, console)
        console.print(f"  channel written to {out}", markup=False, emoji=False)
        if summary_file is not None:
            console.print(f"  summary written to {summary_file}", markup=False, emoji=False)
        if package is not None:
            console.print(f"  package written to {package}", markup=False, emoji=False)


def register(app: typer.Typer) -> None:
    app.command("design")(design_command)
