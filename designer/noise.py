"""Exact noise and coin flips from uniform integers (no floating-point leak).

Textbook floating-point Laplace noise ``x + b * log(u)`` releases doubles whose
low-order bits depend on ``x``: Mironov ("On significance of the least
significant bits for differential privacy", CCS 2012) shows that an observer of
one output can often tell which input produced it, whatever the stated epsilon.
Every sampler here consumes only uniform integers and returns integers, so the
distribution of what is released is exactly the one whose privacy is proved.

* :func:`random_words` — uniform 32- or 64-bit words from the operating
  system's cryptographic generator (``secrets``), or from a numpy Generator
  *only* when the caller passes one for a reproducible (seeded) simulation.
* :func:`uniform_below` — exact uniform integers in ``[0, high)``.
* :func:`bernoulli_exp` — ``Bernoulli(exp(-a/b))`` for ``0 <= a <= b``
  (Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy",
  NeurIPS 2020, Algorithm 1).
* :func:`discrete_laplace` — the discrete Laplace (two-sided geometric)
  distribution ``P(Z = z) = (1 - e^-rho) / (1 + e^-rho) * e^(-rho |z|)`` on the
  integers, ``rho = a/b`` rational (same paper, Algorithm 2).
* :func:`rational_rate` and :func:`flip_threshold` — the exact rational
  parameters actually realised by the samplers, with their privacy levels.

Privacy guarantee (discrete Laplace): for integer centres ``c, c'`` the output
``c + Z`` satisfies ``P(c + Z = y) <= exp(rho |c - c'|) P(c' + Z = y)`` for every
integer ``y``, with equality for ``y`` beyond both centres; so ``c + Z`` is
``rho |c - c'|``-indistinguishable from ``c' + Z`` exactly, for the values it
outputs. Its variance is ``2 e^-rho / (1 - e^-rho)^2`` (:func:`discrete_laplace_variance`).
"""

from __future__ import annotations

import math
import secrets
from fractions import Fraction

import numpy as np

#: Significant bits kept in a realised noise rate (:func:`rational_rate`).
RATE_BITS = 32
#: Largest rate denominator the int64 (vectorised) sampling path accepts; larger ones use Python integers.
FAST_DENOMINATOR = 2**52
#: A draw whose magnitude reaches this many lattice steps raises (probability below exp(-2^21)).
MAX_MAGNITUDE = 2**52


