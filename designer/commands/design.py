"""``ldp-designer design``: the optimal E-LDP channel for an E file (and a prior or a loss).

A thin layer over the front door :func:`designer.design.front.design_channel`, which picks the route;
this module reads the inputs, writes the outputs and prints the method and why.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from designer.commands import fail, guarded, print_json
from designer.commands.design_inputs import (
    FAMILIES,
    family_input,
    parse_floats,
    read_distribution,
)
from designer.commands.design_report import bounds_progress, print_comparison, print_loss_comparison, report_design
from designer.defaults import (
    DEFAULT_MAX_SECONDS,
    DEFAULT_MAX_VERTICES,
    DESIGN_METHODS,
    VERTEX_UTILITIES,
)

UTILITY_CHOICES = (*VERTEX_UTILITIES, "expected-loss")
NOT_CERTIFIED = 1
METHODS = DESIGN_METHODS


@guarded(reads=("--E", "--classes", "--prior", "--alternative", "--loss", "--sign"), writes=("--out", "--plot", "--summary", "--package"))
def design_command(
    e_file: Path = typer.Option(None, "--E", help="CSV with k rows of k privacy levels (inf and log(r) allowed)."),
    classes_file: Path = typer.Option(
        None, "--classes", help="JSON class-structured E (class sizes + class-level levels; see docs/design.md)."
    ),
    family: str = typer.Option(None, "--family", help=f"E by family parameters: {', '.join(FAMILIES)}."),
    k: int = typer.Option(None, "--k", min=1, help="--family: domain size (w for utility-optimized)."),
    eps: str = typer.Option("1", "--eps", help="--family: privacy level epsilon (a number, or log(3) for --exact)."),
    sensitive: int = typer.Option(None, "--sensitive", min=1, help="--family high-low/utility-optimized: sensitive count."),
    blocks: str = typer.Option(None, "--blocks", help="--family block: M equal blocks, or sizes 3,5,2."),
    grid: str = typer.Option(None, "--grid", help="--family metric-grid: shape, e.g. 4x4."),
    compare: bool = typer.Option(
        False, "--compare", help="Also give the shipped mechanisms next to the optimum (class-structured E; "
        "expected loss: exponential mechanism, randomised response, truncated geometric)."
    ),
    plot: Path = typer.Option(None, "--plot", help="With --compare: PNG of optimum and mechanisms over epsilon."),
    plot_eps: str = typer.Option(
        "0.25,0.5,0.75,1,1.5,2,3,4", "--plot-eps", help="Epsilon values of --plot (E scaled so its smallest level is each)."
    ),
    gap: float = typer.Option(
        None, "--gap", help="Stop when (upper - lower) / upper is at most this (default: 0.01 for column "
        "generation, 1e-6 for the expected loss's LPs)."
    ),
    threads: int = typer.Option(
        None, "--threads", help="Column generation: threads of the bound's search (default: CPUs, at most 4)."
    ),
    method: str = typer.Option("auto", "--method", help=f"One of: {', '.join(METHODS)} (auto: see docs/design.md; "
                               "direct and first-order: expected loss only)."),
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
        DEFAULT_MAX_SECONDS, "--max-seconds", help="Budget of a vertex enumeration, of column generation and of an "
        "expected-loss LP (which then returns its certified channel and bounds)."
    ),
    row_order: str = typer.Option(None, "--row-order", help="cdd row order (e.g. max_cutoff, lex_min)."),
    summary_file: Path = typer.Option(None, "--summary", help="Also write the JSON summary to this file."),
    as_json: bool = typer.Option(False, "--json", help="Print the JSON summary on stdout."),
    package: Path = typer.Option(
        None, "--package", help="Also write a mechanism package (an exactly certified 32-bit table; for a "
        "class-structured design, an orbit package at class level).",
    ),
    sign: Path = typer.Option(None, "--sign", help="Sign the --package with this Ed25519 private key (keygen)."),
) -> None:
    """Design the optimal E-LDP channel and certify it. Exit 0 certified, 1 not certified, 2 bad input."""

    from designer.design.front import design_channel
    from designer.io import check_destinations, read_matrix, read_privacy_matrix
    from solvers.linear import LinearProgramError

    if utility not in UTILITY_CHOICES:
        fail(f"--utility must be one of {', '.join(UTILITY_CHOICES)}, got {utility!r}")
    if method not in METHODS:
        fail(f"--method must be one of {', '.join(METHODS)}, got {method!r}")
    given = [name for name, value in (("--E", e_file), ("--classes", classes_file), ("--family", family)) if value is not None]
    if len(given) != 1:
        fail(f"give exactly one of --E, --classes, --family (got {', '.join(given) or 'none'})")
    if plot is not None and (not compare or utility == "expected-loss"):
        fail("--plot draws the --compare figure of mutual information: add --compare, not with expected-loss")
    if compare and utility not in ("mutual-information", "expected-loss"):
        fail("--compare gives mutual information or expected loss; use --utility mutual-information or expected-loss")
    if gap is not None and not 0 <= gap < 1:
        fail(f"--gap must be in [0, 1), got {gap!r}")
    if threads is not None and threads < 1:
        fail(f"--threads must be at least 1, got {threads!r}")
    check_destinations([path for path in (out, summary_file, package, plot) if path is not None])
    from designer.commands.deploy import signing_key

    key = signing_key(sign)
    if e_file is not None:
        privacy = read_privacy_matrix(e_file)
    elif classes_file is not None:
        from designer.design.symmetry.files import read_class_structure

        privacy = read_class_structure(classes_file)
    else:
        privacy = family_input(family, k, eps, sensitive, blocks, grid)
    prior = read_distribution(prior_file, "prior", privacy)
    alternative, loss = None, None
    if utility == "expected-loss":
        if loss_file is not None:
            loss = read_matrix(loss_file, "loss")
            if loss.shape[0] != privacy.k:
                fail(f"{loss_file}: the loss has {loss.shape[0]} rows but E is {privacy.k} x {privacy.k}")
    else:
        alternative = read_distribution(alternative_file, "alternative", privacy)
    formats = (".10g", ".1e") if utility == "expected-loss" else (".6f", ".2%")
    with bounds_progress(utility if utility == "expected-loss" else "column generation", max_seconds, *formats) as progress:
        try:
            design = design_channel(
                privacy, utility, prior, alternative=alternative, loss=loss, method=method, exact=exact, gap=gap,
                max_seconds=max_seconds, max_vertices=max_vertices, threads=threads, progress=progress,
                row_order=row_order,
            )
        except LinearProgramError as error:
            fail(str(error))
    if compare and design.method not in ("symmetry", "expected-loss"):
        fail("--compare needs a class-structured E (--family, --classes, or a dense E with twin classes and k > 16) "
             "or --utility expected-loss")
    if not design.certified:
        report_design(design, Console(stderr=True))
        Console(stderr=True).print(f"{design.certificate.verdict}: the channel is not written", markup=False)
        raise typer.Exit(NOT_CERTIFIED)
    extra, rows = _comparison(design, plot, plot_eps, loss, prior) if compare else ({}, [])
    if exact and design.method != "symmetry":
        from designer.cone import irrational_ratio_note

        irrational = irrational_ratio_note(design.route.privacy.exact_epsilon.ravel())
        extra.update({"exact_note": irrational} if irrational else {})
    document = _package_document(design, package, key, prior) if package is not None else None
    if document is not None and design.method == "symmetry":
        extra["package"] = {"path": str(package), "kind": "orbit", "sha256": document["sha256"],
                            "relative_utility_loss": document["utility"]["relative_utility_loss"]}
    design.save(out, summary_file, extra)
    if document is not None:
        document = _write_package(design, document, package, key)
        if "package" in extra:
            extra["package"]["sha256"] = document["sha256"]
    if as_json:
        print_json({**design.summary(), **extra})
        return
    console = Console()
    report_design(design, console)
    if rows:
        (print_loss_comparison if design.method == "expected-loss" else print_comparison)(console, design.objective, rows)
    if extra.get("exact_note"):
        console.print(f"  exact: {extra['exact_note']}", markup=False, emoji=False)
    what = "channel" if design.channel is not None else "class-level design (JSON; k x m too large to tabulate)"
    console.print(f"  {what} written to {out}", markup=False, emoji=False)
    if summary_file is not None:
        console.print(f"  summary written to {summary_file}", markup=False, emoji=False)
    if document is not None:
        console.print(f"  {'orbit ' if design.method == 'symmetry' else ''}package written to {package}"
                      + (f" (class level, certified exactly, margin {document['certificate']['margin']}; relative "
                         f"mutual-information loss {float(document['utility']['relative_utility_loss']):.3g})"
                         if design.method == "symmetry" else ""), markup=False, emoji=False)


def _comparison(design, plot: Path | None, plot_eps: str, loss, prior) -> tuple[dict, list]:
    """The shipped mechanisms next to the optimum (``compare``), the figure over epsilon (``compare_curves``), the rows.

    Expected loss: the metric baselines (exponential mechanism, randomised response, truncated geometric),
    each with the consumer's optimal remap, and their ratio to the optimum.
    """
    if design.method == "expected-loss":
        import numpy as np

        from designer.design.metric_compare import compare_expected_loss

        privacy = design.route.privacy
        rows = compare_expected_loss(privacy, 1.0 - np.eye(privacy.k) if loss is None else loss, prior, design.objective)
        return {"compare": [row.__dict__ for row in rows]}, rows
    from designer.design.symmetry.compare import compare_over_epsilon, mechanism_utilities, plot_comparison

    structure = design.route.structure
    rows = mechanism_utilities(structure, design.route.objective)
    extra = {"compare": [row.__dict__ for row in rows]}
    if plot is not None:
        curves = compare_over_epsilon(structure, parse_floats(plot_eps, "plot-eps"))
        plot_comparison(curves, plot, structure.name)
        extra["compare_curves"] = curves
    return extra, rows


def _package_document(design, package: Path, key, prior) -> dict:
    """The package of the design (nothing written): an orbit package at class level for the orbit LP,
    else the returned channel rounded to a certified 32-bit table."""
    if design.method == "symmetry":
        from designer.deploy.orbit import build_orbit_package

        return build_orbit_package(design.route)
    from designer.commands.deploy import certified_package, seal
    from designer.spec import PrivacyMatrix

    privacy = design.privacy if isinstance(design.privacy, PrivacyMatrix) else design.privacy.privacy()
    return seal(certified_package(design.channel, privacy, 32, package, prior), key)


def _write_package(design, document: dict, package: Path, key) -> dict:
    if design.method == "symmetry":
        from designer.commands.deploy import finish_package

        return finish_package(document, package, key, (None, None, None))
    from designer.deploy.package import write_package

    write_package(package, document)
    return document


def register(app: typer.Typer) -> None:
    app.command("design")(design_command)
