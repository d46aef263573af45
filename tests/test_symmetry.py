"""designer.design.symmetry: class structures, the orbit LP against closed forms, certificates, CLI."""

import itertools
import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.certify import certify
from designer.channel import Channel
from designer.cli import app
from designer.design.vertex import design_by_vertices
from designer.spec import PrivacyMatrix
from designer.design.symmetry import ClassStructure, SymmetryLostError, design_symmetric, twin_classes
from designer.design.symmetry.certify import certify_row_constant, structural_certificate
from designer.design.symmetry.orbits import enumerate_orbits, row_levels
from designer.utility import f_divergence, mutual_information
from reference import random_privacy

runner = CliRunner()


def subset_selection_information(k: int, d: int, epsilon: float) -> float:
    """I(X;Y) of subset selection with subsets of size d (Ye and Barg 2018), uniform prior, from entropies.

    Every d-subset is equally likely (H(Y) = log C(k, d)); given x, the subsets holding x
    have probability e^eps / Z each, the others 1 / Z, ``Z = C(k-1, d-1) e^eps + C(k-1, d)``,
    so ``H(Y|X) = log Z - rho eps`` with ``rho = C(k-1, d-1) e^eps / Z``.
    """
    high, low = math.comb(k - 1, d - 1), math.comb(k - 1, d)
    log_z = math.log(low) + math.log1p(high / low * math.exp(epsilon))
    rho = 1.0 / (1.0 + low / (high * math.exp(epsilon)))
    return math.log(math.comb(k, d)) - log_z + rho * epsilon


def staircase_optimum(k: int, epsilon: float) -> float:
    """Kairouz-Oh-Viswanath / Ye-Barg: the best subset size, ``max_d log(k / s_d) + d eps e^eps / s_d``."""
    d = np.arange(1, k, dtype=float)
    s = d * math.exp(epsilon) + k - d
    return float(np.max(np.log(k / s) + d * epsilon * math.exp(epsilon) / s))


@pytest.mark.parametrize("k, epsilon", [(7, 1.0), (60, 0.5), (1000, 1.0), (1000, 3.0)])
def test_staircase_formula_is_subset_selection(k, epsilon):
    """The independent closed form: the best subset-selection channel's entropies."""
    best = max(subset_selection_information(k, d, epsilon) for d in range(1, k))
    assert staircase_optimum(k, epsilon) == pytest.approx(best, abs=1e-11)


@pytest.mark.parametrize("k, epsilon", [(1000, 1.0), (1000, 0.1), (100_000, 1.0), (100_000, 4.0)])
def test_classic_uniform_optimum_is_the_closed_form(k, epsilon):
    result = design_symmetric(ClassStructure.classic(k, epsilon))
    assert result.objective == pytest.approx(staircase_optimum(k, epsilon), abs=1e-9)
    assert result.certified and abs(result.duality_gap) < 1e-9 and result.dual_residual < 1e-9
    assert len(result.support) == 1  # a single subset size (one orbit)


def test_block_optimum_is_log_blocks_plus_within_block():
    result = design_symmetric(ClassStructure.block([1250] * 35, 1.0))
    assert result.objective == pytest.approx(math.log(35) + staircase_optimum(1250, 1.0), abs=1e-9)
    assert result.channel is None and result.certificate.mode == "structural" and result.certified
    # unequal blocks, uniform prior: I = H(B) + sum_b P(b) I_b (direct sum)
    sizes = [30, 200, 770]
    mass = np.array(sizes) / sum(sizes)
    expected = -float(mass @ np.log(mass)) + sum(m * staircase_optimum(n, 0.7) for m, n in zip(mass, sizes))
    assert design_symmetric(ClassStructure.block(sizes, 0.7)).objective == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    "structure, privacy",
    [
        (ClassStructure.classic(9, 1.3), PrivacyMatrix.classic(9, 1.3)),
        (ClassStructure.high_low(10, 3, 1.0), PrivacyMatrix.high_low(10, range(3), 1.0)),
        (ClassStructure.high_low(9, 1, 2.0), PrivacyMatrix.high_low(9, [0], 2.0)),
        (ClassStructure.block([3, 5, 4], 0.8), PrivacyMatrix.block([3, 5, 4], 0.8)),
        (ClassStructure.utility_optimized(8, 4, 0.5), PrivacyMatrix.high_low(8, range(4), 0.5)),
    ],
)
def test_small_k_matches_enumeration(structure, privacy):
    """Same optimum as the full vertex LP, and the materialised channel achieves it."""
    result = design_symmetric(structure)
    assert result.objective == pytest.approx(design_by_vertices(privacy).objective, abs=1e-10)
    matrix = result.channel.matrix
    np.testing.assert_allclose(matrix.sum(axis=1), 1.0, atol=1e-12)
    assert mutual_information(np.full(privacy.k, 1 / privacy.k), matrix) == pytest.approx(result.objective, abs=1e-10)
    assert certify(result.channel, privacy).certified and result.certificate.mode == "float"


