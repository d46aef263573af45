"""Accounting across rounds: what one user loses when a mechanism reports T times.

A schedule is T rounds, memoized or not, with at most c changes of the user's true value.
Levels are per ordered pair of values ``(x, x')`` (E-LDP, Definition 2 of context-aware-ldp.md).

* **Without memoization** every round draws a fresh report from the report channel W
  (one stage, or ``Q1 Q2`` when both stages run every round). The T reports are a
  sequential composition (Proposition 2): ``T E_W`` bounds the joint reports
  (``basic``), and per pair the exact ``(epsilon, delta)``: the smallest epsilon with
  ``sum over report sequences of (W^T(s|x) - e^epsilon W^T(s|x'))_+ <= delta``, from the
  pair's privacy-loss distribution composed T times (:func:`solvers.composition.smallest_level`:
  exact enumeration of the multinomial atoms, or dp_accounting's pessimistic discretisation
  when there are too many). The user holds one value throughout (``c = 0``: value changes
  under no memoization are refused; ``T max E_W`` still bounds them).
* **With memoization** the permanent response ``Y1 ~ Q1[x, :]`` is drawn once per value and
  kept; every round reports ``Q2[Y1, :]`` (or ``Y1`` itself). All T reports are a
  post-processing of ``Y1`` (Proposition 1), so ``E(Q1)`` bounds them for every T, and at
  ``delta`` the level of one draw of Q1. With at most c changes, and two value sequences with
  the same change times and the same pattern of recurring values (segments i, j hold equal
  values in one iff in the other), the reports are a post-processing of at most ``c + 1``
  independent permanent responses, one per distinct value: the level is
  ``sum over segments of E(Q1)[u_i, u'_i] <= (c + 1) max E(Q1)`` (Proposition 2 on the
  product of the permanent draws). The instantaneous reports add nothing to it (they are
  post-processing). Nothing is claimed when the pattern of recurring values differs: a
  value that comes back reuses its memoized response, which links the two segments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from designer.channel import Channel
from solvers.composition import MAX_ATOMS, loss_atoms, smallest_level


@dataclass(frozen=True)
class RoundsAccount:
    """Outcome of :func:`account_rounds`.

    Attributes
    ----------
    rounds, delta, memoized, changes
        The schedule.
    long_term : ndarray (k, k)
        Tight E of the permanent channel (the level memoization keeps for any T).
    report : ndarray (k, k)
        Tight E of one report.
    basic : ndarray (k, k)
        The pure level of the whole schedule (``delta = 0``): ``T E_report`` without memoization,
        ``min(c + 1, T) E_long_term`` with it (one round: ``E_report``).
    epsilon : ndarray (k, k)
        The level at ``delta`` per ordered pair (``inf`` where no finite level holds).
    method : str
        How ``epsilon`` was computed: ``"exact"`` (enumerated loss distribution),
        ``"discretised"`` (dp_accounting's pessimistic PLD on some pair), ``"pure"`` (the basic level).
    labels : tuple of str
    """

    rounds: int
    delta: float
    memoized: bool
    changes: int
    long_term: np.ndarray
    report: np.ndarray
    basic: np.ndarray
    epsilon: np.ndarray
    method: str
    labels: tuple[str, ...]

    @property
    def worst_pair(self) -> tuple[int, int]:
        """The ordered pair with the largest level at ``delta`` (the first in row order on ties)."""
        x, x_prime = np.unravel_index(int(np.argmax(self.epsilon)), self.epsilon.shape)
        return int(x), int(x_prime)

    @property
    def basic_epsilon(self) -> float:
        return float(self.basic.max())

    @property
    def largest_epsilon(self) -> float:
        return float(self.epsilon.max())

    def bound(self) -> str:
        """What the figures prove, in one sentence."""
        if not self.memoized or self.rounds == 1:
            return (f"{self.rounds} independent reports (sequential composition, Proposition 2); epsilon from the "
                    "pair's privacy-loss distribution composed over the rounds")
        segments = min(self.changes + 1, self.rounds)
        return (f"memoized: every report is a post-processing of {segments} permanent response(s) (one per distinct "
                "value; same change times and recurrence pattern), for any number of rounds")

    def to_dict(self, matrices: bool = True) -> dict:
        x, x_prime = self.worst_pair
        payload = {
            "rounds": self.rounds, "memoized": self.memoized, "changes": self.changes,
            "basic_epsilon": _number(self.basic_epsilon), "epsilon": _number(self.largest_epsilon),
            "delta": self.delta,
            "worst_pair": {"x": x, "x_prime": x_prime, "inputs": [self.labels[x], self.labels[x_prime]]},
            "long_term_epsilon": _number(float(self.long_term.max())),
            "report_epsilon": _number(float(self.report.max())),
            "method": self.method, "bound": self.bound(),
        }
        if matrices:
            payload["epsilon_matrix"] = [[_number(v) for v in row] for row in self.epsilon.tolist()]
            payload["basic_matrix"] = [[_number(v) for v in row] for row in self.basic.tolist()]
        return payload


def _number(value: float):
    return "inf" if math.isinf(value) else value


def account_rounds(
    report: Channel,
    rounds: int,
    delta: float,
    permanent: Channel | None = None,
    memoized: bool = False,
    changes: int = 0,
    max_atoms: int = MAX_ATOMS,
) -> RoundsAccount:
    """The privacy loss of a schedule of ``rounds`` reports (see the module docstring for what is proved).

    Parameters
    ----------
    report : Channel
        The channel of one report (``Q1 Q2`` for a two-stage mechanism).
    rounds : int
        T >= 1.
    delta : float
        In ``[0, 1)``.
    permanent : Channel, optional
        The permanent stage Q1 (default: ``report``, a one-stage mechanism whose report is memoized).
    memoized : bool
        Whether the permanent response is drawn once per value and kept.
    changes : int
        At most this many changes of the true value (memoized schedules only).
    max_atoms : int
        Most atoms of an exactly enumerated loss distribution (then dp_accounting's discretisation).
    """
    if isinstance(rounds, bool) or int(rounds) != rounds or rounds < 1:
        raise ValueError(f"--rounds must be a positive integer, got {rounds!r}")
    if not 0 <= delta < 1:
        raise ValueError(f"--delta must be in [0, 1), got {delta!r}")
    if isinstance(changes, bool) or int(changes) != changes or changes < 0:
        raise ValueError(f"--changes must be a non-negative integer, got {changes!r}")
    if changes and not memoized:
        raise ValueError("--changes applies to memoized reports (--memoized): without memoization every round is "
                         "composed, whatever the value")
    permanent = report if permanent is None else permanent
    if permanent.k != report.k:
        raise ValueError(f"the permanent stage has {permanent.k} inputs, the report channel {report.k}")
    report_level = report.tight_privacy().epsilon
    long_term = permanent.tight_privacy().epsilon
    if memoized and rounds > 1:
        segments = min(changes + 1, rounds)
        basic = _scaled(long_term, segments)
        if segments == 1:  # one draw of Q1, post-processed
            epsilon, method = _pair_levels(permanent.matrix, 1, delta, max_atoms)
        else:
            epsilon, method = basic.copy(), "pure"
    else:
        basic = _scaled(report_level, rounds)
        epsilon, method = _pair_levels(report.matrix, rounds, delta, max_atoms)
    return RoundsAccount(int(rounds), float(delta), bool(memoized), int(changes), long_term, report_level, basic,
                         np.minimum(epsilon, basic), method, report.input_labels)


def _scaled(levels: np.ndarray, factor: int) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.where(levels == 0, 0.0, levels * factor)


def _pair_levels(matrix: np.ndarray, rounds: int, delta: float, max_atoms: int) -> tuple[np.ndarray, str]:
    """The level at ``delta`` of every ordered pair of rows after ``rounds`` independent draws.

    Pairs with the same loss atoms (all pairs of randomised response) are computed once.
    """
    k = matrix.shape[0]
    levels = np.zeros((k, k))
    found: dict[bytes, float] = {}
    methods = set()
    for x in range(k):
        for x_prime in range(k):
            if x == x_prime:
                continue
            atoms = loss_atoms(matrix[x], matrix[x_prime])
            key = atoms.values.tobytes() + atoms.upper.tobytes() + atoms.lower.tobytes() + repr(atoms.infinite).encode()
            if key not in found:
                result = smallest_level(matrix[x], matrix[x_prime], rounds, delta, max_atoms)
                found[key] = result.level
                methods.add(result.method)
            levels[x, x_prime] = found[key]
    return levels, ("discretised" if "discretised" in methods else "exact")


def loss_curve(report: Channel, pair: tuple[int, int], rounds: int, delta: float, points: int = 40,
               max_atoms: int = MAX_ATOMS) -> tuple[np.ndarray, np.ndarray]:
    """The level at ``delta`` of one pair after t = 1..rounds independent reports, at up to ``points`` rounds."""
    steps = np.unique(np.geomspace(1, rounds, num=min(points, rounds)).round().astype(int))
    x, x_prime = pair
    values = [smallest_level(report.matrix[x], report.matrix[x_prime], int(t), delta, max_atoms).level for t in steps]
    return steps, np.array(values)


def plot_account(account: RoundsAccount, report: Channel, path, title: str) -> None:
    """Loss over rounds of the worst pair: basic composition, the PLD level at delta, and the memoized bound."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from designer.io import write_files

    x, x_prime = account.worst_pair
    steps, levels = loss_curve(report, (x, x_prime), account.rounds, account.delta)
    figure, axes = plt.subplots(figsize=(6.4, 4.0))
    axes.plot(steps, steps * account.report[x, x_prime], label="basic composition (t E)")
    axes.plot(steps, levels, label=f"exact loss distribution, delta = {account.delta:g}")
    axes.axhline(account.long_term[x, x_prime], color="black", linestyle="--", label="memoized (any t)")
    axes.set_xlabel("rounds t")
    axes.set_ylabel(f"epsilon of pair ({account.labels[x]}, {account.labels[x_prime]})")
    axes.set_title(title, fontsize=9)
    axes.legend(fontsize=8)
    figure.tight_layout()
    suffix = Path(path).suffix.lstrip(".") or "png"
    write_files([(path, lambda handle: figure.savefig(handle.buffer, format=suffix, dpi=120))])
    plt.close(figure)
