"""Report sources (folders, ** globs, Hive partitions, URLs), grouped counts, --where, simultaneous
intervals, saved counts with a manifest, and Dask's tree reduction, against independent counts."""

from __future__ import annotations

import json
import os
from statistics import NormalDist

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from inprocess_cli import run_cli
from test_aggregate import GRR4, grr_reports

from designer.aggregate import sources
from designer.aggregate.counting import count_reports
from designer.aggregate.counts_file import read_counts
from designer.aggregate.estimate import estimate_reports, interval_level, load_mechanism
from designer.aggregate.filters import check_where

PRIORS = {"01": [0.4, 0.3, 0.2, 0.1], "02": [0.1, 0.2, 0.3, 0.4], "03": [0.25, 0.25, 0.25, 0.25]}


def hive_days(root, days=("01", "02", "03"), files=2, n=4000):
    """``root/year=2026/day=DD/part-i.parquet`` of GRR reports; returns {day: bincount}."""
    expected = {}
    for d, day in enumerate(days):
        folder = root / "year=2026" / f"day={day}"
        folder.mkdir(parents=True)
        parts = [grr_reports(n, PRIORS[day], 100 * d + i) for i in range(files)]
        for i, part in enumerate(parts):
            pq.write_table(pa.table({"y": part}), folder / f"part-{i}.parquet")
        expected[day] = np.bincount(np.concatenate(parts), minlength=4)
    return expected


def as_counts(values, counts):
    return {value: count for value, count in zip(values, counts)}


def test_folder_glob_and_file_read_hive_partitions_as_columns(tmp_path):
    expected = hive_days(tmp_path)
    (tmp_path / "_SUCCESS").write_text("")  # a Spark marker is not a report file
    total = sum(expected.values())
    for spec in (str(tmp_path), str(tmp_path / "**" / "*.parquet"), str(tmp_path / "year=2026" / "*" / "*.parquet")):
        counted = count_reports(spec)
        assert as_counts(counted.values, counted.counts) == {str(v): int(c) for v, c in enumerate(total)}
    grouped = count_reports(str(tmp_path), by=("year", "day"))
    assert [by for by, _, _ in grouped.groups()] == [{"year": "2026", "day": day} for day in PRIORS]
    for by, values, counts in grouped.groups():
        assert as_counts(values, counts) == {str(v): int(c) for v, c in enumerate(expected[by["day"]])}
    single = count_reports(str(tmp_path / "year=2026" / "day=02" / "part-1.parquet"), by=("day",))
    assert single.groups()[0][0] == {"day": "02"} and single.total == 4000


def test_where_filters_like_numpy_and_is_checked(tmp_path):
    expected = hive_days(tmp_path)
    counted = count_reports(str(tmp_path), where="day <> '02' AND y IN (0, 3)")
    both = expected["01"] + expected["03"]
    assert as_counts(counted.values, counted.counts) == {"0": int(both[0]), "3": int(both[3])}
    assert check_where("day = '01' -- comment") == "(\"day\" = '01')"
    for expression, message in [("y = 1; DROP TABLE t", "no ';'"), ("y IN (SELECT 1)", "subquery"),
                                ("EXISTS (SELECT * FROM read_csv('/etc/passwd'))", "subquery"),
                                ("true UNION SELECT 1", "only a boolean expression"),
                                ("true GROUP BY y", "only a boolean expression"), ("y >", "syntax error"),
                                ("count(*) OVER () > 1", "window")]:
        with pytest.raises(ValueError, match=message):
            check_where(expression)


def test_mixed_integer_and_text_files_count_as_text_with_duckdb_and_dask(tmp_path, monkeypatch):
    pq.write_table(pa.table({"y": np.array([0, 1, 1, 2, 3], dtype=np.int64)}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"y": ["1", "3", "banana", None]}), tmp_path / "b.parquet")
    expected = {"0": 1, "1": 3, "2": 1, "3": 2, "banana": 1, None: 1}
    counted = count_reports(str(tmp_path))
    assert as_counts(counted.values, counted.counts) == expected
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, dashboard_address=":0", processes=False) as cluster:
        on_dask = count_reports(str(tmp_path / "*.parquet"), scheduler=cluster.scheduler_address)
        assert on_dask.engine == "dask" and as_counts(on_dask.values, on_dask.counts) == expected
        with pytest.raises(ValueError, match=r"^--column z: the reports have no such column \(columns: y\)$"):
            count_reports(str(tmp_path), "z", scheduler=cluster.scheduler_address)
        hive_days(tmp_path / "days", files=3, n=500)
        grouped = count_reports(str(tmp_path / "days"), by=("day",), where="y <> 1", scheduler=cluster.scheduler_address)
        assert grouped.groups() == count_reports(str(tmp_path / "days"), by=("day",), where="y <> 1").groups()
        from designer.aggregate import counting

        monkeypatch.setattr(counting, "BATCHES_PER_THREAD", 5)  # 9 files in 9 batches: two levels of merges
        deeper = count_reports(str(tmp_path / "days"), by=("day",), where="y <> 1", scheduler=cluster.scheduler_address)
        assert deeper.groups() == grouped.groups()


