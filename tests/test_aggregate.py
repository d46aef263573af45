"""Report aggregation: DuckDB counts, the alphabet check, estimates and intervals against closed forms."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from inprocess_cli import run_cli

from designer.aggregate.counting import count_reports
from designer.aggregate.estimate import alphabet_counts, estimate_reports, load_mechanism

ROOT = Path(__file__).resolve().parents[1]
GRR4 = ROOT / "designer" / "examples" / "grr4_Q.csv"  # 4-ary randomised response, p = 1/2, q = 1/6


def grr_reports(n: int, prior, seed: int) -> np.ndarray:
    """Reports of 4-ary randomised response drawn independently of the package's samplers."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(4, size=n, p=prior)
    keep = rng.random(n) < 0.5
    other = (truth + rng.integers(1, 4, size=n)) % 4
    return np.where(keep, truth, other)


def test_duckdb_counts_equal_bincount_over_parquet_and_csv(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts = [grr_reports(30_000, [0.4, 0.3, 0.2, 0.1], seed) for seed in range(3)]
    for i, part in enumerate(parts):
        pq.write_table(pa.table({"y": part, "other": part * 0}), tmp_path / f"r{i}.parquet")
        (tmp_path / f"r{i}.csv").write_text("y\n" + "\n".join(map(str, part)) + "\n")
    expected = np.bincount(np.concatenate(parts), minlength=4)
    for pattern in ("*.parquet", "*.csv"):
        counted = count_reports(str(tmp_path / pattern), "y")
        assert counted.engine == "duckdb" and counted.total == expected.sum()
        assert dict(zip(counted.values, counted.counts)) == {str(value): int(c) for value, c in enumerate(expected)}


def test_unbiased_estimate_and_interval_equal_the_grr_closed_form():
    """GRR: p_hat_x = (f_x - q) / (p - q), Var = f_x (1 - f_x) / (n (p - q)^2) (Wang et al. 2017, Theorem 2)."""
    mechanism = load_mechanism(GRR4)
    counts = np.bincount(grr_reports(200_000, [0.4, 0.3, 0.2, 0.1], 7), minlength=4)
    result = estimate_reports(mechanism, list(range(4)), counts.tolist(), "unbiased", 0.9)
    n, p, q = counts.sum(), 0.5, 1 / 6
    frequencies = counts / n
    z = 1.6448536269514722
    for x, row in enumerate(result["estimate"]):
        assert row["value"] == pytest.approx((frequencies[x] - q) / (p - q), abs=1e-12)
        error = math.sqrt(frequencies[x] * (1 - frequencies[x]) / n) / (p - q)
        assert row["std_error"] == pytest.approx(error, rel=1e-9)
        assert (row["low"], row["high"]) == pytest.approx((row["value"] - z * error, row["value"] + z * error), rel=1e-9)


def test_unbiased_interval_covers_at_its_level():
    """Over 300 simulated report sets, the 95% intervals cover the true p about 95% of the time."""
    mechanism = load_mechanism(GRR4)
    prior = np.array([0.4, 0.3, 0.2, 0.1])
    covered = 0
    for seed in range(300):
        counts = np.bincount(grr_reports(5_000, prior, 100 + seed), minlength=4)
        rows = estimate_reports(mechanism, list(range(4)), counts.tolist())["estimate"]
        covered += sum(row["low"] <= prior[x] <= row["high"] for x, row in enumerate(rows))
    rate = covered / 1200
    assert 0.93 <= rate <= 0.97  # binomial sd of the rate ~ 0.006 (correlated across x: wider)


def test_mle_equals_unbiased_inside_the_simplex_with_a_bootstrap_interval():
    """For an invertible channel with p_hat interior, the MLE is the unbiased estimate (both solve Q^T p = f)."""
    mechanism = load_mechanism(GRR4)
    counts = np.bincount(grr_reports(50_000, [0.4, 0.3, 0.2, 0.1], 9), minlength=4)
    unbiased = estimate_reports(mechanism, list(range(4)), counts.tolist(), "unbiased")["estimate"]
    lines = []
    mle = estimate_reports(mechanism, list(range(4)), counts.tolist(), "mle", progress=lines.append)["estimate"]
    assert lines[0].startswith("EM step 0: gap ") and lines[0].endswith("nats per report (stops at 1e-06)")
    resamples = [line for line in lines if line.startswith("EM bootstrap")]
    assert resamples[0] == "EM bootstrap: resample 1 of 200" and resamples[-1] == "EM bootstrap: resample 200 of 200"
    assert len(resamples) == 200
    for a, b in zip(unbiased, mle):
        assert b["value"] == pytest.approx(a["value"], abs=1e-6)
        assert b["low"] < b["value"] < b["high"]
        # bootstrap percentile width ~ the normal width 2 z sd (200 resamples: within 25%)
        assert (b["high"] - b["low"]) == pytest.approx(a["high"] - a["low"], rel=0.25)


def test_no_intervals_gives_the_em_estimate_and_says_no_interval_was_computed(tmp_path):
    """--no-intervals: one EM (the library's, to 1e-9), equal to GRR's closed-form inverse inside the simplex
    ((f - q) / (p - q), p = 1/2, q = 1/6); JSON intervals null, the text table without low/high."""
    from designer.estimation import maximum_likelihood

    reports = grr_reports(50_000, [0.4, 0.3, 0.2, 0.1], 9)
    (tmp_path / "r.csv").write_text("y\n" + "\n".join(map(str, reports)) + "\n")
    common = ("estimate", "--mechanism", str(GRR4), "--reports", str(tmp_path / "r.csv"), "--estimator", "mle",
              "--no-intervals")
    result = run_cli(*common, "--json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # the EM status line is drawn on a terminal only
    output = json.loads(result.stdout)
    counts = np.bincount(reports, minlength=4)
    values = [row["value"] for row in output["estimate"]]
    np.testing.assert_allclose(values, maximum_likelihood(counts, load_mechanism(GRR4).matrix).estimate,
                               rtol=0, atol=1e-9)
    np.testing.assert_allclose(values, (counts / counts.sum() - 1 / 6) / (1 / 2 - 1 / 6), rtol=0, atol=1e-6)
    assert output["interval_method"] == "none" and output["confidence"] is None
    assert all(row["low"] is None and row["high"] is None and row["std_error"] is None for row in output["estimate"])
    text = run_cli(*common)
    assert text.returncode == 0 and "mle estimate, no intervals computed (--no-intervals)" in text.stdout
    assert "low" not in text.stdout and "high" not in text.stdout


def test_no_intervals_with_the_unbiased_estimator_keeps_the_estimate():
    mechanism = load_mechanism(GRR4)
    counts = np.bincount(grr_reports(20_000, [0.4, 0.3, 0.2, 0.1], 4), minlength=4).tolist()
    full = estimate_reports(mechanism, list(range(4)), counts, "unbiased")
    bare = estimate_reports(mechanism, list(range(4)), counts, "unbiased", intervals=False)
    assert [row["value"] for row in bare["estimate"]] == [row["value"] for row in full["estimate"]]
    assert bare["interval_method"] == "none" and bare["confidence"] is None
    assert all(row["low"] is None and row["high"] is None and row["std_error"] is None for row in bare["estimate"])


def test_reports_outside_the_alphabet_are_counted_not_dropped():
    inside, outside = alphabet_counts([0, 1, "1", 7, None, 2.0, "x"], [5, 3, 2, 4, 1, 6, 9], ("0", "1", "2", "3"))
    assert inside.tolist() == [5, 5, 6, 0]
    assert outside == {"7": 4, "NULL": 1, "x": 9}


def test_estimate_cli_with_a_package_and_outside_reports(tmp_path):
    package = tmp_path / "grr4.json"
    made = run_cli("package", "--E", str(ROOT / "designer/examples/ldp4_E.csv"), "--channel", str(GRR4), "--out", str(package))
    assert made.returncode == 0, made.stderr
    reports = grr_reports(20_000, [0.25, 0.25, 0.25, 0.25], 4)
    lines = [str(r) for r in reports] + ["5", "5", "banana"]
    (tmp_path / "r.csv").write_text("y\n" + "\n".join(lines) + "\n")
    result = run_cli("estimate", "--mechanism", str(package), "--reports", str(tmp_path / "*.csv"), "--json")
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert output["reports"] == 20_003 and output["in_alphabet"] == 20_000 and output["mechanism"] == "package"
    assert output["outside_alphabet"] == {"count": 3, "distinct": 2, "values": {"5": 2, "banana": 1}}
    assert sum(row["value"] for row in output["estimate"]) == pytest.approx(1.0, abs=1e-9)
    table = run_cli("estimate", "--mechanism", str(package), "--reports", str(tmp_path / "*.csv"))
    assert table.returncode == 0 and "warning: 3 reports outside the output alphabet" in table.stderr


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--reports", "/nonexistent/*.parquet"], "no file matches"),
        (["--reports", "REPORTS", "--column", "z"], "--column z: the reports have no such column"),
        (["--reports", "/tmp/reports.txt"], "name a folder, or .parquet/.pq or .csv/.csv.gz files"),
        (["--reports", "REPORTS", "--estimator", "magic"], "unknown estimator 'magic'"),
    ],
)
def test_estimate_bad_input_is_one_line_exit_2(tmp_path, arguments, message):
    (tmp_path / "r.csv").write_text("y\n0\n1\n")
    arguments = [str(tmp_path / "*.csv") if a == "REPORTS" else a for a in arguments]
    result = run_cli("estimate", "--mechanism", str(GRR4), *arguments)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: ") and message in result.stderr
