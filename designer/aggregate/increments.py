"""Increments: count each report file once, whatever path reaches it.

A report file is identified by its **content**: the SHA-256 and size of its bytes, plus the Hive
partition segments of the path it is read through (``day=01/``: DuckDB reads them as columns, so
they are part of its reports). The same file reached through a symbolic link, a hard link, a
copied or moved folder, or renamed (log rotation) is the same file; it is counted once, and the
others are listed as skipped (:attr:`~designer.aggregate.counting.ReportCounts.same_content`).

``--save-counts`` writes, with the counts (:mod:`designer.aggregate.counts_file`), the
**manifest**: one entry per counted content, ``{sha256, size, partitions, paths}``, ``paths``
mapping each real path (links resolved) where it was seen to its modification time (ns).
``--counts`` reads them back, and a listed file is

* skipped without reading when its real path is in the manifest with the same size and time
  (as make and rsync decide);
* otherwise hashed (before the count only when its size matches a counted file, or its size and
  its first and last 64 KiB match another listed file; any other file is new, and is hashed while
  it is counted) and skipped when
  its content was counted (touched, copied, moved, renamed, linked);
* **refused** (one line) when it sits at a path whose counted content is now nowhere in the
  listing (changed in place, or appended to): its old reports are inside the saved counts and
  cannot be taken out, so the only correct answer is a full recount. When the old content is
  still listed under another name (rotation: ``app.csv`` renamed ``app.1.csv``, a new ``app.csv``
  written), the path simply holds a new file.

Files in the manifest that are gone from disk stay counted. A plain count (no ``--counts``, no
``--save-counts``) skips copies in the same way, hashing only files of equal sizes and ends.

**Concurrent writers**: a run with ``--save-counts FILE`` holds an exclusive lock
(``fcntl.flock`` on ``.FILE.lock`` next to it, left in place) from reading ``--counts`` to
renaming the new counts into place, so two runs onto one counts file take turns and neither
increment is lost. The lock is advisory and local: every writer must be ldp-designer, on a file
system where ``flock`` works between the writers (local disks; not every network file system).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from designer.io.text import file_sha256

#: Bytes read at each end of equal-size files to tell them apart before hashing them whole.
ENDS = 1 << 16


@dataclass
class Plan:
    """What a run counts: ``todo`` (new content), ``hash_later`` (of those, the ones hashed while
    counted), the manifest ``entries`` by identity, and ``same_content`` ``(path, counted path)``."""

    todo: list[str] = field(default_factory=list)
    hash_later: list[str] = field(default_factory=list)
    entries: dict = field(default_factory=dict)
    same_content: list[tuple[str, str]] = field(default_factory=list)


def partition_segments(path: str) -> str:
    """The Hive partition segments (``key=value``) of a path's folders, joined by ``/``."""
    return "/".join(part for part in path.replace("\\", "/").split("/")[:-1] if "=" in part)


def identity(entry: dict) -> tuple[str, int, str]:
    """A manifest entry's identity: SHA-256, size, partition segments."""
    return entry["sha256"], entry["size"], entry["partitions"]


def plan_increment(files, manifest: tuple[dict, ...] = (), hash_all: bool = True) -> Plan:
    """Which of ``files`` to count, given the ``manifest`` of counted files (module docstring).

    ``hash_all=False`` (a plain count, nothing saved): files of a size no other file has are
    neither hashed nor entered. Raises ``ValueError`` (one line) for a counted path whose content
    changed and is nowhere else in the listing.
    """
    plan = Plan(entries={identity(entry): {**entry, "paths": dict(entry["paths"])} for entry in manifest})
    at_path = {path: key for key, entry in plan.entries.items() for path in entry["paths"]}
    listed = _distinct_files(files, plan)
    present: set = set()
    rest = []
    for path, real, status in listed:
        key = at_path.get(real)
        if key is not None and plan.entries[key]["paths"][real] == status.st_mtime_ns and key[1] == status.st_size:
            present.add(key)  # unchanged since counted: not read
        else:
            rest.append((path, real, status))
    counted_sizes = {key[1] for key in plan.entries}
    sizes = Counter(status.st_size for _, _, status in rest)
    alike = [item for item in rest if item[2].st_size not in counted_sizes and sizes[item[2].st_size] > 1]
    with ThreadPoolExecutor(2) as pool:  # hashlib releases the GIL
        ends = dict(zip((item[1] for item in alike), pool.map(_ends_digest, [item[1] for item in alike])))
    twins = Counter((item[2].st_size, ends[item[1]]) for item in alike)
    collide = [item for item in rest if item[2].st_size in counted_sizes or
               (item[1] in ends and twins[item[2].st_size, ends[item[1]]] > 1)]
    hashed_now = {item[1] for item in collide}
    unique = [item for item in rest if item[1] not in hashed_now]
    with ThreadPoolExecutor(2) as pool:
        digests = list(pool.map(file_sha256, [real for _, real, _ in collide]))
    keys = [(digest, status.st_size, partition_segments(path)) for digest, (path, _, status) in zip(digests, collide)]
    present.update(keys)
    for (path, real, status), key in zip(collide, keys):
        _check_unchanged(real, status, at_path.get(real), key, present)
        entry = plan.entries.get(key)
        if entry is None:
            plan.entries[key] = {"sha256": key[0], "size": key[1], "partitions": key[2],
                                 "paths": {real: status.st_mtime_ns}}
            plan.todo.append(path)
            continue
        if real not in entry["paths"]:
            plan.same_content.append((path, next(iter(entry["paths"]))))
        entry["paths"][real] = status.st_mtime_ns
    for path, real, status in unique:  # no counted file has its size, no listed file its size and ends: new content
        _check_unchanged(real, status, at_path.get(real), None, present)
        plan.todo.append(path)
        if hash_all:
            plan.hash_later.append(path)
    return plan


