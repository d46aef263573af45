"""The incremental Parquet store of a sweep: a directory of small part files.

Each batch of finished cells becomes one part file ``part-<ns>-<pid>.parquet``
written to a hidden temporary name in the same directory and renamed into place
(atomic on POSIX): a reader or a resumed sweep never sees half a part. A cell is
done when its hash is in some part; :meth:`ResultStore.stored_hashes` is all a
resumed sweep needs. The directory is a Parquet dataset
(``pandas.read_parquet(path)``, ``duckdb``'s ``read_parquet('path/*.parquet')``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from designer.sweep.runners import COLUMNS


class ResultStore:
    """A directory of Parquet parts holding one row per finished cell.

    Parameters
    ----------
    path : str or Path
        The results directory (created when missing). An existing regular file
        is refused (``ValueError``).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise ValueError(f"{self.path} exists and is not a results directory (a sweep stores a folder of parts)")

    def parts(self) -> list[Path]:
        """The part files, oldest first."""
        return sorted(self.path.glob("part-*.parquet")) if self.path.is_dir() else []

    def stored_hashes(self) -> set[str]:
        """Hashes of every cell already stored."""
        import pyarrow.parquet as pq

        hashes: set[str] = set()
        for part in self.parts():
            hashes.update(pq.read_table(part, columns=["hash"]).column("hash").to_pylist())
        return hashes

    def append(self, rows: list[dict]) -> Path | None:
        """Write ``rows`` as one new part (atomically); None when there is nothing to write."""
        if not rows:
            return None
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = pa.schema([(name, pa.type_for_alias(kind)) for name, kind in COLUMNS.items()])
        table = pa.Table.from_pylist([{name: row.get(name) for name in COLUMNS} for row in rows], schema=schema)
        self.path.mkdir(parents=True, exist_ok=True)
        final = self.path / f"part-{time.time_ns():020d}-{os.getpid()}.parquet"
        staging = self.path / f".{final.name}.tmp"
        try:
            pq.write_table(table, staging)
            os.replace(staging, final)
        finally:
            staging.unlink(missing_ok=True)
        return final

    def read(self):
        """Every stored row as a pandas DataFrame (the last row of a hash wins), sorted by hash."""
        import pandas as pd
        import pyarrow.parquet as pq

        parts = self.parts()
        if not parts:
            return pd.DataFrame({name: pd.Series(dtype=object) for name in COLUMNS})
        frame = pd.concat([pq.read_table(part).to_pandas() for part in parts], ignore_index=True)
        return frame.drop_duplicates("hash", keep="last").sort_values("hash").reset_index(drop=True)
