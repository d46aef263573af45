"""``ldp-designer design``: the optimal E-LDP channel for an E file (and a prior or a loss)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from designer.commands import fail, guarded, print_json
from designer.commands.design_inputs import (
    FAMILIES,
    family_input,
    parse_floats,
    read_distribution,
)
from designer.commands.design_report import print_comparison, report, report_symmetric
from designer.defaults import (
    DEFAULT_MAX_SECONDS,
    DEFAULT_MAX_VERTICES,
    VERTEX_UTILITIES,
)
from designer.errors import one_line

UTILITY_CHOICES = (*VERTEX_UTILITIES, "expected-loss")
NOT_CERTIFIED = 1
METHODS = ("auto", "enumerate", "symmetry", "column-generation")


@guarded
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
        0.01, "--gap", help="--method column-generation: stop when (upper - lower) / upper is at most this."
    ),
    threads: int = typer.Option(
        None, "--threads", help="--method column-generation: threads of the bound's search (default: CPUs, at most 4)."
    ),
    method: str = typer.Option("auto", "--method", help=f"One of: {', '.join(METHODS)} (auto: see docs/design.md)."),
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
    import numpy as np

    from designer.commands.design_report import bounds_progress, report_expected_loss
    from designer.cone import irrational_ratio_note
    from designer.design.expected_loss import design_expected_loss
    from designer.design.symmetry.route import design_structure
    from designer.design.vertex import design_channel
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
    check_destinations([path for path in (out, summary_file, package, plot) if path is not None])
    from designer.commands.deploy import signing_key

    key = signing_key(sign)
    from designer.design.symmetry import ClassStructure

    if e_file is not None:
        privacy = read_privacy_matrix(e_file)
    elif classes_file is not None:
        from designer.design.symmetry.files import read_class_structure

        privacy = read_class_structure(classes_file)
    else:
        privacy = family_input(family, k, eps, sensitive, blocks, grid)
    prior = read_distribution(prior_file, "prior", privacy)
    if method == "column-generation":
        if utility != "mutual-information" or exact:
            fail("--method column-generation designs for mutual information in floating point (no --exact)")
        if isinstance(privacy, ClassStructure):
            privacy = privacy.privacy()
        _design_with_gap(privacy, prior, gap, max_seconds, threads, out, summary_file, as_json)
        return
    note = None
    if utility != "expected-loss":
        alternative = read_distribution(alternative_file, "alternative", privacy)
        structure, note = design_structure(privacy, prior, alternative, method, exact)
        if structure is not None:
            comparison = (plot, plot_eps) if compare else None
            _design_symmetric(structure, utility, note, out, summary_file, as_json, (package, key), comparison, exact)
            return
    if compare and utility != "expected-loss":
        fail("--compare needs a class-structured E (--family, --classes, or a dense E with twin classes and k > 16)")
    if isinstance(privacy, ClassStructure):
        privacy = privacy.privacy()
    try:
        if utility == "expected-loss":
            if exact:
                fail("--exact applies to vertex designs (mutual information, f-divergences), not expected-loss")
            loss = read_matrix(loss_file, "loss") if loss_file else 1.0 - np.eye(privacy.k)
            if loss.shape[0] != privacy.k:
                fail(f"{loss_file}: the loss has {loss.shape[0]} rows but E is {privacy.k} x {privacy.k}")
            with bounds_progress("expected loss", max_seconds, ".10g", ".1e") as show:
                result = design_expected_loss(privacy, loss, prior, max_seconds=max_seconds, progress=show)
        else:
            result = design_channel(
                privacy, utility, prior, alternative, exact=exact, row_order=row_order,
                max_vertices=max_vertices, max_seconds=max_seconds,
            )
    except LinearProgramError as error:
        fail(str(error))
    except ValueError as error:
        if note is None or not note.startswith("symmetry lost"):
            raise
        fail(f"{note}: {one_line(error)}")
    if not result.certified:
        report(result, Console(stderr=True))
        raise typer.Exit(NOT_CERTIFIED)
    document = None
    if package is not None:
        from designer.commands.deploy import certified_package, seal

        document = seal(certified_package(result.channel, privacy, 32, package, prior), key)
    extra = {"method_note": note} if note else {}
    if compare:  # expected loss (other utilities with --compare returned above)
        from designer.design.metric_compare import compare_expected_loss

        rows = compare_expected_loss(privacy, loss, prior, result.objective)
        extra["compare"] = [row.__dict__ for row in rows]
    irrational = irrational_ratio_note(privacy.exact_epsilon.ravel()) if exact else None
    if irrational:
        extra["exact_note"] = irrational
    result.save(out, summary_file, extra)
    if document is not None:
        from designer.deploy.package import write_package

        write_package(package, document)
    if as_json:
        print_json({**result.summary(), **extra})
    else:
        console = Console()
        report(result, console)
        if utility == "expected-loss":
            report_expected_loss(result, console, rows if compare else None)
        if note:
            console.print(f"  method: {note}", markup=False, emoji=False)
        if irrational:
            console.print(f"  exact: {irrational}", markup=False, emoji=False)
        console.print(f"  channel written to {out}", markup=False, emoji=False)
        if summary_file is not None:
            console.print(f"  summary written to {summary_file}", markup=False, emoji=False)
        if package is not None:
            console.print(f"  package written to {package}", markup=False, emoji=False)


def _design_symmetric(
    structure, utility: str, note: str, out: Path, summary_file: Path | None, as_json: bool, package, comparison,
    exact: bool = False,
) -> None:
    """Run the orbit LP, write the channel CSV (or the class-level design as JSON) and report.

    ``package`` is ``(path or None, signing key or None)``: ``--package`` writes an ``orbit``
    package of the design (:mod:`designer.deploy.orbit`), at any k.
    """
    from designer.design.symmetry import design_symmetric
    from designer.io import json_writer, matrix_csv_writer, write_files

    package, key = package
    if comparison is not None and utility != "mutual-information":
        fail("--compare gives mutual information; use --utility mutual-information")
    from designer.design.symmetry import SymmetryLostError

    try:
        result = design_symmetric(structure, utility, exact=exact)
    except SymmetryLostError as error:
        fail(f"symmetry lost ({structure.r} classes after splitting by the distributions): {error}")
    if not result.certified:
        report_symmetric(result, Console(stderr=True), note)
        raise typer.Exit(NOT_CERTIFIED)
    summary = {**result.summary(), "method_note": note}
    rows = []
    if comparison is not None:
        from designer.design.symmetry.compare import (
            compare_over_epsilon,
            mechanism_utilities,
            plot_comparison,
        )

        rows = mechanism_utilities(result.structure, result.objective)
        summary["compare"] = [row.__dict__ for row in rows]
        plot, plot_eps = comparison
        if plot is not None:
            epsilons = parse_floats(plot_eps, "plot-eps")
            curves = compare_over_epsilon(result.structure, epsilons)
            plot_comparison(curves, plot, result.structure.name)
            summary["compare_curves"] = curves
    document = None
    if package is not None:
        from designer.deploy.orbit import build_orbit_package

        document = build_orbit_package(result)
        summary["package"] = {"path": str(package), "kind": "orbit", "sha256": document["sha256"],
                              "relative_utility_loss": document["utility"]["relative_utility_loss"]}
    if result.channel is not None:
        writes = [(out, matrix_csv_writer(result.channel.exact_matrix if result.exact else result.channel.matrix))]
    else:
        writes = [(out, json_writer(summary))]
    if summary_file is not None:
        writes.append((summary_file, json_writer(summary)))
    write_files(writes)
    if document is not None:
        from designer.commands.deploy import finish_package

        document = finish_package(document, package, key, (None, None, None))
        summary["package"]["sha256"] = document["sha256"]
    if as_json:
        print_json(summary)
        return
    console = Console()
    report_symmetric(result, console, note)
    if rows:
        print_comparison(console, result.objective, rows)
    what = "channel" if result.channel is not None else "class-level design (JSON; k x m too large to tabulate)"
    console.print(f"  {what} written to {out}", markup=False, emoji=False)
    if document is not None:
        console.print(f"  orbit package written to {package} (class level, certified exactly, margin "
                      f"{document['certificate']['margin']}; relative mutual-information loss "
                      f"{float(document['utility']['relative_utility_loss']):.3g})", markup=False, emoji=False)


def _design_with_gap(privacy, prior, gap: float, max_seconds: float, threads: int | None, out, summary_file,
                     as_json: bool) -> None:
    """Column generation with certified bounds, a progress bar of both bounds on stderr, the gap reported."""
    from designer.commands.design_report import bounds_progress
    from designer.design.gap import design_with_gap
    from designer.io import json_writer, matrix_csv_writer, write_files

    if not 0 <= gap < 1:
        fail(f"--gap must be in [0, 1), got {gap!r}")
    if threads is not None and threads < 1:
        fail(f"--threads must be at least 1, got {threads!r}")
    with bounds_progress("column generation", max_seconds) as show:
        result = design_with_gap(privacy, prior, gap, max_seconds, show, threads)
    summary = {**result.summary(), "E": privacy.name, "k": privacy.k, "method": "column generation"}
    writes = [(out, matrix_csv_writer(result.channel.matrix))]
    if summary_file is not None:
        writes.append((summary_file, json_writer(summary)))
    if not result.certified:
        Console(stderr=True).print(f"{result.certificate.verdict}: the channel is not written", markup=False)
        raise typer.Exit(NOT_CERTIFIED)
    write_files(writes)
    if as_json:
        print_json(summary)
        return
    console = Console()
    status = {"gap": "gap tolerance reached", "pricing": "pricing search exhausted at the final duals (its bound is final)"
              }.get(result.stopped, "time budget (--max-seconds) ran out")
    console.print(f"[bold]{escape(privacy.name)}[/]: column generation, {status} (not a proof of optimality)", emoji=False)
    console.print(
        f"  certified channel: I = {result.lower:.6f} nats; upper bound {result.upper:.6f}; gap {result.gap:.2%}"
    )
    console.print(
        f"  {result.columns} columns, {result.rounds} rounds, {result.nodes} bound nodes ({result.pricing}, "
        f"{result.threads} thread{'s' if result.threads > 1 else ''}), {result.channel.n_outputs} "
        f"outputs, {result.seconds:.3g} s; [green]{result.certificate.verdict}[/] ({result.certificate.mode} certifier, "
        f"margin {result.certificate.margin:.3g})"
    )
    console.print(f"  channel written to {out}", markup=False, emoji=False)


def register(app: typer.Typer) -> None:
    app.command("design")(design_command)
