"""Server-side estimation for orbit packages: the channel operator, EM through it, and the CLI.

The operator's products are compared with the dense table of
:func:`designer.deploy.orbit.orbit_channel` (exact Fractions, built independently from the
package's cells) for classic, block, high-low, utility-optimized and interleaved class
structures; EM through the operator with EM on that table; the CLI end to end with reports
drawn by the stdlib sampler.
"""

from __future__ import annotations

import copy
import json
import random
import types

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.aggregate.estimate import check_estimator, estimate_reports, load_mechanism, unbiased_interval
from designer.aggregate.orbit_unbiased import OrbitSpectrum
from designer.cli import app
from designer.deploy.orbit import build_orbit_package, orbit_channel
from designer.deploy.orbit_operator import OrbitOperator
from designer.deploy import sampler as sampler_module
from designer.deploy.sampler import OrbitSampler, check_orbit_structure
from designer.estimation import maximum_likelihood, tv_distance
from designer.design.symmetry import ClassStructure, design_symmetric
from orbit_structures import BASIC_STRUCTURES

runner = CliRunner()
N_REPORTS = 200_000
INF = np.inf

STRUCTURES = {
    **BASIC_STRUCTURES,
    # orbits whose columns T are multiples of two class sizes (T / n_a = 3 and 2), classes interleaved
    "interleaved4-6": ClassStructure([4, 6], [[1.0, 1.0], [1.0, 1.0]], [0.1, 0.1],
                                     members=[np.array([0, 3, 5, 9]), np.array([1, 2, 4, 6, 7, 8])]),
    "asymmetric2-3-4": ClassStructure([2, 3, 4], [[1.0] * 3, [0.5] * 3, [2.0] * 3], [1 / 9] * 3),
    "interleaved-block": ClassStructure([3, 4], [[2.0, INF], [INF, 2.0]], [1 / 7, 1 / 7],
                                        members=[np.array([0, 3, 5]), np.array([1, 2, 4, 6])]),
    # full rank with two classes on one orbit (T = 12 = 4 n_0 = 3 n_1; T = 15, 10 over sizes 2, 3, 5)
    "coupled3-4": ClassStructure([3, 4], [[0.5, 0.5], [1.0, 1.0]], [1 / 7, 1 / 7],
                                 members=[np.array([1, 4, 6]), np.array([0, 2, 3, 5])]),
    "coupled2-3-5": ClassStructure([2, 3, 5], [[1.5] * 3, [1.5] * 3, [0.8] * 3], [0.1] * 3),
}
#: rank of the dense table (numpy's matrix_rank) of each structure's package
RANKS = {"classic6": 5, "block3-4": 7, "high-low9": 6, "uldp7": 5, "interleaved4-6": 9, "asymmetric2-3-4": 7,
         "interleaved-block": 7, "coupled3-4": 7, "coupled2-3-5": 10}


@pytest.fixture(scope="module")
def packages() -> dict:
    return {name: build_orbit_package(design_symmetric(structure)) for name, structure in STRUCTURES.items()}


@pytest.fixture(params=list(STRUCTURES))
def dense(request, packages) -> tuple[str, np.ndarray, OrbitOperator]:
    """Each structure's name, dense table (float) and operator."""
    document = packages[request.param]
    return request.param, orbit_channel(document).astype(float), OrbitOperator(check_orbit_structure(document))


def test_operator_products_equal_the_dense_table(dense):
    _, table, operator = dense
    assert (operator.k, operator.n_outputs) == table.shape
    rng = np.random.default_rng(7)
    for _ in range(3):
        p, w = rng.random(operator.k), rng.standard_normal(operator.n_outputs)
        np.testing.assert_allclose(operator.forward(p), p @ table, rtol=0, atol=1e-14)
        np.testing.assert_allclose(operator.adjoint(w), table @ w, rtol=0, atol=1e-13)
    np.testing.assert_allclose(operator.forward(np.full(operator.k, 1.0)), table.sum(axis=0), atol=1e-14)
    np.testing.assert_allclose(operator.adjoint(np.ones(operator.n_outputs)), 1.0, atol=1e-14)  # rows sum to 1


