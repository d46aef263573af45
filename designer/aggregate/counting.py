"""Count reports per group and distinct value, out of core.

One grouped count answers everything: DuckDB streams the report files
(:mod:`designer.aggregate.sources`) through one hash aggregate,
``SELECT <by...>, <column>, count(*) FROM read_parquet(files, hive_partitioning = true,
union_by_name = true) WHERE <checked --where> GROUP BY ALL``, with a bounded memory
limit (grouped by Hive partition keys only, the same statement is written as one ``UNION ALL``
of per-partition aggregates: :class:`CountQuery`). With a Dask scheduler, the files are split
into batches (one per worker thread), each batch is counted by the same query on a worker with
DuckDB limited to that worker's threads, and the small partial counts are merged by a tree
reduction on the workers (:data:`SPLIT_EVERY` partials per task): no shuffle, since the result
has one row per (group, distinct value).

Report values are returned as text (``None`` for NULL), integral floats written as
integers (``2.0`` → ``"2"``), so that partial counts from files of different types (an
integer column in one file, text in another) merge, and so that values match the
mechanism's output labels as text (:mod:`designer.aggregate.estimate`). Every distinct
value, NULL included, is kept.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field, replace

from designer.aggregate.filters import GroupColumn, check_where, parse_by, quote_identifier
from designer.aggregate.sources import ReportSource, check_csv_headers, resolve_reports
from designer.errors import one_line

#: DuckDB's memory limit for the aggregation (it spills beyond it).
DUCKDB_MEMORY_LIMIT = "1GB"
#: Dask: batches of files per worker thread. One: DuckDB already reads a batch's files in parallel, and each
#: task costs a scheduler round trip (tens of ms on a loaded machine; 4 batches on 2 threads measured slower).
BATCHES_PER_THREAD = 1
#: Most Hive partitions counted as one UNION ALL of per-partition aggregates (:class:`CountQuery`).
MAX_UNION_PARTITIONS = 1000
#: Dask: partial counts merged per node of the reduction tree.
SPLIT_EVERY = 8
#: DuckDB's words for a Parquet file that has no bytes or no column (the file name in group 1).
_EMPTY_PARQUET = re.compile(r"File '(.+?)' too small to be a Parquet file|"
                            r"Failed to read Parquet file '(.+?)': Need at least one non-root column")


class CountError(ValueError):
    """DuckDB could not run the count (its error class and first line); re-raised as is from Dask workers."""


@dataclass(frozen=True)
class ReportCounts:
    """Counts per group (``by`` columns) and distinct report value.

    Row ``i`` says: ``counts[i]`` reports with value ``values[i]`` (text, None for NULL) in the
    group ``keys[i]`` (a tuple of the ``by`` groups' values as DuckDB returns them, dates and
    timestamps included; ``()`` when ungrouped); ``by`` holds the groups' names.
    ``files`` is the manifest of the files counted (:mod:`designer.aggregate.increments`);
    ``same_content``: ``(path, path counted)`` of the files skipped as copies of another.
    """

    by: tuple[str, ...]
    keys: list[tuple]
    values: list
    counts: list[int]
    engine: str
    seconds: float
    files: tuple = field(default=())
    same_content: tuple = field(default=())

    @property
    def total(self) -> int:
        """Number of reports."""
        return int(sum(self.counts))

    def rows(self) -> dict:
        """``{(group key, value): count}``, as :func:`merge_counts` and the saved counts take them."""
        return dict(zip(zip(self.keys, self.values), self.counts))

    def groups(self) -> list[tuple[dict, list, list[int]]]:
        """``(by values, report values, counts)`` per group, groups in sorted order (values JSON-ready)."""
        grouped: dict[tuple, tuple[list, list[int]]] = {}
        for key, value, count in zip(self.keys, self.values, self.counts):
            values, counts = grouped.setdefault(key, ([], []))
            values.append(value)
            counts.append(count)
        return [({name: _json_value(part) for name, part in zip(self.by, key)}, *grouped[key])
                for key in sorted(grouped, key=_sort_key)]


def count_reports(reports: str, column: str = "y", scheduler: str | None = None,
                  by: tuple[str | GroupColumn, ...] = (), where: str | None = None) -> ReportCounts:
    """Counts per ``by`` group and distinct value of ``column`` over the files ``reports`` names.

    This is the bridge to other engines: any engine that can run ``SELECT <by>, y, count(*) ...
    GROUP BY ALL`` (Spark, Ray, a warehouse) can produce the same rows, and
    :func:`designer.aggregate.estimate.estimate_reports` estimates from ``values``/``counts``.

    Parameters
    ----------
    reports : str
        A Parquet or CSV (header line) file, a folder (every report file below it), a glob
        (``**`` recurses) or a remote URL (:func:`designer.aggregate.sources.resolve_reports`).
        Hive partitions (``day=01/``) are columns.
    column : str
        The report column.
    scheduler : str, optional
        Count with Dask on this cluster (batches of files, tree reduction) instead of DuckDB here.
    by : tuple of str or GroupColumn
        Groups: columns (report columns or Hive partition keys) or expressions over them
        (``"date_trunc('hour', ts) AS hour"``), checked by :func:`designer.aggregate.filters.parse_by`.
    where : str, optional
        A boolean SQL expression over the columns (:func:`designer.aggregate.filters.check_where`).

    Raises
    ------
    ValueError
        One line: no file, unknown column, a refused ``where``, an unreadable file.
    """
    return count_source(resolve_reports(reports), column, scheduler, by, where)


def count_source(source: ReportSource, column: str = "y", scheduler: str | None = None,
                 by: tuple[str | GroupColumn, ...] = (), where: str | None = None,
                 files: tuple[str, ...] | None = None) -> ReportCounts:
    """:func:`count_reports` over resolved ``source`` (or only its ``files`` given here)."""
    files = source.files if files is None else files
    if source.kind == "csv":
        check_csv_headers(files)
    by = as_groups(by)
    query = CountQuery(source, column, by, check_where(where) if where else None)
    start = time.perf_counter()
    try:
        if not files:
            rows: dict = {}
        elif scheduler:
            rows = _dask_counts(query, files, scheduler)
        else:
            rows = count_files(query, files)
    except CountError as error:
        raise ValueError(_explain(str(error), source, files, column, by, where)) from None
    keys, values, counts = unpack(rows)
    return ReportCounts(tuple(group.name for group in by), keys, values, counts, "dask" if scheduler else "duckdb",
                        time.perf_counter() - start)


def as_groups(by) -> tuple[GroupColumn, ...]:
    """``by`` as groups: each text is parsed as ``--by`` is (:func:`designer.aggregate.filters.parse_by`)."""
    return tuple(group for item in by for group in ((item,) if isinstance(item, GroupColumn) else parse_by(item)))


@dataclass(frozen=True)
class CountQuery:
    """The grouped count: report column, ``by`` groups and checked ``where`` SQL over a source's reader."""

    source: ReportSource
    column: str
    by: tuple[GroupColumn, ...]
    where_sql: str | None

    def sql(self, files: list[str]) -> tuple[str, list]:
        """The statement and its parameters over ``files``.

        When every ``by`` group is a Hive partition key of every file (:func:`partitions`), the
        count is one ``UNION ALL`` of per-partition ``GROUP BY <column>`` aggregates with the
        partition values as constants: still one statement reading each file once, but DuckDB's
        perfect-hash aggregate on the report column alone runs at the speed of an ungrouped count,
        where ``GROUP BY day, y`` needs a general hash table (1.6-2x slower at 30 x 10^7 reports).
        Otherwise it is one ``GROUP BY <by>, <column>``.
        """
        condition = f" WHERE {self.where_sql}" if self.where_sql else ""
        report = quote_identifier(self.column)
        columns = tuple(group.column for group in self.by)
        plan = partitions(files, columns) if self.by and None not in columns else None
        if plan is None or len(plan) > MAX_UNION_PARTITIONS:
            selected = ", ".join([*(group.select() for group in self.by), report])
            return f"SELECT {selected}, count(*) FROM {self.source.reader()}{condition} GROUP BY ALL", [list(files)]
        constants = ", ".join("CAST(? AS VARCHAR)" for _ in self.by)
        branch = (f"SELECT {constants}, v, n FROM (SELECT {report} AS v, count(*) AS n "
                  f"FROM {self.source.reader()}{condition} GROUP BY 1)")
        parameters = [part for key, group in plan.items() for part in (*key, group)]
        return " UNION ALL ".join([branch] * len(plan)), parameters


