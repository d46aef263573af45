"""Central privacy after shuffling: clone reduction bounds against exact enumeration and closed forms."""

import itertools
import json
import math

import numpy as np
import pytest
from reference import randomised_response
from scipy import stats
from typer.testing import CliRunner

from designer.cli import app
from designer.deploy.sampler import package_digest
from designer.deploy.structured import build_hadamard_package, build_high_low_package
from designer.shuffle.analysis import shuffle_guarantee
from designer.shuffle.binary import BinaryPair, binary_deltas
from designer.shuffle.clones import table_pairs
from designer.shuffle.divergence import TwoCountExperiment, _lazy_law, epsilon_of, fmt_generic
from designer.shuffle.lower import CountTest, epsilon_lower
from designer.shuffle.sources import package_pairs

runner = CliRunner()


def guarantee(matrix, n, delta, **options):
    labels = [str(x) for x in range(matrix.shape[0])]
    return shuffle_guarantee(table_pairs(matrix, None, labels), n, delta=delta, **options)


# ------------------------------------------------------------------ independent exact enumeration
def shuffled_law(matrix: np.ndarray, values) -> dict:
    """The law of the histogram of reports of users holding ``values`` (convolution of their rows)."""
    m = matrix.shape[1]
    law = {(0,) * m: 1.0}
    for x in values:
        step = {}
        for histogram, probability in law.items():
            for y in range(m):
                if matrix[x, y] > 0:
                    key = tuple(c + (i == y) for i, c in enumerate(histogram))
                    step[key] = step.get(key, 0.0) + probability * matrix[x, y]
        law = step
    return law


def exact_worst_epsilon(matrix: np.ndarray, n: int, delta: float, admissible=None) -> float:
    """The replace-one central epsilon: max over the others' datasets and ordered pairs (bisection on the exact sum).

    ``admissible(x, x2, others)`` restricts the pairs and datasets (an assumption); every one by default.
    """
    k = matrix.shape[0]
    worst = 0.0
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        laws = [shuffled_law(matrix, (x,) + others) for x in range(k)]
        for x, x2 in itertools.permutations(range(k), 2):
            if admissible is not None and not admissible(x, x2, others):
                continue
            first, second = laws[x], laws[x2]

            def divergence(epsilon):
                return sum(max(0.0, p - math.exp(epsilon) * second.get(h, 0.0)) for h, p in first.items())

            if divergence(worst) <= delta:
                continue
            low, high = worst, 50.0
            for _ in range(60):
                middle = 0.5 * (low + high)
                low, high = (middle, high) if divergence(middle) > delta else (low, middle)
            worst = high
    return worst


@pytest.mark.parametrize("matrix, n, delta", [
    (randomised_response(2, 1.0), 12, 0.05),
    (randomised_response(3, 1.5), 8, 0.05),
    (np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]]), 7, 0.02),
    (np.array([[0.7, 0.3], [0.4, 0.6]]), 10, 0.01),
])
def test_exact_enumeration_lies_between_the_lower_and_the_upper_bound(matrix, n, delta):
    exact = exact_worst_epsilon(matrix, n, delta)
    result = guarantee(matrix, n, delta)
    assert result.lower <= exact * (1 + 1e-9) + 1e-12
    assert exact <= result.epsilon
    assert result.epsilon <= max(max(r.pair.local) for r in result.pairs)  # never above the local level


def test_population_assumption_bounds_the_exact_worst_case_among_datasets_satisfying_it():
    """Block RR (two blocks of 2): within-block pairs, at least 3 of the 6 other users in the pair's block."""
    block = randomised_response(2, 1.5)
    matrix = np.zeros((4, 4))
    matrix[:2, :2], matrix[2:, 2:] = block, block
    protected = np.array([[True, True, False, False], [True, True, False, False],
                          [False, False, True, True], [False, False, True, True]])

    def admissible(x, x2, others):
        same = {0, 1} if x < 2 else {2, 3}
        return protected[x, x2] and sum(value in same for value in others) >= 3

    exact = exact_worst_epsilon(matrix, 7, 0.05, admissible)
    result = shuffle_guarantee(table_pairs(matrix, protected, ["0", "1", "2", "3"]), 7, delta=0.05, population=3)
    assert result.lower <= exact * (1 + 1e-9) + 1e-12 and exact <= result.epsilon
    assert result.epsilon < 1.5  # amplified below the local level by the assumed users
    assert "at least 3" in result.assumption


