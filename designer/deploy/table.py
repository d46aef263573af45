"""Deployable form of a channel: integer sampling tables certified exactly.

A channel ``Q`` (k x m) is shipped as integers ``T[x, y] >= 0`` with
``sum_y T[x, y] = 2^b`` for every row; the deployed channel is the rational
matrix ``R = T / 2^b``. A sampler that compares one uniform integer
``u in [0, 2^b)`` with the row's cumulative sums realises ``R`` exactly, so the
certificate must cover ``R``, not ``Q``: every table built here is certified in
exact mode (:func:`designer.certify.certify` with ``exact=True``; Definition 2,
eq. 4 of context-aware-ldp.md), and a table that cannot be certified is refused.

Every row of ``Q`` is first written exactly as integers ``n[x, y] / N[x]`` (a float
is ``mantissa * 2^exponent``; a rational row is brought to a common denominator),
so rounding is integer arithmetic on the scaled entries ``2^b n[x, y] / N[x]``.
A constraint ``(x, x', y)`` is *at risk* when ``E[x, x'] - log(Q[x,y] / Q[x',y])``
is below ``RISK_FACTOR (1/T[x,y] + 1/T[x',y])``, the most rounding can move the
log-ratio. Rounding:

1. **nearest** (nothing at risk) — largest-remainder rounding of each row
   (every entry moves by less than one unit); zeros stay zero and a non-zero
   entry gets at least one unit.
2. **directed** (some constraint at risk) — the numerator ``T[x, y]`` of an
   at-risk constraint is rounded down and its denominator ``T[x', y]`` up
   (entries asked both ways are rounded to nearest); rows that are equal in ``Q``
   are rounded alike, so ``E[x, x'] = 0`` pairs stay equal.
3. **mixed** (if the directed table is not E-LDP) — post-processing
   (Proposition 1 of context-aware-ldp.md keeps E-LDP):
   ``Q_lambda = Q ((1 - lambda) I + lambda K)`` where ``K`` averages each output over
   its *column class* (outputs with the same set of inputs that can produce them),
   so zeros stay zero; ``Q_lambda[x, y] = (1 - lambda) Q[x, y] + lambda mean_{y' ~ y} Q[x, y']``.
   Mixing turns every constraint the class average leaves slack into a strict one,
   which then absorbs the rounding. The dyadic weights ``2^(2-b) ... 1/2`` are searched
   (galloping, then binary search) for the smallest whose directed rounding passes
   the float screen, then ``MIXING_BISECTION_STEPS`` bisection steps refine it.

A channel that breaks E by more than :data:`CHANNEL_TOLERANCE` (1e-9 in log space, the
float certifier's tolerance) is refused; within it, the rounding above absorbs the excess.
If no table certifies at ``b`` bits, a table certified at fewer bits (:data:`FALLBACK_BITS`:
53, 48, 40, 32) is multiplied by ``2^(b - b')``: the same rational channel, so the same
exact certificate (above 53 bits the float at-risk test cannot resolve the rounding's
reach, and its directions may conflict where a coarser table certifies).
Candidates are screened with the float certifier (a table violated by more than
:data:`FLOAT_REJECT` in log space is discarded) and only the table finally kept is
certified exactly, once; if that proof fails the search moves on (larger weights).

The loss is reported against the given channel: the largest total variation of a
row, the largest relative change of a non-zero entry, and the change in mutual
information ``I(X; Y)`` under a prior (uniform by default).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from designer.certify import FLOAT_TOLERANCE, Certificate, certify
from designer.channel import Channel
from designer.deploy.sampler import MAX_BITS, MIN_BITS  # table precisions accepted: 2^b units per row
from designer.spec import PrivacyMatrix
from designer.utility import mutual_information
from solvers.maxplus import safe_log

DEFAULT_BITS = 32
#: When no table certifies at the requested bits, these precisions are tried (those below it)
#: and the first certified table is scaled up: the same rational channel and certificate.
FALLBACK_BITS = (53, 48, 40, 32)
#: Bisection steps after galloping has bracketed the smallest dyadic mixing weight
#: (the weight kept is then within ``2^-MIXING_BISECTION_STEPS`` of the bracket's lower end).
MIXING_BISECTION_STEPS = 4
#: A constraint is "at risk" when its log-slack is below this many times the rounding's
#: worst relative change ``1/T[x,y] + 1/T[x',y]``.
RISK_FACTOR = 2.0
#: A channel breaking E by more than this (log space; the float certifier's tolerance, as in
#: ``certify`` and ``design``) is refused; a smaller excess (a solver's noise) is repaired by
#: directed rounding or mixing, and the table kept is certified exactly, with no tolerance.
CHANNEL_TOLERANCE = FLOAT_TOLERANCE
#: The float screen discards a table violated by more than this (log space).
FLOAT_REJECT = 1e-12
#: A pair is scanned for at-risk outputs when its float slack is within the rounding risk
#: plus this (the float tight E of ``Q`` may be off by rounding noise).
PAIR_NOISE = 1e-12


class TableRefused(ValueError):
    """No table of the requested precision could be certified; ``str`` is one clear line."""


@dataclass(frozen=True)
class IntegerTable:
    """Rows of non-negative integers summing to ``2^bits``: the channel ``counts / 2^bits``.

    Attributes
    ----------
    counts : tuple of tuple of int
        ``counts[x][y]``; each row sums to exactly ``2 ** bits``.
    bits : int
    input_labels, output_labels : tuple of str
    """

    counts: tuple[tuple[int, ...], ...]
    bits: int
    input_labels: tuple[str, ...]
    output_labels: tuple[str, ...]

    def __post_init__(self) -> None:
        check_bits(self.bits)
        total = 1 << self.bits
        width = len(self.output_labels)
        if len(self.counts) != len(self.input_labels) or not self.counts:
            raise ValueError(f"{len(self.counts)} table rows for {len(self.input_labels)} input labels")
        for x, row in enumerate(self.counts):
            if len(row) != width:
                raise ValueError(f"table row {x} has {len(row)} entries, expected {width}")
            if min(row) < 0:
                raise ValueError(f"table row {x} has a negative entry")
            if sum(row) != total:
                raise ValueError(f"table row {x} sums to {sum(row)}, not 2^{self.bits} = {total}")

    @property
    def total(self) -> int:
        """``2 ** bits``, the sum of every row."""
        return 1 << self.bits

    @property
    def k(self) -> int:
        """Number of inputs."""
        return len(self.counts)

    def channel(self) -> Channel:
        """The deployed channel ``counts / 2^bits`` with exact (rational) entries.

        One :class:`~fractions.Fraction` is built per *distinct* count (a table has
        at most ``k m`` of them, often far fewer), then shared by every cell holding it.
        """
        total = self.total
        flat = [value for row in self.counts for value in row]
        fractions = {value: Fraction(value, total) for value in set(flat)}
        exact = np.empty(len(flat), dtype=object)
        exact[:] = list(map(fractions.__getitem__, flat))
        shape = (self.k, len(self.output_labels))
        return Channel(
            self.probabilities(), self.input_labels, self.output_labels, exact_matrix=exact.reshape(shape)
        )

    def probabilities(self) -> np.ndarray:
        """``counts / 2^bits`` as floats (exact for ``bits <= 53``; for display and loss only)."""
        return np.array(self.counts, dtype=float) / self.total


@dataclass(frozen=True)
class RoundingLoss:
    """What rounding to ``2^bits`` units cost, measured against the given channel.

    Attributes
    ----------
    method : "nearest", "directed" or "mixed"
    mixing_weight : Fraction
        ``lambda`` of the column-class mixing (0 unless ``method == "mixed"``).
    max_total_variation : float
        ``max_x (1/2) sum_y |R[x, y] - Q[x, y]|``.
    max_relative_change : float
        ``max |R[x, y] - Q[x, y]| / Q[x, y]`` over non-zero entries.
    mutual_information_channel, mutual_information_table : float
        ``I(X; Y)`` in nats under the prior, for ``Q`` and for ``R``.
    """

    method: str
    mixing_weight: Fraction
    max_total_variation: float
    max_relative_change: float
    mutual_information_channel: float
    mutual_information_table: float

    @property
    def relative_utility_loss(self) -> float:
        """``(I(Q) - I(R)) / I(Q)`` (0 when ``I(Q) = 0``; negative if rounding gained information)."""
        if self.mutual_information_channel == 0:
            return 0.0
        return (self.mutual_information_channel - self.mutual_information_table) / self.mutual_information_channel


@dataclass(frozen=True)
class DeployableChannel:
    """A certified integer table with its exact certificate and the loss of rounding."""

    table: IntegerTable
    privacy: PrivacyMatrix
    certificate: Certificate
    loss: RoundingLoss


def check_bits(bits: int) -> None:
    """Refuse a precision outside ``MIN_BITS..MAX_BITS``."""
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or not MIN_BITS <= bits <= MAX_BITS:
        raise ValueError(f"bits must be an integer from {MIN_BITS} to {MAX_BITS}, got {bits!r}")


def deployable_table(
    channel: Channel,
    privacy: PrivacyMatrix,
    bits: int = DEFAULT_BITS,
    prior: Sequence[float] | None = None,
) -> DeployableChannel:
    """Round ``channel`` to a ``2^bits``-unit integer table that is exactly E-LDP.

    Parameters
    ----------
    channel : Channel
        Float or exact entries; each row is taken relative to its own (exact) sum.
    privacy : PrivacyMatrix
        The E matrix the table must satisfy (Definition 2, eq. 4).
    bits : int
        Units per row are ``2 ** bits`` (default 32).
    prior : sequence of float, optional
        Prior for the mutual-information loss (uniform by default).

    Returns
    -------
    DeployableChannel
        The table, its exact certificate (verdict "certified"), and the rounding loss.

    Raises
    ------
    TableRefused
        The channel is not E-LDP, or no rounding strategy of the module docstring
        certifies at this precision.
    """
    check_bits(bits)
    if channel.k != privacy.k:
        raise ValueError(f"the channel has {channel.k} inputs but E is {privacy.k} x {privacy.k}")
    tight = _refuse_if_violated(channel, privacy)
    numerators, sums = integer_rows(channel)
    labels = (channel.input_labels, channel.output_labels)
    try:
        table, certificate, method, weight = _rounded(numerators, sums, privacy, bits, tight, labels)
    except TableRefused as refusal:
        found = _scaled_from_fewer_bits(numerators, sums, privacy, bits, tight, labels)
        if found is None:
            raise refusal from None
        table, certificate, method, weight = found
    return DeployableChannel(table, privacy, certificate, rounding_loss(channel, table, method, weight, prior))


def _rounded(numerators: np.ndarray, sums: np.ndarray, privacy: PrivacyMatrix, bits: int, tight: np.ndarray,
             labels: tuple[tuple[str, ...], tuple[str, ...]]) -> tuple[IntegerTable, Certificate, str, Fraction]:
    """Nearest, directed, then mixed rounding at ``bits`` (module docstring); :class:`TableRefused` if none certifies."""
    total = 1 << bits
    preferences = _preferences(_quotients(numerators, sums), privacy, total, tight)
    method, weight = ("directed" if preferences.any() else "nearest"), Fraction(0)
    counts = round_rows(numerators, sums, total, preferences)
    found = _certified(counts, privacy, bits, labels) if _passes_float_screen(counts, privacy, total) else None
    if found is None:
        method = "mixed"
        weight, found = _smallest_mixing(numerators, sums, preferences, privacy, bits, labels)
    return (*found, method, weight)


def _scaled_from_fewer_bits(numerators: np.ndarray, sums: np.ndarray, privacy: PrivacyMatrix, bits: int,
                            tight: np.ndarray, labels: tuple[tuple[str, ...], tuple[str, ...]]
                            ) -> tuple[IntegerTable, Certificate, str, Fraction] | None:
    """A table certified at fewer bits (:data:`FALLBACK_BITS`), times ``2^(bits - fewer)``: the same rational channel.

    Above 53 bits the float screen and the at-risk test work with log-ratios whose float
    noise (about 1e-16) exceeds the rounding's reach (about 2^-bits), so their directions
    can conflict where a coarser table certifies; the scaled table is that table exactly,
    with the same exact certificate. None when none certifies.
    """
    for fewer in [fewer for fewer in FALLBACK_BITS if fewer < bits]:
        try:
            table, certificate, method, weight = _rounded(numerators, sums, privacy, fewer, tight, labels)
        except TableRefused:
            continue
        shift = bits - fewer
        scaled = IntegerTable(tuple(tuple(value << shift for value in row) for row in table.counts), bits, *labels)
        return scaled, certificate, method, weight
    return None


def rounding_loss(
    channel: Channel, table: IntegerTable, method: str, mixing_weight: Fraction, prior: Sequence[float] | None = None
) -> RoundingLoss:
    """Compare the table's channel with the given one (see :class:`RoundingLoss`)."""
    original = channel.matrix
    rounded = table.probabilities()
    difference = np.abs(rounded - original)
    positive = original > 0
    prior = np.full(channel.k, 1.0 / channel.k) if prior is None else np.asarray(prior, dtype=float)
    return RoundingLoss(
        method=method,
        mixing_weight=mixing_weight,
        max_total_variation=float(0.5 * difference.sum(axis=1).max()),
        max_relative_change=float((difference[positive] / original[positive]).max()),
        mutual_information_channel=mutual_information(prior, original),
        mutual_information_table=mutual_information(prior, rounded),
    )


