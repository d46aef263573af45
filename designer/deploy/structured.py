"""Packages of structured mechanisms too large to tabulate: block Hadamard response.

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
``e^eps / (1 + e^eps)`` rounded down by less than ``2^-b``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from designer.deploy.sampler import (
    FORMAT,
    SCHEMA_VERSION,
    PackageError,
    PackageTampered,
    check_hadamard_structure,
    package_digest,
    verify_digest,
)
from designer.deploy.table import check_bits
from designer.exact import ExactEpsilon, exp_bounds
from designer.io.writing import format_number

#: Members of a block-hadamard package's ``utility``.
HADAMARD_UTILITY_MEMBERS = ("rounding", "ideal_coin", "coin", "max_total_variation", "relative_coin_change")


@dataclass(frozen=True)
class HadamardVerification:
    """Outcome of :func:`verify_hadamard_package`: the proof steps and the exact verdict."""

    certified: bool
    ratio: Fraction
    margin: float
    proof: tuple[str, ...]
    k: int
    n_outputs: int


def largest_coin(epsilon: ExactEpsilon, bits: int) -> int:
    """The largest ``T`` in ``[1, 2^bits)`` with ``T / (2^bits - T) <= exp(epsilon)``, decided exactly."""
    total = 1 << bits
    if epsilon.exp_value is not None:
        ratio = epsilon.exp_value
    else:
        ratio, _ = exp_bounds(epsilon.value, 128)
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
    if not sizes or min(sizes) < 1:
        raise ValueError("block sizes must be positive integers")
    level = ExactEpsilon.parse(epsilon)
    if level.infinite or float(level) <= 0:
        raise ValueError(f"epsilon must be positive and finite, got {epsilon}")
    coin = largest_coin(level, bits)
    total = 1 << bits
    ideal = 1.0 / (1.0 + math.exp(-float(level)))
    document = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "kind": "block-hadamard",
        "bits": bits,
        "block_sizes": [str(size) for size in sizes],
        "epsilon": str(level),
        "coin": str(coin),
        "certificate": {},
        "utility": {
            "rounding": "down",
            "ideal_coin": format_number(ideal),
            "coin": format_number(coin / total),
            "max_total_variation": format_number(abs(coin / total - ideal)),
            "relative_coin_change": format_number(abs(coin / total - ideal) / ideal),
        },
    }
    verification = _prove(sizes, level, coin, bits)
    if not verification.certified:  # largest_coin guarantees the ratio; kept as a guard on the proof itself
        raise ValueError("the block Hadamard coin does not satisfy its own bound")
    document["certificate"] = {
        "verdict": "certified", "mode": "exact", "margin": format_number(verification.margin),
        "proof": list(verification.proof),
    }
    document["sha256"] = package_digest(document)
    return document


def verify_hadamard_package(document: dict) -> HadamardVerification:
    """Check structure (exit 2), SHA-256 (exit 1) and re-prove the privacy of a block-HR package exactly."""
    sizes, coin = check_hadamard_structure(document)
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
    if not isinstance(utility, dict) or set(utility) != set(HADAMARD_UTILITY_MEMBERS):
        raise PackageError(f"utility must have exactly the members {', '.join(HADAMARD_UTILITY_MEMBERS)}")
    verify_digest(document)
    verification = _prove(sizes, level, coin, document["bits"])
    if verification.certified and certificate.get("proof") != list(verification.proof):
        raise PackageTampered("the stored proof differs from the recomputed one")
    return verification


def _prove(sizes: list[int], level: ExactEpsilon, coin: int, bits: int) -> HadamardVerification:
    total = 1 << bits
    ratio = Fraction(coin, total - coin)
    certified = level.allows(Fraction(coin), Fraction(total - coin))
    orders = sorted({1 << size.bit_length() for size in sizes})
    proof = (
        f"blocks {len(sizes)}, k = {sum(sizes)}; Sylvester orders K in {orders[:8]}{'...' if len(orders) > 8 else ''}, "
        "K > block size: distinct symbols use distinct non-zero rows, each with K/2 entries +1",
        f"report uniform on S_x with probability exactly T/2^{bits} = {coin}/{total}, on its complement otherwise",
        f"same block: Q(y|x)/Q(y|x') <= T/(2^{bits} - T) = {ratio} "
        + ("<=" if certified else ">") + f" exp({level}) (exact)",
        "different blocks: disjoint outputs, E = inf",
    )
    margin = level.gap(ratio)
    return HadamardVerification(certified, ratio, margin, proof, sum(sizes), sum(1 << s.bit_length() for s in sizes))
