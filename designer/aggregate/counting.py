"""Count reports per group and distinct value, out of core.

One grouped count answers everything: DuckDB streams the report files
(:mod:`designer.aggregate.sources`) through one hash aggregate,
``SELECT <by...>, <column>, count(*) FROM read_parquet(files, hive_partitioning = true,
union_by_name = true) WHERE <checked --where> GROUP BY ALL``, with a bounded memory
limit (grouped by Hive partition keys only, the same statement is written as one ``UNION ALL``
of per-partition aggregates: :class:`CountQuery`). With a Dask scheduler, the files are split
into batches, each batch is counted by the same query on a worker, and the small partial counts are merged by a tree reduction
(``dask.bag`` ``reduction`` with ``split_every``): no shuffle, since the result has one row
per (group, distinct value).

Report values are returned as text (``None`` for NULL), integral floats written as
integers (``2.0`` → ``"2"``), so that partial counts from files of different types (an
integer column in one file, text in another) merge, and so that values match the
mechanism's output labels as text (:mod:`designer.aggregate.estimate`). Every distinct
value, NULL included, is kept.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

from designer.aggregate.filters import check_where, quote_identifier
from designer.aggregate.sources import ReportSource, check_csv_headers, resolve_reports
from designer.errors import one_line

#: DuckDB's memory limit for the aggregation (it spills beyond it).
DUCKDB_MEMORY_LIMIT = "1GB"
#: Dask: batches of files per worker thread (balance against per-task overhead).
BATCHES_PER_THREAD = 2
#: Most Hive partitions counted as one UNION ALL of per-partition aggregates (:class:`CountQuery`).
MAX_UNION_PARTITIONS = 1000
#: Dask: partial counts merged per node of the reduction tree.
SPLIT_EVERY = 8


class CountError(ValueError):
    """DuckDB could not run the count (its error class and first line); re-raised as is from Dask workers."""


@dataclass(frozen=True)
class ReportCounts:
    """Counts per group (``by`` columns) and distinct report value.

    Row ``i`` says: ``counts[i]`` reports with value ``values[i]`` (text, None for NULL) in the
    group ``keys[i]`` (a tuple of the ``by`` columns' values; ``()`` when ungrouped).
    ``files`` is the manifest of the files counted (:mod:`designer.aggregate.increments`).
    """

    by: tuple[str, ...]
    keys: list[tuple]
    values: list
    counts: list[int]
    engine: str
    seconds: float
    files: tuple = field(default=())

    @property
    def total(self) -> int:
        """Number of reports."""
        return int(sum(self.counts))

    def rows(self) -> dict:
        """``{(group key, value): count}``, as :func:`merge_counts` and the saved counts take them."""
        return dict(zip(zip(self.keys, self.values), self.counts))

    def groups(self) -> list[tuple[dict, list, list[int]]]:
        """``(by values, report values, counts)`` per group, groups in sorted order."""
        grouped: dict[tuple, tuple[list, list[int]]] = {}
        for key, value, count in zip(self.keys, self.values, self.counts):
            values, counts = grouped.setdefault(key, ([], []))
            values.append(value)
            counts.append(count)
        return [(dict(zip(self.by, key)), *grouped[key]) for key in sorted(grouped, key=_sort_key)]


def count_reports(reports: str, column: str = "y", scheduler: str | None = None, by: tuple[str, ...] = (),
                  where: str | None = None) -> ReportCounts:
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
    by : tuple of str
        Group columns (report columns or Hive partition keys).
    where : str, optional
        A boolean SQL expression over the columns (:func:`designer.aggregate.filters.check_where`).

    Raises
    ------
    ValueError
        One line: no file, unknown column, a refused ``where``, an unreadable file.
    """
    return count_source(resolve_reports(reports), column, scheduler, by, where)


def count_source(source: ReportSource, column: str = "y", scheduler: str | None = None, by: tuple[str, ...] = (),
                 where: str | None = None, files: tuple[str, ...] | None = None) -> ReportCounts:
    """:func:`count_reports` over resolved ``source`` (or only its ``files`` given here)."""
    files = source.files if files is None else files
    if source.kind == "csv":
        check_csv_headers(files)
    query = CountQuery(source, column, tuple(by), check_where(where) if where else None)
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
    return ReportCounts(tuple(by), keys, values, counts, "dask" if scheduler else "duckdb",
                        time.perf_counter() - start)


@dataclass(frozen=True)
class CountQuery:
    """The grouped count: report column, ``by`` columns and checked ``where`` SQL over a source's reader."""

    source: ReportSource
    column: str
    by: tuple[str, ...]
    where_sql: str | None

    def sql(self, files: list[str]) -> tuple[str, list]:
        """The statement and its parameters over ``files``.

        When every ``by`` column is a Hive partition key of every file (:func:`partitions`), the
        count is one ``UNION ALL`` of per-partition ``GROUP BY <column>`` aggregates with the
        partition values as constants: still one statement reading each file once, but DuckDB's
        perfect-hash aggregate on the report column alone runs at the speed of an ungrouped count,
        where ``GROUP BY day, y`` needs a general hash table (1.6-2x slower at 30 x 10^7 reports).
        Otherwise it is one ``GROUP BY <by>, <column>``.
        """
        condition = f" WHERE {self.where_sql}" if self.where_sql else ""
        report = quote_identifier(self.column)
        plan = partitions(files, self.by) if self.by else None
        if plan is None or len(plan) > MAX_UNION_PARTITIONS:
            selected = ", ".join([*(quote_identifier(name) for name in self.by), report])
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


def count_files(query: CountQuery, files) -> dict:
    """``{(group key, value text): count}`` of ``query`` over ``files`` (DuckDB, here or on a worker)."""
    rows: dict = {}
    for *key, value, count in _run(query.source, *query.sql(list(files))):
        index = (tuple(_json_value(part) for part in key), report_text(value))
        rows[index] = rows.get(index, 0) + int(count)
    return rows


def _run(source: ReportSource, sql: str, parameters: list) -> list[tuple]:
    """The rows of ``sql`` (``CountError``: DuckDB's error class and first line)."""
    import duckdb

    connection = duckdb.connect()
    try:
        connection.execute(f"SET memory_limit = '{DUCKDB_MEMORY_LIMIT}'")
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


def _explain(error: str, source: ReportSource, files, column: str, by: tuple[str, ...], where: str | None) -> str:
    """A one-line message naming the option at fault in a DuckDB error."""
    kind, message = error.split(": ", 1)
    if where and kind == "ConversionException":  # e.g. comparing a text column with a number
        return f"--where {where}: {message}"
    if kind != "BinderException":
        return f"--reports {source.spec}: {message}"
    columns = _columns(source, files)
    if column not in columns:
        return f"--column {column}: the reports have no such column (columns: {', '.join(columns)})"
    missing = [name for name in by if name not in columns]
    if missing:
        return f"--by {missing[0]}: the reports have no such column (columns: {', '.join(columns)})"
    return f"--where {where}: {message}"


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
    """Batches of files counted on the workers, partial counts merged by a tree reduction."""
    import dask.bag

    from designer.sweep.execution import dask_client

    query = replace(query, source=replace(query.source, files=()))  # each task carries its batch, not every file
    with dask_client(scheduler, 0) as client:
        threads = max(1, sum(client.nthreads().values()))
        size = max(1, math.ceil(len(files) / (BATCHES_PER_THREAD * threads)))
        bag = dask.bag.from_sequence(list(files), partition_size=size)
        reduced = bag.reduction(lambda batch: count_files(query, list(batch)), merge_counts,
                                split_every=SPLIT_EVERY)
        return reduced.compute()


def _json_value(value):
    """A group key part JSON can carry (dates and decimals as text)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _sort_key(key: tuple) -> tuple:
    return tuple((part is None, str(type(part)), part if part is not None else 0) for part in key)
