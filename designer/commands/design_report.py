"""How ``ldp-designer design`` prints a design: the optimum, the method, the certificate, the comparison table."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from designer.design.gap import GapDesign
    from designer.design.outcome import Design
    from designer.design.result import DesignResult
    from designer.design.symmetry import SymmetricDesign


def report_design(design: Design, console: Console) -> None:
    """Print a front-door design: the route's report, the method and why, the bounds and the move inside E."""
    route = design.route
    if design.method == "symmetry":
        report_symmetric(route, console, design.reason)
    elif design.method == "column-generation":
        report_gap(route, design.privacy.name, console)
    elif design.method == "closed-form":
        console.print(f"[bold]{escape(design.privacy.name)}[/]: optimal {design.utility} (nats) = "
                      f"{design.upper.value:.6g} ({escape(route.theorem)})", emoji=False)
    else:
        report(route, console)
    if design.method != "symmetry":
        console.print(f"  method: {design.reason}", markup=False, emoji=False)
    lower, upper = design.lower, design.upper
    console.print(f"  bounds: {lower.value:.12g} ({lower.kind}) <= optimum <= {upper.value:.12g} ({upper.kind})",
                  markup=False, emoji=False)
    if design.method == "expected-loss":
        console.print(f"  relative gap {route.gap:.1e} ({route.stopped}); lower bound: {route.bound}",
                      markup=False, emoji=False)
        if route.stopped == "time":
            console.print("  the time budget (--max-seconds) ran out first: the channel is certified and the bound "
                          "proven; a larger budget narrows the gap", markup=False, emoji=False)
    if design.interior is not None and design.interior.shrink > 0:
        console.print(f"  inside E: log-spreads shrunk by {design.interior.shrink:.2g} for exact certification "
                      f"(utility cost {design.margin_cost:.2g})", markup=False, emoji=False)
    certificate = design.certificate
    colour = "green" if design.certified else "red"
    console.print(f"  returned design: [{colour}]{certificate.verdict}[/] ({certificate.mode}, margin "
                  f"{certificate.margin:.3g}); exact proof: {escape(design.exact_proof)}", emoji=False)


def report_gap(result: GapDesign, name: str, console: Console) -> None:
    """Print a column-generation design: why it stopped, the bracket, the search."""
    status = {"gap": "gap tolerance reached", "pricing": "pricing search exhausted at the final duals (its bound is final)"
              }.get(result.stopped, "time budget (--max-seconds) ran out")
    console.print(f"[bold]{escape(name)}[/]: column generation, {status} (not a proof of optimality)", emoji=False)
    console.print(f"  certified channel: I = {result.lower:.6f} nats; upper bound {result.upper:.6f}; gap {result.gap:.2%}")
    console.print(
        f"  {result.columns} columns, {result.rounds} rounds, {result.nodes} bound nodes ({result.pricing}, "
        f"{result.threads} thread{'s' if result.threads > 1 else ''}), {result.channel.n_outputs} "
        f"outputs, {result.seconds:.3g} s; [green]{result.certificate.verdict}[/] ({result.certificate.mode} certifier, "
        f"margin {result.certificate.margin:.3g})"
    )


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


def report_symmetric(result: SymmetricDesign, console: Console, note: str) -> None:
    """Print a symmetric (orbit LP) design as a short readable report."""
    colour = "green" if result.certified else "red"
    structure = result.structure
    console.print(
        f"[bold]{escape(structure.name)}[/]: optimal {result.utility} (nats) = {result.objective:.12g}", emoji=False
    )
    console.print(f"  method: {escape(note)}", emoji=False)
    console.print(
        f"  {structure.k:,} symbols in {structure.r} classes, {result.n_orbits:,} vertex orbits, "
        f"{len(result.support)} in the optimum, {result.n_outputs:,} outputs, {result.seconds:.3g} s"
    )
    console.print(
        f"  [{colour}]{result.certificate.verdict}[/] ({result.certificate.mode} certificate, "
        f"margin {result.certificate.margin:.3g})"
    )
    console.print(f"  optimality: dual residual {result.dual_residual:.1e}, duality gap {result.duality_gap:.1e}")
    if result.bracket is not None:
        bracket = result.bracket
        console.print(
            f"  rigorous bounds (Arb): {bracket.lower:.17g} <= optimum <= {bracket.upper:.17g} (width {bracket.width:.1e})"
        )
    if result.note:
        console.print(f"  exact: {result.note}", markup=False, emoji=False)


def print_comparison(console: Console, optimum: float, rows) -> None:
    from rich.table import Table

    table = Table(title="mutual information (nats) of the shipped mechanisms")
    for column in ("mechanism", "epsilon", "I(X;Y)", "share of optimum", "gap"):
        table.add_column(column, justify="left" if column == "mechanism" else "right")
    table.add_row("optimum (orbit LP)", "", f"{optimum:.6g}", "1", "0")
    for row in rows:
        table.add_row(escape(f"{row.name} ({row.detail})" if row.detail else row.name), f"{row.epsilon:g}", f"{row.value:.6g}", f"{row.share:.4f}", f"{optimum - row.value:.4g}")
    console.print(table)


@contextmanager
def bounds_progress(description: str, max_seconds: float, number: str = ".6f", gap: str = ".2%") -> Iterator[Callable]:
    """A progress bar on stderr over the time budget; yields ``show(lower, upper, seconds)``, which prints both
    bounds. The bar appears at the first ``show`` (a route that reports no bounds shows none)."""
    bar, task = None, None

    def show(lower: float, upper: float, seconds: float) -> None:
        nonlocal bar, task
        if bar is None:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            bar = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                           console=Console(stderr=True), transient=True)
            bar.start()
            task = bar.add_task(description, total=max_seconds)
        relative = (upper - lower) / abs(upper) if upper else 0.0
        bar.update(task, completed=min(seconds, max_seconds),
                   description=f"lower {lower:{number}}  upper {upper:{number}}  gap {relative:{gap}}")

    try:
        yield show
    finally:
        if bar is not None:
            bar.stop()


def print_loss_comparison(console: Console, optimum: float, rows) -> None:
    """The baselines' expected loss (each with the optimal remap) and their ratio to the optimum."""
    from rich.table import Table

    table = Table(title="expected loss of baselines (each with the consumer's optimal remap)")
    for column in ("mechanism", "expected loss", "ratio to optimum", "certified"):
        table.add_column(column, justify="left" if column == "mechanism" else "right")
    table.add_row("optimum", f"{optimum:.6g}", "1", "yes")
    for row in rows:
        table.add_row(escape(row.name), f"{row.loss:.6g}", f"{row.ratio:.4f}", "yes" if row.certified else "no")
    console.print(table)
