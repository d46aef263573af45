"""Packages of structured mechanisms too large to tabulate: block and high-low Hadamard response.

Block HR (context-aware-ldp.md, Section 6.1; :class:`designer.mechanisms.BlockHadamardResponse`)
at k = 43,750 would need a 43,750 x 65,536-ish table. Its package (kind
``"block-hadamard"``) holds its parameters instead — ``block_sizes`` (consecutive
blocks), the exact level ``epsilon`` and the integer coin threshold ``coin`` = T — and
its structural privacy proof, every step of which is decided exactly:

1. Sylvester Hadamard row ``r >= 1`` of order ``K`` has ``K/2`` entries +1 (the set
   ``S_x``) and ``K/2`` entries -1; symbol ``x`` at position ``i`` of its block uses row
   ``i + 1 <= k_j < K``, so distinct symbols of a block use distinct non-zero rows.
2. The sampler (:class:`designer.deploy.sampler.HadamardSampler`) reports a column
   uniform on ``S_x`` with probability exactly ``T / 2^b`` and uniform on its complement
   otherwise, so ``Q(y|x)`` takes the two values ``2T / (K 2^b)`` and ``2(2^b - T) / (K 2^b)``.
3. Same block: ``Q(y|x) / Q(y|x') <= T / (2^b - T)``, with equality on some column (rows
   differ in ``K/2`` places); this is ``<= exp(epsilon)``, decided in exact arithmetic
   (:meth:`designer.exact.ExactEpsilon.allows`). Different blocks: disjoint outputs, E = inf.

So the package is E-LDP for ``E = PrivacyMatrix.block(block_sizes, epsilon)`` (Definition 4).
The coin is the largest ``T`` with ``T / (2^b - T) <= exp(epsilon)``: the ideal coin
``e^eps / (1 + e^eps)`` rounded down by less than ``2^-b``. (A forged coin below ``2^(b-1)``
makes ``S_x`` the *less* likely half; step 3 then bounds ``(2^b - T) / T``.)

High-low HR (Section 5.1, channel (13)-(14); :class:`designer.mechanisms.HighLowHadamardResponse`)
is packaged as kind ``"high-low-hadamard"``: ``k``, the sorted ``sensitive`` symbols (the set
A, ``s = |A|``, ``t = k - s``), ``epsilon``, the coin T and the keep threshold K. Its
sampler (:class:`designer.deploy.sampler.HighLowHadamardSampler`) gives, exactly, with
``S = 2^ceil(log2(s + 1))``:

* x in A (Hadamard row ``i + 1`` for the i-th sensitive symbol): ``Q(y|x) = 2T / (S 2^b)`` on
  ``S_x``, ``2(2^b - T) / (S 2^b)`` on the rest of ``[S]``, 0 on the outputs ``S + i``;
* x not in A (the i-th of them): ``Q(S + i | x) = K / 2^b`` and ``Q(y|x) = (2^b - K) / (S 2^b)``
  on ``[S]``.

E = ``PrivacyMatrix.high_low(k, A, epsilon)`` (Definition 3) constrains only rows x in A
(``E[x, x'] = epsilon`` for every x', sensitive or not); ``E[x, x'] = inf`` for x not in A.
The proof decides, exactly, the largest ratio ``Q(y|x) / Q(y|x')`` for every constrained
pair — and these maxima are attained, so the verdict is the exact certificate's:

* x, x' in A (``s >= 2``): ``max(T, 2^b - T) / min(T, 2^b - T)`` (distinct non-zero rows
  disagree on S/2 columns, a quarter of them each way);
* x in A, x' not in A (``t >= 1``): ``2 max(T, 2^b - T) / (2^b - K)``; on the outputs
  ``S + i``, ``Q(y|x) = 0``.

With ``K = 2T - 2^b`` (the built value) the second ratio equals the first, so the deployed
channel is exactly channel (13)-(14) at the rational level ``e^eps' = T / (2^b - T) <= e^eps``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction

from designer.deploy.sampler import (
    FORMAT,
    MAX_BLOCKS,
    MAX_LISTED_SYMBOLS,
    MAX_SYMBOLS,
    SCHEMA_VERSION,
    PackageError,
    PackageTampered,
    check_common,
    check_hadamard_structure,
    check_high_low_structure,
)
from designer.deploy.proof import HadamardVerification, recheck, sealed
from designer.deploy.table import check_bits
from designer.exact import ExactEpsilon, exp_bounds
from designer.io.writing import format_number

#: Members of a block-hadamard package's ``utility``.
HADAMARD_UTILITY_MEMBERS = ("rounding", "ideal_coin", "coin", "max_total_variation", "relative_coin_change")
#: Members of a high-low-hadamard package's ``utility``.
HIGH_LOW_UTILITY_MEMBERS = (
    "rounding", "ideal_coin", "coin", "ideal_keep", "keep", "max_total_variation", "relative_coin_change",
)


def largest_coin(epsilon: ExactEpsilon, bits: int) -> int:
    """The largest ``T`` in ``[1, 2^bits)`` with ``T / (2^bits - T) <= exp(epsilon)``, decided exactly."""
    total = 1 << bits
    if epsilon.exp_value is not None:
        ratio = epsilon.exp_value
    elif epsilon.value > bits:  # exp(eps) > 2^bits: every coin up to 2^bits - 1 is allowed (no exp of a huge level)
        ratio = Fraction(total)
    else:
        # a first guess only (the loops below decide exactly): beyond bits + 2, e^eps > 2^bits
        # already gives the largest coin, and exp(1e308) would overflow even an Arb ball
        ratio, _ = exp_bounds(min(epsilon.value, Fraction(bits + 2)), 128)
    coin = min(total - 1, max(1, math.floor(total * ratio / (1 + ratio))))
    while coin > 1 and not epsilon.allows(Fraction(coin), Fraction(total - coin)):
        coin -= 1
    while coin + 1 < total and epsilon.allows(Fraction(coin + 1), Fraction(total - coin - 1)):
        coin += 1
    return coin


def build_hadamard_package(block_sizes: Sequence[int], epsilon: str | float, bits: int = 32) -> dict:
    """A ``block-hadamard`` package (with its ``sha256``) for consecutive blocks of the given sizes.

    Parameters
    ----------
    block_sizes : sequence of int
        Sizes of the consecutive blocks (symbols ``0..k-1`` in block order).
    epsilon : str or float
        The level inside a block, exact text (``"log(3)"``, ``"1"``) or a float (its binary value).
    bits : int
        Precision of the coin.
    """
    check_bits(bits)
    sizes = [int(size) for size in block_sizes]
    if not sizes or min(sizes) < 1 or max(sizes) >= MAX_SYMBOLS:
        raise ValueError("block sizes must be integers from 1 to 2^31 - 1")
    if len(sizes) > MAX_BLOCKS:
        raise ValueError(f"{len(sizes)} blocks is too many (at most {MAX_BLOCKS})")
    level, coin = _level_and_coin(epsilon, bits)
    document = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "kind": "block-hadamard",
        "bits": bits,
        "block_sizes": [str(size) for size in sizes],
        "epsilon": str(level),
        "coin": str(coin),
        "certificate": {},
        "utility": hadamard_utility(level, coin, bits),
    }
    return sealed(document, _prove_block(sizes, level, coin, bits))


def build_high_low_package(k: int, sensitive: Iterable[int], epsilon: str | float, bits: int = 32) -> dict:
    """A ``high-low-hadamard`` package (with its ``sha256``): high-low HR, Section 5.1, by its parameters.

    The coin T is :func:`largest_coin`; the keep threshold is ``K = 2T - 2^b``, so the
    deployed channel is channel (13)-(14) at ``e^eps' = T / (2^b - T)`` exactly (see the
    module docstring).

    Parameters
    ----------
    k : int
        Domain size (1 to 2^31 - 1).
    sensitive : iterable of int
        The sensitive symbols A (a non-empty subset of ``0..k-1``).
    epsilon : str or float
        The level of Definition 3, exact text (``"log(3)"``, ``"1"``) or a float (its binary value).
    bits : int
        Precision of the coin and keep thresholds.
    """
    check_bits(bits)
    k = int(k)
    if not 1 <= k < MAX_SYMBOLS:
        raise ValueError(f"k must be from 1 to 2^31 - 1, got {k}")
    symbols = sorted({int(x) for x in sensitive})
    if not symbols or symbols[0] < 0 or symbols[-1] >= k:
        raise ValueError(f"sensitive symbols must be a non-empty subset of 0..{k - 1}")
    if len(symbols) > MAX_LISTED_SYMBOLS:
        raise ValueError(f"{len(symbols)} sensitive symbols is too many (at most {MAX_LISTED_SYMBOLS})")
    level, coin = _level_and_coin(epsilon, bits)
    keep = 2 * coin - (1 << bits)  # >= 0: epsilon > 0 gives T >= 2^(b-1)
    document = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "kind": "high-low-hadamard",
        "bits": bits,
        "k": str(k),
        "sensitive": [str(x) for x in symbols],
        "epsilon": str(level),
        "coin": str(coin),
        "keep": str(keep),
        "certificate": {},
        "utility": high_low_utility(level, coin, keep, bits, len(symbols) < k),
    }
    return sealed(document, _prove_high_low(k, symbols, level, coin, keep, bits))


def _ideal_coin(level: ExactEpsilon) -> float:
    """``e^eps / (1 + e^eps)`` as a float (``1 / (1 + e^-eps)``: no overflow for a large level)."""
    return 1.0 / (1.0 + math.exp(-float(level)))


def hadamard_utility(level: ExactEpsilon, coin: int, bits: int) -> dict:
    """The ``utility`` of a block-hadamard package: the coin against the ideal ``e^eps / (1 + e^eps)``."""
    total, ideal = 1 << bits, _ideal_coin(level)
    return {
        "rounding": "down",
        "ideal_coin": format_number(ideal),
        "coin": format_number(coin / total),
        "max_total_variation": format_number(abs(coin / total - ideal)),
        "relative_coin_change": format_number(abs(coin / total - ideal) / ideal),
    }


def high_low_utility(level: ExactEpsilon, coin: int, keep: int, bits: int, has_non_sensitive: bool) -> dict:
    """The ``utility`` of a high-low-hadamard package: coin and keep against the ideal channel (13)-(14)."""
    total, ideal = 1 << bits, _ideal_coin(level)
    shift = abs(coin / total - ideal)
    return {
        "rounding": "down",
        "ideal_coin": format_number(ideal),
        "coin": format_number(coin / total),
        "ideal_keep": format_number(2 * ideal - 1),
        "keep": format_number(keep / total),
        # a sensitive row moves |coin - ideal| between its halves; a non-sensitive one twice that
        "max_total_variation": format_number(2 * shift if has_non_sensitive else shift),
        "relative_coin_change": format_number(shift / ideal),
    }


def parse_block_sizes(text: str) -> list[int]:
    """Block sizes written as ``"1750*25,100"`` (``SIZE`` or ``SIZE*COUNT``, comma separated).

    At most :data:`~designer.deploy.sampler.MAX_BLOCKS` blocks, counted before any list is built.
    """
    sizes: list[int] = []
    for item in text.split(","):
        size, star, count = item.strip().partition("*")
        try:
            size, count = int(size), (int(count) if star else 1)
        except ValueError:
            raise ValueError(f"{item.strip()!r} is not SIZE or SIZE*COUNT") from None
        if count < 1:
            raise ValueError(f"{item.strip()!r}: COUNT must be at least 1")
        if len(sizes) + count > MAX_BLOCKS:
            raise ValueError(f"more than {MAX_BLOCKS} blocks (at most 2^20)")
        sizes.extend([size] * count)
    return sizes


def parse_symbols(text: str) -> list[int]:
    """Symbols written as ``"0-99,250,300-310"`` (comma-separated symbols and inclusive ranges)."""
    symbols: set[int] = set()
    for item in text.split(","):
        first, dash, last = item.strip().partition("-")
        try:
            low, high = int(first), int(last) if dash else int(first)
        except ValueError:
            raise ValueError(f"{item.strip()!r} is not a symbol or a range FIRST-LAST") from None
        if low < 0 or high < low or high >= MAX_SYMBOLS:
            raise ValueError(f"{item.strip()!r} is not a range of symbols from 0 to 2^31 - 1")
        if len(symbols) + high - low + 1 > MAX_LISTED_SYMBOLS:
            raise ValueError(f"more than {MAX_LISTED_SYMBOLS} symbols listed")
        symbols.update(range(low, high + 1))
    return sorted(symbols)


def verify_structured_package(document: dict) -> HadamardVerification:
    """Check structure (exit 2), SHA-256 (exit 1) and re-prove the privacy of a structured package exactly.

    Kinds ``block-hadamard``, ``high-low-hadamard`` and ``orbit`` (:mod:`designer.deploy.orbit`).
    Raises :class:`PackageError` for
    a malformed package (or a table), :class:`PackageTampered` for a hash mismatch or a
    stored proof that differs from the recomputed one.
    """
    kind = check_common(document)
    if kind == "block-hadamard":
        return verify_hadamard_package(document)
    if kind == "high-low-hadamard":
        return verify_high_low_package(document)
    if kind == "orbit":
        from designer.deploy.orbit import verify_orbit_package

        return verify_orbit_package(document)
    raise PackageError(f"a {kind} package has no structural proof (verify it as a table)")


def verify_hadamard_package(document: dict) -> HadamardVerification:
    """Check structure (exit 2), SHA-256 (exit 1) and re-prove the privacy of a block-HR package exactly."""
    sizes, coin = check_hadamard_structure(document)
    level = _checked_fields(document, HADAMARD_UTILITY_MEMBERS)
    verification = recheck(document, _prove_block(sizes, level, coin, document["bits"]))
    if verification.certified:  # a violated package is reported as such; its numbers are moot
        _check_utility(document["utility"], hadamard_utility(level, coin, document["bits"]))
    return verification


def verify_high_low_package(document: dict) -> HadamardVerification:
    """Check structure (exit 2), SHA-256 (exit 1) and re-prove the privacy of a high-low HR package exactly."""
    k, sensitive, coin, keep = check_high_low_structure(document)
    level = _checked_fields(document, HIGH_LOW_UTILITY_MEMBERS)
    verification = recheck(document, _prove_high_low(k, sensitive, level, coin, keep, document["bits"]))
    if verification.certified:  # a violated package is reported as such; its numbers are moot
        _check_utility(document["utility"], high_low_utility(level, coin, keep, document["bits"], len(sensitive) < k))
    return verification


def _check_utility(stored: dict, recomputed: dict) -> None:
    """Every stored utility number must agree with the one recomputed from the parameters (PackageTampered)."""
    from designer.deploy.package import UTILITY_ATOL, UTILITY_RTOL, check_stored, text_number

    if stored["rounding"] != recomputed["rounding"]:
        raise PackageTampered(f"utility.rounding {stored['rounding']!r} is not {recomputed['rounding']!r}")
    for member, value in recomputed.items():
        if member != "rounding":
            check_stored(f"utility.{member}", text_number(stored[member]), float(value), UTILITY_RTOL, UTILITY_ATOL)


def _level_and_coin(epsilon: str | float, bits: int) -> tuple[ExactEpsilon, int]:
    """The exact level (positive, finite) and its largest coin."""
    level = ExactEpsilon.parse(epsilon)
    if level.infinite or float(level) <= 0:
        raise ValueError(f"epsilon must be positive and finite, got {epsilon}")
    return level, largest_coin(level, bits)


def _checked_fields(document: dict, utility_members: tuple[str, ...]) -> ExactEpsilon:
    """Check the level, certificate and utility members (exit 2); return the exact level."""
    try:
        level = ExactEpsilon.parse(document["epsilon"])
    except ValueError as error:
        raise PackageError(f"bad epsilon in the package: {error}") from None
    if level.infinite:
        raise PackageError("epsilon must be finite")
    certificate = document["certificate"]
    if not isinstance(certificate, dict) or set(certificate) != {"verdict", "mode", "margin", "proof"}:
        raise PackageError("certificate must have exactly the members verdict, mode, margin, proof")
    utility = document["utility"]
    if not isinstance(utility, dict) or set(utility) != set(utility_members):
        raise PackageError(f"utility must have exactly the members {', '.join(utility_members)}")
    return level


def _bound(
    name: str, numerator: int, denominator: int, formula: str, level: ExactEpsilon
) -> tuple[str, bool, Fraction | None]:
    """One proof step: ``numerator / denominator <= exp(level)``, decided exactly (a zero denominator fails)."""
    holds = level.allows(Fraction(numerator), Fraction(denominator))
    ratio = Fraction(numerator, denominator) if denominator else None
    shown = ratio if ratio is not None else "inf"
    return f"{name}: {formula} = {shown} " + ("<=" if holds else ">") + f" exp({level}) (exact)", holds, ratio


def _conclude(steps: list[str], bounds: list[tuple[str, bool, Fraction | None]], level: ExactEpsilon,
              k: int, n_outputs: int, mechanism: str) -> HadamardVerification:
    certified = all(holds for _, holds, _ in bounds)
    ratios = [ratio for _, _, ratio in bounds]
    if any(ratio is None for ratio in ratios):
        ratio, margin = None, -math.inf
    elif ratios:
        ratio = max(ratios)
        margin = level.gap(ratio)
    else:
        ratio, margin = None, math.inf
    failed = tuple(text for text, holds, _ in bounds if not holds)
    return HadamardVerification(certified, ratio, margin, tuple(steps), k, n_outputs, mechanism, failed)


def _prove_block(sizes: list[int], level: ExactEpsilon, coin: int, bits: int) -> HadamardVerification:
    total = 1 << bits
    orders = sorted({1 << size.bit_length() for size in sizes})
    if coin >= total - coin:
        same_block = _bound("same block", coin, total - coin, f"Q(y|x)/Q(y|x') <= T/(2^{bits} - T)", level)
    else:
        same_block = _bound("same block", total - coin, coin, f"Q(y|x)/Q(y|x') <= (2^{bits} - T)/T", level)
    steps = [
        f"blocks {len(sizes)}, k = {sum(sizes)}; Sylvester orders K in {orders[:8]}{'...' if len(orders) > 8 else ''}, "
        "K > block size: distinct symbols use distinct non-zero rows, each with K/2 entries +1",
        f"report uniform on S_x with probability exactly T/2^{bits} = {coin}/{total}, on its complement otherwise",
        same_block[0],
        "different blocks: disjoint outputs, E = inf",
    ]
    n_outputs = sum(1 << size.bit_length() for size in sizes)
    return _conclude(steps, [same_block], level, sum(sizes), n_outputs, "block Hadamard response")


def _prove_high_low(k: int, sensitive: list[int], level: ExactEpsilon, coin: int, keep: int,
                    bits: int) -> HadamardVerification:
    total = 1 << bits
    s, t = len(sensitive), k - len(sensitive)
    size = 1 << s.bit_length()
    high, low = max(coin, total - coin), min(coin, total - coin)
    bounds = []
    steps = [
        f"k = {k}: s = {s} sensitive, t = {t} non-sensitive; Sylvester order S = {size} > s: the i-th sensitive "
        "symbol uses row i + 1 (distinct non-zero rows, each with S/2 entries +1)",
        f"x in A: report uniform on S_x with probability exactly T/2^{bits} = {coin}/{total}, on the rest of [S] "
        f"otherwise: Q(y|x) = 2T/(S 2^{bits}) or 2(2^{bits} - T)/(S 2^{bits}) on [S], 0 on the outputs S + i",
        f"x not in A (the i-th): report S + i with probability exactly K/2^{bits} = {keep}/{total}, uniform on [S] "
        f"otherwise: Q(y|x) = (2^{bits} - K)/(S 2^{bits}) on [S]",
    ]
    if s >= 2:
        formula = f"max_y Q(y|x)/Q(y|x') = max(T, 2^{bits} - T)/min(T, 2^{bits} - T)"
        bounds.append(_bound("x, x' in A", high, low, formula, level))
        steps.append(bounds[-1][0])
    else:
        steps.append("x, x' in A: s = 1, no pair of distinct sensitive symbols")
    if t >= 1:
        bounds.append(_bound("x in A, x' not in A", 2 * high, total - keep,
                             f"max_y Q(y|x)/Q(y|x') = 2 max(T, 2^{bits} - T)/(2^{bits} - K)", level))
        steps.append(bounds[-1][0] + "; outputs S + i: Q(y|x) = 0")
    else:
        steps.append("x in A, x' not in A: t = 0, every symbol is sensitive")
    steps.append("x not in A: E[x, x'] = inf for every x' (Definition 3), no constraint")
    return _conclude(steps, bounds, level, k, size + t, f"high-low Hadamard response, s = {s} sensitive")
