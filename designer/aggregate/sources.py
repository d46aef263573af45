"""Where the reports are: a file, a folder, a glob or a remote URL, resolved by DuckDB.

``--reports`` is handed to DuckDB's own file system: its ``glob()`` table function lists
the files (``**`` recurses; a folder means every ``.parquet``/``.pq`` or ``.csv``/``.csv.gz``
file below it), and its readers read them with ``hive_partitioning = true`` (a path
segment ``day=2026-11-24`` becomes a column ``day``) and ``union_by_name = true`` (files
with different column sets or types are unified; a column that is an integer in one file
and text in another is read as text). A remote URL (``s3://``, ``gs://``, ``https://``,
``az://`` ...) is passed through: to DuckDB's file system extension for its scheme
(``httpfs``, ``azure``) when that extension is installed, else to an ``fsspec`` file system
registered in DuckDB (``s3fs``, ``gcsfs``, ``adlfs`` ... when importable); when neither is
available the URL is refused in one line before anything is read (DuckDB would otherwise
try to download the extension). The same access is set up on every Dask worker.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from designer.errors import one_line

#: Report file suffixes per format.
SUFFIXES = {"parquet": (".parquet", ".pq"), "csv": (".csv", ".csv.gz")}
#: DuckDB extension that reads each remote scheme.
REMOTE_EXTENSIONS = {"s3": "httpfs", "s3a": "httpfs", "s3n": "httpfs", "r2": "httpfs", "gs": "httpfs",
                     "gcs": "httpfs", "http": "httpfs", "https": "httpfs", "hf": "httpfs",
                     "az": "azure", "azure": "azure", "abfss": "azure"}


@dataclass(frozen=True)
class ReportSource:
    """The report files, all of one format, as DuckDB lists them."""

    spec: str
    kind: str
    files: tuple[str, ...]
    access: str | None = None

    def prepare(self, connection) -> None:
        """Make ``connection`` able to read the files (load the extension or register fsspec)."""
        prepare_access(connection, self.access)

    def reader(self, files_parameter: str = "?") -> str:
        """The DuckDB table function reading a list of these files (bound as ``files_parameter``)."""
        options = "hive_partitioning = true, hive_types_autocast = false, union_by_name = true"
        if self.kind == "parquet":
            return f"read_parquet({files_parameter}, {options})"
        return f"read_csv({files_parameter}, header = true, {options})"


def scheme(spec: str) -> str | None:
    """The URL scheme of ``spec`` (``"s3"``, ``"https"`` ...), or None for a local path."""
    head, separator, _ = spec.partition("://")
    return head.lower() if separator and head.isalnum() else None


def report_format(name: str) -> str | None:
    """``"parquet"`` or ``"csv"`` from a file name or glob's suffix, None for neither."""
    lowered = name.lower()
    for kind, suffixes in SUFFIXES.items():
        if lowered.endswith(suffixes):
            return kind
    return None


def remote_access(url: str, installed: set[str], fsspec_available) -> str:
    """How ``url`` is read: a DuckDB extension name, or ``"fsspec:<scheme>"``.

    ``installed``: DuckDB's installed extensions; ``fsspec_available(scheme)``: whether fsspec
    has an importable file system for the scheme.

    Raises
    ------
    ValueError
        One line: the scheme is unknown, or neither its DuckDB extension nor an fsspec file system
        is available.
    """
    name = scheme(url)
    extension = REMOTE_EXTENSIONS.get(name)
    if extension is None:
        raise ValueError(f"--reports {url}: {name}:// URLs are not readable "
                         f"(supported: {', '.join(sorted(REMOTE_EXTENSIONS))})")
    if extension in installed:
        return extension
    if fsspec_available(name):
        return f"fsspec:{name}"
    raise ValueError(f"--reports {url}: reading {name}:// needs DuckDB's {extension} extension or an fsspec file "
                     f"system for {name}, and neither is installed (INSTALL {extension} in DuckDB on a machine with "
                     "network, or pip install the fsspec package for the scheme)")


def fsspec_available(name: str) -> bool:
    """Whether fsspec can read ``name://`` here (its implementation package imports)."""
    try:
        import fsspec

        fsspec.get_filesystem_class(name)
    except (ImportError, ValueError):
        return False
    return True