def test_the_structures_cover_multiples_and_constant_classes(packages):
    """The cases the cyclic sums treat apart: T = 3 n_a and 2 n_b; a class constant on an orbit."""
    interleaved = check_orbit_structure(packages["interleaved4-6"])
    assert 12 in interleaved.columns
    high_low = check_orbit_structure(packages["high-low9"])
    assert any(high_low.high[o][a] == n or high_low.low[o][a] == n
               for o in range(len(high_low.columns)) for a, n in enumerate(high_low.sizes))


def test_em_through_the_operator_equals_em_on_the_table(dense):
    _, table, operator = dense
    rng = np.random.default_rng(3)
    counts = rng.multinomial(5000, rng.dirichlet(np.ones(operator.k)) @ table)
    dense = maximum_likelihood(counts, table, tolerance=1e-12)
    fast = maximum_likelihood(counts, operator, tolerance=1e-12)
    assert dense.converged and fast.converged  # (SQUAREM step counts may differ by rounding)
    np.testing.assert_allclose(fast.estimate, dense.estimate, rtol=0, atol=1e-9)
    assert fast.log_likelihood == pytest.approx(dense.log_likelihood, abs=1e-12)


def test_spectrum_rank_equals_the_dense_rank(dense):
    name, table, operator = dense
    spectrum = OrbitSpectrum(operator)
    assert np.linalg.matrix_rank(table) == RANKS[name] == spectrum.rank
    assert (spectrum.unidentifiable() is None) == (RANKS[name] == table.shape[0])


@pytest.mark.parametrize("name", [name for name in STRUCTURES if RANKS[name] == STRUCTURES[name].k])
def test_unbiased_estimate_and_errors_equal_the_dense_ones(packages, name):
    """(Q Q^T)^-1 Q f and sqrt(diag A (diag f - f f^T) A^T / n) by Fourier blocks = lstsq and pinv on the table."""
    document = packages[name]
    table = orbit_channel(document).astype(float)
    spectrum = OrbitSpectrum(OrbitOperator(check_orbit_structure(document)))
    rng = np.random.default_rng(11)
    counts = rng.multinomial(3000, rng.dirichlet(np.ones(table.shape[0])) @ table)
    estimate, errors = spectrum.interval(counts)
    dense_estimate, dense_errors = unbiased_interval(counts, table)
    np.testing.assert_allclose(estimate, dense_estimate, rtol=0, atol=1e-9)
    np.testing.assert_allclose(errors, dense_errors, rtol=0, atol=1e-9)
    np.testing.assert_allclose(spectrum.estimate(counts), dense_estimate, rtol=0, atol=1e-9)
    truth = rng.dirichlet(np.ones(table.shape[0]))
    np.testing.assert_allclose(spectrum.estimate(truth @ table), truth, atol=1e-9)  # unbiased: A Q^T p = p


def test_unbiased_intervals_cover_at_their_level(packages):
    """95% intervals of the Fourier-block estimator cover the truth 95% of the time (300 data sets, n = 20,000)."""
    document = packages["coupled2-3-5"]
    table = orbit_channel(document).astype(float)
    spectrum = OrbitSpectrum(OrbitOperator(check_orbit_structure(document)))
    rng = np.random.default_rng(17)
    truth = rng.dirichlet(np.full(table.shape[0], 2.0))
    covered = []
    for counts in rng.multinomial(20_000, truth @ table, size=300):
        estimate, errors = spectrum.interval(counts)
        covered.append(np.abs(estimate - truth) <= 1.959964 * errors)
    # 3,000 intervals, correlated within a data set: 0.95 +- 0.02 is over 4 binomial sds of 300 sets
    assert abs(np.mean(covered) - 0.95) < 0.02


