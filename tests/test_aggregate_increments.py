"""Increments: files counted once by content, tamper-evident counts files, a lock for
concurrent writers, roll-ups of saved counts, ``--by`` expressions, plain count tables from other
engines. Every expected count is computed here independently (numpy ``bincount`` of the reports
written, or a fresh count of the same files)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timedelta

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from inprocess_cli import run_cli
from test_aggregate import GRR4, ROOT, grr_reports

from designer.aggregate.counts_file import METADATA_KEY, counts_digest, read_counts
from designer.aggregate.filters import parse_by


def run(*arguments: str) -> tuple[int, str, str]:
    """``ldp-designer estimate ...`` in this process: (exit code, stdout, stderr)."""
    result = run_cli("estimate", "--mechanism", str(GRR4), *arguments)
    return result.returncode, result.stdout, result.stderr


def estimate_json(*arguments: str) -> dict:
    code, stdout, stderr = run(*arguments, "--json")
    assert code == 0, stderr
    return json.loads(stdout)


def write_days(root, days, n=500, seed=0) -> np.ndarray:
    """``root/day=DD/part-0.parquet`` of GRR reports; returns the bincount of all of them."""
    total = np.zeros(4, dtype=int)
    for index, day in enumerate(days):
        (root / f"day={day}").mkdir(parents=True, exist_ok=True)
        reports = grr_reports(n + 37 * index, [0.4, 0.3, 0.2, 0.1], seed + index)
        pq.write_table(pa.table({"y": reports}), root / f"day={day}" / "part-0.parquet")
        total += np.bincount(reports, minlength=4)
    return total


def test_the_same_files_through_a_link_a_copy_a_move_or_a_rename_are_counted_once(tmp_path):
    """The issue's reproducer: 1,400,000 reports instead of 700,000 (a manifest keyed by the typed path)."""
    root = tmp_path / "r"
    expected = write_days(root, ("01", "02"))
    counts = str(tmp_path / "counts.parquet")
    increment = ["--by", "day", "--counts", counts, "--save-counts", counts]
    assert estimate_json("--reports", str(root), "--by", "day", "--save-counts", counts)["reports"] == expected.sum()
    (tmp_path / "link").symlink_to(root)
    shutil.copytree(root, tmp_path / "copy")
    for folder in ("link", "copy"):
        assert estimate_json("--reports", str(tmp_path / folder), *increment)["reports"] == expected.sum()
    shutil.move(root, tmp_path / "moved")
    result = estimate_json("--reports", str(tmp_path / "moved"), *increment)
    assert result["reports"] == expected.sum() and result["files_in_manifest"] == 2
    # log rotation: part-0 renamed part-0.1 (same bytes), a new part-0 written at the old name
    day = tmp_path / "moved" / "day=02"
    (day / "part-0.parquet").rename(day / "part-0.1.parquet")
    fresh = grr_reports(300, [0.1, 0.2, 0.3, 0.4], 9)
    pq.write_table(pa.table({"y": fresh}), day / "part-0.parquet")
    result = estimate_json("--reports", str(tmp_path / "moved"), *increment)
    assert result["reports"] == expected.sum() + 300 and result["files_in_manifest"] == 3
    groups = {group["by"]["day"]: group["reports"] for group in result["groups"]}
    assert groups["02"] == 537 + 300


def test_a_link_and_a_copy_in_one_listing_count_once_even_without_a_manifest(tmp_path):
    root = tmp_path / "r"
    expected = write_days(root, ("01",))
    (root / "day=01" / "latest.parquet").symlink_to(root / "day=01" / "part-0.parquet")
    shutil.copy(root / "day=01" / "part-0.parquet", root / "day=01" / "copy.parquet")
    code, stdout, stderr = run("--reports", str(root), "--json")
    assert code == 0 and json.loads(stdout)["reports"] == expected.sum()
    assert json.loads(stdout)["same_content_skipped"] == 2
    assert stderr.startswith("warning: 2 report files skipped: the same content as a file counted")


