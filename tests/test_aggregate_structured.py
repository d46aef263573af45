"""Structured (Hadamard) packages in ``estimate``: estimators (19), (15)-(16) and their exact variances.

The references are built here, independently of the mechanism classes: the deployed
channel ``Q`` from the package's integers (``T / 2^b``, ``K / 2^b``) and the estimator's
matrix ``A`` from the paper's formulas with a dense Sylvester matrix; the structured path
must match ``A f`` and ``diag(A (diag f - f f^T) A^T) / n`` to 1e-12.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from inprocess_cli import run_cli

from designer.aggregate.estimate import MAX_MLE_ENTRIES, estimate_reports, load_mechanism
from designer.aggregate.structured import deployed_mechanism, structured_unbiased_interval
from designer.deploy.package import write_package
from designer.deploy.structured import build_hadamard_package, build_high_low_package
from designer.estimation import maximum_likelihood
from solvers.hadamard import hadamard_matrix

BLOCKS = [3, 5, 7, 2]  # Sylvester orders 4, 8, 8, 4: 24 outputs
SENSITIVE = [1, 3, 4, 8, 9]  # high-low on k = 12: S = 8, 7 own outputs


def block_reference(document: dict) -> tuple[np.ndarray, np.ndarray]:
    """(Q, A) of a block-hadamard package: Q from T/2^b (Section 6.1), A = estimator (19)."""
    sizes = [int(size) for size in document["block_sizes"]]
    coin = Fraction(int(document["coin"]), 1 << document["bits"])  # T / 2^b
    scale = float(1 / (2 * coin - 1))  # (e^eps' + 1) / (e^eps' - 1) = 2^b / (2T - 2^b)
    orders = [1 << size.bit_length() for size in sizes]
    k, m = sum(sizes), sum(orders)
    channel, estimator = np.zeros((k, m)), np.zeros((k, m))
    x, offset = 0, 0
    for size, order in zip(sizes, orders):
        hadamard = hadamard_matrix(order).astype(float)
        for position in range(size):
            row = hadamard[position + 1]  # the (i+1)th row
            high, low = float(2 * coin / order), float(2 * (1 - coin) / order)
            channel[x, offset : offset + order] = np.where(row > 0, high, low)
            estimator[x, offset : offset + order] = scale * row  # (19): 2c (p(S_x) - p(X_j)/2) = c (H f_j)[i+1]
            x += 1
        offset += order
    return channel, estimator


def high_low_reference(document: dict) -> tuple[np.ndarray, np.ndarray]:
    """(Q, A) of a high-low-hadamard package: Q from T/2^b and K/2^b (channel (13)-(14)), A = (15)-(16)."""
    k, sensitive = int(document["k"]), [int(x) for x in document["sensitive"]]
    total = 1 << document["bits"]
    coin, keep = Fraction(int(document["coin"]), total), Fraction(int(document["keep"]), total)
    scale = float(1 / (2 * coin - 1))
    size = 1 << len(sensitive).bit_length()
    hadamard = hadamard_matrix(size).astype(float)
    channel, estimator = np.zeros((k, size + k - len(sensitive))), np.zeros((k, size + k - len(sensitive)))
    others = [x for x in range(k) if x not in sensitive]
    for i, x in enumerate(sensitive):
        channel[x, :size] = np.where(hadamard[i + 1] > 0, float(2 * coin / size), float(2 * (1 - coin) / size))
        # (15): 2c (p(S_x) - 1/(e^eps'+1)) - c (p([S]) - 2/(e^eps'+1)) = c (H f_[S])[i+1]
        estimator[x, :size] = scale * hadamard[i + 1]
    for i, x in enumerate(others):
        channel[x, :size] = float((1 - keep) / size)
        channel[x, size + i] = float(keep)
        estimator[x, size + i] = scale  # (16)
    return channel, estimator


PACKAGES = {
    # 8 bits: the coin 187/256 differs from e/(1+e) by 6e-4, so the ideal eps would fail the 1e-12 checks
    "block-hadamard": (lambda: build_hadamard_package(BLOCKS, "1", bits=8), block_reference),
    "high-low-hadamard": (lambda: build_high_low_package(12, SENSITIVE, "1", bits=8), high_low_reference),
}


def small_prior(k: int) -> np.ndarray:
    prior = 1.0 / np.arange(1, k + 1) ** 1.2
    return prior / prior.sum()


@pytest.mark.parametrize("kind", PACKAGES)
def test_structured_estimate_and_variance_equal_the_dense_computation(kind):
    build, reference = PACKAGES[kind]
    document = build()
    mechanism = deployed_mechanism(document)
    channel, estimator = reference(document)
    assert np.allclose(channel.sum(axis=1), 1.0, atol=1e-15)
    assert np.abs(estimator @ channel.T - np.eye(mechanism.k)).max() < 1e-12  # A Q^T = I: unbiased for the deployed Q
    rng = np.random.default_rng(3)
    counts = rng.multinomial(20_000, small_prior(mechanism.k) @ channel)
    n = counts.sum()
    frequencies = counts / n
    estimate, errors = structured_unbiased_interval(counts, mechanism)
    covariance = estimator @ (np.diag(frequencies) - np.outer(frequencies, frequencies)) @ estimator.T / n
    assert np.abs(estimate - estimator @ frequencies).max() < 1e-12
    assert np.abs(errors**2 - np.diag(covariance)).max() < 1e-12 * np.diag(covariance).max()
    assert errors.min() > 0


@pytest.mark.parametrize("kind", PACKAGES)
def test_structured_intervals_cover_at_their_level(kind, tmp_path):
    """300 data sets of n = 4000 from the deployed channel: the 95% intervals cover about 95% of the truths."""
    build, reference = PACKAGES[kind]
    document = build()
    write_package(tmp_path / "package.json", document)
    loaded = load_mechanism(tmp_path / "package.json")
    assert loaded.source == f"package ({kind})" and loaded.matrix is None
    channel = reference(document)[0]
    prior = small_prior(loaded.structured.k)
    rng = np.random.default_rng(11)
    covered = total = 0
    for counts in rng.multinomial(4000, prior @ channel, size=300):
        rows = estimate_reports(loaded, list(range(channel.shape[1])), counts.tolist())["estimate"]
        covered += sum(row["low"] <= prior[x] <= row["high"] for x, row in enumerate(rows))
        total += len(rows)
    assert 0.93 <= covered / total <= 0.97  # 3600-5100 intervals: binomial sd ~0.004 (correlated within blocks: wider)


def test_structured_mle_through_transforms_equals_dense_em(tmp_path):
    """--estimator mle on a small structured package: EM via forward/adjoint = EM on the dense deployed channel."""
    document = PACKAGES["block-hadamard"][0]()
    write_package(tmp_path / "package.json", document)
    loaded = load_mechanism(tmp_path / "package.json")
    channel = block_reference(document)[0]
    counts = np.random.default_rng(5).multinomial(50_000, small_prior(loaded.structured.k) @ channel)
    rows = estimate_reports(loaded, list(range(channel.shape[1])), counts.tolist(), "mle")["estimate"]
    dense = maximum_likelihood(counts, channel, tolerance=1e-10).estimate
    values = np.array([row["value"] for row in rows])
    assert np.abs(values - dense).max() < 1e-4  # both within 1e-6 nats of the MLE (here 2.6e-6 apart)
    assert all(row["low"] <= row["value"] <= row["high"] for row in rows)


def test_forged_coins_are_refused(monkeypatch):
    """A coin T <= 2^(b-1) (S_x not the likelier half) or a keep K != 2T - 2^b is not the paper's channel."""
    import designer.deploy.structured as structured

    certified = type("Verified", (), {"certified": True})()
    monkeypatch.setattr(structured, "verify_structured_package", lambda document: certified)
    document = build_hadamard_package(BLOCKS, "1", bits=8)
    with pytest.raises(ValueError, match=r"coin T = 128 <= 2\^8/2"):
        deployed_mechanism({**document, "coin": "128"})
    high_low = build_high_low_package(12, SENSITIVE, "1", bits=8)
    with pytest.raises(ValueError, match=r"keep K = 100 is not 2T - 2\^8 = 118"):
        deployed_mechanism({**high_low, "keep": "100"})