def test_operator_at_gowalla_scale_is_a_channel():
    """Block E, 35 x 1,250 (k = 43,750): rows sum to 1 and p @ Q is a distribution, no k x m table."""
    document = build_orbit_package(design_symmetric(ClassStructure.block([1250] * 35, 1.0), materialise=False))
    operator = OrbitOperator(check_orbit_structure(document))
    assert operator.k == operator.n_outputs == 43_750
    assert len(operator.bands) == 35  # one class per orbit: the other 34 never report it
    np.testing.assert_allclose(operator.adjoint(np.ones(operator.n_outputs)), 1.0, atol=1e-12)
    p = np.random.default_rng(0).dirichlet(np.ones(operator.k))
    q = operator.forward(p)
    assert q.min() >= 0 and q.sum() == pytest.approx(1.0, abs=1e-12)
    # block structure: an input's outputs stay in its block (E = inf across blocks)
    point = np.zeros(operator.k)
    point[1250 * 7 + 3] = 1.0
    assert np.flatnonzero(operator.forward(point)).min() >= 1250 * 7
    assert np.flatnonzero(operator.forward(point)).max() < 1250 * 8


def test_load_mechanism_verifies_the_orbit_package(packages, tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(packages["uldp7"]))
    mechanism = load_mechanism(path)
    assert isinstance(mechanism.structured, OrbitOperator)
    assert mechanism.source == "package (orbit)"
    assert mechanism.output_labels == tuple(str(j) for j in range(mechanism.structured.n_outputs))
    tampered = copy.deepcopy(packages["uldp7"])
    tampered["orbits"][0]["cells_high"][0] = str(int(tampered["orbits"][0]["cells_high"][0]) - 1)
    path.write_text(json.dumps(tampered))
    with pytest.raises(ValueError, match="p.json: "):
        load_mechanism(path)


def test_cli_estimate_of_an_orbit_package_end_to_end(tmp_path, monkeypatch):
    """design --package, stdlib sampler's reports, estimate (mle, unbiased): TV to the truth near its expected size.

    The sampler draws from ``secrets``; here from a seeded stream with the same two calls, so the test is
    deterministic (unseeded, the 2.5x bound below fails in about 0.4% of runs per estimator: the linear
    inverse's TV exceeds 2.5 times its mean with probability 0.0036 by Monte Carlo).
    """
    seeded = random.Random(11)
    monkeypatch.setattr(sampler_module, "secrets",
                        types.SimpleNamespace(randbits=seeded.getrandbits, randbelow=seeded.randrange))
    package = tmp_path / "p.json"
    designed = runner.invoke(app, ["design", "--family", "ldp", "--k", "7", "--eps", "1", "--out",
                                   str(tmp_path / "d.json"), "--package", str(package), "--json"])
    assert designed.exit_code == 0, designed.output
    document = json.loads(package.read_text())
    assert document["kind"] == "orbit"
    table = orbit_channel(document).astype(float)
    assert np.linalg.matrix_rank(table) == 7  # identifiable: the MLE is unique
    sampler = OrbitSampler(document, allow_unauthenticated=True)
    truth = np.array([0.3, 0.05, 0.05, 0.25, 0.1, 0.1, 0.15])
    inputs = np.random.default_rng(5).choice(7, N_REPORTS, p=truth)
    reports = tmp_path / "r.csv"
    reports.write_text("y\n" + "\n".join(str(sampler.sample(int(x))) for x in inputs) + "\n")
    # the bound: 2.5 x the expected TV of the linear inverse, sum_x sd_x sqrt(2 / pi) / 2 with
    # sd^2 = diag(A (diag q - q q^T) A^T) / n, A = pinv(Q^T), q = truth @ Q (about 0.019 here)
    inverse, q = np.linalg.pinv(table.T), truth @ table
    sd = np.sqrt(np.diag(inverse @ (np.diag(q) - np.outer(q, q)) @ inverse.T) / N_REPORTS)
    expected = 0.5 * np.sqrt(2 / np.pi) * sd.sum()
    assert 0.015 < expected < 0.025
    for estimator in ("mle", "unbiased"):
        result = runner.invoke(app, ["estimate", "--mechanism", str(package), "--reports", str(reports),
                                     "--estimator", estimator, "--json"])
        assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout)
        assert summary["mechanism"] == "package (orbit)" and summary["in_alphabet"] == N_REPORTS
        estimate = np.array([row["value"] for row in summary["estimate"]])
        assert tv_distance(estimate, truth) < 2.5 * expected
        assert all(row["low"] <= row["value"] <= row["high"] for row in summary["estimate"])
    # the unbiased run's plug-in standard errors: the exact sd at the truth, to sampling error
    errors = np.array([row["std_error"] for row in summary["estimate"]])
    np.testing.assert_allclose(errors, sd, rtol=0.05)
    assert "Fourier blocks" in summary["interval_method"]
    assert summary["expected_tv_error"] == pytest.approx(np.sqrt(2 / np.pi) / 2 * errors.sum(), rel=1e-12)
    assert summary["expected_tv_error"] == pytest.approx(expected, rel=0.05)
    singular = np.linalg.svd(table, compute_uv=False)
    assert summary["condition_number"] == pytest.approx(singular[0] / singular[-1], rel=1e-9)
    assert "warning" not in result.stderr


