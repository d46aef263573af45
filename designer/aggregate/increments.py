"""Saved counts and the manifest of counted files: count each report file once.

``--save-counts counts.parquet`` writes the grouped counts (one row per group and distinct
report value) together with a manifest, in the Parquet file's metadata, of every file
counted: absolute path, size, modification time (ns) and SHA-256. ``--counts
counts.parquet`` reads them back and counts only the files the manifest does not hold;
the estimate is made from the sum (a count is additive, so saved counts + new files equal a
full recount exactly).

A file already in the manifest is:

* skipped without reading when its size and modification time are unchanged (as make and
  rsync decide);
* skipped after hashing when they changed but the SHA-256 did not (touched, copied back);
* **refused** (one-line error) when its content changed: its old reports are inside the
  saved counts and cannot be taken out, so the only correct answer is a full recount without
  ``--counts``. Files in the manifest that are gone from disk stay counted.

The counts are tied to what they counted: the report column, the ``--by`` columns and the
``--where`` expression are stored, and merging with different ones is refused.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from designer.errors import one_line
from designer.io.text import file_sha256

#: Key of the counts' description in the Parquet metadata.
METADATA_KEY = b"ldp-designer-counts"
#: Version of the counts file layout.
FORMAT = 1


@dataclass(frozen=True)
class SavedCounts:
    """Counts read from ``--counts``: what they counted and the rows ``{(key, value): count}``."""

    column: str
    by: tuple[str, ...]
    where: str | None
    files: dict[str, dict]
    rows: dict


def file_entry(path: str) -> dict:
    """The manifest entry of a local file: absolute path, size, mtime (ns), SHA-256."""
    status = os.stat(path)
    return {"path": os.path.abspath(path), "size": status.st_size, "mtime_ns": status.st_mtime_ns,
            "sha256": file_sha256(path)}


def new_files(files, counted: dict[str, dict]) -> list[str]:
    """The files not yet counted (module docstring for the rules).

    Raises
    ------
    ValueError
        A counted file whose content changed (one line naming it).
    """
    todo = []
    for path in files:
        absolute = os.path.abspath(path)
        before = counted.get(absolute)
        if before is None:
            todo.append(path)
            continue
        status = os.stat(path)
        if (status.st_size, status.st_mtime_ns) == (before["size"], before["mtime_ns"]):
            continue
        if file_sha256(path) != before["sha256"]:
            raise ValueError(f"--counts: {absolute} changed since it was counted (size {before['size']} -> "
                             f"{status.st_size} bytes, new SHA-256); its old reports are in the saved counts and "
                             "cannot be removed: recount every file without --counts")
    return todo


def check_counts_outside(files, paths) -> None:
    """Refuse a counts file that is also one of the report ``files`` (the next run would count it as reports)."""
    counted = {os.path.abspath(file) for file in files}
    for path in paths:
        if path is not None and os.path.abspath(path) in counted:
            raise ValueError(f"{path}: this counts file is among the --reports files; keep it outside them "
                             "(e.g. next to the reports folder, or use a glob that does not match it)")


def read_counts(path: str | Path, column: str, by: tuple[str, ...], where: str | None) -> SavedCounts:
    """Counts saved by :func:`write_counts`, checked against this run's column, ``by`` and ``where``.

    Raises
    ------
    ValueError
        One line: unreadable file, not a counts file, or counted with another column/by/where.
    """
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as error:
        raise ValueError(f"--counts {path}: cannot read it ({one_line(error)})") from None
    metadata = (table.schema.metadata or {}).get(METADATA_KEY)
    if metadata is None:
        raise ValueError(f"--counts {path}: not a counts file of ldp-designer estimate --save-counts")
    description = json.loads(metadata)
    saved = (description["column"], tuple(description["by"]), description["where"])
    if saved != (column, tuple(by), where):
        raise ValueError(f"--counts {path}: counted with --column {saved[0]}, --by {','.join(saved[1]) or '(none)'}, "
                         f"--where {saved[2] or '(none)'}; this run asks for --column {column}, "
                         f"--by {','.join(by) or '(none)'}, --where {where or '(none)'}")
    columns = table.to_pydict()
    keys = list(zip(*(columns[f"key_{i}"] for i in range(len(by))))) if by else [()] * table.num_rows
    rows = {(key, value): count for key, value, count in zip(keys, columns["value"], columns["count"])}
    return SavedCounts(column, tuple(by), where, {entry["path"]: entry for entry in description["files"]}, rows)


def write_counts(path: str | Path, rows: dict, column: str, by: tuple[str, ...], where: str | None,
                 files: list[dict]) -> None:
    """Write ``rows`` (``{(key, value): count}``) and the manifest ``files`` atomically (temp file, rename)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from designer.io.writing import write_files

    columns = {f"key_{i}": [key[i] for key, _ in rows] for i in range(len(by))}
    columns["value"] = pa.array([value for _, value in rows], type=pa.string())
    columns["count"] = pa.array(list(rows.values()), type=pa.int64())
    description = {"format": FORMAT, "column": column, "by": list(by), "where": where, "files": files}
    table = pa.table(columns).replace_schema_metadata({METADATA_KEY: json.dumps(description).encode()})
    write_files([(path, lambda handle: pq.write_table(table, handle.buffer))])


def count_increment(source, column: str = "y", scheduler: str | None = None, by: tuple[str, ...] = (),
                    where: str | None = None, counts: str | Path | None = None, manifest: bool = True):
    """Saved ``counts`` (if given) plus a count of ``source``'s files that their manifest does not hold.

    ``source``: a :class:`designer.aggregate.sources.ReportSource`, or None to estimate from the saved
    counts alone. Returns a :class:`designer.aggregate.counting.ReportCounts` whose ``files`` is the
    manifest of everything now counted (``manifest = False`` and no ``counts``: a plain count,
    nothing hashed).
    """
    from dataclasses import replace

    from designer.aggregate.counting import ReportCounts, count_source, merge_counts, unpack
    from designer.aggregate.filters import check_where

    if source is not None and counts is None and not manifest:
        return count_source(source, column, scheduler, by, where)
    if source is not None and source.access is not None:
        raise ValueError(f"--reports {source.spec}: --counts and --save-counts need local report files "
                         "(the manifest records each file's size, time and SHA-256)")
    saved = read_counts(counts, column, by, check_where(where) if where else None) if counts is not None else None
    before = saved.rows if saved else {}
    manifest_before = saved.files if saved else {}
    if source is None:
        return ReportCounts(tuple(by), *unpack(before), "saved counts", 0.0, tuple(manifest_before.values()))
    todo = new_files(source.files, manifest_before)
    with ThreadPoolExecutor(1) as pool:  # hashing (GIL released) overlaps the count
        entries = pool.map(file_entry, todo)
        fresh = count_source(source, column, scheduler, by, where, files=tuple(todo))
        entries = list(entries)
    rows = merge_counts([before, fresh.rows()])
    keys, values, totals = unpack(rows)
    return replace(fresh, keys=keys, values=values, counts=totals, files=(*manifest_before.values(), *entries))