# --------------------------------------------------------------------- rounding
def integer_rows(channel: Channel) -> tuple[np.ndarray, np.ndarray]:
    """The channel's rows exactly as integers: row ``x`` over its own sum is ``numerators[x] / sums[x]``.

    A float row is read as ``mantissa * 2^exponent`` (``numpy.frexp``; exact, subnormals
    included) and shifted to the row's smallest exponent; a rational row is brought to
    the least common multiple of its denominators.

    Returns
    -------
    numerators : ndarray of Python int objects (k, m)
    sums : ndarray of Python int objects (k,)
    """
    if channel.is_exact:
        flat = channel.exact_matrix.ravel().tolist()
        shape = channel.exact_matrix.shape
        numerators = _object_array([value.numerator for value in flat]).reshape(shape)
        denominators = _object_array([value.denominator for value in flat]).reshape(shape)
        common = _object_array([math.lcm(*row) for row in denominators.tolist()])
        numerators = numerators * (common[:, None] // denominators)
    else:
        values = channel.matrix
        mantissa, exponent = np.frexp(values)
        integers = (mantissa * 2.0**53).astype(np.int64)  # exact: 0.5 <= mantissa < 1
        exponent = exponent.astype(np.int64) - 53
        lowest = np.where(values > 0, exponent, np.iinfo(np.int64).max).min(axis=1, keepdims=True)
        numerators = integers.astype(object) << np.maximum(exponent - lowest, 0).astype(object)
    return numerators, numerators.sum(axis=1)


def round_rows(numerators: np.ndarray, sums: np.ndarray, total: int, preferences: np.ndarray) -> np.ndarray | None:
    """Round each row ``total * numerators[x] / sums[x]`` to integers summing to ``total``.

    Zeros stay zero; a positive entry gets at least 1. ``preferences[x, y]`` is +1
    (round up), -1 (round down) or 0 (nearest). Entries to round up (and positive
    entries below one unit) take the ceiling; the units left go to the other
    entries by largest remainder (exact integer remainders), down-preferring
    entries last; when the ceilings exceed the units available, the largest
    down-preferring (then neutral) entries give one unit each. Without
    preferences this is largest-remainder rounding: every entry moves by less
    than one unit.

    Parameters
    ----------
    numerators : array_like of int (k, m)
        Non-negative integers (Python ints of any size, or an object array of them).
    sums : array_like of int (k,)
        ``sums[x] = sum_y numerators[x, y] > 0``.
    total : int
    preferences : array_like of int (k, m)

    Returns
    -------
    ndarray of Python int objects (k, m), or None if some row's preferences cannot be
    met (every entry that could give a unit is one that must be rounded up).
    """
    numerators = np.asarray(numerators, dtype=object)
    sums = np.asarray(sums, dtype=object).reshape(-1, 1)
    preferences = np.asarray(preferences)
    scaled = numerators * total
    floors = scaled // sums
    remainders = scaled - floors * sums
    fractional = remainders != 0
    raised = (numerators != 0) & ((floors == 0) | ((preferences > 0) & fractional))
    counts = floors + raised.astype(np.int64).astype(object)
    budgets = total - counts.sum(axis=1)
    for x in np.flatnonzero(budgets > 0).tolist():
        candidates = np.flatnonzero(fractional[x] & ~raised[x])
        order = candidates[np.argsort(-remainders[x, candidates], kind="stable")]
        order = order[np.argsort(preferences[x, order] < 0, kind="stable")]
        counts[x, order[: budgets[x]]] += 1
    for x in np.flatnonzero(budgets < 0).tolist():
        row, deficit = counts[x], -budgets[x]
        movable = ~raised[x] & (preferences[x] <= 0)
        while deficit:
            donors = np.flatnonzero(movable & (row > 1))
            if not donors.size:
                return None
            if donors.size <= deficit:  # full rounds (every donor gives one unit), batched: O(k) rounds otherwise
                rounds = min(deficit // donors.size, int(row[donors].min()) - 1)
                row[donors] -= rounds
                deficit -= rounds * donors.size
                continue
            donors = donors[np.argsort(-row[donors], kind="stable")]
            donors = donors[np.argsort(preferences[x, donors] == 0, kind="stable")][:deficit]
            row[donors] -= 1
            deficit -= len(donors)
    return counts


def _quotients(numerators: np.ndarray, sums: np.ndarray) -> np.ndarray:
    """``numerators / sums`` as correctly rounded floats (Python's integer true division)."""
    return (numerators / sums[:, None]).astype(float)


def _preferences(probabilities: np.ndarray, privacy: PrivacyMatrix, total: int, tight: np.ndarray) -> np.ndarray:
    """Directions for :func:`round_rows`: -1 for numerators, +1 for denominators of at-risk constraints.

    Only pairs whose float slack ``E - tight`` is within the rows' largest risks
    (plus :data:`PAIR_NOISE`) are scanned, one row at a time on a thread pool
    (NumPy releases the GIL); a constraint ``(x, x', y)`` is at risk when
    ``(log Q[x,y] + risk[x,y]) - (log Q[x',y] - risk[x',y]) > E[x, x']`` with
    ``risk = RISK_FACTOR / T``. Equal rows get equal preferences (the union;
    conflicting wishes cancel).
    """
    positive = probabilities > 0
    logs = safe_log(probabilities)
    risk = np.where(positive, RISK_FACTOR / np.where(positive, probabilities * total, 1.0), 0.0)
    high, low = logs + risk, logs - risk
    allowed = privacy.epsilon.copy()
    np.fill_diagonal(allowed, np.inf)
    largest = risk.max(axis=1)
    with np.errstate(invalid="ignore"):  # inf - inf on unconstrained pairs, masked out
        scanned = np.isfinite(allowed) & (allowed - tight < largest[:, None] + largest[None, :] + PAIR_NOISE)
    down = np.zeros(probabilities.shape, dtype=bool)

    def scan(rows: list[int]) -> np.ndarray:
        up = np.zeros(probabilities.shape, dtype=bool)
        for x in rows:
            partners = np.flatnonzero(scanned[x])
            near = np.subtract(high[x], low[partners]) > allowed[x, partners, None]
            down[x] = near.any(axis=0)
            up[partners] |= near
        return up

    rows = np.flatnonzero(scanned.any(axis=1)).tolist()
    workers = max(1, min(os.cpu_count() or 1, len(rows)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        up = np.logical_or.reduce([np.zeros_like(down)] + list(pool.map(scan, [rows[i::workers] for i in range(workers)])))
    _, group = np.unique(probabilities, axis=0, return_inverse=True)
    group = group.ravel()
    if len(np.unique(group)) < len(group):
        for mask in (down, up):
            merged = np.zeros((group.max() + 1, mask.shape[1]), dtype=bool)
            np.logical_or.at(merged, group, mask)
            mask[:] = merged[group]
    return np.where(down & ~up, -1, np.where(up & ~down, 1, 0)).astype(np.int8)


def _column_class_mix(
    numerators: np.ndarray, sums: np.ndarray, classes: np.ndarray, weight: Fraction
) -> tuple[np.ndarray, np.ndarray]:
    """``Q ((1 - w) I + w K)`` in integers: each output mixed with the mean of its column class.

    With ``w = p / q``, class sizes ``|C|``, class sums ``S_C[x]`` and ``L = lcm |C|``, entry
    ``y`` of class ``C`` becomes ``((q - p) n[x, y] |C| + p S_C[x]) (L / |C|)`` over the row
    sum ``q L N[x]`` (the numerators add up to it exactly).
    """
    order = np.argsort(classes, kind="stable")
    sizes = np.bincount(classes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    class_sums = np.add.reduceat(numerators[:, order], starts, axis=1)
    common = math.lcm(*sizes.tolist())
    size = sizes[classes].astype(object)
    p, q = weight.numerator, weight.denominator
    mixed = ((q - p) * numerators * size + p * class_sums[:, classes]) * (common // size)
    return mixed, sums * (q * common)


def _smallest_mixing(
    numerators: np.ndarray,
    sums: np.ndarray,
    preferences: np.ndarray,
    privacy: PrivacyMatrix,
    bits: int,
    labels: tuple[tuple[str, ...], tuple[str, ...]],
) -> tuple[Fraction, tuple[IntegerTable, Certificate]]:
    """The smallest dyadic mixing weight whose directed rounding certifies (see the module docstring)."""
    total = 1 << bits
    _, classes = np.unique(numerators.T != 0, axis=0, return_inverse=True)
    classes = classes.ravel()
    tried: dict[Fraction, np.ndarray | None] = {}

    def attempt(weight: Fraction) -> np.ndarray | None:
        """The rounded mixed table if it passes the float screen (memoised)."""
        if weight not in tried:
            mixed, mixed_sums = _column_class_mix(numerators, sums, classes, weight)
            counts = round_rows(mixed, mixed_sums, total, preferences)
            tried[weight] = counts if _passes_float_screen(counts, privacy, total) else None
        return tried[weight]

    ladder = [Fraction(1, 1 << shift) for shift in range(bits - 2, 0, -1)]  # 2^(2-b) ... 1/2
    failed, index, step = -1, 0, 1  # galloping: the first passing rung after the last failing one
    while attempt(ladder[index]) is None:
        failed = index
        if index == len(ladder) - 1:
            break
        index, step = min(len(ladder) - 1, index + step), 2 * step
    else:
        while index - failed > 1:  # binary search between the last failing and the first passing rung
            middle = (failed + index) // 2
            failed, index = (failed, middle) if attempt(ladder[middle]) is not None else (middle, index)
        low, weight = (ladder[failed] if failed >= 0 else Fraction(0)), ladder[index]
        for _ in range(MIXING_BISECTION_STEPS):
            middle = (low + weight) / 2
            low, weight = (low, middle) if attempt(middle) is not None else (middle, weight)
        for weight in [weight] + [rung for rung in ladder if rung > weight]:  # prove it exactly, or move up
            found = _certified(attempt(weight), privacy, bits, labels)
            if found is not None:
                return weight, found
    raise TableRefused(
        f"no {bits}-bit table of this channel is E-LDP: rounding to nearest, directed rounding and mixing "
        "up to weight 1/2 within column classes all break a constraint (try more --bits or a channel "
        "with slack against E)"
    )


def _passes_float_screen(counts: np.ndarray | None, privacy: PrivacyMatrix, total: int) -> bool:
    """Whether ``counts / total`` is within :data:`FLOAT_REJECT` of E-LDP by the float certifier."""
    if counts is None:
        return False
    return certify(counts.astype(float) / total, privacy).margin >= -FLOAT_REJECT


def _certified(
    counts: np.ndarray | None, privacy: PrivacyMatrix, bits: int, labels: tuple[tuple[str, ...], tuple[str, ...]]
) -> tuple[IntegerTable, Certificate] | None:
    """The table and its exact certificate if ``counts / 2^bits`` is E-LDP, else None."""
    if counts is None:
        return None
    table = IntegerTable(tuple(map(tuple, counts.tolist())), bits, *labels)
    certificate = certify(table.channel(), privacy, exact=True)
    return (table, certificate) if certificate.certified else None


def _refuse_if_violated(channel: Channel, privacy: PrivacyMatrix) -> np.ndarray:
    """Refuse a channel that breaks E by more than :data:`CHANNEL_TOLERANCE`; return its float tight E."""
    certificate = certify(channel, privacy, tolerance=CHANNEL_TOLERANCE)
    if not certificate.certified:
        violation = certificate.violations[0]
        raise TableRefused(
            f"the channel is not E-LDP (beyond the tolerance {CHANNEL_TOLERANCE:g} in log space), so no table of it "
            f"is: pair {violation.describe(digits=10)} (excess {violation.log_ratio - violation.allowed:.3g})"
        )
    return certificate.tight_epsilon


def _object_array(values: list[int]) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array