# ------------------------------------------------------------------ closed forms
@pytest.mark.parametrize("k, epsilon", [(2, 4.0), (10, 2.0), (5, 0.5)])
def test_randomised_response_decomposition_has_the_closed_form(k, epsilon):
    growth = math.exp(epsilon)
    pair = table_pairs(randomised_response(k, epsilon), None, [str(x) for x in range(k)])[0]
    assert pair.ratio == pytest.approx(growth, rel=1e-14) and pair.ratio >= growth * (1 - 1e-15)
    assert pair.tv[0] <= (growth - 1) / (growth + k - 1) <= pair.tv[1]
    assert pair.share_all == pytest.approx(2 / (growth + 1), rel=1e-14)  # min_y Q[z,y] / M[y]
    assert pair.local[0] >= epsilon and pair.local[0] == pytest.approx(epsilon, rel=1e-14)
    lazy, own = pair.experiments(99, pair.share_all) if k > 2 else (None, *pair.experiments(99, pair.share_all))
    if lazy is not None:  # informative weight (e^eps + 1) / (e^eps + k - 1), Wang et al.'s variation ratio
        assert lazy.informative == pytest.approx((growth + 1) / (growth + k - 1), rel=1e-13)
    assert own.informative == 1.0


def test_binary_randomised_response_lower_bound_is_the_exact_count_divergence():
    """Others all hold 0: the count of ones is Bin(n-1, 1/(1+e^4)) + user 1's bit, summed directly here."""
    growth, n, delta = math.exp(4), 100_000, 1e-6
    flip = 1 / (1 + growth)
    base = stats.binom.pmf(np.arange(n + 1), n - 1, flip)
    shifted = np.concatenate(([0.0], base[:-1]))
    first = (1 - flip) * base + flip * shifted  # user 1 holds 0: reports 1 with probability flip
    second = flip * base + (1 - flip) * shifted

    def exact(epsilon):
        return np.maximum(first - math.exp(epsilon) * second, 0).sum()

    low, high = 0.0, 1.0
    for _ in range(60):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if exact(middle) > delta else (low, middle)
    result = guarantee(randomised_response(2, 4.0), n, delta)
    assert result.lower == pytest.approx(low, rel=1e-6)
    # the exact count analysis over every composition: never below, within 5% (the worst composition
    # is near all-zeros; the clone reduction gave 0.118)
    assert low <= result.epsilon <= 1.05 * low
    assert "binary count" in result.pairs[0].source


# ------------------------------------------------------------------ binary channels: every composition
def test_binary_channel_bound_is_the_exact_worst_case_over_every_dataset():
    """Three inputs with two outputs (a middle row too): brute force over all datasets of 9 users."""
    matrix = np.array([[0.9, 0.1], [0.55, 0.45], [0.2, 0.8]])
    exact = exact_worst_epsilon(matrix, 9, 0.02)
    result = guarantee(matrix, 9, 0.02)
    assert exact <= result.epsilon <= exact * (1 + 1e-6) + 1e-9
    assert result.lower <= exact * (1 + 1e-9) + 1e-12


def composition_divergences(r_low: float, r_high: float, first: float, second: float, others: int,
                            epsilon: float) -> np.ndarray:
    """delta_a of every composition a (others at r_high), by scipy convolution of the two binomial laws."""
    result = []
    for a in range(others + 1):
        law = np.convolve(stats.binom.pmf(np.arange(a + 1), a, r_high),
                          stats.binom.pmf(np.arange(others - a + 1), others - a, r_low))
        zero, one = np.append(law, 0.0), np.insert(law, 0, 0.0)  # user 1 reports 0 / 1
        p, q = first * one + (1 - first) * zero, second * one + (1 - second) * zero
        result.append(np.maximum(p - math.exp(epsilon) * q, 0).sum())
    return np.array(result)


def test_binary_grid_of_compositions_bounds_every_composition_from_above_within_the_dropped_users(monkeypatch):
    """Beyond FULL_OTHERS, a grid of compositions of m - g users: never below the exact worst case of m users,
    never above the exact worst case of m - g (both by independent convolution over every composition)."""
    import designer.shuffle.binary as binary

    monkeypatch.setattr(binary, "FULL_OTHERS", 40)
    monkeypatch.setattr(binary, "GRID", 8)
    r, others, epsilon = 0.8, 150, 0.3
    kept, grid = binary.compositions(others)
    assert kept == others - 19 and grid[0] == 0 and grid[-1] == kept and np.all(np.diff(grid) <= 19)
    bound = binary_deltas(epsilon, BinaryPair(r, 1 - r, 1 - r, r, others))[0]
    every = composition_divergences(1 - r, r, r, 1 - r, others, epsilon).max()
    fewer = composition_divergences(1 - r, r, r, 1 - r, kept, epsilon).max()
    assert every <= bound <= fewer + 1e-9 and every < fewer