def test_a_file_changed_in_place_is_refused_but_a_rotated_one_is_new(tmp_path):
    root = tmp_path / "r"
    write_days(root, ("01",))
    counts = str(tmp_path / "c.parquet")
    estimate_json("--reports", str(root), "--save-counts", counts)
    pq.write_table(pa.table({"y": [0, 1, 2]}), root / "day=01" / "part-0.parquet")  # rewritten in place
    code, _, stderr = run("--reports", str(root), "--counts", counts)
    assert code == 2 and stderr.count("\n") == 1
    assert "day=01/part-0.parquet changed since it was counted" in stderr and "nowhere else" in stderr


def _tamper(path, rows=None, description=None, digest=True):
    """Rewrite a counts file with ``rows(table) -> table`` and ``description(dict)`` applied; the digest
    recomputed (a forger who knows the format) or left as it was."""
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    if rows is not None:
        table = rows(table)
    if description is not None:
        description(meta)
    if digest:
        columns = table.to_pydict()
        groups = [name for name in table.column_names if name.startswith("group_")]
        keys = list(zip(*(columns[name] for name in groups))) if groups else [()] * table.num_rows
        recount = {}
        for key, value, count in zip(keys, columns["value"], columns["count"]):
            recount[(key, value)] = recount.get((key, value), 0) + count  # duplicates summed: a digest still computes
        meta["digest"] = counts_digest(meta, recount)
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()}), path)


def _counts_column(table, change):
    return table.set_column(table.column_names.index("count"), "count", pa.array(change(table["count"].to_pylist()),
                                                                                  type=pa.int64()))


TAMPERING = {
    "a count raised by 100000": (dict(rows=lambda t: _counts_column(t, lambda c: [c[0] + 100_000, *c[1:]]),
                                      digest=False), 1,
                                 "its digest does not match"),
    "counts x1000": (dict(rows=lambda t: _counts_column(t, lambda c: [v * 1000 for v in c]), digest=False), 1,
                     "its digest does not match"),
    "a manifest entry removed": (dict(description=lambda d: d["files"].pop(), digest=False), 1,
                                 "its digest does not match"),
    "a negative count": (dict(rows=lambda t: _counts_column(t, lambda c: [-2000, *c[1:]])), 2, "is negative"),
    "a duplicate row": (dict(rows=lambda t: pa.concat_tables([t, t.slice(0, 1)])), 2, "repeats the group and value"),
    "a group renamed, digest recomputed": (dict(description=lambda d: d["by"][0].update(name=7)), 2,
                                           "a group of its description is not"),
    "the digest removed": (dict(description=lambda d: d.pop("digest"), digest=False), 2, "lacks digest"),
}


@pytest.fixture(scope="module")
def daily_counts(tmp_path_factory) -> bytes:
    """The bytes of counts saved ``--by day`` over two days of reports."""
    folder = tmp_path_factory.mktemp("daily")
    write_days(folder / "r", ("01", "02"))
    estimate_json("--reports", str(folder / "r"), "--by", "day", "--save-counts", str(folder / "c.parquet"))
    return (folder / "c.parquet").read_bytes()


@pytest.mark.parametrize("name", TAMPERING)
def test_tampered_counts_are_refused_in_one_line(tmp_path, name, daily_counts):
    """Exit 1 (``rejected:``) when the content does not match its digest; 2 for a malformed file (verify-package's
    convention); the counts are never used."""
    counts = tmp_path / "c.parquet"
    counts.write_bytes(daily_counts)
    change, code, message = TAMPERING[name]
    _tamper(counts, **change)
    exit_code, stdout, stderr = run("--counts", str(counts), "--by", "day")
    assert exit_code == code and stdout == "" and stderr.count("\n") == 1, stderr
    assert stderr.startswith("rejected: " if code == 1 else "error: ") and str(counts) in stderr and message in stderr