def test_class_constant_prior_and_f_divergences_keep_the_reduction():
    privacy = PrivacyMatrix.classic(10, 1.0)
    prior = np.r_[np.full(4, 0.16), np.full(6, 0.06)]
    structure = twin_classes(privacy, prior)
    assert structure.sizes.tolist() == [4, 6]
    result = design_symmetric(structure)
    assert result.objective == pytest.approx(design_by_vertices(privacy, prior=prior).objective, abs=1e-10)
    for utility in ("kl", "chi-square", "hellinger", "total-variation"):
        symmetric = design_symmetric(structure, utility)
        full = design_by_vertices(privacy, utility, prior=prior)
        assert symmetric.objective == pytest.approx(full.objective, abs=1e-10)
        assert f_divergence(prior, np.full(10, 0.1), symmetric.channel, utility) == pytest.approx(symmetric.objective, abs=1e-10)


def test_twin_classes_of_dense_matrices():
    blocks = twin_classes(PrivacyMatrix.block([3, 4, 2], 1.0))
    assert [sorted(m.tolist()) for m in blocks.class_members()] == [[0, 1, 2], [3, 4, 5, 6], [7, 8]]
    assert np.array_equal(blocks.privacy().epsilon, PrivacyMatrix.block([3, 4, 2], 1.0).epsilon)
    high_low = twin_classes(PrivacyMatrix.high_low(7, [1, 4], 2.0))
    assert sorted(map(len, high_low.class_members())) == [2, 5]
    rng = np.random.default_rng(3)
    values = rng.uniform(0.5, 2.0, (6, 6))
    np.fill_diagonal(values, 0)
    assert twin_classes(PrivacyMatrix(values)).r == 6  # no twins: singletons


def test_symmetry_lost_is_reported():
    line = twin_classes(PrivacyMatrix.metric(np.abs(np.subtract.outer(np.arange(5), np.arange(5))), 1.0))
    with pytest.raises(SymmetryLostError, match="row levels of class"):
        design_symmetric(line)
    singletons = ClassStructure([1] * 25, np.where(np.eye(25) > 0, 1.0, 1.0), np.full(25, 1 / 25))
    with pytest.raises(SymmetryLostError, match="vertex orbits"):
        enumerate_orbits(singletons, *row_levels(singletons))


def test_row_constant_certifier_agrees_with_the_full_certifier():
    structure = ClassStructure.high_low(6, 2, 1.0)
    privacy = structure.privacy()
    epsilon, components = row_levels(structure)
    rng = np.random.default_rng(0)
    for trial in range(40):
        matrix = rng.uniform(0.2, 1.0, (6, 5)) * np.where(rng.random((6, 5)) < 0.1, 0.0, 1.0)
        matrix[:, 0] += 1e-3
        matrix /= matrix.sum(axis=1, keepdims=True)
        full = certify(matrix, privacy)
        fast = certify_row_constant(matrix, structure, epsilon, components)
        assert fast.certified == full.certified
        if np.isfinite(full.margin):
            assert fast.margin == pytest.approx(full.margin, abs=1e-12)


def test_structural_certificate_rejects_a_forged_orbit():
    structure = ClassStructure.classic(50, 1.0)
    epsilon, components = row_levels(structure)
    orbits = enumerate_orbits(structure, epsilon, components)
    weights = np.zeros(orbits.count)
    weights[20] = 50 / orbits.class_sums()[20, 0]
    assert structural_certificate(structure, epsilon, components, orbits, weights).certified
    forged = type(orbits)(orbits.high, orbits.low, orbits.component, orbits.ratio * 1.01)
    assert not structural_certificate(structure, epsilon, components, forged, weights).certified
    weights[20] *= 1.001
    assert "row sums" in structural_certificate(structure, epsilon, components, orbits, weights).detail