def test_the_worst_case_clone_bound_stands_where_the_binary_count_numerics_lie_above_it():
    """Rows (1, 0) against (0.5, 0.5), the others free to report (1, 0): x' -> x has delta exactly 1/2 at any
    epsilon (the others all hold x, and a single one in the count reveals x'). Both bounds are valid: the smaller is
    kept, here the clone bound (the count analysis's numerics give 0.50029)."""
    matrix = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.5, 0.5]])
    result = shuffle_guarantee(table_pairs(matrix, None, "0123"), 1000, epsilon=0.5)
    pair = next(item for item in result.pairs if item.pair.name == "x=0, x'=2")
    assert pair.source == ("binary count", "clones")
    assert 0.5 <= pair.value[1] <= 0.5 * (1 + 1e-9)
    assert pair.value[0] < 0.5  # x -> x': the count analysis is far below the clone bound


def test_binary_delta_is_the_largest_composition_divergence_which_need_not_be_at_an_end():
    """Binary RR, eps0 = 4, n = 1000: scipy convolution of Bin(a, r) and Bin(n-1-a, 1-r) for every a."""
    growth, n, epsilon = math.exp(4), 1000, 1 / 6
    r = growth / (1 + growth)
    divergences = composition_divergences(1 - r, r, r, 1 - r, n - 1, epsilon)
    worst = int(np.argmax(divergences))
    assert 0 < worst < n - 1  # an interior composition beats both ends: every a must be checked
    assert max(divergences[0], divergences[-1]) < divergences[worst]
    forward, backward = binary_deltas(epsilon, BinaryPair(r, 1 - r, 1 - r, r, n - 1))
    assert divergences[worst] <= forward <= divergences[worst] + 1e-9
    assert backward == pytest.approx(forward, abs=1e-9)  # binary RR: the two directions mirror each other


def test_generic_bound_reproduces_feldman_mcmillan_talwar():
    """Their numerical method gives 0.1675 <= eps <= 0.1728 for n = 1e5 4-LDP randomisers at delta = 1e-6."""
    epsilon, proved = epsilon_of(1e-6, fmt_generic(4.0, 100_000))
    assert 0.1675 <= epsilon <= 0.1728 and proved <= 1e-6


def test_k_ary_randomised_response_is_within_five_percent_of_the_exact_two_count_test():
    result = guarantee(randomised_response(10, 2.0), 10_000, 1e-8)
    assert result.lower <= result.epsilon <= 1.05 * result.lower
    assert result.epsilon < 0.6 * epsilon_of(1e-8, fmt_generic(2.0, 10_000))[0]


def test_lazy_law_matches_a_direct_sum():
    clones, w = 40, 0.3
    law, error = _lazy_law(clones, w)
    d = np.arange(-(law.size // 2), law.size // 2 + 1)
    informative = np.arange(clones + 1)
    direct = [
        sum(stats.binom.pmf(i, clones, w) * stats.binom.pmf((i + value) // 2, i, 0.5)
            for i in informative if (i + value) % 2 == 0 and abs(value) <= i)
        for value in d
    ]
    assert np.max(np.abs(law - direct)) <= max(error, 1e-15) and error < 1e-12


# ------------------------------------------------------------------ monotonicity
def test_mixing_toward_uniform_never_raises_the_central_epsilon():
    matrix = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]])
    uniform = np.full_like(matrix, 1 / 3)
    values = [guarantee((1 - weight) * matrix + weight * uniform, 2000, 1e-6).epsilon for weight in (0, 0.2, 0.5, 0.8)]
    assert all(later <= earlier for earlier, later in zip(values, values[1:]))
    assert values[-1] < values[0]


def test_more_users_never_raise_the_central_epsilon():
    # each bound wins at one of these n and is cheap there: the group reduction at 50, the common part at 500,
    # the clones at 2,000 and 5,000 (the groups at 100 and the common part at 1,000 take 2-3 s each)
    values = [guarantee(randomised_response(3, 2.0), n, 1e-6).epsilon for n in (50, 500, 2000, 5000)]
    assert all(later <= earlier for earlier, later in zip(values, values[1:]))