def test_package_hadamard_to_estimate_end_to_end(tmp_path):
    """package-hadamard -> the package's own sampler -> Parquet -> estimate --json, at k x m = 1.1e7 entries."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from designer.deploy.sampler import HadamardSampler, parse_package

    package = tmp_path / "bhr.json"
    made = run_cli("package-hadamard", "--block-sizes", "1500,1200", "--eps", "1", "--bits", "16",
                   "--out", str(package))
    assert made.returncode == 0, made.stderr
    loaded = load_mechanism(package)
    assert loaded.structured is not None and loaded.entries > MAX_MLE_ENTRIES  # 2700 x 4096
    sampler = HadamardSampler(parse_package(package.read_text()), allow_unauthenticated=True)
    rng = np.random.default_rng(2)
    prior = np.full(2700, 0.5 / 2698)
    prior[[7, 2000]] = 0.3, 0.2
    inputs = rng.choice(2700, size=150_000, p=prior)
    reports = np.array([sampler.sample(int(x)) for x in inputs])
    pq.write_table(pa.table({"y": reports}), tmp_path / "reports.parquet")
    result = run_cli("estimate", "--mechanism", str(package), "--reports", str(tmp_path / "*.parquet"), "--json")
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert output["mechanism"] == "package (block-hadamard)" and output["in_alphabet"] == 150_000
    assert "unbiased estimator (19) of context-aware-ldp.md" in output["interval_method"]
    rows = output["estimate"]
    covered = np.mean([row["low"] <= prior[x] <= row["high"] for x, row in enumerate(rows)])
    assert 0.92 <= covered <= 0.98  # 2700 intervals, sd ~0.004
    for x in (7, 2000):  # the heavy symbols: within 5 standard errors (fails with probability < 1e-6)
        assert abs(rows[x]["value"] - prior[x]) < 5 * rows[x]["std_error"]


def test_mle_refused_for_a_large_structured_package_before_counting(tmp_path):
    package = tmp_path / "bhr.json"
    write_package(package, build_hadamard_package([1500, 1200], "1"))
    result = run_cli("estimate", "--mechanism", str(package), "--reports", str(tmp_path / "none-*.parquet"),
                     "--estimator", "mle")
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: --estimator mle: k = 2700 inputs x 4096 outputs is beyond")
    assert "use --no-intervals (the EM estimate alone) or --estimator unbiased" in result.stderr


def test_no_intervals_runs_one_em_on_a_large_structured_package(tmp_path):
    """The package refused above, with --no-intervals: one EM through the transforms, the library's to 1e-9."""
    package = tmp_path / "bhr.json"
    write_package(package, build_hadamard_package([1500, 1200], "1"))
    counts = np.random.default_rng(4).multinomial(20_000, np.full(4096, 1 / 4096))
    (tmp_path / "r.csv").write_text("y\n" + "".join(f"{j}\n" * int(c) for j, c in enumerate(counts)))
    result = run_cli("estimate", "--mechanism", str(package), "--reports", str(tmp_path / "r.csv"),
                     "--estimator", "mle", "--no-intervals", "--json")
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    expected = maximum_likelihood(counts, load_mechanism(package).structured).estimate
    np.testing.assert_allclose([row["value"] for row in output["estimate"]], expected, rtol=0, atol=1e-9)
    assert output["interval_method"] == "none" and output["confidence"] is None
    assert all(row["low"] is None and row["high"] is None for row in output["estimate"])


def test_a_tampered_structured_package_is_refused(tmp_path):
    document = build_hadamard_package(BLOCKS, "1", bits=8)
    write_package(tmp_path / "package.json", {**document, "coin": str(int(document["coin"]) + 1)})
    with pytest.raises(ValueError, match=r"package\.json: SHA-256 mismatch"):
        load_mechanism(tmp_path / "package.json")