# ------------------------------------------------------------------ CLI
def test_cli_dense_classic_uses_the_orbit_lp(tmp_path):
    k = 40
    values = np.full((k, k), 1.0)
    np.fill_diagonal(values, 0)
    e_file = tmp_path / "E.csv"
    np.savetxt(e_file, values, fmt="%g", delimiter=",")
    out = tmp_path / "Q.csv"
    outcome = runner.invoke(app, ["design", "--E", str(e_file), "--out", str(out), "--json"])
    assert outcome.exit_code == 0, outcome.output
    summary = json.loads(outcome.stdout)
    assert summary["objective"] == pytest.approx(staircase_optimum(k, 1.0), abs=1e-12)
    assert "twin classes" in summary["method_note"] and summary["materialised"]
    assert np.loadtxt(out, delimiter=",").shape == (k, summary["n_outputs"])


def test_cli_family_and_class_file(tmp_path):
    out = tmp_path / "D.json"
    outcome = runner.invoke(app, ["design", "--family", "ldp", "--k", "100000", "--eps", "1", "--out", str(out)])
    assert outcome.exit_code == 0, outcome.output
    assert "class-level design" in outcome.stdout and "certified" in outcome.stdout
    assert json.loads(out.read_text())["objective"] == pytest.approx(staircase_optimum(100_000, 1.0), abs=1e-9)
    classes = tmp_path / "E.json"
    classes.write_text(json.dumps({"classes": [{"size": 3}, {"size": 5}], "levels": [[1, 1], ["inf", "inf"]]}))
    outcome = runner.invoke(app, ["design", "--classes", str(classes), "--out", str(tmp_path / "Q.csv"), "--json"])
    expected = design_by_vertices(PrivacyMatrix.high_low(8, range(3), 1.0)).objective
    assert json.loads(outcome.stdout)["objective"] == pytest.approx(expected, abs=1e-10)


@pytest.mark.parametrize(
    "document, message",
    [
        ({"classes": [{"size": 0}], "levels": [[1]]}, "classes[0].size must be a positive integer"),
        ({"classes": [{"size": 2}], "levels": [[-1]]}, "levels[0][0] = -1 must be a number >= 0"),
        ({"classes": [{"size": 2}, {"size": 1}], "levels": [[1]]}, "'levels' must be a 2 x 2"),
        ({"classes": [{"size": 2}], "levels": [[1]], "prior": [0.5]}, "'prior' must sum to 1"),
        ({"classes": [{"size": 2}], "levels": [[1]], "extra": 1}, "unknown field 'extra'"),
    ],
)
def test_cli_bad_class_file_is_one_line(tmp_path, document, message):
    classes = tmp_path / "E.json"
    classes.write_text(json.dumps(document))
    out = tmp_path / "Q.csv"
    outcome = runner.invoke(app, ["design", "--classes", str(classes), "--out", str(out)])
    assert outcome.exit_code == 2 and message in outcome.stderr
    assert len(outcome.stderr.strip().splitlines()) == 1 and not out.exists()


def test_cli_needs_exactly_one_source(tmp_path):
    outcome = runner.invoke(app, ["design", "--family", "block", "--k", "10", "--out", str(tmp_path / "Q.csv")])
    assert outcome.exit_code == 2 and "--family block needs --blocks" in outcome.stderr
    outcome = runner.invoke(app, ["design", "--out", str(tmp_path / "Q.csv")])
    assert outcome.exit_code == 2 and "exactly one of --E, --classes, --family" in outcome.stderr


