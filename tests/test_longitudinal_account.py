"""Accounting across rounds (designer.longitudinal.accounting, solvers.composition, ``account``).

Checked against independent computations written here: a trinomial sum for randomised
response over 365 rounds, brute-force enumeration of every report sequence for small T,
and dp_accounting's pessimistic privacy-loss distribution.
"""

import itertools
import json
import math
import time

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.channel import Channel
from designer.cli import app
from designer.longitudinal.accounting import account_rounds
from solvers.composition import composed_atoms, hockey_stick, loss_atoms, smallest_level

runner = CliRunner()


def grr(k: int, epsilon: float) -> np.ndarray:
    matrix = np.full((k, k), 1 / (math.exp(epsilon) + k - 1))
    np.fill_diagonal(matrix, math.exp(epsilon) / (math.exp(epsilon) + k - 1))
    return matrix


def trinomial_delta(k: int, epsilon: float, rounds: int, level: float) -> float:
    """sum over (a reports of x, b of x', the rest other) of P (1 - e^{level - L})_+ with L = (a - b) epsilon."""
    p, q = math.exp(epsilon) / (math.exp(epsilon) + k - 1), 1 / (math.exp(epsilon) + k - 1)
    rest = 1 - p - q
    total = 0.0
    for a in range(rounds + 1):
        for b in range(rounds + 1 - a):
            loss = (a - b) * epsilon
            if loss > level:
                log_mass = (math.lgamma(rounds + 1) - math.lgamma(a + 1) - math.lgamma(b + 1)
                            - math.lgamma(rounds - a - b + 1) + a * math.log(p) + b * math.log(q)
                            + (rounds - a - b) * math.log(rest))
                total += math.exp(log_mass) * -math.expm1(level - loss)
    return total


def test_grr_daily_for_a_year_against_a_trinomial_sum():
    channel = Channel(grr(10, 1.0))
    account_rounds(Channel(grr(3, 1.0)), 2, 1e-6)  # imports out of the timing
    start = time.perf_counter()
    account = account_rounds(channel, 365, 1e-6)
    seconds = time.perf_counter() - start
    assert account.basic_epsilon == pytest.approx(365, rel=1e-12)
    assert account.method == "exact"
    level = account.largest_epsilon
    assert trinomial_delta(10, 1.0, 365, level) == pytest.approx(1e-6, rel=1e-9)
    assert trinomial_delta(10, 1.0, 365, level - 1e-6) > 1e-6  # the smallest such level
    assert 100 < level < 105 and account.worst_pair == (0, 1)
    assert seconds < 3.0  # about 0.3 s on an idle core (benchmarks/RESULTS.md)


def brute_force_delta(matrix: np.ndarray, x: int, x_prime: int, rounds: int, level: float) -> float:
    total = 0.0
    for sequence in itertools.product(range(matrix.shape[1]), repeat=rounds):
        upper = np.prod(matrix[x, list(sequence)])
        lower = np.prod(matrix[x_prime, list(sequence)])
        total += max(upper - math.exp(level) * lower, 0.0)
    return total


def test_an_asymmetric_channel_with_zeros_against_enumeration():
    matrix = np.array([[0.5, 0.3, 0.2, 0.0], [0.1, 0.3, 0.2, 0.4], [0.25, 0.25, 0.25, 0.25]])
    for x, x_prime in [(0, 1), (1, 0), (2, 0), (0, 2)]:
        for rounds in (1, 3, 5):
            for delta in (0.3, 0.05, 1e-3):
                level = smallest_level(matrix[x], matrix[x_prime], rounds, delta).level
                if math.isinf(level):  # the outputs x' cannot produce weigh more than delta
                    assert 1 - (1 - matrix[x][matrix[x_prime] == 0].sum()) ** rounds > delta
                    continue
                assert brute_force_delta(matrix, x, x_prime, rounds, level) <= delta * (1 + 1e-9) + 1e-15
                if level > 0:
                    assert brute_force_delta(matrix, x, x_prime, rounds, level - 1e-7) > delta


