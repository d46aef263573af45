"""The incremental Parquet store of a sweep: a directory of part files that heals itself.

Each batch of finished cells becomes one part file ``part-<ns>-<pid>.parquet``
written to a hidden temporary name in the same directory and renamed into place
(atomic on POSIX): a reader or a resumed sweep never sees half a part. A cell is
done when its hash is in some part; when a hash is in several parts (a retried
cell), the newest part's row wins (part names sort by time).

Healing:

* a part that cannot be read (empty, truncated, not Parquet, no ``hash`` column) is
  moved to ``_quarantine/`` with a one-line warning, and its cells count as not
  stored, so the next run recomputes them; the leading underscore keeps the folder
  out of Parquet dataset readers (pyarrow and pandas skip ``_``-prefixed names);
* a part whose columns cannot take the store's types (a text ``objective``) is
  quarantined the same way, naming the part;
* :meth:`ResultStore.compact` merges the small parts into one (the merged part is
  written and renamed into place first, then the merged parts are removed: a crash
  in between leaves duplicate rows, which the newest-row rule makes harmless);
* a hidden staging file ``.part-....parquet.HOST.tmp`` left by a run that was killed
  (``kill -9`` while writing a part or compacting) is removed when the store is next
  opened: at once when its writer's process (on this host) has ended, after
  :data:`STALE_STAGING_SECONDS` untouched when it was written on another host.

The directory is a Parquet dataset (``pandas.read_parquet(path)``, DuckDB's
``read_parquet('path/part-*.parquet')``); parts written before a column existed read
that column as null.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from designer.errors import one_line
from designer.sweep.runners import COLUMNS

#: Parts smaller than this (bytes) are merged by :meth:`ResultStore.compact`.
SMALL_PART_BYTES = 16 * 2**20
#: Folder (inside the store) receiving unreadable parts.
QUARANTINE = "_quarantine"
#: Seconds after which a staging file written on another host counts as abandoned.
STALE_STAGING_SECONDS = 24 * 3600
#: Staging file names: ``.part-<ns>-<pid>.parquet.<host>.tmp``.
_STAGING = re.compile(r"^\.part-\d+-(?P<pid>\d+)\.parquet\.(?P<host>.+)\.tmp$")


def _warn(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")


class ResultStore:
    """A directory of Parquet parts holding one row per finished cell.

    Parameters
    ----------
    path : str or Path
        The results directory (created when missing). An existing regular file
        is refused (``ValueError``).
    warn : callable(str), optional
        Receives the one-line warning of each quarantined part (default: stderr).
    """

    def __init__(self, path: str | Path, warn: Callable[[str], None] = _warn):
        self.path = Path(path)
        self.warn = warn
        if self.path.exists() and not self.path.is_dir():
            raise ValueError(f"{self.path} exists and is not a results directory (a sweep stores a folder of parts)")
        self._remove_abandoned_staging()

    def parts(self) -> list[Path]:
        """The part files, oldest first."""
        return sorted(self.path.glob("part-*.parquet")) if self.path.is_dir() else []

    def latest(self, columns: Iterable[str] | None = None):
        """The newest row of every stored hash (pandas DataFrame, ``columns`` only), in part order.

        Unreadable parts are quarantined on the way (see the module docstring).
        """
        import pandas as pd

        names = list(COLUMNS) if columns is None else ["hash", *[c for c in columns if c != "hash"]]
        tables = [table for _, table in self._tables(names)]
        if not tables:
            return pd.DataFrame({name: pd.Series(dtype=object) for name in names})
        frame = pd.concat([table.to_pandas() for table in tables], ignore_index=True)
        return frame.drop_duplicates("hash", keep="last").reset_index(drop=True)

    def stored_hashes(self) -> set[str]:
        """Hashes of every cell already stored."""
        return set(self.latest(["hash"])["hash"])

    def failed_hashes(self) -> set[str]:
        """Hashes whose newest row records an error (a failure or a timeout)."""
        frame = self.latest(["error"])
        return set(frame.loc[frame["error"].notna(), "hash"])

    def append(self, rows: list[dict]) -> Path | None:
        """Write ``rows`` as one new part (atomically); None when there is nothing to write."""
        if not rows:
            return None
        import pyarrow as pa

        # column by column: pyarrow's Table.from_pylist costs about 150 us a row here, this 1 us
        schema = _schema()
        columns = [pa.array([row.get(name) for row in rows], type=schema.field(name).type) for name in COLUMNS]
        return self._write(pa.Table.from_arrays(columns, schema=schema))

    def read(self, hashes: set[str] | None = None):
        """The newest row of every stored cell (of ``hashes`` only, when given), sorted by hash."""
        frame = self.latest()
        if hashes is not None:
            frame = frame[frame["hash"].isin(hashes)]
        return frame.sort_values("hash").reset_index(drop=True)

    def compact(self) -> tuple[int, int]:
        """Merge every small part into one; returns (parts merged, rows kept).

        The merged part holds the newest row of each hash; it is renamed into place
        before the merged parts are removed, so a crash at any point loses no row.
        Nothing happens with fewer than two small parts.
        """
        import pyarrow as pa

        small = [part for part in self.parts() if part.stat().st_size < SMALL_PART_BYTES]
        if len(small) < 2:
            return 0, 0
        tables = self._tables(list(COLUMNS), small)
        if len(tables) < 2:
            return 0, 0
        merged = pa.concat_tables([table for _, table in tables]).to_pandas()
        merged = merged.drop_duplicates("hash", keep="last").sort_values("hash")
        self._write(pa.Table.from_pandas(merged, schema=_schema(), preserve_index=False))
        for part, _ in tables:
            part.unlink(missing_ok=True)
        return len(tables), len(merged)

    # ------------------------------------------------------------------ internals
    def _tables(self, columns: list[str], parts: list[Path] | None = None) -> list:
        """(part, table with ``columns``) of every readable part, in order; the others quarantined."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        tables = []
        for part in self.parts() if parts is None else parts:
            try:
                schema = pq.read_schema(part)
                if "hash" not in schema.names:
                    raise ValueError("no 'hash' column")
                present = [name for name in columns if name in schema.names]
                table = pq.read_table(part, columns=present)
                for name in columns:  # a part written before a column existed reads it as null
                    if name not in table.column_names:
                        table = table.append_column(name, pa.nulls(len(table), pa.type_for_alias(COLUMNS[name])))
                table = table.select(columns).cast(_schema(columns))  # a text objective: refused here
            except FileNotFoundError:  # removed meanwhile by another run's compaction
                continue
            except (OSError, ValueError, pa.ArrowException) as error:
                self._quarantine(part, error)
                continue
            tables.append((part, table))
        return tables

    def _remove_abandoned_staging(self) -> None:
        """Remove staging files whose writer was killed (see the module docstring), with a warning each."""
        if not self.path.is_dir():
            return
        host = socket.gethostname()
        for staging in self.path.glob(".part-*.tmp"):
            match = _STAGING.match(staging.name)
            if match is None:
                continue
            try:
                reason = _abandoned(staging, match, host)
                if reason is None:
                    continue
                staging.unlink()
            except FileNotFoundError:  # renamed into place or removed meanwhile
                continue
            except OSError as error:
                self.warn(f"{staging}: a part left half-written cannot be removed ({error.strerror or error}); "
                          "delete it")
                continue
            self.warn(f"{staging}: removed a part left half-written by a run that was killed ({reason})")

    def _quarantine(self, part: Path, error: BaseException) -> None:
        folder = self.path / QUARANTINE
        target = folder / part.name
        try:
            folder.mkdir(exist_ok=True)
            os.replace(part, target)
        except OSError as move_error:
            raise ValueError(f"{part}: unreadable part ({one_line(error)}) and it cannot be moved to {folder} "
                             f"({move_error.strerror or move_error}); move or delete it") from None
        self.warn(f"{part}: unreadable part ({one_line(error)}); moved to {target}, its cells will be recomputed")

    def _write(self, table) -> Path:
        import pyarrow.parquet as pq

        self.path.mkdir(parents=True, exist_ok=True)
        final = self.path / f"part-{time.time_ns():020d}-{os.getpid()}.parquet"
        staging = self.path / f".{final.name}.{socket.gethostname()}.tmp"
        try:
            pq.write_table(table, staging)
            os.replace(staging, final)
        finally:
            staging.unlink(missing_ok=True)
        return final


def _abandoned(staging: Path, match: re.Match, host: str) -> str | None:
    """Why the staging file is abandoned, or None while its writer may still be writing it."""
    if match["host"] == host:
        return None if _process_alive(int(match["pid"])) else f"its writer, process {match['pid']}, has ended"
    if time.time() - staging.stat().st_mtime < STALE_STAGING_SECONDS:
        return None
    return f"written on {match['host']} and untouched for {STALE_STAGING_SECONDS // 3600} hours"


def _process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (another user's process counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _schema(columns: Iterable[str] | None = None):
    import pyarrow as pa

    return pa.schema([(name, pa.type_for_alias(COLUMNS[name])) for name in (COLUMNS if columns is None else columns)])