# ------------------------------------------------------------ mechanisms
def test_mechanism_utilities_match_their_channels():
    from designer.mechanisms import (
        BlockHadamardResponse,
        GeneralizedRandomizedResponse,
        HadamardResponse,
        HighLowHadamardResponse,
    )
    from designer.design.symmetry.compare import mechanism_utilities

    def values(structure):
        return {row.name: row.value for row in mechanism_utilities(structure, 1.0)}

    uniform = lambda k: np.full(k, 1 / k)  # noqa: E731
    classic = values(ClassStructure.classic(11, 1.2))
    assert classic["randomised response"] == pytest.approx(
        mutual_information(uniform(11), GeneralizedRandomizedResponse(11, 1.2).channel()), abs=1e-12
    )
    assert classic["Hadamard response"] == pytest.approx(mutual_information(uniform(11), HadamardResponse(11, 1.2).channel()), abs=1e-12)
    assert classic["subset selection"] == pytest.approx(subset_selection_information(11, math.ceil(11 / (math.exp(1.2) + 1)), 1.2), abs=1e-12)
    block = values(ClassStructure.block([3, 5, 4], 0.7))
    assert block["block Hadamard response"] == pytest.approx(
        mutual_information(uniform(12), BlockHadamardResponse([3, 5, 4], 0.7).channel()), abs=1e-12
    )
    high_low = values(ClassStructure.high_low(9, 3, 1.0))
    assert high_low["high-low Hadamard response"] == pytest.approx(
        mutual_information(uniform(9), HighLowHadamardResponse(9, 3, 1.0).channel()), abs=1e-12
    )
    # uRR (Murakami and Kawamoto 2019) built entry by entry: outputs = inputs
    s, w, e = 3, 9, math.e
    urr = np.zeros((w, w))
    urr[:, :s] = 1 / (s + e - 1)
    urr[np.arange(s), np.arange(s)] = e / (s + e - 1)
    urr[np.arange(s, w), np.arange(s, w)] = (e - 1) / (s + e - 1)
    assert certify(urr, PrivacyMatrix.high_low(w, range(s), 1.0)).certified
    assert high_low["uRR (utility-optimized RR)"] == pytest.approx(mutual_information(uniform(w), urr), abs=1e-12)


def rappor_table(k: int, s: int, a, b, c) -> np.ndarray:
    """uRAP's k x 2^k channel by brute force: every bit vector, the product of its per-bit probabilities."""
    rows = []
    for x in range(k):
        row = []
        for bits in itertools.product((0, 1), repeat=k):
            value = 1
            for j, bit in enumerate(bits):
                one = (a if j == x else b) if j < s else (c if j == x else 0)
                value *= one if bit else 1 - one
            row.append(value)
        rows.append(row)
    return np.array(rows, dtype=object)


@pytest.mark.parametrize("k, s, epsilon, class_mass", [(8, 3, math.log(4), None), (7, 2, 1.0, 0.6), (6, 1, 0.5, 0.05), (8, 6, 2.5, 0.9)])
def test_utility_optimized_rappor_information_against_all_bit_vectors(k, s, epsilon, class_mass):
    """Class-level uRAP information (per-bit independence) = I(X;Y) over all 2^k outputs, any class prior."""
    from designer.design.symmetry.compare import mechanism_utilities, rappor_bits, utility_optimized_rappor

    prior = np.full(k, 1 / k) if class_mass is None else np.r_[np.full(s, class_mass / s), np.full(k - s, (1 - class_mass) / (k - s))]
    structure = ClassStructure.high_low(k, s, epsilon).with_distributions(prior)
    table = rappor_table(k, s, *rappor_bits(s, epsilon)).astype(float)
    table = table[:, table.sum(axis=0) > 0]
    assert utility_optimized_rappor(structure, epsilon) == pytest.approx(mutual_information(prior, table), abs=1e-12)
    assert certify(table, PrivacyMatrix.high_low(k, range(s), epsilon)).certified
    if class_mass is None:
        rows = {row.name: row.value for row in mechanism_utilities(ClassStructure.high_low(k, s, epsilon), 1.0)}
        assert rows["uRAP (utility-optimized RAPPOR)"] == pytest.approx(mutual_information(prior, table), abs=1e-12)


