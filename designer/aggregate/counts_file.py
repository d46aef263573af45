"""Counts files: the grouped counts ``estimate --save-counts`` writes, checked when ``--counts`` reads them.

**Layout** (format 2). A Parquet table with one row per group and distinct report value: the
group columns ``group_0 .. group_{g-1}`` (their names and SQL in the description), ``value``
(the report as text, NULL for NULL) and ``count`` (int64); and, under the Parquet metadata key
``ldp-designer-counts``, a JSON description: ``format``, ``column``, ``by`` (each group's
``name``, ``sql`` and ``column``), ``where`` (the checked SQL), ``files`` (the manifest of the
counted files, :mod:`designer.aggregate.increments`) and ``digest``:
the SHA-256 of the canonical JSON of the rest of the description and of every row (sorted).
With ``--sign KEY`` the digest's bytes are also signed with Ed25519 and ``signature`` holds
``{"algorithm": "Ed25519", "public_key": base64, "value": base64}``.

**Checks on reading**, in the order of ``verify-package``:

1. structure (bad input, exit 2, one line naming the file and what is wrong): the description
   is JSON of the expected members and types; the columns are the groups, ``value`` and
   ``count``; every count is an integer >= 0; no two rows hold the same group and value; every
   manifest entry is a SHA-256, a size, partition segments and its paths;
2. the digest (:class:`CountsTampered`, exit 1): any other change (a count raised, counts
   multiplied, a manifest entry removed, rows added) breaks it;
3. with ``--public-key KEY.pub``: the signature by that key over the same bytes (exit 1 when
   missing, by another key, or not matching).

The digest alone stops accidental edits and every tool that does not know the format; whoever
knows it can recompute it, so only a signature checked with ``--public-key`` stops a forger.

**A plain table** from any engine (Spark, BigQuery, Polars, DuckDB, pandas) is accepted too:
a Parquet or CSV file (or a folder or glob of them, read as ``--reports`` is) holding the report
column (``--column``), one count column named as the engines name it (:data:`COUNT_NAMES`) and
any number of group columns. It has no manifest, so nobody knows which report files it
counted: it can be estimated from and rolled up, never incremented (``--reports``) or saved
again (``--save-counts``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from pathlib import Path

from designer.aggregate.filters import GroupColumn, column_group
from designer.errors import one_line

#: Key of the counts' description in the Parquet metadata.
METADATA_KEY = b"ldp-designer-counts"
#: Version of the counts file layout (1: no digest, keyed by path; refused).
FORMAT = 2
#: Names a count column of a plain table may have: ``count`` (pandas ``value_counts``, Polars,
#: Spark ``groupBy().count()``), ``n``, ``len`` (Polars ``pl.len()``), ``count(1)`` and ``count(*)``
#: (Spark SQL), ``count_star()`` (DuckDB), ``f0_`` (BigQuery, an unnamed ``COUNT(*)``).
COUNT_NAMES = ("count", "n", "len", "count(1)", "count(*)", "count_star()", "f0_")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_DESCRIPTION = {"format": int, "column": str, "by": list, "where": (str, type(None)), "files": list, "digest": str}


class CountsTampered(ValueError):
    """A counts file whose digest or signature does not match its content (exit code 1)."""


@dataclass(frozen=True)
class SavedCounts:
    """Counts read from ``--counts``.

    ``rows`` is ``{(group key, value): count}``; ``files`` the manifest entries, or None for a
    plain table (no manifest); ``checked`` says how the content was checked.
    """

    path: str
    column: str
    by: tuple[GroupColumn, ...]
    where: str | None
    files: tuple[dict, ...] | None
    rows: dict
    checked: str


def read_counts(path: str | Path, column: str, public_key: bytes | None = None) -> SavedCounts:
    """A counts file of :func:`write_counts` (checked: module docstring), or a plain count table.

    Raises
    ------
    ValueError
        One line: unreadable, malformed, another report column, a plain table with ``public_key``.
    CountsTampered
        The digest or the signature does not match.
    """
    import pyarrow.parquet as pq

    where = f"--counts {path}"
    metadata = None
    if Path(path).is_file():
        try:
            metadata = (pq.read_schema(path).metadata or {}).get(METADATA_KEY)
        except (OSError, ValueError):  # not Parquet: a plain CSV table, or no table at all
            metadata = None
    if metadata is None:
        if public_key is not None:
            raise ValueError(f"{where}: a plain count table carries no signature to check with --public-key")
        return read_plain_counts(path, column)
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as error:
        raise ValueError(f"{where}: cannot read it ({one_line(error)})") from None
    description = _description(metadata, where)
    if description["column"] != column:
        raise ValueError(f"{where}: counts of the column {description['column']}; this run asks for --column {column}")
    groups = _groups(description["by"], where)
    rows = _rows(table, len(groups), where)
    files = tuple(_manifest_entry(entry, index, where) for index, entry in enumerate(description["files"]))
    expected = counts_digest(description, rows)
    if not hmac.compare_digest(expected, description["digest"]):
        raise CountsTampered(f"{where}: its digest does not match its counts and manifest (changed after "
                             "ldp-designer wrote it); recount without --counts")
    checked = "sha256 digest"
    if public_key is not None:
        checked = _verify_signature(description, public_key, where)
    return SavedCounts(str(path), column, groups, description["where"], files, rows, checked)


def read_plain_counts(spec: str | Path, column: str) -> SavedCounts:
    """A plain ``(group..., value, count)`` table from any engine (module docstring); checked in one line each."""
    from designer.aggregate.counting import CountError, _run, report_text
    from designer.aggregate.filters import quote_identifier
    from designer.aggregate.sources import resolve_reports

    where = f"--counts {spec}"
    try:
        source = resolve_reports(str(spec))
    except ValueError as error:
        raise ValueError(f"{where}: {str(error).removeprefix(f'--reports {spec}: ')}") from None
    try:
        described = _run(source, f"DESCRIBE SELECT * FROM {source.reader()}", [list(source.files)])
    except CountError as error:
        raise ValueError(f"{where}: cannot read it ({str(error).split(': ', 1)[1]})") from None
    types = {name: kind for name, kind, *_ in described}
    if column not in types:
        raise ValueError(f"{where}: not a counts file of ldp-designer, nor a count table with the report column "
                         f"{column} (columns: {', '.join(types)}); name it with --column")
    counters = [name for name in types if name.lower() in COUNT_NAMES and name != column]
    if len(counters) != 1:
        raise ValueError(f"{where}: a count table needs exactly one count column named {', '.join(COUNT_NAMES)} "
                         f"(columns: {', '.join(types)})")
    counter = counters[0]
    if not re.fullmatch(r"U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?", types[counter]):
        raise ValueError(f"{where}: the count column {counter} holds {types[counter]}, not integers")
    groups = tuple(column_group(name) for name in types if name not in (column, counter))
    selected = ", ".join(quote_identifier(name) for name in (*(group.name for group in groups), column, counter))
    found = _run(source, f"SELECT {selected} FROM {source.reader()}", [list(source.files)])
    rows: dict = {}
    first: dict = {}
    for number, (*key, value, count) in enumerate(found, start=1):
        _check_count(count, number, where)
        index = (tuple(key), report_text(value))
        if index in rows:
            raise ValueError(f"{where}: row {number} repeats the group and value of row {first[index]} "
                             f"({_describe(index)}); a count table has one row per group and value")
        rows[index], first[index] = int(count), number
    return SavedCounts(str(spec), column, groups, None, None, rows,
                       "plain table (no manifest, no digest: it cannot be incremented)")


def write_counts(path: str | Path, rows: dict, column: str, by: tuple[GroupColumn, ...], where: str | None,
                 files: list[dict], private_key=None) -> None:
    """Write ``rows`` (``{(key, value): count}``), the manifest ``files``, the digest and (with
    ``private_key``, an Ed25519 key) the signature, atomically (temporary file, then rename)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from designer.io.writing import write_files

    ordered = sorted(rows, key=_row_order)
    columns = {f"group_{i}": arrow_column([key[i] for key, _ in ordered]) for i in range(len(by))}
    columns["value"] = pa.array([value for _, value in ordered], type=pa.string())
    columns["count"] = pa.array([rows[index] for index in ordered], type=pa.int64())
    table = pa.table(columns)
    written = _rows(table, len(by), str(path))  # the rows as they read back (types of Parquet)
    description = {"format": FORMAT, "column": column,
                   "by": [{"name": group.name, "sql": group.sql, "column": group.column} for group in by],
                   "where": where, "files": files}
    description["digest"] = counts_digest(description, written)
    if private_key is not None:
        description["signature"] = _signature(private_key, description)
    table = table.replace_schema_metadata({METADATA_KEY: json.dumps(description).encode()})
    write_files([(path, lambda handle: pq.write_table(table, handle.buffer))])


