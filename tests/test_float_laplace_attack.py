"""Mironov's attack on floating-point Laplace noise (CCS 2012), and why the released noise resists it.

The textbook sampler ``x - b sgn(u) ln(1 - 2|u|)`` with a double ``u`` (numpy's
53-bit grid, the old ``Strategy.respond``) can only produce a sparse, input-
dependent set of doubles. An attacker who sees one output y asks whether y is
*reachable* from the other input x': is there a grid value u whose noise n gives
``fl(x' + n) == y``? If not, the input was certainly not x', which no finite
epsilon allows (``P(S | x) <= e^eps P(S | x') = 0``). The check is exact: the
noises n with ``fl(x' + n) == y`` form an interval of doubles (addition rounds
monotonically), found by bisection on the ordered bit patterns, and the noise is
monotone in u, so one bisection over the 2^53 grid values decides it (a window
around the bisection point guards against a non-monotone libm).

The released sampler (:meth:`designer.metric.strategy.Strategy.respond`) puts
every output on the lattice ``gamma Z`` with positive probability from every
input, and the likelihood ratio of every output is at most ``e^eps``, checked in
exact integer arithmetic.
"""

from fractions import Fraction

import numpy as np

from designer.metric.strategy import Strategy, certify_strategy
from designer.spec import PrivacyMatrix

GRID = 2**53  # numpy's random(): k * 2^-53, k uniform in [0, 2^53)
EPSILON = 1.0
SCALE = 1 / EPSILON
INPUT_A, INPUT_B = 0.0, 1.0  # adjacent inputs at distance 1 (sensitivity 1)
SAMPLES = 3000


def naive_noise(k: np.ndarray) -> np.ndarray:
    """The old float Laplace noise for grid indices k >= 1: ``-b sgn(u) ln(1 - 2|u|)``, ``u = k 2^-53 - 1/2``."""
    u = np.asarray(k, dtype=np.int64) * 2.0**-53 - 0.5
    return -SCALE * np.sign(u) * np.log(1 - 2 * np.abs(u))


def naive_release(x: float, k: np.ndarray) -> np.ndarray:
    return x + naive_noise(k)


def _keys(values: np.ndarray) -> np.ndarray:
    """Order-preserving int64 keys of doubles (negative doubles reversed)."""
    bits = np.asarray(values, dtype=np.float64).view(np.int64)
    return np.where(bits >= 0, bits, -(bits & np.int64(0x7FFFFFFFFFFFFFFF)))


def _doubles(keys: np.ndarray) -> np.ndarray:
    keys = np.asarray(keys, dtype=np.int64)
    bits = np.where(keys >= 0, keys, (-keys) | np.int64(-(2**63)))
    return bits.view(np.float64)


def _first_key(predicate, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Smallest key in [low, high] with predicate true (predicate monotone false -> true); high if none."""
    low, high = low.copy(), high.copy()
    while np.any(low < high):
        middle = (low >> 1) + (high >> 1) + (low & high & 1)  # floor((low + high) / 2) without overflow
        true = predicate(middle)
        high = np.where(true, middle, high)
        low = np.where(true, low, middle + 1)
    return low


def reachable(outputs: np.ndarray, x: float) -> np.ndarray:
    """Exact: can the naive sampler release each double in ``outputs`` from input x?"""
    outputs = np.asarray(outputs, dtype=float)
    bound = _keys(np.array([1e300]))[0]  # every admissible noise lies within +-1e300
    low, high = np.full(outputs.shape, -bound), np.full(outputs.shape, bound)
    # noises n with fl(x + n) == y form the key interval [lo, hi]
    lo = _first_key(lambda key: x + _doubles(key) >= outputs, low, high)
    hi = _first_key(lambda key: x + _doubles(key) > outputs, low, high) - 1
    # first grid index whose noise is >= the smallest admissible noise
    n_lo = _doubles(lo)
    k = _first_key(lambda index: naive_noise(index) >= n_lo, np.ones(outputs.shape, np.int64), np.full(outputs.shape, GRID - 1))
    found = np.zeros(outputs.shape, dtype=bool)
    for offset in range(-32, 33):  # window: tolerate a libm log that is not perfectly monotone
        index = np.clip(k + offset, 1, GRID - 1)
        noise = naive_noise(index)
        found |= (x + noise == outputs) & (_keys(noise) >= lo) & (_keys(noise) <= hi)
    return found


def test_float_laplace_is_distinguished_from_one_output():
    rng = np.random.default_rng(2012)
    k = rng.integers(1, GRID, size=SAMPLES)
    released = naive_release(INPUT_A, k)
    # soundness of the checker: every output is reachable from the input that produced it
    assert reachable(released, INPUT_A).all()
    from_b = reachable(released, INPUT_B)
    impossible_under_b = 1 - from_b.mean()
    # An attacker answering "A" exactly when the output is unreachable from B is never wrong, and
    # is right this often; epsilon-DP would need P(unreachable | A) <= e^eps * P(unreachable | B) = 0.
    assert impossible_under_b > 0.5, impossible_under_b  # 0.81 with this seed
    # and symmetrically for outputs of B
    released_b = naive_release(INPUT_B, rng.integers(1, GRID, size=SAMPLES))
    assert reachable(released_b, INPUT_B).all()
    assert 1 - reachable(released_b, INPUT_A).mean() > 0.5  # 0.81 with this seed


def test_released_discrete_laplace_resists_the_attack():
    """Same two inputs through Strategy.respond (A = [0 1]): every output is a lattice point reachable from both,
    with likelihood ratio at most e^eps exactly."""
    A = np.array([[INPUT_A, INPUT_B]])
    strategy = Strategy(A, A, np.array([SCALE]))  # workload W = A: B = I
    privacy = PrivacyMatrix(np.array([[0.0, EPSILON], [EPSILON, 0.0]]))
    assert certify_strategy(strategy, privacy).certified
    gamma = 2.0 ** int(strategy.noise.exponents[0])
    rate = strategy.noise.rates[0]
    centre_a, centre_b = (int(c) for c in strategy.noise.centres()[0])
    assert rate <= Fraction(EPSILON) and abs(centre_a - centre_b) * rate <= Fraction(EPSILON)
    for value, centre in ((0, centre_a), (1, centre_b)):
        released = strategy.respond(np.full(SAMPLES, value), np.random.default_rng(7))[:, 0]
        steps = released / gamma
        assert np.all(steps == np.round(steps))  # on the lattice: reachable from both inputs
        z = steps.astype(np.int64)
        other = centre_b if centre == centre_a else centre_a
        # exact log-likelihood ratio rate * (|z - other| - |z - centre|) <= rate * |centre - other| <= epsilon
        exponent = np.abs(z - other) - np.abs(z - centre)
        assert np.all(exponent <= abs(centre - other))
        assert max(rate * int(e) for e in exponent) <= Fraction(EPSILON)
        assert np.any(exponent == abs(centre - other))  # the bound is attained: it is the exact level
        # the float attack finds nothing: no output is impossible under the other input
        assert np.all(np.isfinite(released))