def test_utility_optimized_rappor_is_exactly_e_ldp_at_log_4():
    """At eps = log 4 the bit probabilities are rational (2/3, 1/3, 1/2): the exact certifier decides the 2^8 table."""
    from fractions import Fraction

    from designer.design.symmetry.compare import rappor_bits

    assert rappor_bits(3, math.log(4)) == pytest.approx((2 / 3, 1 / 3, 1 / 2), abs=1e-15)
    table = rappor_table(8, 3, Fraction(2, 3), Fraction(1, 3), Fraction(1, 2))
    table = table[:, [any(value != 0 for value in column) for column in table.T]]
    privacy = PrivacyMatrix(np.array([["0" if x == z else ("log(4)" if x < 3 else "inf") for z in range(8)] for x in range(8)], dtype=object))
    verdict = certify(Channel(table), privacy, exact=True)
    assert verdict.certified and verdict.margin == 0  # tight: the sensitive bits and the revealing bit use all of eps


def uldp_holds(table: np.ndarray, k: int, s: int, level) -> bool:
    """(X_S, Y_P, eps)-ULDP (Murakami and Kawamoto 2019), decided exactly on a table over all 2^k bit vectors.

    Invertible outputs Y_I (some non-sensitive bit set) must have exactly one input with positive
    probability, a non-sensitive one; on protected outputs Y_P (no non-sensitive bit set) every pair
    of inputs must satisfy ``Q(y|x) <= e^eps Q(y|x')``.
    """
    for index, bits in enumerate(itertools.product((0, 1), repeat=k)):
        column = table[:, index]
        if any(bits[s:]):
            positive = [x for x in range(k) if column[x] > 0]
            if column.any() and (len(positive) != 1 or positive[0] < s):
                return False
        elif max(column) > level * min(column):
            return False
    return True


def test_utility_optimized_rappor_parameters_are_the_largest_meeting_uldp():
    """uRAP's bits at eps = log 4 meet ULDP (the paper's definition, decided exactly), and a larger
    non-sensitive keep probability, or sensitive bits at more than eps / 2, break it."""
    from fractions import Fraction

    from designer.design.symmetry.compare import rappor_bits

    k, s, level = 6, 2, Fraction(4)
    a, b, c = Fraction(2, 3), Fraction(1, 3), Fraction(1, 2)  # e^(eps/2) = 2: 2/3, 1/3, 1 - 1/2
    assert rappor_bits(s, math.log(4)) == pytest.approx((float(a), float(b), float(c)), abs=1e-15)
    assert uldp_holds(rappor_table(k, s, a, b, c), k, s, level)
    assert not uldp_holds(rappor_table(k, s, a, b, c + Fraction(1, 100)), k, s, level)
    assert not uldp_holds(rappor_table(k, s, a + Fraction(1, 100), b - Fraction(1, 100), c), k, s, level)


def test_cli_compare_table_json_and_plot(tmp_path):
    plot = tmp_path / "cmp.png"
    arguments = ["design", "--family", "high-low", "--k", "43750", "--sensitive", "100", "--eps", "1", "--compare"]
    outcome = runner.invoke(app, [*arguments, "--out", str(tmp_path / "D.json"), "--json", "--plot", str(plot), "--plot-eps", "0.5,2"])
    assert outcome.exit_code == 0, outcome.output
    summary = json.loads(outcome.stdout)
    shares = {row["name"]: row["share"] for row in summary["compare"]}
    assert 0 < shares["high-low Hadamard response"] < 1 and shares["randomised response"] < shares["high-low Hadamard response"]
    assert plot.read_bytes()[:4] == b"\x89PNG" and summary["compare_curves"]["epsilon"] == [0.5, 2.0]
    outcome = runner.invoke(app, ["design", "--E", "x.csv", "--out", str(tmp_path / "Q.csv"), "--plot", str(plot)])
    assert outcome.exit_code == 2 and "add --compare" in outcome.stderr


# ------------------------------------------------------ column generation
@pytest.mark.parametrize("seed", [1, 4])
def test_column_generation_bounds_bracket_the_enumerated_optimum(seed):
    from designer.design.gap import design_with_gap

    privacy = random_privacy(6, seed)
    exact = design_by_vertices(privacy).objective
    seen = []
    result = design_with_gap(privacy, gap_tolerance=1e-5, max_seconds=30, progress=lambda lo, up, s: seen.append((lo, up)))
    assert result.certified and result.stopped == "gap"
    assert result.lower <= exact + 1e-9 <= result.upper + 2e-9
    assert result.upper - result.lower <= 1e-5 * result.upper + 1e-12
    assert mutual_information(np.full(6, 1 / 6), result.channel) == pytest.approx(result.lower, abs=1e-12)
    assert all(up >= exact - 1e-9 for _, up in seen)  # every reported upper bound is valid