def partitions(files, by: tuple[str, ...]) -> dict[tuple, list[str]] | None:
    """Files per value of the ``by`` Hive partition keys, or None when a ``by`` column is not a plain
    partition key of every file (a data column, a missing key, or a value DuckDB would decode:
    ``%``-escapes, ``__HIVE_DEFAULT_PARTITION__``)."""
    plan: dict[tuple, list[str]] = {}
    for file in files:
        keys = dict(part.split("=", 1) for part in file.replace("\\", "/").split("/")[:-1] if "=" in part)
        values = tuple(keys.get(name) for name in by)
        if any(value is None or "%" in value or value == "__HIVE_DEFAULT_PARTITION__" for value in values):
            return None
        plan.setdefault(values, []).append(file)
    return plan


def count_files(query: CountQuery, files, threads: int | None = None) -> dict:
    """``{(group key, value text): count}`` of ``query`` over ``files`` (DuckDB, here or on a worker;
    ``threads``: DuckDB's threads, default all cores)."""
    rows: dict = {}
    for *key, value, count in _run(query.source, *query.sql(list(files)), threads):
        index = (tuple(key), report_text(value))
        rows[index] = rows.get(index, 0) + int(count)
    return rows


def _run(source: ReportSource, sql: str, parameters: list, threads: int | None = None) -> list[tuple]:
    """The rows of ``sql`` (``CountError``: DuckDB's error class and first line)."""
    import duckdb

    connection = duckdb.connect()
    try:
        connection.execute(f"SET memory_limit = '{DUCKDB_MEMORY_LIMIT}'")
        if threads is not None:
            connection.execute(f"SET threads = {int(threads)}")
        connection.execute("SET enable_progress_bar = false")  # it would print on stdout (breaks --json)
        source.prepare(connection)
        try:
            return connection.execute(sql, parameters).fetchall()
        except duckdb.Error as error:
            raise CountError(f"{type(error).__name__}: {one_line(error)}") from None
    finally:
        connection.close()