def test_signed_counts_are_checked_with_the_trusted_key(tmp_path):
    from designer.deploy.signing import generate_key_files

    root = tmp_path / "r"
    expected = write_days(root, ("01",))
    key, public, _ = generate_key_files(tmp_path / "key")
    other, other_public, _ = generate_key_files(tmp_path / "other")
    counts = tmp_path / "c.parquet"
    estimate_json("--reports", str(root), "--save-counts", str(counts), "--sign", str(key))
    result = estimate_json("--counts", str(counts), "--public-key", str(public))
    assert result["reports"] == expected.sum() and result["counts_checked"].startswith("Ed25519 signature by ")
    code, _, stderr = run("--counts", str(counts), "--public-key", str(other_public))
    assert code == 1 and "not by the trusted key" in stderr
    _tamper(counts, rows=lambda t: _counts_column(t, lambda c: [c[0] + 1, *c[1:]]))  # digest recomputed: the key sees it
    code, _, stderr = run("--counts", str(counts), "--public-key", str(public))
    assert code == 1 and "the Ed25519 signature does not match the counts" in stderr
    estimate_json("--reports", str(root), "--save-counts", str(tmp_path / "unsigned.parquet"))
    code, _, stderr = run("--counts", str(tmp_path / "unsigned.parquet"), "--public-key", str(public))
    assert code == 1 and "not signed" in stderr


def test_two_concurrent_writers_onto_one_counts_file_both_count(tmp_path):
    """Two processes add their own folder to one counts file. This one holds the lock while it adds
    folder a (read, count, write); the other, started meanwhile, must wait for it, then add folder b
    to the counts that hold a. Without the lock both read the same counts and the last write wins."""
    from designer.aggregate.counts_file import write_counts
    from designer.aggregate.increments import count_increment, counts_lock
    from designer.aggregate.sources import resolve_reports

    totals = [write_days(tmp_path / name, ("01",), n=400 + 100 * index, seed=10 * index).sum()
              for index, name in enumerate(("base", "a", "b"))]
    counts = str(tmp_path / "c.parquet")
    estimate_json("--reports", str(tmp_path / "base"), "--save-counts", counts)
    command = [sys.executable, "-c", "from designer.cli import main; main()", "estimate", "--mechanism", str(GRR4),
               "--counts", counts, "--save-counts", counts, "--json", "--reports", str(tmp_path / "b")]
    with counts_lock(counts):
        other = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert other.stderr.readline().startswith(f"note: waiting for another run writing {counts}")
        saved = read_counts(counts, "y")
        counted = count_increment(resolve_reports(str(tmp_path / "a")), saved=saved, manifest=True)
        write_counts(counts, counted.rows(), "y", (), None, list(counted.files))
        assert other.poll() is None  # still waiting
    stdout, stderr = other.communicate(timeout=300)
    assert other.returncode == 0, stderr
    saved = read_counts(counts, "y")
    assert sum(saved.rows.values()) == sum(totals) == json.loads(stdout)["reports"] and len(saved.files) == 3


def test_saved_daily_counts_roll_up_to_no_group_and_to_a_window(tmp_path):
    root = tmp_path / "r"
    write_days(root, ("01", "02", "03"))
    counts = str(tmp_path / "c.parquet")
    estimate_json("--reports", str(root), "--by", "day", "--save-counts", counts)
    assert estimate_json("--counts", counts) == {**estimate_json("--reports", str(root)), "engine": "saved counts",
                                                 "count_seconds": 0.0, "files_in_manifest": 3,
                                                 "counts_checked": "sha256 digest"}
    window = ["--by", "day", "--where", "day >= '02'"]
    rolled, fresh = estimate_json("--counts", counts, *window), estimate_json("--reports", str(root), *window)
    assert rolled["groups"] == fresh["groups"] and [group["by"] for group in rolled["groups"]] == [{"day": "02"},
                                                                                                    {"day": "03"}]
    # counts saved with a filter keep it: a window must include it; the data column itself needs a recount
    filtered = str(tmp_path / "f.parquet")
    estimate_json("--reports", str(root), "--by", "day", "--where", "y <> 3", "--save-counts", filtered)
    both = ["--by", "day", "--where", "y <> 3 AND day >= '02'"]
    rolled, fresh = estimate_json("--counts", filtered, *both), estimate_json("--reports", str(root), *both)
    assert rolled["groups"] == fresh["groups"]
    code, _, stderr = run("--counts", filtered, "--where", "day >= '02'")
    assert code == 2 and "the saved counts hold only the reports where (y != 3)" in stderr