def test_column_generation_time_budget_reports_the_gap(tmp_path):
    privacy = random_privacy(12, 2)
    e_file = tmp_path / "E.csv"
    np.savetxt(e_file, privacy.epsilon, fmt="%.17g", delimiter=",")
    arguments = ["design", "--E", str(e_file), "--out", str(tmp_path / "Q.csv"), "--method", "column-generation"]
    outcome = runner.invoke(app, [*arguments, "--max-seconds", "1", "--gap", "0", "--threads", "2", "--json"])
    assert outcome.exit_code == 0, outcome.output
    summary = json.loads(outcome.stdout)
    assert summary["stopped"] == "time" and summary["optimal"] is False and summary["certified"]
    assert summary["threads"] == 2
    assert summary["pricing"] in {"single tree", "split by the smallest coordinate"}
    assert 0 <= summary["lower"] <= summary["upper"] and summary["gap"] == pytest.approx(
        (summary["upper"] - summary["lower"]) / summary["upper"]
    )
    written = (tmp_path / "Q.csv").read_bytes()
    refused = runner.invoke(app, [*arguments, "--threads", "0"])
    assert refused.exit_code == 2 and "--threads must be at least 1, got 0" in refused.stderr
    assert (tmp_path / "Q.csv").read_bytes() == written


def test_cli_says_when_symmetry_was_lost(tmp_path):
    e_file = tmp_path / "E.csv"
    np.savetxt(e_file, random_privacy(17, 3).epsilon, fmt="%.17g", delimiter=",")
    outcome = runner.invoke(app, ["design", "--E", str(e_file), "--out", str(tmp_path / "Q.csv"), "--max-seconds", "1",
                                  "--json"])
    assert outcome.exit_code == 0, outcome.output  # its enumeration does not finish in half a second: column generation
    summary = json.loads(outcome.stdout)
    note = summary["method_note"]
    assert summary["method"] == "column-generation" and summary["certified"]
    assert note.startswith("symmetry lost (17 twin classes") and "vertex enumeration" in note
    assert "did not finish in 0.5 s" in note and "column generation with certified bounds instead" in note
    refused = runner.invoke(app, ["design", "--E", str(e_file), "--out", str(tmp_path / "Q2.csv"), "--max-seconds", "1",
                                  "--method", "enumerate"])
    assert refused.exit_code == 2 and "did not finish" in refused.stderr and not (tmp_path / "Q2.csv").exists()
    assert len(refused.stderr.strip().splitlines()) == 1
    rng = np.random.default_rng(5)  # k = 18: six blocks of 3 with random levels, no twins; enumeration runs
    values = np.full((18, 18), np.inf)
    for start in range(0, 18, 3):
        values[start : start + 3, start : start + 3] = rng.uniform(0.5, 2.0, (3, 3))
    np.fill_diagonal(values, 0)
    blocks = tmp_path / "blocks.csv"
    np.savetxt(blocks, values, fmt="%.17g", delimiter=",")
    outcome = runner.invoke(app, ["design", "--E", str(blocks), "--out", str(tmp_path / "Q.csv"), "--json"])
    assert outcome.exit_code == 0, outcome.output
    assert json.loads(outcome.stdout)["method_note"].startswith("symmetry lost (18 twin classes")


def test_few_valued_matrices_are_written_as_the_generic_writer_would(tmp_path):
    from designer.io import format_number, matrix_csv_writer, write_files

    rng = np.random.default_rng(1)
    matrix = rng.choice([0.1, 1 / 3, math.e / 7, 0.0], size=(150, 90))
    write_files([(tmp_path / "Q.csv", matrix_csv_writer(matrix))])
    expected = "".join(",".join(format_number(value) for value in row) + "\n" for row in matrix)
    assert (tmp_path / "Q.csv").read_text() == expected


def test_relaxation_bound_is_valid_and_tight_for_row_constant_e():
    from designer.design.gap.column_generation import symmetric_relaxation_bound

    for seed in range(4):
        privacy = random_privacy(7, seed)
        assert symmetric_relaxation_bound(privacy, np.full(7, 1 / 7)) >= design_by_vertices(privacy).objective - 1e-12
    high_low = PrivacyMatrix.high_low(9, range(3), 1.0)  # already row-constant: E' = E, the bound is the optimum
    assert symmetric_relaxation_bound(high_low, np.full(9, 1 / 9)) == pytest.approx(design_by_vertices(high_low).objective, abs=1e-10)


