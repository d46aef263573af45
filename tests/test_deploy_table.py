"""Integer sampling tables: rows sum to 2^b, zeros kept, certified exactly (designer.deploy.table)."""

from fractions import Fraction

import numpy as np
import pytest

from designer.certify import certify
from designer.channel import Channel
from designer.examples import example_path
from designer.io import read_channel, read_privacy_matrix
from designer.deploy.table import TableRefused, deployable_table, integer_rows, round_rows
from designer.spec import PrivacyMatrix
from deploy_fixtures import random_tight_channel


@pytest.mark.parametrize("seed", range(8))
def test_random_tight_channels_give_exactly_certified_tables(seed):
    rng = np.random.default_rng(seed)
    k, m = int(rng.integers(2, 51)), int(rng.integers(2, 41))
    channel, privacy = random_tight_channel(rng, k, m, blocks=seed % 2 == 1, exact_levels=seed < 4)
    bits = 64 if seed == 7 else 32
    deployable = deployable_table(channel, privacy, bits)
    counts = np.array(deployable.table.counts, dtype=object)
    assert all(sum(row) == 2**bits for row in deployable.table.counts)
    source = channel.exact_matrix
    assert np.array_equal(counts == 0, source == 0)  # zeros kept zero, no positive entry rounded to zero
    # an independent exact check of Definition 2 on the rational table
    proof = certify(Channel([[Fraction(int(v), 2**bits) for v in row] for row in counts]), privacy, exact=True)
    assert proof.certified and deployable.certificate.certified and deployable.certificate.mode == "exact"
    # the loss is what the table says: entries move by a few units of 2^-b relative to Q
    table = np.array(deployable.table.counts, dtype=float) / 2**bits
    assert deployable.loss.max_total_variation == pytest.approx(0.5 * np.abs(table - channel.matrix).sum(axis=1).max())
    assert deployable.loss.max_total_variation < m * 2.0**-bits * 4 + 2 * float(deployable.loss.mixing_weight)
    assert abs(deployable.loss.relative_utility_loss) < 1e-6


def test_tight_grr_needs_directed_rounding_and_nearest_would_break_it():
    privacy = read_privacy_matrix(example_path("ldp4_E.csv"))  # log(3) everywhere
    channel = read_channel(example_path("grr4_Q.csv"))  # 1/2 vs 1/6: ratio exactly 3
    numerators, sums = integer_rows(channel)
    nearest = round_rows(numerators, sums, 2**32, np.zeros((4, 4), dtype=np.int8))
    broken = certify(Channel([[Fraction(v, 2**32) for v in row] for row in nearest.tolist()]), privacy, exact=True)
    assert broken.verdict == "violated"  # 2^31 / 715827882 > 3
    deployable = deployable_table(channel, privacy)
    assert deployable.loss.method == "directed"
    assert deployable.table.counts[0] == (2**31 - 1, 715827883, 715827883, 715827883)
    assert 2**31 - 1 <= 3 * 715827883


def test_round_rows_is_largest_remainder_without_preferences():
    # row 10 * (100, 100, 97, 3) / 300 = (10/3, 10/3, 10/3 - 1/10, 1/10)
    rows = round_rows([[100, 100, 97, 3], [1, 1, 0, 0]], [300, 2], 10, np.zeros((2, 4), dtype=np.int8))
    assert rows.tolist() == [[3, 3, 3, 1], [5, 5, 0, 0]]  # the tiny positive entry keeps one unit; zeros stay zero
    assert round_rows([[1, 2, 2]], [5], 10, [[1, -1, 0]]).tolist() == [[2, 4, 4]]  # exact entries do not move
    # ties in the remainder go to the earlier entry, except that a down-preferring entry comes last
    assert round_rows([[1, 1, 1]], [3], 10, [[0, 0, 0]]).tolist() == [[4, 3, 3]]
    assert round_rows([[1, 1, 1]], [3], 10, [[-1, 0, 0]]).tolist() == [[3, 4, 3]]
    assert round_rows([[1, 1, 1]], [3], 10, [[1, 1, -1]]).tolist() == [[4, 4, 2]]  # the ceilings exceed: the down entry gives
    assert round_rows([[1] * 20], [20], 10, np.zeros((1, 20), dtype=np.int8)) is None  # 20 positives cannot fit in 10 units
    # 64-bit units and rows with entries of very different sizes stay exact (Python integers)
    big = round_rows([[2**200 + 1, 1]], [2**200 + 2], 2**64, [[0, 0]])
    assert big.tolist() == [[2**64 - 1, 1]] and sum(big[0]) == 2**64


def test_mixing_repairs_a_chain_of_tight_constraints():
    # truncated geometric mechanism: every adjacent pair is tight both ways along a column
    k = 6
    ratio = Fraction(2)
    rows = []
    for x in range(k):
        weights = [ratio ** (-abs(x - y)) for y in range(k)]
        rows.append([w / sum(weights) for w in weights])
    tight = [[max(rows[x][y] / rows[x_prime][y] for y in range(k)) for x_prime in range(k)] for x in range(k)]
    levels = [["0" if x == x_prime else f"log({tight[x][x_prime]})" for x_prime in range(k)] for x in range(k)]
    privacy = PrivacyMatrix(levels)
    channel = Channel(rows)
    assert certify(channel, privacy, exact=True).certified
    deployable = deployable_table(channel, privacy)
    assert deployable.certificate.certified
    assert deployable.loss.method == "mixed"  # directed rounding alone cannot serve a chain
    assert 0 < deployable.loss.mixing_weight < Fraction(1, 2**20)


def test_refusals_are_one_clear_line():
    privacy = read_privacy_matrix(example_path("ldp4_E.csv"))
    with pytest.raises(TableRefused, match="not E-LDP"):
        deployable_table(read_channel(example_path("grr4_too_loose_Q.csv")), privacy)
    wide = Channel(np.full((2, 300), 1 / 300))  # 300 positive outputs cannot all get a unit of 2^-8
    with pytest.raises(TableRefused, match="no 8-bit table"):
        deployable_table(wide, PrivacyMatrix([[0, 1], [1, 0]]), bits=8)
    with pytest.raises(ValueError, match="bits must be an integer from 8 to 64"):
        deployable_table(read_channel(example_path("grr4_Q.csv")), privacy, bits=65)


def test_shipped_examples_lose_less_than_1e_6_relative_utility():
    for e_name, q_name in [("ldp4_E.csv", "grr4_Q.csv"), ("survey_E.csv", "survey_mangat_Q.csv"), ("blocks4_E.csv", "blocks4_Q.csv")]:
        deployable = deployable_table(read_channel(example_path(q_name)), read_privacy_matrix(example_path(e_name)))
        assert abs(deployable.loss.relative_utility_loss) < 1e-6
        assert deployable.loss.max_relative_change < 1e-8