def test_hockey_stick_of_composed_atoms_equals_enumeration():
    matrix = np.array([[0.6, 0.3, 0.1], [0.2, 0.3, 0.5]])
    atoms = composed_atoms(loss_atoms(matrix[0], matrix[1]), 4)
    for level in (0.0, 0.4, 1.3, 3.0):
        assert hockey_stick(atoms, level) == pytest.approx(brute_force_delta(matrix, 0, 1, 4, level), rel=1e-12)


def test_discretised_fallback_is_an_upper_bound_close_to_the_exact_level():
    matrix = grr(4, 0.7)
    exact = smallest_level(matrix[0], matrix[1], 60, 1e-5)
    fallback = smallest_level(matrix[0], matrix[1], 60, 1e-5, max_atoms=10)
    assert (exact.method, fallback.method) == ("exact", "discretised")
    assert exact.level - 1e-8 <= fallback.level <= exact.level + 0.05


def test_memoized_schedules():
    permanent = Channel(grr(5, 2.0))
    instantaneous = Channel(grr(5, 1.0))
    report = Channel(permanent.matrix @ instantaneous.matrix)
    long_term = permanent.tight_privacy().epsilon.max()
    account = account_rounds(report, 1000, 1e-6, permanent=permanent, memoized=True)
    assert account.basic_epsilon == pytest.approx(2.0, rel=1e-12)
    assert account.epsilon.max() == pytest.approx(smallest_level(permanent.matrix[0], permanent.matrix[1], 1,
                                                                 1e-6).level)
    assert account.epsilon.max() <= long_term
    changed = account_rounds(report, 1000, 1e-6, permanent=permanent, memoized=True, changes=2)
    assert changed.basic_epsilon == pytest.approx(3 * long_term) and changed.method == "pure"
    one_round = account_rounds(report, 1, 0.0, permanent=permanent, memoized=True)
    assert one_round.largest_epsilon == pytest.approx(report.tight_privacy().epsilon.max())
    assert account_rounds(report, 2, 1e-6, permanent=permanent, memoized=True, changes=5).basic_epsilon == \
        pytest.approx(2 * long_term)  # at most one segment per round


def test_bad_schedules_are_refused():
    channel = Channel(grr(3, 1.0))
    for keywords, message in [({"rounds": 0}, "--rounds"), ({"delta": 1.0}, "--delta"), ({"changes": -1}, "--changes"),
                              ({"changes": 2}, "--memoized")]:
        arguments = {"rounds": 5, "delta": 1e-6, **keywords}
        with pytest.raises(ValueError, match=message):
            account_rounds(channel, arguments.pop("rounds"), arguments.pop("delta"), **arguments)


def test_account_command(tmp_path):
    path = tmp_path / "grr.csv"
    np.savetxt(path, grr(4, 1.0), delimiter=",", fmt="%.17g")
    result = runner.invoke(app, ["account", "--channel", str(path), "--rounds", "30", "--delta", "1e-6", "--json",
                                 "--plot", str(tmp_path / "loss.png")])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert {"basic_epsilon", "epsilon", "delta", "worst_pair"} <= set(payload)
    assert payload["basic_epsilon"] == pytest.approx(30) and payload["delta"] == 1e-6
    assert payload["epsilon"] == pytest.approx(smallest_level(grr(4, 1.0)[0], grr(4, 1.0)[1], 30, 1e-6).level)
    assert (tmp_path / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    memoized = runner.invoke(app, ["account", "--channel", str(path), "--rounds", "30", "--delta", "1e-6",
                                   "--memoized", "--changes", "1", "--json"])
    assert json.loads(memoized.output)["epsilon"] == pytest.approx(2.0)
    for arguments in (["--rounds", "0"], ["--rounds", "3", "--changes", "1"], ["--rounds", "3", "--package",
                                                                                str(path)]):
        bad = runner.invoke(app, ["account", "--channel", str(path), "--delta", "1e-6", *arguments])
        assert bad.exit_code == 2 and "error:" in bad.output and "Traceback" not in bad.output
