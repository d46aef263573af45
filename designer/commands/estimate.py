"""``ldp-designer estimate``: count reports out of core (DuckDB or Dask) and estimate with intervals."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import typer

from designer.commands import guarded, print_json

#: Rows of the text table; beyond this many inputs it shows the largest estimates (``--json`` has all).
TABLE_ROWS = 50


@guarded(reads=("--mechanism", "--reports", "--counts"), writes=("--save-counts",),
         updates={"--save-counts": "--counts"})
def estimate_command(
    mechanism: Path = typer.Option(..., "--mechanism", help="Channel CSV, or a package JSON from `ldp-designer package`."),
    reports: str = typer.Option(None, "--reports", help="Report file, folder (recursive), glob ('**' recurses) or URL; "
                                "Parquet or CSV; Hive partitions (day=01/) are columns."),
    column: str = typer.Option("y", "--column", help="The column holding the reports."),
    by: str = typer.Option(None, "--by", help="COL[,COL]: one estimate per group (one grouped count)."),
    where: str = typer.Option(None, "--where", help="SQL boolean expression filtering the reports, e.g. \"day >= '05'\"."),
    counts: Path = typer.Option(None, "--counts", help="Counts saved by --save-counts: count only files not in them."),
    save_counts: Path = typer.Option(None, "--save-counts", help="Write the counts and the manifest of counted files."),
    scheduler: str = typer.Option(None, "--scheduler", help="Count with Dask on this cluster (default: embedded DuckDB)."),
    estimator: str = typer.Option("unbiased", "--estimator", help="unbiased (normal CI) or mle (EM, bootstrap CI)."),
    confidence: float = typer.Option(0.95, "--confidence", help="Confidence level of the intervals."),
    simultaneous: bool = typer.Option(False, "--simultaneous", help="Intervals that hold together (every symbol of "
                                      "every group): Šidák (unbiased) or Bonferroni (mle)."),
    no_intervals: bool = typer.Option(False, "--no-intervals", help="The point estimate only, no interval: mle "
                                      "runs one EM (no bootstrap), at any k, rank-deficient orbit packages too."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Estimate the input distribution from REPORTS; reports outside the output alphabet are counted and shown."""
    from rich.console import Console

    from designer.aggregate.estimate import (accuracy_warning, check_confidence, check_estimator, estimate_groups,
                                             load_mechanism)
    from designer.aggregate.filters import check_where, parse_by
    from designer.aggregate.increments import check_counts_outside, count_increment, write_counts
    from designer.aggregate.sources import resolve_reports

    if reports is None and counts is None:
        raise ValueError("--reports: give the report files, or --counts with saved counts (or both)")
    check_confidence(confidence)
    groups = parse_by(by)
    where_sql = check_where(where) if where else None
    intervals = not no_intervals
    loaded = load_mechanism(mechanism, estimator, intervals)  # an orbit package too large for EM: refused before O(m) work
    check_estimator(loaded, estimator, intervals)  # before counting: refusing after a 10^9-report count wastes it
    if save_counts is not None:
        from designer.io.writing import check_destinations

        check_destinations([save_counts])  # a bad destination is refused before the count, not after
    source = resolve_reports(reports) if reports is not None else None
    if source is not None:
        check_counts_outside(source.files, (counts, save_counts))
    counted = count_increment(source, column, scheduler, groups, where, counts, manifest=save_counts is not None)
    if save_counts is not None:
        write_counts(save_counts, counted.rows(), column, groups,
                     where_sql, list(counted.files))
    # EM may run for minutes at large k: a status line on stderr (drawn on a terminal only)
    with Console(stderr=True).status("EM", spinner="dots") if estimator == "mle" else nullcontext() as status:
        result = estimate_groups(loaded, counted, estimator, confidence, simultaneous, intervals=intervals,
                                 progress=None if status is None else status.update)
    extra = {"engine": counted.engine, "count_seconds": counted.seconds, "mechanism": loaded.source}
    if counted.files:
        extra["files_in_manifest"] = len(counted.files)
    if not groups:  # ungrouped: the one estimate's fields at the top level
        result = {key: value for key, value in result["groups"][0].items() if key != "by"} if result["groups"] else \
            {"reports": 0, "estimate": [], "error": "no report counted"}
        if "error" in result:
            raise ValueError(result["error"])
    result.update(extra)
    entries = result["groups"] if groups else [result]
    for entry in entries:
        warning = accuracy_warning(entry)
        if warning is not None:
            label = ", ".join(f"{key}={value}" for key, value in entry.get("by", {}).items())
            typer.echo(f"warning: {label + ': ' if label else ''}{warning}", err=True)
    if as_json:
        print_json(result)
        return
    console = Console(soft_wrap=True)
    console.print(f"{counted.total} reports counted with {counted.engine} in {counted.seconds:.2f} s"
                  + (f" in {len(result['groups'])} groups by {', '.join(groups)}" if groups else ""))
    for entry in entries:
        _print_group(console, entry, estimator, confidence)


def _print_group(console, entry: dict, estimator: str, confidence: float) -> None:
    """One estimate as a table (the largest :data:`TABLE_ROWS`), with a stderr warning for outside reports."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    label = ", ".join(f"{key}={value}" for key, value in entry.get("by", {}).items())
    prefix = f"{label}: " if label else ""
    if "error" in entry:
        Console(stderr=True, soft_wrap=True).print(f"warning: {escape(prefix)}{escape(entry['error'])}")
        return
    outside = entry["outside_alphabet"]
    console.print(f"{escape(prefix)}{entry['in_alphabet']} in the output alphabet, {outside['count']} outside")
    if outside["count"]:
        shown = ", ".join(f"{escape(value)} ({count})" for value, count in outside["values"].items())
        Console(stderr=True, soft_wrap=True).print(
            f"warning: {escape(prefix)}{outside['count']} reports outside the output alphabet "
            f"({outside['distinct']} distinct values: {shown}); left out of the estimate")
    rows = entry["estimate"]
    intervals = entry["interval_method"] != "none"
    title = (f"{escape(prefix)}{estimator} estimate, {100 * confidence:g}% intervals ({entry['interval_method']})"
             if intervals else f"{escape(prefix)}{estimator} estimate, no intervals computed (--no-intervals)")
    if len(rows) > TABLE_ROWS:  # rendering 43,750 rows takes rich about 40 s and no one reads them
        rows = sorted(rows, key=lambda row: -row["value"])[:TABLE_ROWS]
        title += f"; the {TABLE_ROWS} largest of {len(entry['estimate'])} estimates (--json prints all)"
    table = Table(title=title)
    for name in ("input", "estimate", "low", "high") if intervals else ("input", "estimate"):
        table.add_column(name, justify="left" if name == "input" else "right")
    for row in rows:
        bounds = (f"{row['low']:.6f}", f"{row['high']:.6f}") if intervals else ()
        table.add_row(escape(row["input"]), f"{row['value']:.6f}", *bounds)
    console.print(table)
    if "expected_tv_error" in entry:
        condition = f"; condition number of Q {entry['condition_number']:.3g}" if "condition_number" in entry else ""
        console.print(f"{escape(prefix)}expected TV error {entry['expected_tv_error']:.3g} "
                      f"(normal approximation, sqrt(2/pi)/2 x the sum of the standard errors){condition}")


def register(app: typer.Typer) -> None:
    app.command("estimate")(estimate_command)