def test_by_expressions_roll_up_hours_to_days(tmp_path):
    """``--by "date_trunc('hour', ts) AS hour"`` saved, rolled up to days, against numpy on the timestamps."""
    rng = np.random.default_rng(4)
    start = datetime(2026, 11, 24)
    stamps = [start + timedelta(minutes=int(m)) for m in rng.integers(0, 3 * 24 * 60, 3000)]
    reports = rng.integers(0, 4, 3000)
    (tmp_path / "r").mkdir()
    pq.write_table(pa.table({"ts": stamps, "y": reports}), tmp_path / "r" / "part.parquet")
    counts = str(tmp_path / "c.parquet")
    hours = estimate_json("--reports", str(tmp_path / "r"), "--by", "date_trunc('hour', ts) AS hour",
                          "--save-counts", counts)
    assert hours["by"] == ["hour"] and len(hours["groups"]) == len({stamp.replace(minute=0) for stamp in stamps})
    days = estimate_json("--counts", counts, "--by", "date_trunc('day', hour) AS day", "--where",
                         "hour >= TIMESTAMP '2026-11-25'")
    for group in days["groups"]:
        day = datetime.fromisoformat(group["by"]["day"])
        chosen = np.array([stamp.date() == day.date() for stamp in stamps])
        assert group["reports"] == chosen.sum() and day >= datetime(2026, 11, 25)
    assert len(days["groups"]) == 2


@pytest.mark.parametrize("text, message", [
    ("day, (SELECT 1)", "subquery expressions are not allowed"),
    ("count(*) OVER ()", "window expressions are not allowed"),
    ("*", "star expressions are not allowed"),
    ("day; DROP TABLE t", "no ';'"),
    ("day FROM x", "syntax error"),
    ("DISTINCT day", "only expressions separated by commas"),
    ("day UNION SELECT 1", "only expressions separated by commas"),
    ("day, day", "two groups are named day"),
])
def test_by_is_checked_by_the_sql_parser(text, message):
    with pytest.raises(ValueError, match=message):
        parse_by(text)


def test_by_expression_names_and_sql():
    groups = parse_by("date_trunc('hour', ts) AS hour, day, \"app version\"")
    assert [(group.name, group.sql, group.column) for group in groups] == [
        ("hour", "date_trunc('hour', ts)", None), ("day", '"day"', "day"), ("app version", '"app version"',
                                                                            "app version")]