def test_family_with_a_prior_constant_on_parts_keeps_the_reduction(tmp_path):
    prior = np.r_[np.full(30, 0.5 / 30), np.full(70, 0.5 / 70)]
    structure = ClassStructure.classic(100, 1.0).with_distributions(prior)
    assert structure.sizes.tolist() == [30, 70]
    result = design_symmetric(structure)
    assert result.certified and abs(mutual_information(prior, result.channel) - result.objective) < 1e-10
    small = ClassStructure.high_low(9, 3, 1.0).with_distributions(np.r_[0.2, 0.2, 0.1, np.full(6, 0.5 / 6)])
    assert small.r == 3
    full = design_by_vertices(PrivacyMatrix.high_low(9, range(3), 1.0), prior=np.r_[0.2, 0.2, 0.1, np.full(6, 0.5 / 6)])
    assert design_symmetric(small).objective == pytest.approx(full.objective, abs=1e-10)


def test_relaxation_bound_enumerates_the_orbits_once_and_matches_the_two_pass_route(monkeypatch):
    import designer.design.symmetry.design as design_module
    from designer.design.gap.column_generation import symmetric_relaxation_bound
    from designer.design.symmetry.exact import information_upper_bound

    calls, structures = [], []
    enumerate_once, solve = design_module.enumerate_orbits, design_module.solve_orbits

    def counted(*arguments):
        calls.append(1)
        return enumerate_once(*arguments)

    def captured(structure, *arguments):
        structures.append(structure)
        return solve(structure, *arguments)

    monkeypatch.setattr(design_module, "enumerate_orbits", counted)
    monkeypatch.setattr(design_module, "solve_orbits", captured)
    privacy = random_privacy(7, 3)
    bound = symmetric_relaxation_bound(privacy, np.full(7, 1 / 7))
    assert len(calls) == 1 and len(structures) == 1
    monkeypatch.undo()
    structure = structures[0]  # the route before: design the relaxation, then enumerate its orbits again
    epsilon, components = row_levels(structure)
    duals = design_symmetric(structure, materialise=False).duals
    assert bound == information_upper_bound(structure, components, epsilon, enumerate_orbits(structure, epsilon, components), duals)
    assert bound >= design_by_vertices(privacy).objective


def test_solve_orbits_is_the_orbit_lp_of_design_symmetric():
    from designer.design.symmetry.design import solve_orbits

    structure = ClassStructure.utility_optimized(30, 5, 1.0)
    optimum, design = solve_orbits(structure), design_symmetric(structure)
    assert optimum.objective == design.objective and np.array_equal(optimum.duals, design.duals)
    assert optimum.orbits.count == design.n_orbits and np.array_equal(optimum.epsilon, design.row_levels)


def test_relaxation_levels_are_above_the_exact_closure(monkeypatch):
    """E' >= E* for the closure in rationals: the float sum 1.316 + 0.503 rounds below the true path sum."""
    from fractions import Fraction

    import designer.design.symmetry.design as design_module
    from designer.design.gap.column_generation import symmetric_relaxation_bound

    a, b = 1.316, 0.503
    assert Fraction(a) + Fraction(b) > Fraction(a + b)  # E*[0, 2] = a + b (through 1) is rounded down
    privacy = PrivacyMatrix(np.array([[0, a, np.inf], [0.05, 0, b], [0.05, 0.05, 0]]))
    structures, solve = [], design_module.solve_orbits
    monkeypatch.setattr(design_module, "solve_orbits", lambda structure, *rest: structures.append(structure) or solve(structure, *rest))
    bound = symmetric_relaxation_bound(privacy, np.full(3, 1 / 3))
    (structure,) = structures
    row = next(index for index, members in enumerate(structure.members) if 0 in members)
    assert Fraction(float(structure.levels[row, 0])) >= Fraction(a) + Fraction(b)  # the top level is row 0's maximum
    assert bound >= design_by_vertices(privacy).objective