def _ends_digest(path: str) -> str:
    """SHA-256 of a file's first and last :data:`ENDS` bytes: files of one size that differ there differ."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        digest.update(handle.read(ENDS))
        handle.seek(max(0, os.fstat(handle.fileno()).st_size - ENDS))
        digest.update(handle.read(ENDS))
    return digest.hexdigest()


def _check_unchanged(real: str, status: os.stat_result, before: tuple | None, key: tuple | None, present: set) -> None:
    """Refuse a counted path whose content changed (``key``, None: unknown) when the counted
    content ``before`` is nowhere in the listing (``present``): changed in place, not rotated."""
    if before is None or before == key or before in present:
        return
    raise ValueError(f"--counts: {real} changed since it was counted (size {before[1]} -> {status.st_size} bytes, "
                     "new SHA-256), and its counted content is nowhere else in --reports; its old reports are in the "
                     "saved counts and cannot be removed: recount every file without --counts")


def _distinct_files(files, plan: Plan) -> list[tuple[str, str, os.stat_result]]:
    """``(path, real path, stat)`` of the files, one per inode (a link and its target are one file).

    Of several paths to one inode the one with the most partition segments is kept (it carries
    the most columns), the others go to ``plan.same_content``.
    """
    by_inode: dict[tuple[int, int], list[tuple[str, str, os.stat_result]]] = {}
    for path in files:
        real = os.path.realpath(path)
        try:
            status = os.stat(real)
        except OSError as error:
            raise ValueError(f"--reports: cannot read {path} ({error.strerror or error})") from None
        by_inode.setdefault((status.st_dev, status.st_ino), []).append((path, real, status))
    distinct = []
    for paths in by_inode.values():
        paths.sort(key=lambda item: (-partition_segments(item[0]).count("=") - (item[0] == item[1]), item[0]))
        distinct.append(paths[0])
        plan.same_content.extend((path, paths[0][0]) for path, _, _ in paths[1:])
    return sorted(distinct, key=lambda item: item[0])


def entry_of(path: str) -> tuple[tuple, dict]:
    """The identity and manifest entry of a file (hashed now)."""
    real = os.path.realpath(path)
    status = os.stat(real)
    entry = {"sha256": file_sha256(real), "size": status.st_size, "partitions": partition_segments(path),
             "paths": {real: status.st_mtime_ns}}
    return identity(entry), entry


def count_increment(source, column: str = "y", scheduler: str | None = None, by=(), where: str | None = None,
                    saved=None, manifest: bool = True):
    """Saved counts (``saved``, a :class:`~designer.aggregate.counts_file.SavedCounts`) plus a count of
    ``source``'s files whose content they do not hold.

    ``source``: a :class:`designer.aggregate.sources.ReportSource`, or None to use the saved counts
    alone. With ``saved``, the new files are counted with the saved groups and filter (so that the
    sum can be saved again; :mod:`designer.aggregate.rollup` regroups it for the estimate). Returns
    a :class:`designer.aggregate.counting.ReportCounts` whose ``files`` is the manifest of
    everything now counted (empty when ``manifest`` is False: then new files are hashed only to
    tell copies apart, and no manifest is built).

    Raises
    ------
    ValueError
        One line: remote reports with a manifest, a plain table with ``--reports``, a counted file
        that changed (:func:`plan_increment`).
    """
    from designer.aggregate.counting import ReportCounts, count_source, merge_counts, unpack

    if saved is not None:
        by, where = saved.by, saved.where
    before = saved.rows if saved else {}
    if source is None:
        return ReportCounts(tuple(group.name for group in by), *unpack(before), "saved counts", 0.0,
                            saved.files or () if saved else ())
    if saved is not None and saved.files is None:
        raise ValueError(f"--counts {saved.path}: a plain count table has no manifest of the files it counted, so "
                         "adding --reports could count some twice; estimate from it alone, or count every report "
                         "file with --save-counts")
    keep = manifest or saved is not None  # a manifest is read or written: local files only
    if source.access is not None:
        if keep:
            raise ValueError(f"--reports {source.spec}: --counts and --save-counts need local report files "
                             "(the manifest records each file's size, time and SHA-256)")
        return count_source(source, column, scheduler, by, where)
    plan = plan_increment(source.files, saved.files if saved else (), hash_all=manifest)
    with ThreadPoolExecutor(1) as pool:  # hashing (GIL released) overlaps the count
        hashed = pool.map(entry_of, plan.hash_later)
        fresh = count_source(source, column, scheduler, by, where, files=tuple(plan.todo))
        plan.entries.update(hashed)
    rows = merge_counts([before, fresh.rows()])
    keys, values, totals = unpack(rows)
    files = tuple(plan.entries.values()) if manifest else ()
    return replace(fresh, keys=keys, values=values, counts=totals, files=files, same_content=tuple(plan.same_content))


def check_counts_outside(files, paths) -> None:
    """Refuse a counts file that is also one of the report ``files`` (the next run would count it as reports)."""
    counted = {os.path.realpath(file) for file in files}
    for path in paths:
        if path is not None and os.path.realpath(path) in counted:
            raise ValueError(f"{path}: this counts file is among the --reports files; keep it outside them "
                             "(e.g. next to the reports folder, or use a glob that does not match it)")


@contextmanager
def counts_lock(path: str | Path | None, waiting: Callable[[str], None] | None = None):
    """Hold the exclusive lock of the counts file ``path`` (module docstring); nothing when ``path`` is None.

    ``waiting`` is called with a line when another run holds the lock (before blocking on it).
    """
    if path is None:
        yield
        return
    import fcntl

    real = Path(os.path.realpath(path))
    lock = real.with_name(f".{real.name}.lock")
    try:
        descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        raise ValueError(f"--save-counts {path}: cannot create its lock file {lock} "
                         f"({error.strerror or error})") from None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                waiting(f"waiting for another run writing {path} (lock {lock})")
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def gather_counts(source, column: str, scheduler: str | None, by, where: str | None, counts: str | Path | None = None,
                  save: str | Path | None = None, private_key=None, public_key: bytes | None = None,
                  waiting: Callable[[str], None] | None = None):
    """The counts an estimate uses: saved ``counts`` (checked) plus the new files of ``source``,
    saved to ``save`` (signed with ``private_key``) under its lock, then rolled up to ``by`` and ``where``.

    ``by``: :class:`~designer.aggregate.filters.GroupColumn` groups; ``where``: the ``--where`` text. Returns
    ``(counts, saved)``: the :class:`~designer.aggregate.counting.ReportCounts` to estimate from and
    the :class:`~designer.aggregate.counts_file.SavedCounts` read (None without ``counts``). A roll-up
    that cannot bind, or a filter that drops the saved one, is refused before anything is counted.

    Raises
    ------
    ValueError
        One line (bad input); :class:`~designer.aggregate.counts_file.CountsTampered` for a digest
        or signature that does not match.
    """
    from designer.aggregate.counts_file import read_counts, write_counts
    from designer.aggregate.filters import check_where
    from designer.aggregate.rollup import extra_filter, roll_up

    where_sql = check_where(where) if where else None
    with counts_lock(save, waiting):
        saved = read_counts(counts, column, public_key) if counts is not None else None
        if saved is None:
            counted = count_increment(source, column, scheduler, by, where, None, manifest=save is not None)
            if save is not None:
                write_counts(save, counted.rows(), column, by, where_sql, list(counted.files), private_key)
            return counted, None
        if save is not None and saved.files is None:
            raise ValueError(f"--counts {counts}: a plain count table has no manifest of the files it counted, so "
                             "saving it as ldp-designer counts would let a later run count them twice")
        extra = extra_filter(saved.where, where_sql)
        alone = count_increment(None, column, by=saved.by, saved=saved)
        roll_up(alone, saved.by, by, extra)  # --by and --where bind over the saved groups: checked before counting
        counted = count_increment(source, column, scheduler, saved=saved, manifest=save is not None)
        if save is not None:
            write_counts(save, counted.rows(), column, saved.by, saved.where, list(counted.files), private_key)
    return roll_up(counted, saved.by, by, extra), saved
