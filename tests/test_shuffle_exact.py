"""Shuffle bounds against independent exact computations in every regime (issue 31).

Each test computes the exact value (or a bracket) here, by enumeration or by a convolution of
its own, and checks the proved bound is never below it and within 1% of it.
"""

import itertools
import json
import math

import numpy as np
import pytest
from reference import hockey_epsilon, randomised_response, smallest_epsilon
from scipy import signal, stats
from typer.testing import CliRunner

from designer.cli import app
from designer.shuffle.analysis import shuffle_guarantee
from designer.shuffle.clones import table_pairs
from designer.shuffle.divergence import _lazy_law
from solvers.pld import compose_pld

runner = CliRunner()


def guarantee(matrix, n, delta=None, **options):
    labels = [str(x) for x in range(matrix.shape[0])]
    return shuffle_guarantee(table_pairs(matrix, None, labels), n, delta=delta, **options)


# ------------------------------------------------------------------ k-ary RR: the clone law's variance
def k_ary_all_z_epsilon(k: int, epsilon0: float, n: int, delta: float) -> float:
    """k-ary RR, the other n - 1 users all hold z (not x, x'): the exact divergence of the shuffled histogram,
    whose likelihood ratio depends on (h_x, h_x', h_z) only: nested binomial laws, summed here on a dense grid
    indexed by (h_x + h_x', h_x, h_z)."""
    growth = math.exp(epsilon0)
    low, high, m = 1 / (growth + k - 1), growth / (growth + k - 1), n - 1
    pair_mass = stats.binom.pmf(np.arange(m + 1), m, 2 * low)
    largest = int(np.flatnonzero(pair_mass > 1e-40)[-1])
    share = high / (1 - 2 * low)
    first = np.zeros((largest + 2, largest + 2, m + 2))
    second = np.zeros_like(first)
    for s in range(largest + 1):
        law = pair_mass[s] * np.outer(stats.binom.pmf(np.arange(s + 1), s, 0.5),
                                      stats.binom.pmf(np.arange(m - s + 1), m - s, share))  # (h_x, h_z)
        # user 1's report: x, x', z or elsewhere (probabilities under x, then x')
        for dx, dxp, dz, p, q in ((1, 0, 0, high, low), (0, 1, 0, low, high), (0, 0, 1, low, low),
                                  (0, 0, 0, (k - 3) * low, (k - 3) * low)):
            cells = (s + dx + dxp, slice(dx, dx + s + 1), slice(dz, dz + m - s + 1))
            first[cells] += p * law
            second[cells] += q * law
    return hockey_epsilon(first, second, delta)


@pytest.mark.parametrize("epsilon0, before", [(1.0, 0.1487), (4.0, 0.9275)])
def test_k_ary_randomised_response_with_many_outputs_is_within_one_percent_of_the_exact_bracket(epsilon0, before):
    """k = 100, n = 1000 (the rows of x, x' and z of k-ary RR: the same shares, so the same bound as the full
    channel). Before: 0.1487 at eps0 = 1 (the lazy law charged variance c instead of c w, so it was inf, and the
    generic bound stood; the issue's exact bracket is [0.025469, 0.025470]) and 0.9275 at eps0 = 4 (1.22x)."""
    exact = k_ary_all_z_epsilon(100, epsilon0, 1000, 1e-6)
    if epsilon0 == 1.0:
        assert 0.025469 <= exact <= 0.025470
    result = guarantee(randomised_response(100, epsilon0)[:3, :], 1000, 1e-6)
    assert exact <= result.epsilon <= 1.01 * exact < before
    assert result.lower <= exact * (1 + 1e-9)
    assert result.pairs[0].source[0] == "common part"