def test_remote_urls_pass_through_or_are_refused(monkeypatch):
    assert sources.remote_access("s3://bucket/day=*/r.parquet", {"httpfs"}, lambda _: False) == "httpfs"
    assert sources.remote_access("gs://bucket/r.parquet", set(), lambda name: name == "gs") == "fsspec:gs"
    with pytest.raises(ValueError, match="needs DuckDB's azure extension or an fsspec file system for az"):
        sources.remote_access("az://container/r.parquet", {"httpfs"}, lambda _: False)
    with pytest.raises(ValueError, match="ftp:// URLs are not readable"):
        sources.remote_access("ftp://host/r.parquet", {"httpfs"}, lambda _: True)
    loaded = []
    monkeypatch.setattr(sources, "installed_extensions", lambda _: {"httpfs"})
    monkeypatch.setattr(sources, "prepare_access", lambda _, access: loaded.append(access))
    monkeypatch.setattr(sources, "_glob", lambda _, pattern: (pattern.replace("*", "01"),))
    resolved = sources.resolve_reports("s3://bucket/day=*/r.parquet")
    assert (resolved.files, resolved.access, loaded) == (("s3://bucket/day=01/r.parquet",), "httpfs", ["httpfs"])


def test_remote_url_without_its_extension_is_one_line_exit_2(monkeypatch):
    monkeypatch.setattr(sources, "installed_extensions", lambda _: set())
    monkeypatch.setattr(sources, "fsspec_available", lambda _: False)
    with pytest.raises(ValueError, match=r"^--reports s3://b/r.parquet: reading s3:// needs DuckDB's httpfs"):
        sources.resolve_reports("s3://b/r.parquet")


def test_simultaneous_intervals_cover_the_whole_histogram():
    """Šidák: level c^(1/m) each; over 300 data sets all 4 GRR intervals cover together >= 95% of the time."""
    assert interval_level(0.95, 4, "unbiased") == pytest.approx(0.95 ** 0.25)
    assert interval_level(0.95, 4, "mle") == pytest.approx(1 - 0.05 / 4)
    mechanism = load_mechanism(GRR4)
    prior = np.array([0.4, 0.3, 0.2, 0.1])
    together = {1: 0, 4: 0}
    for seed in range(300):
        counts = np.bincount(grr_reports(5_000, prior, 100 + seed), minlength=4).tolist()
        for family in together:
            rows = estimate_reports(mechanism, list(range(4)), counts, family=family)["estimate"]
            together[family] += all(row["low"] <= prior[x] <= row["high"] for x, row in enumerate(rows))
    assert together[4] / 300 >= 0.94 and together[1] / 300 < 0.90
    rows = estimate_reports(mechanism, list(range(4)), counts, family=4)["estimate"]
    z = NormalDist().inv_cdf(0.5 + 0.95 ** 0.25 / 2)
    assert rows[0]["high"] - rows[0]["value"] == pytest.approx(z * rows[0]["std_error"], rel=1e-12)


def test_cli_by_day_json_equals_one_estimate_per_day(tmp_path):
    expected = hive_days(tmp_path / "r")
    result = run_cli("estimate", "--mechanism", str(GRR4), "--reports", str(tmp_path / "r"), "--by", "day",
                     "--simultaneous", "--json")
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert output["by"] == ["day"] and output["simultaneous"] and [g["by"] for g in output["groups"]] == \
        [{"day": day} for day in PRIORS]
    mechanism = load_mechanism(GRR4)
    for group in output["groups"]:
        alone = estimate_reports(mechanism, list(range(4)), expected[group["by"]["day"]].tolist(), family=12)
        assert group["reports"] == 8000 and group["estimate"] == alone["estimate"]
    table = run_cli("estimate", "--mechanism", str(GRR4), "--reports", str(tmp_path / "r"), "--by", "day")
    assert table.returncode == 0 and "day=03: 8000 in the output alphabet" in table.stdout


