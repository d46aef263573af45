"""``ldp-designer estimate``: count reports out of core (DuckDB or Dask) and estimate with intervals."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import typer

from designer.commands import guarded, print_json

#: Rows of the text table; beyond this many inputs it shows the largest estimates (``--json`` has all).
TABLE_ROWS = 50


@guarded(reads=("--mechanism", "--reports", "--counts", "--sign", "--public-key"), writes=("--save-counts",),
         updates={"--save-counts": "--counts"})
def estimate_command(
    mechanism: Path = typer.Option(..., "--mechanism", help="Channel CSV, or a package JSON from `ldp-designer package`."),
    reports: str = typer.Option(None, "--reports", help="Report file, folder (recursive), glob ('**' recurses) or URL; "
                                "Parquet or CSV; Hive partitions (day=01/) are columns."),
    column: str = typer.Option("y", "--column", help="The column holding the reports."),
    by: str = typer.Option(None, "--by", help="EXPR[,EXPR]: one estimate per group (one grouped count); columns or "
                           "SQL expressions, e.g. \"day\" or \"date_trunc('hour', ts) AS hour\"."),
    where: str = typer.Option(None, "--where", help="SQL boolean expression filtering the reports, e.g. \"day >= '05'\"."),
    counts: Path = typer.Option(None, "--counts", help="Counts saved by --save-counts (checked: digest, signature): "
                                "count only files whose content is not in them; or a plain (group..., value, count) "
                                "table from any engine. Rolled up to --by and --where."),
    save_counts: Path = typer.Option(None, "--save-counts", help="Write the counts, the manifest of counted files and "
                                     "their digest (locked against concurrent writers)."),
    sign: Path = typer.Option(None, "--sign", help="Sign the --save-counts with this Ed25519 private key (keygen)."),
    public_key: Path = typer.Option(None, "--public-key", help="Accept --counts only when signed by this Ed25519 "
                                    "public key (KEY.pub)."),
    scheduler: str = typer.Option(None, "--scheduler", help="Count with Dask on this cluster (default: embedded DuckDB)."),
    estimator: str = typer.Option("unbiased", "--estimator", help="unbiased (normal CI) or mle (EM, bootstrap CI)."),
    confidence: float = typer.Option(0.95, "--confidence", help="Confidence level of the intervals."),
    simultaneous: bool = typer.Option(False, "--simultaneous", help="Intervals that hold together (every symbol of "
                                      "every group): Šidák (unbiased) or Bonferroni (mle)."),
    no_intervals: bool = typer.Option(False, "--no-intervals", help="The point estimate only, no interval: mle "
                                      "runs one EM (no bootstrap), at any k, rank-deficient orbit packages too."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Estimate the input distribution from REPORTS; reports outside the output alphabet are counted and shown.

    Exit 0 estimated, 1 --counts tampered (digest or signature), 2 bad input."""
    from rich.console import Console

    from designer.aggregate.counting import column_type, describe_no_report
    from designer.aggregate.counts_file import CountsTampered
    from designer.aggregate.estimate import (
        accuracy_warning,
        check_confidence,
        check_estimator,
        estimate_groups,
        load_mechanism,
    )
    from designer.aggregate.filters import check_where, parse_by
    from designer.aggregate.increments import check_counts_outside, gather_counts
    from designer.aggregate.sources import resolve_reports
    from designer.commands.deploy import reject, signing_key

    if reports is None and counts is None:
        raise ValueError("--reports: give the report files, or --counts with saved counts (or both)")
    check_confidence(confidence)
    groups = parse_by(by)
    if where:
        check_where(where)  # a refused expression before any file is read
    intervals = not no_intervals
    loaded = load_mechanism(mechanism, estimator, intervals)  # an orbit package too large for EM: refused before O(m) work
    check_estimator(loaded, estimator, intervals)  # before counting: refusing after a 10^9-report count wastes it
    private_key, trusted = signing_key(sign), _public_key(public_key)
    if sign is not None and save_counts is None:
        raise ValueError("--sign: it signs the --save-counts file; give --save-counts too")
    if save_counts is not None:
        from designer.io.writing import check_destinations

        check_destinations([save_counts])  # a bad destination is refused before the count, not after
    source = resolve_reports(reports) if reports is not None else None
    if source is not None:
        check_counts_outside(source.files, (counts, save_counts))
    try:
        counted, saved = gather_counts(source, column, scheduler, groups, where, counts, save_counts, private_key,
                                       trusted, waiting=lambda line: typer.echo(f"note: {line}", err=True))
    except CountsTampered as error:
        reject(str(error))
    if counted.same_content:
        copy, original = counted.same_content[0]
        typer.echo(f"warning: {len(counted.same_content)} report files skipped: the same content as a file counted "
                   f"(a link, a copy or a rename), e.g. {copy} = {original}", err=True)
    # EM may run for minutes at large k: a status line on stderr (drawn on a terminal only)
    with Console(stderr=True).status("EM", spinner="dots") if estimator == "mle" else nullcontext() as status:
        result = estimate_groups(loaded, counted, estimator, confidence, simultaneous, intervals=intervals,
                                 progress=None if status is None else status.update)
    extra = {"engine": counted.engine, "count_seconds": counted.seconds, "mechanism": loaded.source}
    if counted.files:
        extra["files_in_manifest"] = len(counted.files)
    if counted.same_content:
        extra["same_content_skipped"] = len(counted.same_content)
    if saved is not None:
        extra["counts_checked"] = saved.checked
    if not groups:  # ungrouped: the one estimate's fields at the top level
        if not result["groups"]:
            raise ValueError(describe_no_report(source, column, where))
        result = {key: value for key, value in result["groups"][0].items() if key != "by"}
        if "error" in result:
            kind = column_type(source, column) if source is not None else "text, from the saved counts"
            raise ValueError(f"{result['error']}; the reports are column {column} of type {kind}")
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
                  + (f" in {len(result['groups'])} groups by {', '.join(counted.by)}" if groups else ""))
    for entry in entries:
        _print_group(console, entry, estimator, confidence)


def _public_key(path: Path | None) -> bytes | None:
    """The trusted Ed25519 public key of ``--public-key`` (read before any work)."""
    if path is None:
        return None
    from designer.deploy.signing import read_public_key

    return read_public_key(path)


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