def test_cli_warns_when_the_unbiased_estimate_is_useless(tmp_path):
    """Classic LDP at k = 1000, eps = 1 (condition number 5.4e4): expected TV error far above 0.5, one warning."""
    package = tmp_path / "p.json"
    structure = ClassStructure.classic(1000, 1.0)
    package.write_text(json.dumps(build_orbit_package(design_symmetric(structure, materialise=False))))
    operator = OrbitOperator(check_orbit_structure(json.loads(package.read_text())))
    rng = np.random.default_rng(2)
    counts = rng.multinomial(50_000, operator.forward(rng.dirichlet(np.ones(1000))))
    reports = tmp_path / "r.csv"
    reports.write_text("y\n" + "\n".join(map(str, np.repeat(np.arange(operator.n_outputs), counts))) + "\n")
    for extra in (["--json"], []):
        result = runner.invoke(app, ["estimate", "--mechanism", str(package), "--reports", str(reports), *extra])
        assert result.exit_code == 0, result.output
        warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
        assert len(warnings) == 1 and "use --estimator mle" in warnings[0] and "condition number" in warnings[0]
    summary = json.loads(runner.invoke(app, ["estimate", "--mechanism", str(package), "--reports", str(reports),
                                             "--json"]).stdout)
    errors = np.array([row["std_error"] for row in summary["estimate"]])
    assert summary["expected_tv_error"] == pytest.approx(np.sqrt(2 / np.pi) / 2 * errors.sum(), rel=1e-12)
    assert summary["expected_tv_error"] > 100  # 87 at 10^6 reports, so about 390 at 5 x 10^4
    assert summary["condition_number"] == pytest.approx(OrbitSpectrum(operator).condition)
    assert summary["condition_number"] > 1e4
    assert "expected TV error" in result.stdout  # the text output of the second run


def test_cli_refuses_the_linear_inverse_of_a_rank_deficient_orbit_package(packages, tmp_path):
    """classic6's cyclic pattern loses frequency 1/2: rank 5 < 6, no unbiased estimator; EM still runs."""
    path = tmp_path / "p.json"
    path.write_text(json.dumps(packages["classic6"]))
    reports = tmp_path / "r.csv"
    reports.write_text("y\n0\n1\n5\n")
    refused = runner.invoke(app, ["estimate", "--mechanism", str(path), "--reports", str(reports)])
    assert refused.exit_code == 2
    assert "rank 5 < k = 6" in refused.output and "frequency 1/2" in refused.output
    assert "use --estimator mle" in refused.output and "Traceback" not in refused.output
    em = runner.invoke(app, ["estimate", "--mechanism", str(path), "--reports", str(reports), "--estimator", "mle",
                             "--json"])
    assert em.exit_code == 0 and json.loads(em.stdout)["in_alphabet"] == 3