def merge_counts(parts) -> dict:
    """The sum of partial ``{(key, value): count}`` dictionaries."""
    merged: dict = {}
    for part in parts:
        for index, count in part.items():
            merged[index] = merged.get(index, 0) + count
    return merged


def unpack(rows: dict) -> tuple[list, list, list[int]]:
    """``rows`` as parallel lists (keys, values, counts), sorted by group and value (None last)."""
    ordered = sorted(rows, key=lambda index: (_sort_key(index[0]), index[1] is None, index[1] or ""))
    return [key for key, _ in ordered], [value for _, value in ordered], [int(rows[index]) for index in ordered]


def report_text(value) -> str | None:
    """A report value as text: None for NULL, integral floats as integers (``2.0`` → ``"2"``)."""
    if value is None:
        return None
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _explain(error: str, source: ReportSource, files, column: str, by: tuple[GroupColumn, ...],
             where: str | None) -> str:
    """A one-line message naming the option at fault in a DuckDB error."""
    kind, message = error.split(": ", 1)
    if where and kind == "ConversionException":  # e.g. comparing a text column with a number
        return f"--where {where}: {message}"
    empty = _EMPTY_PARQUET.search(message)
    if empty:
        problem = "is empty (0 bytes)" if "too small" in empty.group(0) else "has no columns"
        return (f"--reports {source.spec}: the file {empty.group(1) or empty.group(2)} {problem}, so it holds no "
                f"report column {column}: remove it or write its reports")
    if kind != "BinderException":
        return f"--reports {source.spec}: {message}"
    columns = _columns(source, files)
    if column not in columns:
        return f"--column {column}: the reports have no such column (columns: {', '.join(columns)})"
    missing = [group.column for group in by if group.column is not None and group.column not in columns]
    if missing:
        return f"--by {missing[0]}: the reports have no such column (columns: {', '.join(columns)})"
    for group in by:
        failure = _bind_error(source, files, group.select()) if group.column is None else None
        if failure:
            return f"--by {group.sql}: {failure} (columns: {', '.join(columns)})"
    return f"--where {where}: {message}"