# ------------------------------------------------------------------ structured packages, E
def test_block_hadamard_cross_block_pairs_are_infinite_and_population_amplifies_within_blocks():
    document = build_hadamard_package([1750] * 25, "log(3)")
    pairs, _ = package_pairs(document)
    worst = shuffle_guarantee(pairs, 1_000_000, delta=1e-8)
    by_name = {result.pair.name: result for result in worst.pairs}
    assert by_name["different blocks"].value == (math.inf, math.inf) and "block" in by_name["different blocks"].reason
    assert worst.epsilon == pytest.approx(math.log(3))  # nobody else in the block: the local level
    assumed = shuffle_guarantee(pairs, 1_000_000, delta=1e-8, population=10_000)
    assert assumed.lower <= assumed.epsilon < 0.1
    assert "10000" in assumed.assumption


def test_high_low_sensitive_pairs_are_amplified_in_the_worst_case():
    document = build_high_low_package(43_750, range(1000), "log(3)")
    result = shuffle_guarantee(package_pairs(document)[0], 1_000_000, delta=1e-8)
    by_name = {r.pair.name: r for r in result.pairs}
    assert by_name["two sensitive inputs"].value[0] < 0.01
    mixed = by_name["sensitive x, non-sensitive x'"]
    assert mixed.value[0] == pytest.approx(math.log(3)) and math.isinf(mixed.value[1])
    assert result.epsilon == pytest.approx(math.log(3)) and result.lower <= result.epsilon


def test_e_decides_which_directions_count(tmp_path):
    matrix = np.array([[0.5, 0.5, 0.0], [0.4, 0.6, 0.0], [0.0, 0.0, 1.0]])  # input 2 is revealed
    labels = ["0", "1", "2"]
    everything = shuffle_guarantee(table_pairs(matrix, None, labels), 1000, delta=1e-6)
    assert math.isinf(everything.epsilon)
    protected = np.array([[True, True, False], [True, True, False], [False, False, True]])
    within = shuffle_guarantee(table_pairs(matrix, protected, labels), 1000, delta=1e-6)
    assert within.epsilon < math.log(1.25) + 1e-12


# ------------------------------------------------------------------ CLI and packages
def write_channel(path, matrix):
    path.write_text("\n".join(",".join(repr(float(v)) for v in row) for row in matrix) + "\n")