def counts_digest(description: dict, rows: dict) -> str:
    """SHA-256 (hex) of the canonical JSON of the description (without ``digest`` and ``signature``) and the rows."""
    return hashlib.sha256(_canonical(description, rows)).hexdigest()


def _canonical(description: dict, rows: dict) -> bytes:
    from designer.aggregate.counting import _json_value

    body = {key: value for key, value in description.items() if key not in ("digest", "signature")}
    body["rows"] = sorted([[_json_value(part) for part in key], value, count] for (key, value), count in rows.items())
    return json.dumps(body, sort_keys=True, separators=(",", ":"), default=str).encode()


def _signature(private_key, description: dict) -> dict:
    from cryptography.hazmat.primitives import serialization

    public = private_key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return {"algorithm": "Ed25519", "public_key": base64.b64encode(public).decode("ascii"),
            "value": base64.b64encode(private_key.sign(bytes.fromhex(description["digest"]))).decode("ascii")}


def _verify_signature(description: dict, public_key: bytes, where: str) -> str:
    """``"Ed25519 signature by <fingerprint>"``, or :class:`CountsTampered`."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from designer.deploy.sampler import PackageError, decode_base64, key_fingerprint

    signature = description.get("signature")
    trusted = key_fingerprint(public_key)
    if signature is None:
        raise CountsTampered(f"{where}: not signed, but --public-key names the trusted key {trusted}")
    if not isinstance(signature, dict) or set(signature) != {"algorithm", "public_key", "value"} \
            or signature["algorithm"] != "Ed25519":
        raise ValueError(f"{where}: signature must be {{algorithm: Ed25519, public_key, value}}")
    try:
        signer = decode_base64(signature["public_key"], 32, "signature.public_key")
        value = decode_base64(signature["value"], 64, "signature.value")
    except PackageError as error:
        raise ValueError(f"{where}: {error}") from None
    if signer != public_key:
        raise CountsTampered(f"{where}: signed by the key {key_fingerprint(signer)}, not by the trusted key {trusted}")
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(value, bytes.fromhex(description["digest"]))
    except InvalidSignature:
        raise CountsTampered(f"{where}: the Ed25519 signature does not match the counts (changed after "
                             "signing, or forged)") from None
    return f"Ed25519 signature by {trusted}"


def _description(metadata: bytes, where: str) -> dict:
    """The JSON description, structure checked (exit 2 for anything malformed)."""
    try:
        description = json.loads(metadata)
    except (ValueError, UnicodeDecodeError):
        raise ValueError(f"{where}: its description is not JSON") from None
    if not isinstance(description, dict) or not isinstance(description.get("format"), int):
        raise ValueError(f"{where}: its description is not an object with a format")
    if description["format"] != FORMAT:
        raise ValueError(f"{where}: counts format {description['format']} (this version reads format {FORMAT}, "
                         "with a digest and content-addressed files); recount with --save-counts")
    for member, kind in _DESCRIPTION.items():
        if member not in description or not isinstance(description[member], kind) or \
                isinstance(description[member], bool):
            raise ValueError(f"{where}: its description lacks {member}, or holds it with the wrong type")
    extra = set(description) - set(_DESCRIPTION) - {"signature"}
    if extra:
        raise ValueError(f"{where}: its description has unknown members ({', '.join(sorted(extra))})")
    if not _HEX64.fullmatch(description["digest"]):
        raise ValueError(f"{where}: its digest is not 64 lower-case hex digits")
    return description


def _groups(entries: list, where: str) -> tuple[GroupColumn, ...]:
    groups = []
    for entry in entries:
        if not isinstance(entry, dict) or set(entry) != {"name", "sql", "column"} or \
                not all(isinstance(entry[key], str) for key in ("name", "sql")) or \
                not isinstance(entry["column"], (str, type(None))):
            raise ValueError(f"{where}: a group of its description is not {{name, sql, column}}")
        groups.append(GroupColumn(entry["name"], entry["sql"], entry["column"]))
    return tuple(groups)


def _rows(table, groups: int, where: str) -> dict:
    """``{(key, value): count}`` of a counts table, each row checked (count >= 0, no repeated group and value)."""
    import pyarrow as pa

    names = [f"group_{i}" for i in range(groups)] + ["value", "count"]
    if table.column_names != names:
        raise ValueError(f"{where}: its columns are {', '.join(table.column_names)}, expected {', '.join(names)}")
    if not pa.types.is_integer(table.schema.field("count").type) or not (
            pa.types.is_string(table.schema.field("value").type) or pa.types.is_null(table.schema.field("value").type)):
        raise ValueError(f"{where}: value must be text and count an integer column")
    columns = table.to_pydict()
    keys = list(zip(*(columns[f"group_{i}"] for i in range(groups)))) if groups else [()] * table.num_rows
    rows: dict = {}
    first: dict = {}
    for number, (key, value, count) in enumerate(zip(keys, columns["value"], columns["count"]), start=1):
        _check_count(count, number, where)
        index = (key, value)
        if index in rows:
            raise ValueError(f"{where}: row {number} repeats the group and value of row {first[index]} "
                             f"({_describe(index)})")
        rows[index], first[index] = count, number
    return rows


def _check_count(count, number: int, where: str) -> None:
    if count is None:
        raise ValueError(f"{where}: row {number}: the count is missing (NULL)")
    if count < 0:
        raise ValueError(f"{where}: row {number}: the count {count} is negative")


def _manifest_entry(entry, index: int, where: str) -> dict:
    """A manifest entry checked: ``sha256`` (hex), ``size`` (>= 0), ``partitions`` (text), ``paths`` (path: mtime)."""
    if not isinstance(entry, dict) or set(entry) != {"sha256", "size", "partitions", "paths"} or \
            not isinstance(entry["sha256"], str) or not _HEX64.fullmatch(entry["sha256"]) or \
            type(entry["size"]) is not int or entry["size"] < 0 or not isinstance(entry["partitions"], str) or \
            not isinstance(entry["paths"], dict) or \
            not all(isinstance(path, str) and type(mtime) is int for path, mtime in entry["paths"].items()):
        raise ValueError(f"{where}: manifest entry {index + 1} is not {{sha256, size, partitions, paths}}")
    return entry


def arrow_column(values: list):
    """A group column as Arrow infers it from the values (dates stay dates), as text when types are mixed."""
    import pyarrow as pa

    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if value is None else str(value) for value in values], type=pa.string())


def _row_order(index) -> tuple:
    from designer.aggregate.counting import _sort_key

    key, value = index
    return _sort_key(key), value is None, value or ""


def _describe(index) -> str:
    key, value = index
    return ", ".join([*(str(part) for part in key), f"value {value}"])
