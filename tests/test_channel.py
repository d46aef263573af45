import numpy as np
import pytest

from designer import Channel, PrivacyMatrix, certify, parallel_composition, sequential_composition, warner
from reference import brute_force_tight, random_channel


@pytest.mark.parametrize(
    "matrix, fragment",
    [
        ([[0.5, 0.6], [0.5, 0.5]], "row 0 sums to"),
        ([[1.5, -0.5], [0.5, 0.5]], "row 0, column 1"),
        ([[np.nan, 1.0], [0.5, 0.5]], "row 0, column 0"),
        ([[]], "non-empty"),
        ([["1/2", "x"], ["1/2", "1/2"]], "row 0, column 1"),
    ],
)
def test_invalid_channels_are_rejected(matrix, fragment):
    with pytest.raises(ValueError, match=fragment):
        Channel(matrix)


def test_exact_entries_round_trip():
    channel = Channel([["1/3", "2/3"], ["0.25", "0.75"]])
    assert channel.is_exact
    assert str(channel.exact_matrix[0, 0]) == "1/3"
    assert channel.matrix[1, 1] == 0.75


def test_sampling_matches_the_channel_and_is_seeded():
    rng = np.random.default_rng(7)
    matrix = random_channel(rng, 4, 5, zero_fraction=0.3)
    channel = Channel(matrix)
    inputs = np.repeat(np.arange(4), 50_000)
    reports = channel.sample(inputs, rng=11)
    assert np.array_equal(reports, channel.sample(inputs, rng=11))
    for x in range(4):
        frequencies = np.bincount(reports[inputs == x], minlength=5) / 50_000
        # 5 standard deviations of a binomial proportion
        assert np.all(np.abs(frequencies - matrix[x]) <= 5 * np.sqrt(matrix[x] * (1 - matrix[x]) / 50_000) + 1e-12)
        assert np.all(frequencies[matrix[x] == 0] == 0)
    with pytest.raises(ValueError, match="inputs"):
        channel.sample([0, 4])


def test_output_distribution():
    channel = warner(np.log(3))
    assert np.allclose(channel.output_distribution([0.2, 0.8]), [0.2 * 0.75 + 0.8 * 0.25, 0.2 * 0.25 + 0.8 * 0.75])


def test_tight_privacy_matches_the_double_loop():
    rng = np.random.default_rng(8)
    matrix = random_channel(rng, 6, 4, zero_fraction=0.3)
    assert np.allclose(Channel(matrix).tight_privacy().epsilon, brute_force_tight(matrix))


def test_post_processing_preserves_privacy_proposition_1():
    rng = np.random.default_rng(9)
    for _ in range(20):
        channel = Channel(random_channel(rng, 5, 4, zero_fraction=0.2))
        privacy = channel.tight_privacy()
        processed = channel.post_process(random_channel(rng, 4, 6, zero_fraction=0.3))
        assert certify(processed, privacy).certified
        assert np.all(processed.tight_privacy().epsilon <= privacy.epsilon + 1e-12)


def test_sequential_composition_proposition_2_including_adaptive():
    rng = np.random.default_rng(10)
    first = Channel(random_channel(rng, 4, 3))
    seconds = [Channel(random_channel(rng, 4, 5, zero_fraction=0.0)) for _ in range(3)]
    e1 = first.tight_privacy()
    # E2 bounds every second-stage channel
    e2 = PrivacyMatrix(np.max([s.tight_privacy().epsilon for s in seconds], axis=0))
    joint = sequential_composition(first, seconds)
    assert joint.n_outputs == 15
    assert np.allclose(joint.matrix.sum(axis=1), 1)
    assert joint.matrix[2, 1 * 5 + 4] == pytest.approx(first.matrix[2, 1] * seconds[1].matrix[2, 4])
    assert certify(joint, e1 + e2).certified
    non_adaptive = sequential_composition(first, seconds[0])
    assert np.allclose(non_adaptive.tight_privacy().epsilon, e1.epsilon + seconds[0].tight_privacy().epsilon)


def test_parallel_composition_is_private_for_the_product_matrix():
    a, b = warner(1.0), Channel([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6]])
    joint = parallel_composition(a, b)
    product = a.tight_privacy().product(b.tight_privacy())
    assert joint.k == 6
    assert np.allclose(joint.tight_privacy().epsilon, product.epsilon)