def test_large_orbit_packages_get_the_estimator_that_exists(tmp_path):
    """Beyond the EM bootstrap limit: block E (rank k) is pointed to unbiased; high-low (rank < k) to the library."""
    for structure, advice in ((ClassStructure.block([1250] * 35, 1.0),
                               "use --no-intervals (the EM estimate alone) or --estimator unbiased"),
                              (ClassStructure.high_low(43_750, 3125, 1.0),
                               "use --no-intervals (the EM estimate alone, at any k); this package has no unbiased")):
        path = tmp_path / "p.json"
        path.write_text(json.dumps(build_orbit_package(design_symmetric(structure, materialise=False))))
        mechanism = load_mechanism(path)
        with pytest.raises(ValueError, match="beyond the EM bootstrap limit") as refused:
            check_estimator(mechanism, "mle")
        assert advice in str(refused.value)
    assert mechanism.spectrum.rank == 40_626  # high-low: the 3,125 sensitive symbols share one output
    with pytest.raises(ValueError, match="rank 40626 < k = 43750"):
        check_estimator(mechanism, "unbiased")


def _reports_file(path, counts) -> None:
    path.write_text("y\n" + "".join(f"{j}\n" * int(c) for j, c in enumerate(counts)))


def test_no_intervals_runs_em_on_a_rank_deficient_orbit_package(packages, tmp_path):
    """classic6 (rank 5 < 6): no unbiased estimator, even without intervals; --no-intervals EM is the library's EM
    through the operator (to 1e-9), and within 1e-4 of EM run to tolerance 1e-12 on the dense table of
    orbit_channel (the default tolerance leaves 5e-6)."""
    document = packages["classic6"]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(document))
    table = orbit_channel(document).astype(float)
    operator = OrbitOperator(check_orbit_structure(document))
    rng = np.random.default_rng(11)
    counts = rng.multinomial(5000, rng.dirichlet(np.ones(operator.k)) @ table)
    _reports_file(tmp_path / "r.csv", counts)
    common = ["estimate", "--mechanism", str(path), "--reports", str(tmp_path / "r.csv"), "--no-intervals", "--json"]
    result = runner.invoke(app, [*common, "--estimator", "mle"])
    assert result.exit_code == 0, result.output
    output = json.loads(result.stdout)
    values = [row["value"] for row in output["estimate"]]
    np.testing.assert_allclose(values, maximum_likelihood(counts, operator).estimate, rtol=0, atol=1e-9)
    assert output["interval_method"] == "none" and output["confidence"] is None
    assert all(row["low"] is None and row["high"] is None for row in output["estimate"])
    np.testing.assert_allclose(values, maximum_likelihood(counts, table, tolerance=1e-12).estimate, rtol=0, atol=1e-4)
    refused = runner.invoke(app, [*common, "--estimator", "unbiased"])
    assert refused.exit_code == 2 and "rank 5 < k = 6" in refused.output


def test_no_intervals_lifts_the_em_limit_on_orbit_packages(tmp_path):
    """Classic k = 2001 (4,004,001 entries > MAX_MLE_ENTRIES): refused with intervals, naming --no-intervals;
    without, one EM through the operator, equal to the library's."""
    path = tmp_path / "p.json"
    path.write_text(json.dumps(build_orbit_package(design_symmetric(ClassStructure.classic(2001, 1.0),
                                                                    materialise=False))))
    rng = np.random.default_rng(2)
    counts = np.bincount(rng.integers(0, 2001, 3000), minlength=2001)
    _reports_file(tmp_path / "r.csv", counts)
    common = ["estimate", "--mechanism", str(path), "--reports", str(tmp_path / "r.csv"), "--estimator", "mle"]
    refused = runner.invoke(app, common)
    assert refused.exit_code == 2 and "beyond the EM bootstrap limit" in refused.output
    assert "use --no-intervals" in refused.output
    result = runner.invoke(app, [*common, "--no-intervals", "--json"])
    assert result.exit_code == 0, result.output
    mechanism = load_mechanism(path, "mle", intervals=False)
    expected = maximum_likelihood(counts, mechanism.structured).estimate
    np.testing.assert_allclose([row["value"] for row in json.loads(result.stdout)["estimate"]], expected,
                               rtol=0, atol=1e-9)


