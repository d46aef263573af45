"""Exact certification of a channel read lazily (floats first, rationals only where needed).

``read_channel(exact=True)`` of a plain numeric file keeps each cell's text and its
correctly rounded float; the exact certifier's filter works on rigorous logs of
the floats and reads the rationals of the undecided cells only. Every verdict and
violation here is compared with :func:`fraction_verdict`, an independent checker
(``fractions.Fraction`` of the text and Definition 2 of context-aware-ldp.md in
the per-output form, ``E = log(r)`` so ``Q[x,y] <= r Q[x',y]`` is rational
arithmetic), on channels tight on every pair and ones violating by far less than
a unit in the last place of a double.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

from designer.certify import certify
from designer.io import read_channel, read_privacy_matrix


def fraction_violations(rows: list[list[str]], bounds: list[list[Fraction]]) -> set[tuple[int, int]]:
    """Pairs with some ``Q[x,y] > r[x,x'] Q[x',y]``, from the text by ``Fraction`` alone."""
    Q = [[Fraction(cell) for cell in row] for row in rows]
    return {
        (x, x_prime)
        for x, row in enumerate(Q)
        for x_prime, other in enumerate(Q)
        if x != x_prime and any(a > bounds[x][x_prime] * b for a, b in zip(row, other))
    }


def tight_bounds(rows: list[list[str]]) -> list[list[Fraction]]:
    """``r[x,x'] = max(1, max_y Q[x,y] / Q[x',y])`` exactly (positive channels)."""
    Q = [[Fraction(cell) for cell in row] for row in rows]
    return [[max([Fraction(1)] + [a / b for a, b in zip(row, other)]) for other in Q] for row in Q]


def write(tmp_path, rows, bounds):
    e_lines = [",".join("0" if x == y else f"log({r})" for y, r in enumerate(row)) for x, row in enumerate(bounds)]
    (tmp_path / "E.csv").write_text("\n".join(e_lines) + "\n")
    (tmp_path / "Q.csv").write_text("\n".join(",".join(row) for row in rows) + "\n")
    return read_channel(tmp_path / "Q.csv"), read_privacy_matrix(tmp_path / "E.csv")


def random_decimal_rows(rng, k: int, digits: int = 20) -> list[list[str]]:
    """Rows of ``digits``-decimal probabilities summing to 1 exactly (more digits than a double holds)."""
    scale = 10**digits
    rows = []
    for _ in range(k):
        weights = rng.random(k) + 0.05
        cells = [int(scale * w / weights.sum()) for w in weights]
        cells[-1] += scale - sum(cells)
        rows.append([f"0.{cell:0{digits}d}" for cell in cells])
    return rows


def nudge(cell: str, units: int) -> str:
    """The decimal ``cell`` moved by ``units`` in its last written digit (far below a double's ulp)."""
    digits = len(cell) - 2
    return f"0.{int(cell[2:]) + units:0{digits}d}"


@pytest.mark.parametrize("seed", range(4))
def test_tight_on_every_pair_is_certified_with_margin_zero(tmp_path, seed):
    rows = random_decimal_rows(np.random.default_rng(seed), 7)
    channel, privacy = write(tmp_path, rows, tight_bounds(rows))
    assert channel.lazy_exact is not None  # the lazy path is the one under test
    certificate = certify(channel, privacy, exact=True)
    assert fraction_violations(rows, tight_bounds(rows)) == set()
    assert certificate.certified and certificate.margin == 0.0


@pytest.mark.parametrize("seed", range(4))
def test_a_violation_of_one_unit_in_the_20th_decimal_is_found(tmp_path, seed):
    rng = np.random.default_rng(100 + seed)
    rows = random_decimal_rows(rng, 6)
    bounds = tight_bounds(rows)
    x = int(rng.integers(6))
    Q = [[Fraction(cell) for cell in row] for row in rows]
    y = max(range(6), key=lambda column: Q[x][column] / Q[(x + 1) % 6][column])  # the pair's witness
    other = 0 if y == 5 else 5
    rows[x][y], rows[x][other] = nudge(rows[x][y], 1), nudge(rows[x][other], -1)  # still sums to 1
    channel, privacy = write(tmp_path, rows, bounds)
    assert channel.lazy_exact is not None
    certificate = certify(channel, privacy, exact=True)
    expected = fraction_violations(rows, bounds)
    assert expected  # the nudged cell breaks its own tight pairs
    assert {(v.x, v.x_prime) for v in certificate.violations} == expected
    assert certificate.verdict == "violated" and certificate.margin < 0
    Q = [[Fraction(cell) for cell in row] for row in rows]
    for violation in certificate.violations:  # each witness attains its pair's exact maximal ratio
        ratios = [a / b for a, b in zip(Q[violation.x], Q[violation.x_prime])]
        assert violation.exact_ratio == max(ratios) > bounds[violation.x][violation.x_prime]


def test_randomised_response_tight_on_every_pair_and_broken_by_one_unit(tmp_path):
    k = 6  # e^eps = 3: diagonal 3/8, elsewhere 1/8, written as decimals
    rows = [["0.375" if x == y else "0.125" for y in range(k)] for x in range(k)]
    bounds = [[Fraction(3)] * k for _ in range(k)]
    channel, privacy = write(tmp_path, rows, bounds)
    certificate = certify(channel, privacy, exact=True)
    assert certificate.certified and certificate.margin == 0.0
    rows[2][2], rows[2][0] = "0.37500000000000000001", "0.12499999999999999999"
    channel, privacy = write(tmp_path, rows, bounds)
    certificate = certify(channel, privacy, exact=True)
    assert {(v.x, v.x_prime) for v in certificate.violations} == fraction_violations(rows, bounds) == {
        (2, x_prime) for x_prime in range(k) if x_prime != 2
    } | {(0, 2)}  # row 2 above 3 * 1/8 in column 2, and 3/8 over row 2's lowered column 0


def test_lazy_cells_read_exactly_as_written(tmp_path):
    rows = [["0.1", "0.2", "0.7"], ["1/3", "1/3", "1/3"], ["0.25", "2.5e-1", "0.5"]]
    (tmp_path / "Q.csv").write_text("\n".join(",".join(row) for row in rows) + "\n")
    channel = read_channel(tmp_path / "Q.csv")
    assert channel.lazy_exact is None  # a fraction p/q: every cell is read exactly at once
    rows[1] = ["0.3333333333333333333333", "0.3333333333333333333333", "0.3333333333333333333334"]
    (tmp_path / "Q.csv").write_text("\n".join(",".join(row) for row in rows) + "\n")
    channel = read_channel(tmp_path / "Q.csv")
    assert channel.lazy_exact is not None
    assert channel.exact_matrix.tolist() == [[Fraction(cell) for cell in row] for row in rows]


def decimal_text(value: Fraction) -> str:
    """A terminating fraction as plain decimal text, exactly."""
    with localcontext() as context:
        context.prec = 200
        return format(Decimal(value.numerator) / Decimal(value.denominator), "f")


def test_lazy_floats_are_correctly_rounded_on_halfway_cases(tmp_path):
    # the filter's error bound needs each float within half an ulp of the text: decimals
    # just above, at and below the midpoint between two doubles (0.1 and its successor)
    middle = (Fraction(0.1) + Fraction(np.nextafter(0.1, 1))) / 2
    cells = [decimal_text(middle + delta) for delta in (Fraction(1, 10**70), 0, -Fraction(1, 10**70))]
    rows = [[cell, decimal_text(1 - Fraction(cell))] for cell in cells]
    (tmp_path / "Q.csv").write_text("\n".join(",".join(row) for row in rows) + "\n")
    channel = read_channel(tmp_path / "Q.csv")
    assert channel.lazy_exact is not None
    assert channel.matrix.tolist() == [[float(Fraction(cell)) for cell in row] for row in rows]
    assert channel.matrix[0, 0] != channel.matrix[2, 0]  # the two sides of the midpoint differ


def test_an_extreme_number_is_read_exactly_at_once(tmp_path):
    rows = [["1e-400", "1"], ["0", "1"]]  # underflows: the floats cannot stand in for the text
    (tmp_path / "Q.csv").write_text("\n".join(",".join(row) for row in rows) + "\n")
    channel = read_channel(tmp_path / "Q.csv")
    assert channel.lazy_exact is None and channel.exact_matrix[0, 0] == Fraction(1, 10**400)
