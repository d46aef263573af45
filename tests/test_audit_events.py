"""Event selection and report handling of the auditor."""

import math

import numpy as np
import pytest

from designer.audit.events import (
    CoordinateSpace,
    EitherSpace,
    OutputSpace,
    SupportSpace,
    best_cell_set,
    choose_space,
)
from designer.audit.lines import NumbersParser
from designer.audit.reports import as_report_array
from designer.audit.usercode import parse_arguments


def test_best_cell_set_finds_the_neyman_pearson_set():
    """Cells 0 and 1 have ratio e, the rest ratio 1/2-ish: the chosen set is {0, 1}."""
    rng = np.random.default_rng(0)
    p_x = np.array([0.2, 0.2, 0.2, 0.2, 0.2])
    p_other = np.array([0.2 / math.e, 0.2 / math.e, 0.2, 0.2, 0.2])
    p_other[2:] += (1 - p_other.sum()) / 3
    cells_x = rng.choice(5, 20000, p=p_x)
    cells_other = rng.choice(5, 20000, p=p_other)
    chosen, predicted, held_out = best_cell_set(cells_x, cells_other, 5, 0.05, 20000, 20000)
    assert held_out < predicted  # the same proportions on 10,000 instead of 20,000 reports
    assert sorted(chosen.tolist()) == [0, 1]
    assert predicted == pytest.approx(1.0, abs=0.12)
    assert best_cell_set(np.zeros(0, int), cells_other, 5, 0.05)[1] == -math.inf



def test_best_cell_set_cross_fits_its_prediction():
    """Hand-made halves: the first halves choose {0} (ratio 4) and the second halves choose {1} (ratio 3);
    the prediction is the mean of {0}'s bound on the second halves and {1}'s on the first halves, at the
    fresh sizes (each half's proportions scaled to 1,000 reports), by the Clopper-Pearson bound itself."""
    from designer.audit.statistics import log_ratio_lower_bound

    first_x = np.repeat([0, 1, 2], [40, 10, 50])
    first_other = np.repeat([0, 1, 2], [10, 10, 80])
    second_x = np.repeat([0, 1, 2], [20, 30, 50])
    second_other = np.repeat([0, 1, 2], [20, 10, 70])
    cells_x, cells_other = np.concatenate([first_x, second_x]), np.concatenate([first_other, second_other])
    chosen, predicted, held_out = best_cell_set(cells_x, cells_other, 3, 0.05, 1000, 1000)
    assert chosen.tolist() == [0]
    on_second = log_ratio_lower_bound(200, 1000, 200, 1000, 0.05)  # {0}: 20/100 against 20/100
    on_first = log_ratio_lower_bound(100, 1000, 100, 1000, 0.05)  # {1}: 10/100 against 10/100
    assert predicted == pytest.approx((on_second + on_first) / 2, rel=1e-12)
    assert held_out == pytest.approx(log_ratio_lower_bound(20, 100, 20, 100, 0.05), rel=1e-12)

def unary(x, n, rng, k=16, q=1 / (math.e + 1)):
    bits = (rng.random((n, k)) < q).astype(np.int8)
    bits[:, x] = rng.random(n) < 0.5
    return bits


def test_classifier_keeps_the_two_telling_coordinates_of_unary_encoding():
    rng = np.random.default_rng(1)
    train = {x: unary(x, 4000, rng) for x in range(16)}
    space = choose_space(list(train.values()), list(train.values()))
    assert isinstance(space, CoordinateSpace)
    encoded = {x: space.encode(values) for x, values in train.items()}
    event = space.select(3, 11, encoded[3], encoded[11], 0.05 / 8)
    assert event.description == "(report[3] = 1 and report[11] = 0)"
    # its probabilities: 1/2 (1 - q) under 3 and q / 2 under 11, ratio e
    fresh_x, fresh_other = space.encode(unary(3, 20000, rng)), space.encode(unary(11, 20000, rng))
    q = 1 / (math.e + 1)
    assert event.count(fresh_x) / 20000 == pytest.approx((1 - q) / 2, abs=0.01)
    assert event.count(fresh_other) / 20000 == pytest.approx(q / 2, abs=0.01)


def test_classifier_on_laplace_histograms_cuts_terciles():
    """Histogram encoding (Laplace scale 2/eps): the event 'coordinate x high and x' low' has ratio e^eps."""
    rng = np.random.default_rng(2)
    k, eps = 6, 1.0

    def histogram(x, n):
        values = rng.laplace(scale=2 / eps, size=(n, k))
        values[:, x] += 1
        return values

    train = {x: histogram(x, 6000) for x in range(k)}
    space = choose_space(list(train.values()), list(train.values()))
    assert isinstance(space, CoordinateSpace) and not any(space.categorical)
    event = space.select(0, 1, space.encode(train[0]), space.encode(train[1]), 0.05)
    assert "report[0] >=" in event.description and "report[1] <" in event.description
    count_x, count_other = event.count(space.encode(histogram(0, 40000))), event.count(space.encode(histogram(1, 40000)))
    assert math.log(count_x / count_other) == pytest.approx(eps, abs=0.1)


def test_space_rules_and_support_errors():
    rng = np.random.default_rng(3)
    scalars = [rng.integers(0, 4, 100) for _ in range(3)]
    assert isinstance(choose_space(scalars, scalars), OutputSpace)
    few_bits = [unary(x, 500, rng, k=4) for x in range(4)]
    assert isinstance(choose_space(few_bits, few_bits), EitherSpace)
    continuous = [rng.normal(size=5000) for _ in range(2)]
    assert isinstance(choose_space(continuous, continuous), CoordinateSpace)
    with pytest.raises(ValueError, match="outside the output alphabet"):
        OutputSpace(scalars, alphabet=3).encode(np.array([0, 5]))
    reports = np.arange(10)
    wrong = SupportSpace(lambda reports, z: [True], {}, 3).encode(reports)
    with pytest.raises(ValueError, match=r"returned shape \(1,\) for 10 reports"):
        wrong.column(0)
    failing = SupportSpace(lambda reports, z, g: 1 / 0, {"g": 2}, 3).encode(reports)
    with pytest.raises(ValueError, match=r"support function \(input 1\) raised ZeroDivisionError"):
        failing.column(1)


def test_reports_and_arguments_parsing():
    numbers = NumbersParser()
    assert numbers.read(["17", " 0.5"], 0, "test").tolist() == [17.0, 0.5]
    assert numbers.read(["0,1,1", "0 1 1"], 0, "test").tolist() == [[0, 1, 1], [0, 1, 1]]
    assert numbers.read(["abc", "a b"], 0, "test").tolist() == ["abc", "a b"]
    with pytest.raises(ValueError, match="test: report 1 has 1 coordinates, report 0 has 2"):
        as_report_array([(1, 2), (3,), [4, 5, 6]], 3, "test")
    pairs = as_report_array([(1, 2**62), (0, 5)], 2, "test")
    assert pairs.shape == (2, 2) and pairs[0, 1] == 2**62
    with pytest.raises(ValueError, match="returned 2 reports for n = 3"):
        as_report_array([1, 2], 3, "test")
    with pytest.raises(ValueError, match="expected a sequence"):
        as_report_array(5, 1, "test")
    assert parse_arguments(["eps=0.8", "protocol=OUE", "flag=True", "name='x=y'"]) == {
        "eps": 0.8, "protocol": "OUE", "flag": True, "name": "x=y"}
    with pytest.raises(ValueError, match="key=value"):
        parse_arguments(["1eps=3"])