def prepare_access(connection, access: str | None) -> None:
    """Load the DuckDB extension, or register the fsspec file system, that ``access`` names."""
    if access is None:
        return
    if access.startswith("fsspec:"):
        import fsspec

        connection.register_filesystem(fsspec.filesystem(access.split(":", 1)[1]))
    else:
        connection.execute(f"LOAD {access}")


def installed_extensions(connection) -> set[str]:
    """DuckDB extensions installed locally (loading them needs no download)."""
    rows = connection.execute("SELECT extension_name FROM duckdb_extensions() WHERE installed").fetchall()
    return {name for (name,) in rows}


def resolve_reports(spec: str, connection=None) -> ReportSource:
    """The files ``spec`` names: a file, a folder (recursive), a glob (``**`` recurses) or a URL.

    Raises
    ------
    ValueError
        One line: no file matches, a folder with both Parquet and CSV files, a name that is neither
        format, a remote scheme whose DuckDB extension is not installed.
    """
    import duckdb

    own = connection is None
    connection = connection or duckdb.connect()
    try:
        access = None
        if scheme(spec) is not None:
            access = remote_access(spec, installed_extensions(connection), fsspec_available)
            prepare_access(connection, access)
        elif os.path.isdir(spec):
            return _folder(spec, connection)
        kind = report_format(spec)
        if kind is None:
            raise ValueError(f"--reports {spec}: name a folder, or .parquet/.pq or .csv/.csv.gz files "
                             "(e.g. 'reports/**/*.parquet')")
        files = _glob(connection, spec)
        if not files:
            raise ValueError(f"--reports {spec}: no file matches")
        return ReportSource(spec, kind, files, access)
    finally:
        if own:
            connection.close()


def _folder(folder: str, connection) -> ReportSource:
    """Every report file below ``folder``, all of one format."""
    found = {kind: sorted({file for suffix in suffixes
                           for file in _glob(connection, os.path.join(folder, "**", "*" + suffix))})
             for kind, suffixes in SUFFIXES.items()}
    kinds = [kind for kind, files in found.items() if files]
    if len(kinds) > 1:
        raise ValueError(f"--reports {folder}: the folder holds both Parquet and CSV files; "
                         "name one format with a glob (e.g. 'folder/**/*.parquet')")
    if not kinds:
        raise ValueError(f"--reports {folder}: no .parquet, .pq, .csv or .csv.gz file below this folder")
    return ReportSource(folder, kinds[0], tuple(found[kinds[0]]))


def _glob(connection, pattern: str) -> tuple[str, ...]:
    import duckdb

    try:
        rows = connection.execute("SELECT file FROM glob(?) ORDER BY file", [pattern]).fetchall()
    except duckdb.Error as error:
        raise ValueError(f"--reports {pattern}: {one_line(error)}") from None
    return tuple(file for (file,) in rows)


def check_csv_headers(files) -> None:
    """Refuse a local CSV report file whose header names a column twice (``y,y``), in one line.

    DuckDB's reader renames the second column (``y_1``) without a word, so ``--column y``
    would count one of the two silently. Each local file's first line is parsed with
    :mod:`csv` (one read of a few bytes per file; ``.csv.gz`` decompressed); remote files
    are left to DuckDB.
    """
    import csv
    import gzip

    for name in files:
        if not os.path.isfile(name):
            continue
        opener = gzip.open if name.endswith(".gz") else open
        try:
            with opener(name, "rt", encoding="utf-8", errors="replace", newline="") as handle:
                header = next(csv.reader([handle.readline()]), [])
        except (OSError, EOFError, csv.Error):
            continue  # unreadable: DuckDB's reader names the file and the problem
        seen: dict[str, int] = {}
        for index, column in enumerate(header):
            column = column.lstrip("\ufeff") if index == 0 else column
            if column in seen and column:  # DuckDB names empty header cells itself (column1, ...)
                raise ValueError(f"{name}: the header names the column {column!r} twice (columns {seen[column] + 1} "
                                 f"and {index + 1}); give each column its own name")
            seen[column] = index
