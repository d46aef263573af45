"""Exact samplers of designer.noise against their distributions (fixed seeds) and exact arithmetic."""

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

from designer.noise import (
    bernoulli_exp,
    discrete_laplace,
    discrete_laplace_variance,
    flip_threshold,
    random_words,
    ratio_at_most_exp,
    rational_rate,
    uniform_below,
)


def chi_square(counts: np.ndarray, probabilities: np.ndarray) -> float:
    expected = counts.sum() * probabilities
    return float(np.sum((counts - expected) ** 2 / expected))


def test_random_words_sources():
    seeded = random_words(5, np.random.default_rng(3))
    assert seeded.dtype == np.uint64 and np.array_equal(seeded, random_words(5, np.random.default_rng(3)))
    secure = random_words(1000, bits=32)
    assert secure.dtype == np.uint32 and secure.shape == (1000,) and len(np.unique(secure)) > 990
    with pytest.raises(ValueError, match="32 or 64"):
        random_words(3, bits=16)


@pytest.mark.parametrize("rng", [np.random.default_rng(4), None], ids=["seeded", "secrets"])
def test_uniform_below_is_uniform(rng):
    for high in (1, 2, 3, 7, 2**40 + 3):
        draws = uniform_below(np.full(70_000, high), rng)
        assert draws.min() >= 0 and draws.max() < high
    counts = np.bincount(uniform_below(np.full(70_000, 7), rng), minlength=7)
    assert chi_square(counts, np.full(7, 1 / 7)) < 22.5  # chi-square(6) 0.999 quantile
    mixed = uniform_below(np.array([3, 5] * 35_000), rng)  # per-element bounds
    assert chi_square(np.bincount(mixed[0::2], minlength=3), np.full(3, 1 / 3)) < 13.8
    assert chi_square(np.bincount(mixed[1::2], minlength=5), np.full(5, 1 / 5)) < 18.5
    huge = uniform_below(np.array([2**70, 3], dtype=object), rng)  # Python-integer path
    assert 0 <= huge[0] < 2**70 and 0 <= huge[1] < 3


def test_bernoulli_exp_frequencies():
    rng = np.random.default_rng(5)
    n = 200_000
    for numerator, denominator in ((0, 1), (1, 1), (1, 3), (5, 7)):
        p = math.exp(-numerator / denominator)
        frequency = bernoulli_exp(np.full(n, numerator), denominator, rng).mean()
        assert abs(frequency - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-12


@pytest.mark.parametrize("numerator, denominator", [(1, 1), (1, 3), (7, 2), (2**31 + 5, 2**33)])
def test_discrete_laplace_matches_its_probabilities(numerator, denominator):
    """Chi-square against P(z) = (1 - e^-rho)/(1 + e^-rho) e^(-rho |z|); variance 2 e^-rho / (1 - e^-rho)^2."""
    rho = numerator / denominator
    n = 200_000
    z = discrete_laplace(np.full(n, numerator), denominator, np.random.default_rng(6))
    assert z.dtype == np.int64
    cut = max(2, int(3 / rho))
    support = np.arange(-cut, cut + 1)
    pmf = (1 - math.exp(-rho)) / (1 + math.exp(-rho)) * np.exp(-rho * np.abs(support))
    counts = np.array([np.sum(z < -cut)] + [np.sum(z == v) for v in support] + [np.sum(z > cut)])
    tail = (1 - pmf.sum()) / 2
    probabilities = np.concatenate([[tail], pmf, [tail]])
    degrees = len(probabilities) - 1
    assert chi_square(counts, probabilities) < degrees + 6 * math.sqrt(2 * degrees)
    variance = 2 * math.exp(-rho) / (1 - math.exp(-rho)) ** 2
    assert discrete_laplace_variance(rho) == pytest.approx(variance, rel=1e-12)
    assert z.var() == pytest.approx(variance, rel=0.03)
    assert discrete_laplace_variance(rho) < 2 / rho**2  # below Laplace at the same privacy


def test_discrete_laplace_large_denominators_and_secure_source():
    big = discrete_laplace(np.full(3000, 1), np.full(3000, 2**45, dtype=object), np.random.default_rng(8))
    assert big.std() == pytest.approx(math.sqrt(discrete_laplace_variance(2.0**-45)), rel=0.1)
    secure = discrete_laplace(np.full(20_000, 1), 2)  # secrets
    assert secure.var() == pytest.approx(discrete_laplace_variance(0.5), rel=0.1)
    with pytest.raises(ValueError, match="positive"):
        discrete_laplace(np.array([0]), 1)


def test_rational_rate_rounds_down_to_32_bits():
    for value in (1.0, 1 / 3, 0.7, 2.0**40 / 3, 1e-12, Fraction(22, 7)):
        rate = rational_rate(value)
        assert rate <= Fraction(value) and rate >= Fraction(value) * (1 - Fraction(1, 2**31))
        shift = rate.denominator.bit_length() - 1
        assert rate.denominator == 2**shift  # a power of two
        assert (rate.numerator >> max(0, 31 - shift)) < 2**32  # 32 significant bits
    assert rational_rate(2.0) == 2 and rational_rate(0.5) == Fraction(1, 2)
    with pytest.raises(ValueError):
        rational_rate(0.0)


def test_exact_exponential_comparison_against_decimal():
    with localcontext() as context:
        context.prec = 50
        e = Decimal(1).exp()
        below = Fraction(str(e.quantize(Decimal("1e-30")) - Decimal("1e-30")))
        above = Fraction(str(e.quantize(Decimal("1e-30")) + Decimal("1e-30")))
    assert ratio_at_most_exp(below, 1) and not ratio_at_most_exp(above, 1)
    assert ratio_at_most_exp(1, 0) and not ratio_at_most_exp(Fraction(1) + Fraction(1, 10**40), 0)


def test_flip_threshold_is_minimal_and_private():
    for epsilon in (0.3, 1.0, 6.0):
        T = flip_threshold(epsilon)
        assert ratio_at_most_exp(Fraction(2**32 - T, T), Fraction(epsilon))
        assert not ratio_at_most_exp(Fraction(2**32 - T + 1, T - 1), Fraction(epsilon))
    assert flip_threshold(1.0, bits=8) == math.ceil(256 / (math.e + 1))
    with pytest.raises(ValueError):
        flip_threshold(0.0)