def test_reports_outside_an_orbit_package_are_named(packages, tmp_path):
    """A value that is no output of the package: counted and listed; none inside: exit 2 naming them."""
    path = tmp_path / "p.json"
    path.write_text(json.dumps(packages["classic6"]))
    mechanism = load_mechanism(path)
    m = mechanism.structured.n_outputs
    result = estimate_reports(mechanism, [0, 1, m, -1, "x"], [40, 60, 3, 2, 1], estimator="mle")
    assert result["in_alphabet"] == 100
    assert result["outside_alphabet"] == {"count": 6, "distinct": 3, "values": {str(m): 3, "-1": 2, "x": 1}}
    reports = tmp_path / "r.csv"
    reports.write_text(f"y\n{m}\n{m + 1}\n")
    refused = runner.invoke(app, ["estimate", "--mechanism", str(path), "--reports", str(reports),
                                  "--estimator", "mle"])
    assert refused.exit_code == 2
    assert "no report is in the mechanism's output alphabet" in refused.output and "2 reports outside" in refused.output


def _classic_rank(structure) -> int:
    """``rank Q`` of a classic package by the exact rule (docs/scale.md): k minus the lost frequencies.

    One class of n = k ranks; on orbit o its pattern is h on j ranks then w on the next l
    (h != w, both > 0). With ``z = e^{2 pi i s / n} != 1``, ``(1 - z) sum_d v(d) z^d =
    h - (h - w) z^j - w z^{j + l}``, which vanishes iff ``z^j = z^l = 1`` (the two last terms
    must add up to h in modulus), i.e. iff n divides ``s gcd(j, l)``. A frequency s/n is lost
    iff it vanishes on every orbit.
    """
    n = structure.k
    lost = np.ones(n, dtype=bool)
    lost[0] = False  # frequency 0: the row masses, positive
    for j, l in zip(structure.high, structure.low):
        step = n // np.gcd(n, np.gcd(j[0], l[0]))
        lost &= np.arange(n) % step == 0
    return n - int(lost.sum())


@pytest.mark.parametrize("k, eps", [(6, 1.0), (12, 0.5), (30, 1.0), (48, 2.0)])
def test_classic_rank_equals_numpy_and_the_exact_rule(k, eps):
    """The SVD rank of the blocks = numpy's matrix_rank of the dense table = the integer rule."""
    document = build_orbit_package(design_symmetric(ClassStructure.classic(k, eps)))
    structure = check_orbit_structure(document)
    operator = OrbitOperator(structure)
    assert all(band.high != band.low and band.low > 0 for band in operator.bands)  # the rule's premise
    rank = OrbitSpectrum(operator).rank
    assert rank == np.linalg.matrix_rank(orbit_channel(document).astype(float)) == _classic_rank(structure)