def test_cli_prints_one_json_document_with_bounds_and_matrix(tmp_path):
    channel = tmp_path / "rr.csv"
    write_channel(channel, randomised_response(3, 1.0))
    result = runner.invoke(app, ["shuffle", "--channel", str(channel), "--n", "500", "--delta", "1e-6", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["epsilon_lower"] <= payload["epsilon"] < 1.0
    assert payload["epsilon_matrix"][0][1] == payload["epsilon"] and payload["epsilon_matrix"][0][0] == 0.0
    given = runner.invoke(app, ["shuffle", "--channel", str(channel), "--n", "500", "--epsilon",
                                repr(payload["epsilon"]), "--json"])
    assert json.loads(given.stdout)["delta"] <= 1e-6
    compared = runner.invoke(app, ["shuffle", "--channel", str(channel), "--n", "500", "--delta", "1e-6", "--generic"])
    assert compared.exit_code == 0 and "generic bound" in compared.stdout


@pytest.mark.parametrize("arguments, message", [
    (["--n", "100", "--delta", "1e-6"], "exactly one of --channel and --package"),
    (["--n", "100", "--delta", "1e-6", "--epsilon", "1"], "exactly one of --delta and --epsilon"),
    (["--n", "100", "--delta", "2"], "--delta must be in (0, 1)"),
    (["--n", "100", "--delta", "1e-6", "--population", "100"], "--population must be between 1 and n - 1"),
])
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, arguments, message):
    channel = tmp_path / "rr.csv"
    write_channel(channel, randomised_response(2, 1.0))
    if "exactly one of --channel" not in message:
        arguments = ["--channel", str(channel)] + arguments
    result = runner.invoke(app, ["shuffle"] + arguments)
    assert result.exit_code == 2 and message in result.output


def test_package_records_the_central_guarantee_and_verify_package_reproves_it(tmp_path):
    channel, privacy, out = tmp_path / "rr.csv", tmp_path / "E.csv", tmp_path / "rr.json"
    write_channel(channel, randomised_response(2, 2.0))
    privacy.write_text("0,2\n2,0\n")
    written = runner.invoke(app, ["package", "--E", str(privacy), "--channel", str(channel), "--out", str(out),
                                  "--shuffle-n", "2000", "--delta", "1e-6"])
    assert written.exit_code == 0, written.output
    document = json.loads(out.read_text())
    stored = float(document["shuffle"]["epsilon"])
    assert stored < 0.5 and document["shuffle"]["neighbours"] == "replace-one"
    verified = runner.invoke(app, ["verify-package", str(out)])
    assert verified.exit_code == 0 and "re-proved" in verified.output
    document["shuffle"]["epsilon"] = repr(stored / 2)  # a claim the package does not back, re-hashed
    document["sha256"] = package_digest(document)
    out.write_text(json.dumps(document))
    rejected = runner.invoke(app, ["verify-package", str(out)])
    assert rejected.exit_code == 1 and "not proved" in rejected.output


def test_concrete_test_is_infinite_when_reports_reveal_the_input():
    assert math.isinf(epsilon_lower(1e-6, CountTest((1.0, 0.0), (0.0, 1.0), (0.0, 0.0), 50)))


def test_experiment_refuses_impossible_parameters():
    with pytest.raises(ValueError):
        TwoCountExperiment(1.0, 1.0, 0.5, 10)


def test_public_api_shuffles_a_channel():
    import designer

    result = designer.shuffle_channel(designer.Channel(randomised_response(3, 1.0)), 1000, delta=1e-6)
    assert 0 < result.lower <= result.epsilon < 1.0


def test_difference_test_for_large_n_uses_the_exact_law_of_h_plus_minus_h_minus():
    from designer.shuffle.lower import _difference_laws

    test = CountTest((0.6, 0.3), (0.3, 0.6), (0.2, 0.1), 300)
    first, second, margin = _difference_laws(test)
    step = np.array([0.1, 0.7, 0.2])  # -1, 0, +1
    others = np.array([1.0])
    for _ in range(300):
        others = np.convolve(others, step)  # d = -300 .. 300
    user = np.convolve(others, [0.3, 0.1, 0.6])  # user 1 under x: -1, 0, +1; d = -301 .. 301
    centre, half = round(300 * 0.1), (first.size + 1) // 2  # window of first: centre +- (half - 1)
    window = user[301 + centre - half + 1: 301 + centre + half]
    assert margin < 1e-9 and np.max(np.abs(first - window)) < 1e-12


def test_structured_package_records_its_guarantee_under_the_schema(tmp_path):
    from jsonschema import Draft202012Validator

    from designer.deploy.package import SCHEMA_PATH
    from designer.deploy.vectorised import VectorisedSampler

    out = tmp_path / "hr.json"
    written = runner.invoke(app, ["package-hadamard", "--block-sizes", "64*4", "--eps", "1", "--out", str(out),
                                  "--shuffle-n", "5000", "--delta", "1e-6", "--population", "1000"])
    assert written.exit_code == 0, written.output
    document = json.loads(out.read_text())
    Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(document)
    assert document["shuffle"]["population"] == "1000" and float(document["shuffle"]["epsilon"]) < 1.0
    assert VectorisedSampler(document, 1, sha256=document["sha256"]).counts(0, 10).sum() == 10  # clients accept the member
    assert runner.invoke(app, ["verify-package", str(out)]).exit_code == 0


def test_bisection_helpers_bracket_and_raise():
    from solvers.bisection import boundary, first_proved

    low, high = boundary(lambda t: t * t >= 2.0, 0.0, 2.0, 1e-12)
    assert low * low < 2.0 <= high * high and high - low <= 1e-12 * high
    # raised until the "rigorous" value (here 1.5 x the float estimate's excess) meets the target
    assert first_proved(1.0, (0.0, 1e-3, 0.1), lambda t: 3.0 - 2.0 * t, 1.0) == (1.0, 1.0)
    assert first_proved(1.0, (0.0, 1e-3, 0.1), lambda t: 3.1 - 2.0 * t, 1.0) == (1.1, 3.1 - 2.2)
    assert first_proved(0.0, (0.0, 0.7), lambda t: 1.0 - t, 0.4) == (0.7, 1.0 - 0.7)
    assert first_proved(1.0, (0.0, 0.1), lambda t: 5.0, 1.0) is None