def test_saved_counts_plus_a_new_day_equal_a_full_recount(tmp_path):
    root = tmp_path / "r"
    hive_days(root, days=("01", "02"))
    counts = tmp_path / "counts.parquet"
    common = ["estimate", "--mechanism", str(GRR4), "--reports", str(root), "--by", "day", "--json"]
    first = run_cli(*common, "--save-counts", str(counts))
    assert first.returncode == 0, first.stderr and json.loads(first.stdout)["files_in_manifest"] == 4
    hive_days(root, days=("03",))
    os.utime(root / "year=2026" / "day=01" / "part-0.parquet", ns=(1, 1))  # touched: same bytes, skipped
    merged = run_cli(*common, "--counts", str(counts), "--save-counts", str(counts))
    full = run_cli(*common)
    assert merged.returncode == 0 and full.returncode == 0, merged.stderr + full.stderr
    merged, full = json.loads(merged.stdout), json.loads(full.stdout)
    assert merged["files_in_manifest"] == 6 and merged["groups"] == full["groups"]
    again = run_cli("estimate", "--mechanism", str(GRR4), "--counts", str(counts), "--by", "day", "--json")
    assert json.loads(again.stdout)["groups"] == full["groups"]  # saved counts alone, no file read
    pq.write_table(pa.table({"y": [0, 1]}), root / "year=2026" / "day=02" / "part-0.parquet")
    changed = run_cli(*common, "--counts", str(counts))
    assert changed.returncode == 2 and changed.stderr.count("\n") == 1
    assert "day=02/part-0.parquet changed since it was counted" in changed.stderr
    with pytest.raises(ValueError, match="counts of the column y; this run asks for --column z"):
        read_counts(counts, "z")


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--reports", "REPORTS", "--where", "y = 1; DROP TABLE t"], "--where y = 1; DROP TABLE t: one expression"),
        (["--reports", "REPORTS", "--by", "week"], "--by week: the reports have no such column (columns: y, day)"),
        (["--reports", "REPORTS", "--where", "z > 1"], "--where z > 1: Binder Error"),
        (["--reports", "REPORTS", "--by", "day,,y"], "--by day,,y: syntax error"),
        (["--by", "day"], "--reports: give the report files, or --counts"),
        (["--reports", "MIXED"], "holds both Parquet and CSV files"),
        (["--reports", "REPORTS", "--counts", "REPORTS/day=1/r.parquet"], "this counts file is among the --reports"),
        (["--reports", "REPORTS/day=1/r.parquet", "--counts", "REPORTS"], "--counts"),
        (["--counts", "REPORTS/day=1/r.parquet"], "a count table needs exactly one count column"),
    ],
)
def test_grouped_bad_input_is_one_line_exit_2(tmp_path, arguments, message):
    (tmp_path / "r" / "day=1").mkdir(parents=True)
    pq.write_table(pa.table({"y": [0, 1]}), tmp_path / "r" / "day=1" / "r.parquet")
    (tmp_path / "mixed").mkdir()
    pq.write_table(pa.table({"y": [0]}), tmp_path / "mixed" / "r.parquet")
    (tmp_path / "mixed" / "r.csv").write_text("y\n0\n")
    replaced = [a.replace("REPORTS", str(tmp_path / "r")).replace("MIXED", str(tmp_path / "mixed")) for a in arguments]
    result = run_cli("estimate", "--mechanism", str(GRR4), *replaced)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: ") and message in result.stderr


def test_partition_union_and_general_group_by_agree(tmp_path):
    """``--by`` Hive keys only: one UNION ALL of per-partition counts; with a data column: GROUP BY; same rows."""
    from designer.aggregate.counting import partitions

    rng = np.random.default_rng(5)
    expected = {}
    for day in ("01", "02"):
        (tmp_path / f"day={day}").mkdir()
        y, app = rng.integers(0, 4, 3000), rng.choice(["ios", "web"], 3000)
        pq.write_table(pa.table({"y": y, "app": app}), tmp_path / f"day={day}" / "r.parquet")
        for a in ("ios", "web"):
            expected[(day, a)] = np.bincount(y[(app == a) & (y != 2)], minlength=4)
    files = [str(tmp_path / f"day={day}" / "r.parquet") for day in ("01", "02")]
    assert partitions(files, ("day",)) == {("01",): files[:1], ("02",): files[1:]}
    assert partitions(files, ("day", "app")) is None and partitions(["x/day=a%20b/r.parquet"], ("day",)) is None
    by_day = count_reports(str(tmp_path), by=("day",), where="y <> 2")  # union of per-partition counts
    by_both = count_reports(str(tmp_path), by=("day", "app"), where="y <> 2")  # general GROUP BY
    for by, values, counts in by_both.groups():
        cell = expected[(by["day"], by["app"])]
        assert as_counts(values, counts) == {str(v): int(c) for v, c in enumerate(cell) if v != 2}
    for by, values, counts in by_day.groups():
        total = expected[(by["day"], "ios")] + expected[(by["day"], "web")]
        assert as_counts(values, counts) == {str(v): int(c) for v, c in enumerate(total) if v != 2}


def test_em_status_lines_name_their_group(tmp_path):
    from designer.aggregate.estimate import estimate_groups

    hive_days(tmp_path, days=("01", "02"), files=1, n=2000)
    counted = count_reports(str(tmp_path), by=("day",))
    lines = []
    result = estimate_groups(load_mechanism(GRR4), counted, "mle", intervals=False, progress=lines.append)
    assert [entry["by"] for entry in result["groups"]] == [{"day": "01"}, {"day": "02"}]
    assert {line.split(": EM step")[0] for line in lines} == {"day=01", "day=02"}
    assert lines[0].startswith("day=01: EM step 0: gap ") and lines[-1].startswith("day=02: EM step ")