@pytest.mark.parametrize("k, eps, expected", [(1675, 0.5, 1675), (4999, 1.0, 4999), (43_750, 1.0, 43_749)])
def test_large_classic_ranks_are_not_cut_at_the_square_root_of_eps(k, eps, expected):
    """A cut on sigma^2 (eigenvalues of Q Q^T) drops well-resolved singular values: 1673, 4993, 41,519."""
    structure = check_orbit_structure(build_orbit_package(design_symmetric(ClassStructure.classic(k, eps),
                                                                           materialise=False)))
    spectrum = OrbitSpectrum(OrbitOperator(structure))
    assert spectrum.rank == _classic_rank(structure) == expected
    if expected == k:
        p = np.random.default_rng(5).dirichlet(np.ones(k))
        np.testing.assert_allclose(spectrum.estimate(spectrum.operator.forward(p)), p, rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", [name for name in STRUCTURES if RANKS[name] < STRUCTURES[name].k])
def test_library_estimates_refuse_rank_deficient_channels(packages, name):
    """estimate() and interval() raise the refusal instead of dividing by a zero singular value (NaN)."""
    spectrum = OrbitSpectrum(OrbitOperator(check_orbit_structure(packages[name])))
    counts = np.arange(1, spectrum.operator.n_outputs + 1)
    for method in (spectrum.estimate, spectrum.interval):
        with pytest.raises(ValueError, match=f"rank {RANKS[name]} < k = {STRUCTURES[name].k}"):
            method(counts)


def test_refusal_names_the_classes_of_the_lost_direction(packages):
    """interleaved4-6 loses one direction at frequency 1/2, shared by both classes' blocks: it lies in class 0 only.

    Independent check: the left null vector of the dense table (x Q = 0) is zero on class 1's members.
    """
    structure = STRUCTURES["interleaved4-6"]
    table = orbit_channel(packages["interleaved4-6"]).astype(float)
    left, singular, _ = np.linalg.svd(table)
    assert singular[-1] < 1e-12 * singular[0] and singular[-2] > 1e-3 * singular[0]  # one lost direction
    null = left[:, -1]
    assert np.abs(null[structure.members[1]]).max() < 1e-10 < np.abs(null[structure.members[0]]).min()
    spectrum = OrbitSpectrum(OrbitOperator(check_orbit_structure(packages["interleaved4-6"])))
    group = next(group for group in spectrum.groups if group.q == 2)
    assert group.classes.tolist() == [0, 1]  # the frequency's block spans both classes ...
    assert spectrum.unidentifiable().endswith("frequency 1/2 of the ranks of class(es) 0")  # ... the loss only one


def test_column_value_is_the_cell_mass_shared_by_its_columns():
    """``H n / (2^b T j)`` on each of the ``T j / n`` columns: exact (Fractions) and vectorised alike."""
    from fractions import Fraction

    from designer.deploy.orbit import column_value

    mass = Fraction(2_474_387_174, 1 << 32)
    assert column_value(mass, 6, 12, 2) * Fraction(12 * 2, 6) == mass
    assert column_value(mass, 6, 12, 0) == 0
    counts = np.array([[2.0, 0.0, 3.0]])
    vectorised = column_value(np.array([[0.25, 0.5, 0.125]]), np.array([6.0, 4.0, 9.0]), np.array([[36.0]]), counts)
    np.testing.assert_array_equal(vectorised, [[0.25 * 6 / 72, 0.0, 0.125 * 9 / 108]])


@pytest.mark.parametrize("bits", [16, 32])
def test_operator_reads_the_package_bits(bits):
    """The cells' denominator is 2^bits from the package (not a class's cell sum): values equal the dense table."""
    document = build_orbit_package(design_symmetric(STRUCTURES["coupled2-3-5"]), bits)
    structure = check_orbit_structure(document)
    assert structure.bits == bits
    table = orbit_channel(document).astype(float)
    operator = OrbitOperator(structure)
    rows = np.array([operator.forward(unit) for unit in np.eye(operator.k)])
    np.testing.assert_allclose(rows, table, rtol=0, atol=1e-15)


def test_em_size_is_refused_before_anything_of_size_m_is_built(tmp_path, monkeypatch):
    """Classic k = 2001: k x m = 4,004,001 > 4e6. load_mechanism(..., "mle") refuses from the structure's k and m,
    before the operator's index arrays (or the output labels) exist; the CLI the same way."""
    path = tmp_path / "p.json"
    path.write_text(json.dumps(build_orbit_package(design_symmetric(ClassStructure.classic(2001, 1.0),
                                                                    materialise=False))))

    def no_layout(self):
        raise AssertionError("the O(m) index arrays were built before the size check")

    monkeypatch.setattr(OrbitOperator, "_layout", no_layout)
    with pytest.raises(ValueError, match="k = 2001 inputs x 2001 outputs is beyond the EM bootstrap limit"):
        load_mechanism(path, "mle")
    reports = tmp_path / "r.csv"
    reports.write_text("y\n0\n")
    refused = runner.invoke(app, ["estimate", "--mechanism", str(path), "--reports", str(reports),
                                  "--estimator", "mle"])
    assert refused.exit_code == 2 and "beyond the EM bootstrap limit" in refused.output
    assert "Traceback" not in refused.output and "AssertionError" not in refused.output
    assert load_mechanism(path, "unbiased").structured.k == 2001  # the unbiased route still loads
