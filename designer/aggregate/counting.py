"""Count reports per distinct value, out of core.

DuckDB (default) streams the files matched by a glob through a hash aggregate
(``SELECT column, count(*) ... GROUP BY 1``) with a bounded memory limit; Dask
(``scheduler`` given) computes ``value_counts`` of the column on the cluster, one
partition per file or row group. Both return every distinct value, NULL included,
so nothing is lost before the alphabet check of :mod:`designer.aggregate.estimate`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

#: DuckDB's memory limit for the aggregation (it spills beyond it).
DUCKDB_MEMORY_LIMIT = "1GB"


@dataclass(frozen=True)
class ReportCounts:
    """Distinct report values (None for NULL) and their counts."""

    values: list
    counts: list[int]
    engine: str
    seconds: float

    @property
    def total(self) -> int:
        """Number of reports."""
        return int(sum(self.counts))


def report_format(pattern: str) -> str:
    """``"parquet"`` or ``"csv"`` from the glob's suffix (``ValueError`` otherwise)."""
    lowered = pattern.lower()
    if lowered.endswith((".parquet", ".pq")):
        return "parquet"
    if lowered.endswith((".csv", ".csv.gz")):
        return "csv"
    raise ValueError(f"--reports {pattern}: name .parquet or .csv files (e.g. 'reports/*.parquet')")


def count_reports(pattern: str, column: str = "y", scheduler: str | None = None) -> ReportCounts:
    """Counts per distinct value of ``column`` over the files matching ``pattern``.

    Parameters
    ----------
    pattern : str
        A glob of Parquet or CSV files (CSV with a header line).
    column : str
        The report column.
    scheduler : str, optional
        Count with Dask on this cluster instead of DuckDB.
    """
    kind = report_format(pattern)
    import glob

    files = sorted(glob.glob(pattern))
    if not files:
        raise ValueError(f"--reports {pattern}: no file matches")
    start = time.perf_counter()
    if scheduler:
        values, counts = _dask_counts(files, column, kind, scheduler)
    else:
        values, counts = _duckdb_counts(files, column, kind)
    return ReportCounts(values, counts, "dask" if scheduler else "duckdb", time.perf_counter() - start)


def _duckdb_counts(files: list[str], column: str, kind: str) -> tuple[list, list[int]]:
    import duckdb

    connection = duckdb.connect()
    try:
        connection.execute(f"SET memory_limit = '{DUCKDB_MEMORY_LIMIT}'")
        connection.execute("SET enable_progress_bar = false")  # it would print on stdout (breaks --json)
        reader = "read_parquet(?)" if kind == "parquet" else "read_csv(?, header = true)"
        quoted = '"' + column.replace('"', '""') + '"'
        try:
            rows = connection.execute(f"SELECT {quoted}, count(*) FROM {reader} GROUP BY 1", [files]).fetchall()
        except duckdb.BinderException:
            raise ValueError(f"--column {column}: the reports have no such column") from None
        except duckdb.Error as error:
            raise ValueError(f"--reports: {str(error).splitlines()[0]}") from None
    finally:
        connection.close()
    return [value for value, _ in rows], [int(count) for _, count in rows]


def _dask_counts(files: list[str], column: str, kind: str, scheduler: str) -> tuple[list, list[int]]:
    import dask.dataframe as dd
    import pandas as pd

    from designer.sweep.execution import dask_client

    with dask_client(scheduler, 0):
        try:
            if kind == "parquet":
                frame = dd.read_parquet(files, columns=[column])
            else:  # text, so a stray non-numeric report cannot break the type inference of a partition
                frame = dd.read_csv(files, usecols=[column], dtype={column: object})
            series = frame[column].value_counts(dropna=False).compute()
        except (KeyError, ValueError) as error:
            raise ValueError(f"--column {column}: cannot count it ({str(error).splitlines()[0]})") from None
    return [None if pd.isna(value) else value for value in series.index.tolist()], [int(c) for c in series.tolist()]