# ------------------------------------------------------------------ uniform integers
def random_words(count: int, rng: np.random.Generator | None = None, bits: int = 64) -> np.ndarray:
    """``count`` independent uniform words of ``bits`` (32 or 64) bits.

    Parameters
    ----------
    count : int
    rng : numpy Generator or None
        None (the default) reads the operating system's cryptographic generator
        through :func:`secrets.token_bytes`. A Generator is used only for
        reproducible simulation (its output is predictable from its seed).
    bits : 32 or 64

    Returns
    -------
    ndarray of uint32 or uint64, shape (count,)
    """
    if bits not in (32, 64):
        raise ValueError(f"bits must be 32 or 64, got {bits}")
    dtype = np.uint64 if bits == 64 else np.uint32
    if rng is None:
        return np.frombuffer(secrets.token_bytes(int(count) * (bits // 8)), dtype=dtype)
    return rng.integers(0, 2**bits, size=int(count), dtype=dtype)


def _bit_lengths(values: np.ndarray) -> np.ndarray:
    """``int.bit_length`` of non-negative int64 values, elementwise.

    ``frexp`` of the float conversion: rounding to nearest is monotone and powers
    of two are exact, so the result is never below the true bit length (a larger
    one only costs rejections in :func:`uniform_below`).
    """
    return np.frexp(values.astype(np.float64))[1].astype(np.uint64)


def uniform_below(high, rng: np.random.Generator | None = None) -> np.ndarray:
    """Exact uniform integers in ``[0, high)``, elementwise (masked rejection sampling).

    Each draw keeps the low ``bit_length(high - 1)`` bits of a uniform word and is
    accepted when below ``high`` (probability > 1/2), so every value in
    ``[0, high)`` has probability exactly ``1 / high``.

    Parameters
    ----------
    high : int or array of int
        Upper bounds, ``1 <= high``; int64 arrays up to ``2^62``, or an object
        array of Python integers (any size, slower).
    rng : numpy Generator or None (cryptographic generator)
    """
    high = np.asarray(high)
    if high.dtype == object:
        return _uniform_below_python(high, rng)
    high = high.astype(np.int64)
    if high.size and (high.min() < 1 or high.max() > 2**62):
        raise ValueError("uniform_below needs 1 <= high <= 2^62 on the int64 path")
    flat = high.ravel()
    if flat.size and np.all(flat == flat[0]):  # one bound: scalar mask, no per-element indexing
        bound = int(flat[0])
        mask = np.uint64((1 << (bound - 1).bit_length()) - 1)
        out = random_words(flat.size, rng) & mask
        if bound & (bound - 1):  # not a power of two: reject draws >= bound
            bad = np.flatnonzero(out >= np.uint64(bound))
            while bad.size:
                out[bad] = random_words(bad.size, rng) & mask
                bad = bad[out[bad] >= np.uint64(bound)]
        return out.astype(np.int64).reshape(high.shape)
    masks = np.left_shift(np.uint64(1), _bit_lengths(flat - 1)) - np.uint64(1)
    bounds = flat.astype(np.uint64)
    out = np.empty(flat.shape, dtype=np.int64)
    pending = np.arange(flat.size)
    while pending.size:
        draws = random_words(pending.size, rng) & masks[pending]
        accepted = draws < bounds[pending]
        out[pending[accepted]] = draws[accepted].astype(np.int64)
        pending = pending[~accepted]
    return out.reshape(high.shape)


def _uniform_below_python(high: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
    flat = high.ravel()
    out = np.empty(flat.shape, dtype=object)
    for index, bound in enumerate(flat):
        bound = int(bound)
        if bound < 1:
            raise ValueError("uniform_below needs high >= 1")
        bits = (bound - 1).bit_length()
        words = -(-bits // 64) or 1
        while True:
            value = 0
            for word in random_words(words, rng):
                value = (value << 64) | int(word)
            value &= (1 << bits) - 1
            if value < bound:
                out[index] = value
                break
    return out.reshape(high.shape)


# ------------------------------------------------------------------ Bernoulli
def bernoulli_exp(numerator, denominator, rng: np.random.Generator | None = None) -> np.ndarray:
    """``Bernoulli(exp(-numerator / denominator))`` elementwise, ``0 <= numerator <= denominator``.

    Canonne-Kamath-Steinke (2020), Algorithm 1: ``K = 1``; while
    ``Bernoulli(gamma / K)`` succeeds, ``K += 1``; return ``K`` odd, with
    ``gamma = numerator / denominator``. ``P(K odd) = sum_k (-gamma)^k / k! = e^-gamma``.
    ``Bernoulli(a / (b K))`` is ``W == 0 and V < a`` for independent uniform
    ``W`` in ``[0, K)`` and ``V`` in ``[0, b)`` (the pair is one uniform integer in
    ``[0, b K)``, read in base b), so no product can overflow.

    Returns
    -------
    bool array
    """
    numerator, denominator = np.broadcast_arrays(np.asarray(numerator), np.asarray(denominator))
    shape = numerator.shape
    numerator, denominator = numerator.ravel(), denominator.ravel()
    k = np.ones(numerator.size, dtype=np.int64)
    alive = np.arange(numerator.size)
    while alive.size:
        # W == 0 is certain while K = 1, and V < a is certain when a = b: skip those draws
        success = np.ones(alive.size, dtype=bool) if k[alive[0]] == 1 else uniform_below(k[alive], rng) == 0
        partial = np.flatnonzero(numerator[alive] < denominator[alive])
        if partial.size:
            chosen = alive[partial]
            success[partial] &= uniform_below(denominator[chosen], rng) < numerator[chosen]
        alive = alive[success]
        k[alive] += 1
    return (k % 2 == 1).reshape(shape)


# ------------------------------------------------------------------ discrete Laplace
def discrete_laplace(numerator, denominator, rng: np.random.Generator | None = None) -> np.ndarray:
    """Discrete Laplace draws with rate ``rho = numerator / denominator`` (elementwise, exact).

    ``P(Z = z) = (1 - e^-rho) / (1 + e^-rho) * e^(-rho |z|)`` for every integer z
    (Canonne-Kamath-Steinke 2020, Algorithm 2 with ``s = numerator``,
    ``t = denominator``): ``U`` uniform in ``[0, t)`` kept with probability
    ``e^(-U/t)`` and ``V`` geometric (``Bernoulli(e^-1)`` successes) make
    ``X = U + t V`` geometric with ratio ``e^(-1/t)``; ``Y = floor(X / s)`` is then
    geometric with ratio ``e^-rho``; a fair sign, rejecting ``-0``, gives Z.

    Parameters
    ----------
    numerator, denominator : positive integers or arrays (broadcast together)
        The shape of the broadcast is the shape of the output. Denominators up to
        :data:`FAST_DENOMINATOR` and numerators below ``2^62`` use int64 arrays;
        larger ones use Python integers (exact, slower).
    rng : numpy Generator or None (cryptographic generator)

    Returns
    -------
    int64 array

    Raises
    ------
    OverflowError
        If a draw reaches :data:`MAX_MAGNITUDE` (probability below ``exp(-2^21)``
        on the int64 path; never silently clipped).
    """
    numerator, denominator = np.broadcast_arrays(np.asarray(numerator), np.asarray(denominator))
    shape = numerator.shape
    fast = numerator.dtype != object and denominator.dtype != object
    if fast and numerator.size:
        fast = int(denominator.max()) <= FAST_DENOMINATOR and int(numerator.max()) < 2**62
    if numerator.size and (min(int(v) for v in (numerator.min(), denominator.min())) < 1):
        raise ValueError("the rate's numerator and denominator must be positive integers")
    dtype = np.int64 if fast else object
    s = numerator.ravel().astype(dtype)
    t = denominator.ravel().astype(dtype)
    out = np.zeros(s.size, dtype=np.int64)
    pending = np.arange(s.size)
    while pending.size:
        tp, sp = t[pending], s[pending]
        u = uniform_below(tp, rng)
        kept = bernoulli_exp(u, tp, rng)
        index, u, tp, sp = pending[kept], u[kept], tp[kept], sp[kept]
        v = np.zeros(index.size, dtype=dtype)
        alive = np.arange(index.size)
        while alive.size:
            alive = alive[bernoulli_exp(np.ones(alive.size, np.int64), np.ones(alive.size, np.int64), rng)]
            v[alive] += 1
        if fast and v.size and int(v.max()) >= 2**10:  # t * v could overflow int64 (probability e^-1024)
            v, u, tp, sp = (a.astype(object) for a in (v, u, tp, sp))
        y = (u + tp * v) // sp
        if y.size and int(y.max()) >= MAX_MAGNITUDE:
            raise OverflowError("a discrete Laplace draw exceeded 2^52 lattice steps")
        y = y.astype(np.int64)
        negative = uniform_below(np.full(index.size, 2), rng) == 1
        rejected = negative & (y == 0)
        out[index[~rejected]] = np.where(negative, -y, y)[~rejected]
        pending = np.concatenate([pending[~kept], index[rejected]])
    return out.reshape(shape)


def discrete_laplace_variance(rate) -> np.ndarray | float:
    """``Var Z = 2 e^-rho / (1 - e^-rho)^2 = 1 / (2 sinh^2(rho / 2))`` (the second form is used).

    At equal privacy it is below the continuous Laplace variance ``2 / rho^2``
    (``sinh x >= x``) and tends to it as ``rho -> 0``.
    """
    rate = np.asarray(rate, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):
        return 0.5 / np.sinh(rate / 2.0) ** 2


def rational_rate(value: Fraction | float, bits: int = RATE_BITS) -> Fraction:
    """The largest ``q / 2^D <= value`` with ``q < 2^bits`` (``D`` may be negative): a realisable rate.

    Rounding the rate down adds noise, so privacy computed with the result is
    never weaker than with ``value``; the relative change is below ``2^(1 - bits)``.
    """
    value = Fraction(value)
    if value <= 0:
        raise ValueError(f"a noise rate must be positive, got {value}")
    a, b = value.numerator, value.denominator
    floor_log2 = a.bit_length() - b.bit_length()
    if (a << max(0, -floor_log2)) < (b << max(0, floor_log2)):
        floor_log2 -= 1
    shift = bits - 1 - floor_log2  # 2^(bits-1) <= value * 2^shift < 2^bits
    q = (a << shift) // b if shift >= 0 else a // (b << -shift)
    return Fraction(q, 1 << shift) if shift >= 0 else Fraction(q << -shift)


# ------------------------------------------------------------------ exact exponentials
def ratio_at_most_exp(ratio: Fraction, exponent: Fraction) -> bool:
    """Decide ``ratio <= e^exponent`` exactly (rational ratio ``>= 0``, rational exponent ``>= 0``).

    :meth:`designer.exact.ExactEpsilon.allows`: ``e^x`` is irrational for rational
    ``x != 0`` (Lindemann), so refined Arb balls always decide; ``x = 0`` is compared with 1.
    """
    from designer.exact import ExactEpsilon

    return ExactEpsilon.parse(Fraction(exponent)).allows(Fraction(ratio), Fraction(1))


def flip_threshold(epsilon: float, bits: int = 32) -> int:
    """The threshold T of randomised response on one bit realised with ``bits``-bit integers.

    A bit is flipped when a uniform integer in ``[0, 2^bits)`` is below T, so the
    realised flip probability is exactly ``p = T / 2^bits``, and the likelihood
    ratio of the two inputs is ``(2^bits - T) / T``. T is the smallest integer with
    ``(2^bits - T) / T <= e^epsilon`` (decided exactly by :func:`ratio_at_most_exp`),
    i.e. ``p = ceil(2^bits / (e^epsilon + 1)) / 2^bits``: the privacy level
    ``ln((2^bits - T) / T)`` is at most epsilon and exceeds
    ``epsilon - 2^-bits / (p (1 - p))`` (one threshold step).
    """
    if not (float(epsilon) > 0 and math.isfinite(float(epsilon))):
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
    total = 1 << bits
    exponent = Fraction(float(epsilon))
    threshold = max(1, math.ceil(total / (math.exp(float(epsilon)) + 1.0)))
    while threshold > 1 and ratio_at_most_exp(Fraction(total - threshold + 1, threshold - 1), exponent):
        threshold -= 1
    while not ratio_at_most_exp(Fraction(total - threshold, threshold), exponent):
        threshold += 1
    return threshold
