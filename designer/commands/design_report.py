"""How ``ldp-designer design`` prints a design: the optimum, the method, the certificate, the comparison table."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from designer.design.expected_loss import ExpectedLossDesign
    from designer.design.result import DesignResult
    from designer.design.symmetry import SymmetricDesign


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
    """A progress bar on stderr over the time budget; yields ``show(lower, upper, seconds)``, which prints both bounds."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=Console(stderr=True), transient=True
    ) as bar:
        task = bar.add_task(description, total=max_seconds)

        def show(lower: float, upper: float, seconds: float) -> None:
            relative = (upper - lower) / abs(upper) if upper else 0.0
            bar.update(task, completed=min(seconds, max_seconds),
                       description=f"lower {lower:{number}}  upper {upper:{number}}  gap {relative:{gap}}")

        yield show


def report_expected_loss(result: ExpectedLossDesign, console: Console, rows=None) -> None:
    """The method, why, the bracket ``lower <= optimum <= upper`` of an expected-loss design, and the baselines' table."""
    console.print(f"  method: {result.method} ({result.reason})", markup=False, emoji=False)
    console.print(
        f"  bounds: {result.lower_bound:.12g} <= optimum <= {result.upper_bound:.12g} (relative gap {result.gap:.1e}, "
        f"{result.stopped}); lower bound: {result.bound}", markup=False, emoji=False,
    )
    if rows:
        print_loss_comparison(console, result.objective, rows)


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