def test_clone_reduction_alone_is_within_one_percent_at_k_100_with_the_corrected_variance():
    """The clone bound itself (the lazy law with Bernstein's c w) against the exact all-z divergence."""
    from designer.shuffle.divergence import epsilon_of

    pair = table_pairs(randomised_response(100, 1.0)[:3, :], None, "012")[0]
    lazy = next(e for e in pair.experiments(999, pair.share_all) if e.informative < 1)
    assert lazy.informative < 0.04
    exact = k_ary_all_z_epsilon(100, 1.0, 1000, 1e-6)
    assert exact <= epsilon_of(1e-6, lazy)[0] <= 1.01 * exact


def test_lazy_law_of_a_small_informative_weight_matches_a_direct_sum_with_a_small_error_bound():
    clones, w = 3000, 0.01
    law, error = _lazy_law(clones, w)
    assert error < 1e-12 and law.size < 400  # a window of ~13 sqrt(c w) + 56, not of sqrt(c)
    half = law.size // 2
    informative = np.arange(0, 200)
    weights = stats.binom.pmf(informative, clones, w)
    direct = np.zeros(law.size)
    for i, weight in zip(informative, weights):
        steps = np.arange(i + 1)
        d = 2 * steps - i
        inside = np.abs(d) <= half
        np.add.at(direct, d[inside] + half, weight * stats.binom.pmf(steps[inside], i, 0.5))
    assert np.max(np.abs(law - direct)) <= error + 1e-15


# ------------------------------------------------------------------ binary channels: every composition
def composition_epsilons(first: float, second: float, low: float, high: float, others: int, epsilon: float):
    """delta_a(epsilon) of every composition a by FFT convolution of the two binomial laws (scipy.signal)."""
    result = []
    for a in range(others + 1):
        law = signal.fftconvolve(stats.binom.pmf(np.arange(a + 1), a, high),
                                 stats.binom.pmf(np.arange(others - a + 1), others - a, low))
        law = np.maximum(law, 0.0)
        zero, one = np.append(law, 0.0), np.insert(law, 0, 0.0)
        p, q = first * one + (1 - first) * zero, second * one + (1 - second) * zero
        result.append(np.maximum(p - math.exp(epsilon) * q, 0).sum())
    return np.array(result)


@pytest.mark.parametrize("epsilon0, n", [(0.1, 500), (0.2, 400), (2.0, 600)])
def test_binary_randomised_response_is_exact_over_every_composition_including_small_local_epsilon(epsilon0, n):
    """eps0 <= 0.2 was 2.7-5.1% above exact (rows near 1/2 refused by the count analysis)."""
    r = math.exp(epsilon0) / (1 + math.exp(epsilon0))
    delta = 1e-6
    result = guarantee(randomised_response(2, epsilon0), n, delta)
    assert result.pairs[0].source == ("binary count", "binary count")
    assert composition_epsilons(r, 1 - r, 1 - r, r, n - 1, result.epsilon).max() <= delta  # valid
    assert composition_epsilons(r, 1 - r, 1 - r, r, n - 1, result.epsilon / 1.01).max() > delta  # within 1%


def test_binary_randomised_response_beyond_every_composition_stays_within_one_percent_of_exact():
    """n = 2 10^4 (a grid of compositions with users dropped): against the exact count law of the all-zeros
    dataset (a concrete dataset: a lower bound on the truth), summed here; was 1.43x exact at 10^6."""
    growth, n, delta = math.exp(4), 20_000, 1e-6
    flip = 1 / (1 + growth)
    base = stats.binom.pmf(np.arange(n + 1), n - 1, flip)
    shifted = np.concatenate(([0.0], base[:-1]))
    first, second = (1 - flip) * base + flip * shifted, flip * base + (1 - flip) * shifted
    exact = smallest_epsilon(lambda e: np.maximum(first - math.exp(e) * second, 0).sum(), delta, 4.0)
    result = guarantee(randomised_response(2, 4.0), n, delta)
    assert exact <= result.epsilon <= 1.01 * exact
    assert result.lower == pytest.approx(exact, rel=1e-6)


