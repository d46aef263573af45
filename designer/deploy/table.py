"""Deployable form of a channel: integer sampling tables certified exactly.

A channel ``Q`` (k x m) is shipped as integers ``T[x, y] >= 0`` with
``sum_y T[x, y] = 2^b`` for every row; the deployed channel is the rational
matrix ``R = T / 2^b``. A sampler that compares one uniform integer
``u in [0, 2^b)`` with the row's cumulative sums realises ``R`` exactly, so the
certificate must cover ``R``, not ``Q``: every table built here is certified in
exact mode (:func:`designer.certify.certify` with ``exact=True``; Definition 2,
eq. 4 of context-aware-ldp.md), and a table that cannot be certified is refused.

Rounding, tried in this order (the first certified table is kept):

1. **nearest** — each row ``2^b Q[x] / sum(Q[x])`` rounded by largest remainder
   (every entry moves by less than one unit); zeros stay zero and a non-zero
   entry gets at least one unit.
2. **directed** — for every finite pair ``(x, x')`` and output ``y`` whose log-ratio
   ``log(Q[x,y] / Q[x',y])`` lies within the rounding slack of ``E[x, x']``, the
   numerator ``T[x, y]`` is rounded down and the denominator ``T[x', y]`` up
   (entries asked both ways are rounded to nearest); rows that are equal in ``Q``
   are rounded alike, so ``E[x, x'] = 0`` pairs stay equal.
3. **mixed** — post-processing (Proposition 1 of context-aware-ldp.md keeps E-LDP):
   ``Q_lambda = Q ((1 - lambda) I + lambda K)`` where ``K`` averages each output over
   its *column class* (outputs with the same set of inputs that can produce them),
   so zeros stay zero; ``Q_lambda[x, y] = (1 - lambda) Q[x, y] + lambda mean_{y' ~ y} Q[x, y']``.
   Mixing turns every constraint the class average leaves slack into a strict one,
   which then absorbs the rounding. The smallest dyadic ``lambda`` found (a doubling
   ladder from ``2^(2-b)`` to 1/2, then bisection) is used, then directed rounding.

The loss is reported against the given channel: the largest total variation of a
row, the largest relative change of a non-zero entry, and the change in mutual
information ``I(X; Y)`` under a prior (uniform by default).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from designer.certify import Certificate, certify
from designer.channel import Channel
from designer.spec import PrivacyMatrix
from designer.utility import mutual_information

DEFAULT_BITS = 32
#: Table precisions accepted: ``2^b`` units per row.
MIN_BITS, MAX_BITS = 8, 64
#: Bisection steps after the doubling ladder has bracketed the smallest mixing weight.
MIXING_BISECTION_STEPS = 8
#: A pair is "at risk" when its log-slack is below this many times the rounding's
#: worst relative change ``1/T[x,y] + 1/T[x',y]``.
RISK_FACTOR = 2.0
#: The float pre-check skips the exact certifier when a table is violated by more than this (log space).
FLOAT_REJECT = 1e-12


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
            if any(value < 0 for value in row):
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
        """The deployed channel ``counts / 2^bits`` with exact (rational) entries."""
        total = self.total
        rows = [[Fraction(value, total) for value in row] for row in self.counts]
        return Channel(rows, self.input_labels, self.output_labels)

    def probabilities(self) -> np.ndarray:
        """``counts / 2^bits`` as floats (exact for ``bits <= 53``; for display and loss only)."""
        return np.array([[value / self.total for value in row] for row in self.counts])


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
    source = _normalised_rows(channel.exact_matrix)
    _refuse_if_violated(channel, privacy)
    total = 1 << bits
    counts = _round_matrix(source, total, None)
    method, weight = "nearest", Fraction(0)
    certificate = _certify_counts(counts, privacy)
    if certificate is None:
        method = "directed"
        counts = _round_matrix(source, total, _preferences(source, privacy, total))
        certificate = _certify_counts(counts, privacy)
    if certificate is None:
        method = "mixed"
        weight, counts, certificate = _smallest_mixing(source, privacy, bits)
    table = IntegerTable(
        tuple(tuple(row) for row in counts), bits, channel.input_labels, channel.output_labels
    )
    return DeployableChannel(table, privacy, certificate, rounding_loss(channel, table, method, weight, prior))


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
def _normalised_rows(exact: np.ndarray) -> list[list[Fraction]]:
    rows = []
    for row in exact:
        total = sum(row, Fraction(0))
        rows.append([Fraction(value) / total for value in row])
    return rows


def _round_matrix(rows: list[list[Fraction]], total: int, preferences: np.ndarray | None) -> list[list[int]] | None:
    """Round every row to ``total`` units; ``None`` when some row cannot honour its preferences."""
    out = []
    for x, row in enumerate(rows):
        wishes = preferences[x] if preferences is not None else np.zeros(len(row), dtype=np.int8)
        rounded = round_row([value * total for value in row], total, wishes)
        if rounded is None:
            return None
        out.append(rounded)
    return out


def round_row(scaled: Sequence[Fraction], total: int, preferences: Sequence[int]) -> list[int] | None:
    """Round non-negative rationals summing to ``total`` to integers summing to ``total``.

    Zeros stay zero; a positive entry gets at least 1. ``preferences[y]`` is +1
    (round up), -1 (round down) or 0 (nearest). Entries to round up (and positive
    entries below one unit) take the ceiling; the units left go to the other
    entries by largest remainder, down-preferring entries last; when the ceilings
    exceed the units available, the largest down-preferring (then neutral)
    entries give one unit each. Without preferences this is largest-remainder
    rounding: every entry moves by less than one unit.

    Returns
    -------
    list of int, or None if the preferences cannot be met (every entry that could
    give a unit is one that must be rounded up).
    """
    floors = [value.numerator // value.denominator for value in scaled]
    remainders = [value - floor for value, floor in zip(scaled, floors)]
    counts = list(floors)
    budget = total - sum(floors)
    raised = {y for y, value in enumerate(scaled) if value > 0 and (floors[y] == 0 or (preferences[y] > 0 and remainders[y] > 0))}
    for y in raised:
        counts[y] += 1
    budget -= len(raised)
    if budget > 0:
        others = [y for y, remainder in enumerate(remainders) if remainder > 0 and y not in raised]
        others.sort(key=lambda y: (preferences[y] < 0, -remainders[y], y))
        for y in others[:budget]:
            counts[y] += 1
    elif budget < 0:
        donors = [y for y in range(len(counts)) if y not in raised and preferences[y] <= 0 and counts[y] > 1]
        donors.sort(key=lambda y: (preferences[y] == 0, -counts[y], y))
        deficit = -budget
        while deficit:
            donors = [y for y in donors if counts[y] > 1]
            if not donors:
                return None
            for y in donors[:deficit]:
                counts[y] -= 1
            deficit -= min(deficit, len(donors))
    return counts


def _preferences(rows: list[list[Fraction]], privacy: PrivacyMatrix, total: int) -> np.ndarray:
    """Directions for :func:`round_row`: -1 for numerators, +1 for denominators of at-risk constraints.

    A constraint ``(x, x', y)`` is at risk when ``E[x, x'] - log(Q[x,y] / Q[x',y])``
    is below ``RISK_FACTOR (1/T[x,y] + 1/T[x',y])``, the most rounding can move the
    log-ratio. Equal rows get equal preferences (the union; conflicting wishes cancel).
    """
    probabilities = np.array([[float(value) for value in row] for row in rows])
    positive = probabilities > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(positive, np.log(np.where(positive, probabilities, 1.0)), -np.inf)
        risk = np.where(positive, RISK_FACTOR / np.where(positive, probabilities * total, 1.0), 0.0)
    down = np.zeros(probabilities.shape, dtype=bool)
    up = np.zeros(probabilities.shape, dtype=bool)
    epsilon = privacy.epsilon
    k = len(rows)
    for x in range(k):
        for x_prime in range(k):
            if x == x_prime or not math.isfinite(epsilon[x, x_prime]):
                continue
            both = positive[x] & positive[x_prime]
            with np.errstate(invalid="ignore"):
                slack = epsilon[x, x_prime] - (logs[x] - logs[x_prime])
            at_risk = both & (slack < risk[x] + risk[x_prime])
            down[x] |= at_risk
            up[x_prime] |= at_risk
    groups: dict[tuple, list[int]] = {}
    for x, row in enumerate(rows):
        groups.setdefault(tuple(row), []).append(x)
    for members in groups.values():
        down[members] = down[members].any(axis=0)
        up[members] = up[members].any(axis=0)
    return np.where(down & ~up, -1, np.where(up & ~down, 1, 0)).astype(np.int8)


def _column_class_mix(rows: list[list[Fraction]], weight: Fraction) -> list[list[Fraction]]:
    """``Q ((1 - w) I + w K)``: each output mixed with the mean of its column class (same support)."""
    k, m = len(rows), len(rows[0])
    classes: dict[tuple[bool, ...], list[int]] = {}
    for y in range(m):
        classes.setdefault(tuple(rows[x][y] > 0 for x in range(k)), []).append(y)
    mixed = [list(row) for row in rows]
    for members in classes.values():
        for x in range(k):
            mean = sum((rows[x][y] for y in members), Fraction(0)) / len(members)
            for y in members:
                mixed[x][y] = (1 - weight) * rows[x][y] + weight * mean
    return mixed


def _smallest_mixing(
    rows: list[list[Fraction]], privacy: PrivacyMatrix, bits: int
) -> tuple[Fraction, list[list[int]], Certificate]:
    """The smallest dyadic mixing weight whose directed rounding certifies (see the module docstring)."""
    total = 1 << bits

    def attempt(weight: Fraction):
        mixed = _column_class_mix(rows, weight)
        counts = _round_matrix(mixed, total, _preferences(mixed, privacy, total))
        certificate = _certify_counts(counts, privacy)
        return None if certificate is None else (counts, certificate)

    failed = Fraction(0)
    weight = Fraction(1, 1 << (bits - 2))
    found = None
    while weight <= Fraction(1, 2):
        found = attempt(weight)
        if found is not None:
            break
        failed, weight = weight, weight * 2
    if found is None:
        raise TableRefused(
            f"no {bits}-bit table of this channel is E-LDP: rounding to nearest, directed rounding and mixing "
            "up to weight 1/2 within column classes all break a constraint (try more --bits or a channel "
            "with slack against E)"
        )
    for _ in range(MIXING_BISECTION_STEPS):
        middle = (failed + weight) / 2
        better = attempt(middle)
        if better is None:
            failed = middle
        else:
            weight, found = middle, better
    return weight, found[0], found[1]


def _certify_counts(counts: list[list[int]] | None, privacy: PrivacyMatrix) -> Certificate | None:
    """The exact certificate of ``counts / total`` if it is E-LDP, else None (float pre-check first)."""
    if counts is None:
        return None
    total = sum(counts[0])
    floating = certify(np.array(counts, dtype=float) / total, privacy)
    if floating.margin < -FLOAT_REJECT:
        return None
    exact = certify(Channel([[Fraction(value, total) for value in row] for row in counts]), privacy, exact=True)
    return exact if exact.certified else None


def _refuse_if_violated(channel: Channel, privacy: PrivacyMatrix) -> None:
    """Refuse a channel that breaks E by more than any rounding could explain (float certifier)."""
    certificate = certify(channel, privacy, tolerance=1e-6)
    if not certificate.certified:
        violation = certificate.violations[0]
        raise TableRefused(
            f"the channel is not E-LDP, so no table of it is: pair x={violation.x}, x'={violation.x_prime}, "
            f"witness y={violation.y}: log-ratio {violation.log_ratio:.6g} > E = {violation.allowed:.6g}"
        )