def describe_no_report(source: ReportSource | None, column: str, where: str | None) -> str:
    """Why nothing was counted, in one line: no rows in the files, none matching ``where``, or empty saved counts."""
    if source is None:
        return "the saved counts hold no report"
    files = "the file" if len(source.files) == 1 else f"the {len(source.files)} files"
    if where:
        return f"--where {where}: no report of {files} of --reports {source.spec} matches it"
    verb = "holds" if len(source.files) == 1 else "hold"
    return f"--reports {source.spec}: {files} {verb} no rows (no report in column {column})"


def column_type(source: ReportSource, column: str) -> str:
    """The report column's type as DuckDB reads it from every file (``VARCHAR``, ``BIGINT``, ...)."""
    connection = duckdb_connection(source)
    try:
        described = connection.execute(f"DESCRIBE SELECT {quote_identifier(column)} FROM {source.reader()}",
                                       [list(source.files)]).fetchall()
        return described[0][1]
    finally:
        connection.close()


def duckdb_connection(source: ReportSource):
    """A DuckDB connection able to read ``source``'s files."""
    import duckdb

    connection = duckdb.connect()
    source.prepare(connection)
    return connection


def _bind_error(source: ReportSource, files, expression: str) -> str | None:
    """DuckDB's one-line error binding ``expression`` over the files, None when it binds."""
    import duckdb

    connection = duckdb.connect()
    try:
        source.prepare(connection)
        connection.execute(f"DESCRIBE SELECT {expression} FROM {source.reader()}", [list(files)])
    except duckdb.Error as error:
        return one_line(error)
    finally:
        connection.close()
    return None


def _columns(source: ReportSource, files) -> list[str]:
    import duckdb

    connection = duckdb.connect()
    try:
        source.prepare(connection)
        described = connection.execute(f"DESCRIBE SELECT * FROM {source.reader()}", [list(files)]).fetchall()
        return [row[0] for row in described]
    finally:
        connection.close()


def _dask_counts(query: CountQuery, files, scheduler: str) -> dict:
    """Batches of files counted on the workers, partial counts merged by a tree reduction there."""
    from designer.sweep.execution import dask_client

    query = replace(query, source=replace(query.source, files=()))  # each task carries its batch, not every file
    files = list(files)
    with dask_client(scheduler, 0) as client:
        threads = max(1, sum(client.nthreads().values()))
        size = max(1, math.ceil(len(files) / (BATCHES_PER_THREAD * threads)))
        batches = [files[start:start + size] for start in range(0, len(files), size)]
        levels = [client.map(count_batch, [query] * len(batches), batches, pure=False)]
        while len(levels[-1]) > 1:  # every level is kept referenced until the result: the scheduler keeps its inputs
            below = levels[-1]
            levels.append([client.submit(merge_counts, below[start:start + SPLIT_EVERY], pure=False)
                           for start in range(0, len(below), SPLIT_EVERY)])
        return levels[-1][0].result()


def count_batch(query: CountQuery, files: list[str]) -> dict:
    """:func:`count_files` on a Dask worker: DuckDB uses the worker's threads, not every core of its host
    (two single-thread workers on two cores would otherwise run four DuckDB threads)."""
    from distributed import get_worker

    return count_files(query, files, get_worker().state.nthreads)


def _json_value(value):
    """A group key part JSON can carry (dates and decimals as text)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _sort_key(key: tuple) -> tuple:
    return tuple((part is None, str(type(part)), part if part is not None else 0) for part in key)