def test_a_plain_count_table_from_another_engine_is_accepted(tmp_path):
    root = tmp_path / "r"
    write_days(root, ("01", "02"))
    connection = duckdb.connect()
    reader = f"read_parquet('{root}/**/*.parquet', hive_partitioning = true)"
    connection.execute(f"COPY (SELECT day, y, count(*) FROM {reader} GROUP BY ALL) TO '{tmp_path}/duck.csv'")
    table = connection.sql(f"SELECT day, y, count(*) AS n FROM {reader} GROUP BY ALL").to_arrow_table()
    pq.write_table(table, tmp_path / "arrow.parquet")
    fresh = estimate_json("--reports", str(root), "--by", "day")
    for plain in ("duck.csv", "arrow.parquet"):
        result = estimate_json("--counts", str(tmp_path / plain), "--by", "day")
        assert result["groups"] == fresh["groups"] and result["counts_checked"].startswith("plain table")
        assert estimate_json("--counts", str(tmp_path / plain))["estimate"] == estimate_json("--reports",
                                                                                               str(root))["estimate"]
        code, _, stderr = run("--counts", str(tmp_path / plain), "--reports", str(root))
        assert code == 2 and "has no manifest of the files it counted" in stderr
    for name, table, message in [
        ("duplicate", pa.table({"y": [0, 1, 0], "count": [5, 6, 7]}), "row 3 repeats the group and value of row 1"),
        ("negative", pa.table({"y": [0, 1], "count": [5, -6]}), "row 2: the count -6 is negative"),
        ("float", pa.table({"y": [0, 1], "count": [5.0, 6.5]}), "the count column count holds DOUBLE, not integers"),
        ("two", pa.table({"y": [0], "n": [1], "count": [1]}), "exactly one count column"),
    ]:
        pq.write_table(table, tmp_path / f"{name}.parquet")
        code, _, stderr = run("--counts", str(tmp_path / f"{name}.parquet"))
        assert code == 2 and stderr.count("\n") == 1 and message in stderr, stderr


def test_an_empty_parquet_file_and_reports_outside_the_alphabet_say_what_is_wrong(tmp_path):
    """Issue 30: an empty .parquet said "no file matches"; nothing in the alphabet gave no type or example."""
    pq.write_table(pa.table({"y": pa.array([], type=pa.int64())}), tmp_path / "no-rows.parquet")
    pq.write_table(pa.table({}), tmp_path / "no-columns.parquet")
    (tmp_path / "zero.parquet").write_bytes(b"")
    pq.write_table(pa.table({"y": ["a", "b", "a", "c", "a"]}), tmp_path / "text.parquet")
    cases = {
        "no-rows.parquet": "the file holds no rows (no report in column y)",
        "no-columns.parquet": "no-columns.parquet has no columns, so it holds no report column y",
        "zero.parquet": "zero.parquet is empty (0 bytes), so it holds no report column y",
        "text.parquet": "no report is in the mechanism's output alphabet (4 outputs labelled as text: '0', '1', '2', "
                        "'3'); 5 reports outside it, 3 distinct values, e.g. 'a' (3), 'b' (1), 'c' (1); the reports "
                        "are column y of type VARCHAR",
    }
    for name, message in cases.items():
        code, stdout, stderr = run("--reports", str(tmp_path / name))
        assert code == 2 and stdout == "" and stderr.count("\n") == 1 and message in stderr, stderr
    code, _, stderr = run("--reports", str(tmp_path / "text.parquet"), "--where", "y = 'z'")
    assert code == 2 and "--where y = 'z': no report of the file of --reports" in stderr


def test_only_files_alike_in_size_and_ends_are_hashed_before_counting(tmp_path, monkeypatch):
    from designer.aggregate import increments
    from designer.io.text import file_sha256

    hashed = []

    def recording(path):
        hashed.append(os.path.basename(path))
        return file_sha256(path)

    monkeypatch.setattr(increments, "file_sha256", recording)
    data = np.random.default_rng(5).integers(0, 256, 200_000, dtype=np.uint8).tobytes()
    (tmp_path / "a.csv").write_bytes(data)
    (tmp_path / "b.csv").write_bytes(data)  # a copy
    (tmp_path / "c.csv").write_bytes(data[:100_000] + bytes(100_000))  # same size, other last bytes
    (tmp_path / "d.csv").write_bytes(data[:5])  # a size of its own
    files = [str(tmp_path / name) for name in ("a.csv", "b.csv", "c.csv", "d.csv")]
    plan = increments.plan_increment(files, hash_all=False)
    assert sorted(hashed) == ["a.csv", "b.csv"] and plan.todo == [files[0], files[2], files[3]]
    assert plan.same_content == [(files[1], str(tmp_path / "a.csv"))] and plan.hash_later == []
