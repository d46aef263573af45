"""``ldp-designer estimate``: count reports out of core (DuckDB or Dask) and estimate with intervals."""

from __future__ import annotations

from pathlib import Path

import typer

from designer.commands import guarded, print_json

#: Rows of the text table; beyond this many inputs it shows the largest estimates (``--json`` has all).
TABLE_ROWS = 50


@guarded
def estimate_command(
    mechanism: Path = typer.Option(..., "--mechanism", help="Channel CSV, or a package JSON from `ldp-designer package`."),
    reports: str = typer.Option(..., "--reports", help="Glob of report files, e.g. 'reports/*.parquet' or '*.csv'."),
    column: str = typer.Option("y", "--column", help="The column holding the reports."),
    scheduler: str = typer.Option(None, "--scheduler", help="Count with Dask on this cluster (default: embedded DuckDB)."),
    estimator: str = typer.Option("unbiased", "--estimator", help="unbiased (normal CI) or mle (EM, bootstrap CI)."),
    confidence: float = typer.Option(0.95, "--confidence", help="Confidence level of the intervals."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Estimate the input distribution from REPORTS; reports outside the output alphabet are counted and shown."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from designer.aggregate.counting import count_reports
    from designer.aggregate.estimate import check_confidence, check_estimator, estimate_reports, load_mechanism

    check_confidence(confidence)
    loaded = load_mechanism(mechanism)
    check_estimator(loaded, estimator)  # before counting: refusing after a 10^9-report count wastes it
    counted = count_reports(reports, column, scheduler)
    result = estimate_reports(loaded, counted.values, counted.counts, estimator, confidence)
    result.update(engine=counted.engine, count_seconds=counted.seconds, mechanism=loaded.source)
    outside = result["outside_alphabet"]
    if as_json:
        print_json(result)
        return
    console = Console(soft_wrap=True)
    console.print(f"{result['reports']} reports counted with {counted.engine} in {counted.seconds:.2f} s; "
                  f"{result['in_alphabet']} in the output alphabet, {outside['count']} outside")
    if outside["count"]:
        shown = ", ".join(f"{escape(value)} ({count})" for value, count in outside["values"].items())
        Console(stderr=True, soft_wrap=True).print(f"warning: {outside['count']} reports outside the output alphabet "
                                   f"({outside['distinct']} distinct values: {shown}); left out of the estimate")
    rows = result["estimate"]
    title = f"{estimator} estimate, {100 * confidence:g}% intervals ({result['interval_method']})"
    if len(rows) > TABLE_ROWS:  # rendering 43,750 rows takes rich about 40 s and no one reads them
        rows = sorted(rows, key=lambda row: -row["value"])[:TABLE_ROWS]
        title += f"; the {TABLE_ROWS} largest of {len(result['estimate'])} estimates (--json prints all)"
    table = Table(title=title)
    for name in ("input", "estimate", "low", "high"):
        table.add_column(name, justify="left" if name == "input" else "right")
    for row in rows:
        table.add_row(escape(row["input"]), f"{row['value']:.6f}", f"{row['low']:.6f}", f"{row['high']:.6f}")
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("estimate")(estimate_command)