def test_binary_sub_channels_under_population_are_the_exact_count_of_the_assumed_users():
    """Block RR of two blocks of 2 (binary sub-channels), population m: exactly m users of the block count
    (was the clone bound, 17% above exact)."""
    block = np.array([[0.8, 0.2], [0.3, 0.7]])
    matrix = np.zeros((4, 4))
    matrix[:2, :2], matrix[2:, 2:] = block, block
    protected = np.array([[True, True, False, False], [True, True, False, False],
                          [False, False, True, True], [False, False, True, True]])
    population, delta = 400, 1e-5
    result = shuffle_guarantee(table_pairs(matrix, protected, "0123"), 5000, delta=delta, population=population)
    assert result.pairs[0].source[0] == "binary count+population"
    epsilon = result.epsilon
    worst = max(composition_epsilons(0.2, 0.7, 0.2, 0.7, population, epsilon).max(),
                composition_epsilons(0.7, 0.2, 0.2, 0.7, population, epsilon).max())
    below = max(composition_epsilons(0.2, 0.7, 0.2, 0.7, population, epsilon / 1.01).max(),
                composition_epsilons(0.7, 0.2, 0.2, 0.7, population, epsilon / 1.01).max())
    assert worst <= delta < below
    assert result.lower <= epsilon


# ------------------------------------------------------------------ rows within tolerance of 1
def exact_histogram_epsilon(first: np.ndarray, second: np.ndarray, other: np.ndarray, others: int,
                            delta: float) -> float:
    """Three outputs, the others all at row ``other``: the exact divergence of the shuffled histogram."""
    size = others + 2
    p, q = np.zeros((size, size)), np.zeros((size, size))
    for a in range(others + 1):
        b = np.arange(others - a + 1)
        law = stats.binom.pmf(a, others, other[0]) * stats.binom.pmf(b, others - a, other[1] / (1 - other[0]))
        for y, (da, db) in enumerate(((1, 0), (0, 1), (0, 0))):
            p[a + da, b + db] += first[y] * law
            q[a + da, b + db] += second[y] * law
    return hockey_epsilon(p, q, delta)


def test_rows_summing_to_one_within_tolerance_are_normalised_and_the_lower_bound_stays_below():
    """A row summing to 1 + 1e-10 gave epsilon_lower = 60 next to a proved 0.529 (negative "neither" mass)."""
    matrix = np.array([[0.6, 0.3, 0.1 + 1e-10], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]])
    result = guarantee(matrix, 200, 1e-6)
    normalised = matrix / matrix.sum(axis=1, keepdims=True)
    assert result.epsilon == pytest.approx(guarantee(normalised, 200, 1e-6).epsilon, rel=1e-9)
    assert result.lower <= result.epsilon
    # the concrete test is a post-processing of a real dataset's histogram: never above its exact divergence
    exact = max(exact_histogram_epsilon(normalised[0], normalised[2], normalised[z], 199, 1e-6) for z in range(3))
    assert 0 < result.lower <= exact * (1 + 1e-9)


# ------------------------------------------------------------------ composition over rounds
def test_compose_pld_brackets_the_exact_composition_of_randomised_response_and_agrees_with_dp_accounting():
    """T rounds of a binary RR pair: the composed loss is (2K - T) eps0 with K ~ Bin(T, p), summed here."""
    from dp_accounting.pld import privacy_loss_distribution

    epsilon0, rounds, delta = 0.5, 40, 1e-5
    p = math.exp(epsilon0) / (1 + math.exp(epsilon0))
    k = np.arange(rounds + 1)
    masses, losses = stats.binom.pmf(k, rounds, p), (2 * k - rounds) * epsilon0
    exact = smallest_epsilon(lambda e: np.sum(masses * np.maximum(0, -np.expm1(e - losses))), delta, rounds)
    upper, proved = compose_pld([epsilon0, -epsilon0], [p, 1 - p], rounds, delta=delta)
    lower, _ = compose_pld([epsilon0, -epsilon0], [p, 1 - p], rounds, delta=delta, upper=False)
    assert lower <= exact <= upper <= 1.005 * exact and proved <= delta
    library = privacy_loss_distribution.from_two_probability_mass_functions(  # log masses of P' then P
        {0: math.log(1 - p), 1: math.log(p)}, {0: math.log(p), 1: math.log(1 - p)},
        value_discretization_interval=1e-4).self_compose(rounds)
    assert library.get_epsilon_for_delta(delta) == pytest.approx(upper, rel=5e-3)
    _, at_exact = compose_pld([epsilon0, -epsilon0], [p, 1 - p], rounds, epsilon=exact)
    assert at_exact >= delta * (1 - 1e-6)  # delta mode: the bound at the exact epsilon is not below delta


def histogram_law(matrix: np.ndarray, values) -> dict:
    law = {(0,) * matrix.shape[1]: 1.0}
    for x in values:
        step = {}
        for histogram, probability in law.items():
            for y in range(matrix.shape[1]):
                key = tuple(c + (i == y) for i, c in enumerate(histogram))
                step[key] = step.get(key, 0.0) + probability * matrix[x, y]
        law = step
    return law


def exact_rounds_epsilon(matrix: np.ndarray, n: int, rounds: int, delta: float) -> float:
    """Worst case over the others' values and ordered pairs of the T-round product of the shuffled laws."""
    k = matrix.shape[0]
    worst = 0.0
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        laws = [histogram_law(matrix, (x,) + others) for x in range(k)]
        for x, x2 in itertools.permutations(range(k), 2):
            keys = list(laws[x])
            p = np.array([laws[x][key] for key in keys])
            q = np.array([laws[x2].get(key, 0.0) for key in keys])
            product_p, product_q = p, q
            for _ in range(rounds - 1):
                product_p, product_q = np.outer(product_p, p).ravel(), np.outer(product_q, q).ravel()
            value = smallest_epsilon(lambda e: np.maximum(product_p - math.exp(e) * product_q, 0).sum(), delta, 30.0)
            worst = max(worst, value)
    return worst


@pytest.mark.parametrize("matrix, n, rounds, delta", [
    (np.array([[0.85, 0.15], [0.5, 0.5], [0.2, 0.8]]), 4, 3, 1e-3),
    (np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]]), 3, 2, 1e-3),
])
def test_rounds_bound_brackets_the_exact_worst_case_of_the_composed_releases(matrix, n, rounds, delta):
    exact = exact_rounds_epsilon(matrix, n, rounds, delta)
    result = guarantee(matrix, n, delta, rounds=rounds)
    assert result.lower <= exact * (1 + 1e-9) <= result.epsilon * (1 + 1e-9)
    if matrix.shape[1] == 2:  # the count analysis over every composition: exact up to the loss grid
        assert result.epsilon <= 1.01 * exact


def test_cli_composes_rounds_and_refuses_a_bad_count(tmp_path):
    channel = tmp_path / "rr.csv"
    channel.write_text("0.8,0.2\n0.2,0.8\n")
    one = json.loads(runner.invoke(app, ["shuffle", "--channel", str(channel), "--n", "50", "--delta", "1e-4",
                                         "--json"]).stdout)
    five = runner.invoke(app, ["shuffle", "--channel", str(channel), "--n", "50", "--delta", "1e-4", "--rounds", "5",
                               "--json"])
    assert five.exit_code == 0, five.output
    payload = json.loads(five.stdout)
    assert payload["rounds"] == 5 and one["epsilon"] < payload["epsilon"] <= 5 * one["epsilon"]
    assert payload["epsilon_lower"] <= payload["epsilon"]
    bad = runner.invoke(app, ["shuffle", "--channel", str(channel), "--n", "50", "--delta", "1e-4", "--rounds", "0"])
    assert bad.exit_code == 2 and "--rounds" in bad.output
