"""How far from optimal are the shipped mechanisms? Their mutual information at class level.

Every mechanism below has columns with two values on the symbols of a class, a
high ``e^eps`` and a low 1, times a scale; so its mutual information is
``sum_columns scale mu(counts)`` with ``mu`` of :func:`designer.design.symmetry.orbits.orbit_values`,
whatever k is (no k x m table). Mechanisms use ``eps_min``, the smallest level of E
between distinct symbols: then they are E-LDP for E (classic ones satisfy every
pair at ``eps_min``; the structured ones are built for their family).

* randomised response (Warner 1965; k-ary: Kairouz, Oh, Viswanath 2014): column y
  high at y only, scale ``1 / (e^eps + k - 1)``;
* subset selection (Ye and Barg 2018; Wang et al. 2016) with ``d = ceil(k / (e^eps + 1))``:
  all d-subsets; with a prior uniform on all symbols its information is
  ``log(k / s) + d eps e^eps / s``, ``s = d e^eps + k - d`` (one orbit of weight ``k / s``);
* Hadamard response (context-aware-ldp.md ref. [23]) and block HR (Section 6.1): column y of
  a block of Hadamard size K is high on the symbols whose row ``r`` has
  ``popcount(r & y)`` even; per class these counts are ``(n_a + W_a(y)) / 2`` with ``W_a``
  the Walsh-Hadamard transform of the class's row indicator; scale ``2 / (K (1 + e^eps))``;
* high-low HR (Section 5.1, channel (13)-(14)): HR on [S] for sensitive symbols, uniform
  on [S] plus ``(e^eps - 1) / (e^eps + 1)`` on its own output for the others;
* uRR (Murakami and Kawamoto 2019, utility-optimized RR): column y sensitive: high at y,
  low on every other symbol, scale ``1 / (s + e^eps - 1)``; column y non-sensitive: its
  own symbol only, ``(e^eps - 1) / (s + e^eps - 1)``;
* uRAP (Murakami and Kawamoto 2019, utility-optimized RAPPOR; :func:`utility_optimized_rappor`):
  a unary encoding, so its outputs are bit vectors and its information is computed from
  the per-bit independence given the input, not from columns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from designer.design.symmetry.classes import ClassStructure
from designer.design.symmetry.orbits import Orbits, orbit_values
from designer.utility import entropy
from solvers.hadamard import fwht, next_power_of_two_above


@dataclass(frozen=True)
class MechanismUtility:
    """A mechanism's mutual information next to the optimum (``share = value / optimum``)."""

    name: str
    epsilon: float
    value: float
    share: float
    detail: str = ""


def smallest_level(structure: ClassStructure) -> float:
    """``eps_min``: the smallest level of E between two distinct symbols."""
    valid = ~np.eye(structure.r, dtype=bool) | (structure.sizes[:, None] >= 2)
    return float(np.min(structure.levels[valid]))


def family_of(structure: ClassStructure) -> str:
    """``"classic"``, ``"block"``, ``"high-low"`` (sensitive class first) or ``"other"``, from the levels."""
    levels, sizes = structure.levels, structure.sizes
    if structure.r == 1 and np.isfinite(levels[0, 0]):
        return "classic"
    off = ~np.eye(structure.r, dtype=bool)
    if np.all(np.isinf(levels[off])) and np.all(np.isfinite(np.diag(levels))) and np.ptp(np.diag(levels)) == 0:
        return "block"
    if structure.r == 2 and np.isfinite(levels[0]).all() and levels[0, 0] == levels[0, 1] and np.isinf(levels[1]).all():
        return "high-low" if structure.members is None and sizes[0] >= 1 else "other"
    return "other"


def mechanism_utilities(structure: ClassStructure, optimum: float) -> list[MechanismUtility]:
    """Mutual information of every shipped mechanism that is E-LDP for this E (module docstring)."""
    epsilon = smallest_level(structure)
    if not np.isfinite(epsilon):
        return []
    e = math.exp(epsilon)
    k = structure.k
    sizes = structure.sizes
    ratio = np.full(structure.r, e)
    results = []

    def add(name: str, value: float, detail: str = "") -> None:
        results.append(MechanismUtility(name, epsilon, value, value / optimum if optimum > 0 else math.nan, detail))

    # randomised response: one column per symbol, grouped by the class of its high entry
    high = np.eye(structure.r, dtype=np.int64)
    add("randomised response", float(sizes @ _values(structure, high, sizes - high, ratio)) / (e + k - 1))
    if np.ptp(structure.prior) == 0 and k >= 2:
        d = math.ceil(k / (e + 1))
        s = d * e + k - d
        add("subset selection", math.log(k / s) + d * epsilon * e / s, f"d={d}")
    if structure.members is None:
        add("Hadamard response", _hadamard(structure, [np.arange(structure.r)], ratio, e))
    family = family_of(structure)
    if family == "block" and structure.r > 1:
        add("block Hadamard response", _hadamard(structure, [np.array([a]) for a in range(structure.r)], ratio, e))
    if family == "high-low":
        add("high-low Hadamard response", _high_low_hadamard(structure, e))
        add("uRR (utility-optimized RR)", _utility_optimized_rr(structure, e))
        add("uRAP (utility-optimized RAPPOR)", utility_optimized_rappor(structure, epsilon), "bits at eps/2")
    return results


def _values(structure, high, low, ratio) -> np.ndarray:
    high = np.atleast_2d(high)
    orbits = Orbits(high, np.atleast_2d(low), np.zeros(high.shape[0], dtype=np.int64), ratio)
    return orbit_values(structure, orbits, "mutual-information")


def _hadamard_counts(structure, group: np.ndarray) -> tuple[np.ndarray, int]:
    """High counts per class (columns y, classes) of HR over the classes of ``group``, and K."""
    n = structure.sizes[group]
    size = next_power_of_two_above(int(n.sum()))
    indicator = np.zeros((group.size, size), dtype=np.int64)
    start = 1  # symbol i of the group uses Hadamard row i + 1
    for row, count in enumerate(n):
        indicator[row, start : start + count] = 1
        start += count
    high = np.zeros((size, structure.r), dtype=np.int64)
    high[:, group] = ((n[:, None] + fwht(indicator)) // 2).T
    return high, size


def _hadamard(structure, groups, ratio, e) -> float:
    """HR inside each group of classes (one group: classic HR; each class: block HR).

    Groups with the same sizes and prior (the blocks of a uniform block E) have the same value.
    """
    total = 0.0
    cache: dict[tuple, float] = {}
    for group in groups:
        key = (tuple(structure.sizes[group]), tuple(structure.prior[group]))
        if key not in cache:
            high, size = _hadamard_counts(structure, group)
            low = np.zeros_like(high)
            low[:, group] = structure.sizes[group] - high[:, group]
            cache[key] = 2.0 / (size * (1 + e)) * float(np.sum(_values(structure, high, low, ratio)))
        total += cache[key]
    return total


def _high_low_hadamard(structure, e) -> float:
    s, t = (int(n) for n in structure.sizes)
    high, size = _hadamard_counts(structure, np.array([0]))
    low = np.zeros_like(high)
    low[:, 0] = s - high[:, 0]
    low[:, 1] = t
    ratio = np.array([e, 1.0])
    part = 2.0 / (size * (1 + e)) * float(np.sum(_values(structure, high, low, ratio)))
    own = t * (e - 1) / (e + 1) * float(_values(structure, [0, 0], [0, 1], ratio)[0])
    return part + own


def _utility_optimized_rr(structure, e) -> float:
    s, t = (int(n) for n in structure.sizes)
    ratio = np.array([e, 1.0])
    sensitive = s / (s + e - 1) * float(_values(structure, [1, 0], [s - 1, t], ratio)[0])
    own = t * (e - 1) / (s + e - 1) * float(_values(structure, [0, 0], [0, 1], ratio)[0])
    return sensitive + own


def rappor_bits(s: int, epsilon: float) -> tuple[float, float, float]:
    """uRAP's bit probabilities ``(a, b, c)`` for s sensitive symbols at level epsilon.

    Source: Murakami and Kawamoto, "Utility-Optimized Local Differential Privacy Mechanisms for
    Distribution Estimation", USENIX Security 2019 (arXiv:1807.11317), the utility-optimized
    RAPPOR: sensitive bits obfuscated as RAPPOR with ``theta = e^(eps/2) / (e^(eps/2) + 1)``,
    non-sensitive bits reported 1 with probability ``(e^(eps/2) - 1) / e^(eps/2)`` for the
    input's own bit and 0 otherwise. The tests check these values against the paper's
    definition of (X_S, Y_P, eps)-ULDP, exactly: they meet it, and a larger ``c`` or a sensitive
    bit above ``eps/2`` breaks it.

    Sensitive bit j (j in A): ``P(y_j = 1 | x = j) = a = e^(eps/2) / (e^(eps/2) + 1)``,
    ``P(y_j = 1 | x != j) = b = 1 - a`` (symmetric RAPPOR with ``eps/2`` per bit, so two
    sensitive inputs, differing in two bits, have ratio ``e^eps``). Non-sensitive bit j:
    ``P(y_j = 1 | x = j) = c = 1 - e^(-eps/2)``, 0 otherwise, so a 1 there reveals x (an
    invertible output) and on protected outputs (all non-sensitive bits 0) a sensitive input
    against a non-sensitive one has ratio at most ``(a / b) / (1 - c) = e^eps``. With these
    values the channel is E-LDP for the high-low E with A sensitive (checked exactly in the
    tests by tabulating all ``2^k`` outputs).
    """
    if s < 1:
        raise ValueError("uRAP needs at least one sensitive symbol")
    half = math.exp(epsilon / 2)
    return half / (half + 1), 1 / (half + 1), -math.expm1(-epsilon / 2)


def utility_optimized_rappor(structure: ClassStructure, epsilon: float) -> float:
    """``I(X; Y)`` of uRAP (:func:`rappor_bits`) on a high-low structure (sensitive class first), in nats.

    Y is the bit vector (u, v): u the s sensitive bits, v the t non-sensitive ones. Given x
    the bits are independent, so ``H(Y | X) = P(A) (h(a) + (s - 1) h(b)) + P(B) (s h(b) + h(c))``
    (h the binary entropy). v is 0 or a unit vector ``e_j`` (only for x = j), and the law
    of u depends only on its weight w given the rest: with per-member priors ``p_A, p_B``,

        P(u, 0)   = b^w (1-b)^(s-w) [p_A (w a / b + (s - w)(1 - a) / (1 - b)) + t p_B (1 - c)],
        P(u, e_j) = p_B c b^w (1-b)^(s-w),

    for each of the ``C(s, w)`` vectors u of weight w; ``H(Y)`` sums over w = 0..s in log space.
    Exact for every k in O(s) (no ``2^k`` table).
    """
    s, t = (int(n) for n in structure.sizes)
    p_a, p_b = (float(p) for p in structure.prior)
    a, b, c = rappor_bits(s, epsilon)
    w = np.arange(s + 1, dtype=float)
    log_count = np.array([math.lgamma(s + 1) - math.lgamma(n + 1) - math.lgamma(s - n + 1) for n in range(s + 1)])
    base = w * math.log(b) + (s - w) * math.log1p(-b)
    protected = base + np.log(p_a * (w * a / b + (s - w) * (1 - a) / (1 - b)) + t * p_b * (1 - c))
    terms = np.exp(log_count + protected) * protected
    if t and p_b > 0 and c > 0:
        revealing = base + math.log(p_b * c)
        terms += t * np.exp(log_count + revealing) * revealing
    output_entropy = -float(np.sum(terms))
    binary_entropy = lambda q: entropy([q, 1 - q])  # noqa: E731 - one line, four uses
    noise = s * p_a * (binary_entropy(a) + (s - 1) * binary_entropy(b)) + t * p_b * (s * binary_entropy(b) + binary_entropy(c))
    return output_entropy - noise


def scaled(structure: ClassStructure, epsilon: float) -> ClassStructure:
    """E scaled so that its smallest level is ``epsilon`` (a family at another epsilon)."""
    factor = epsilon / smallest_level(structure)
    return ClassStructure(
        structure.sizes, structure.levels * factor, structure.prior, structure.alternative, structure.members,
        f"{structure.name} (levels x {factor:.4g})",
    )


def compare_over_epsilon(structure: ClassStructure, epsilons) -> dict:
    """Optimum and every mechanism's mutual information for E scaled to each ``eps_min`` in ``epsilons``.

    Returns ``{"epsilon": [...], "optimum": [...], name: [...], ...}`` (mechanisms in the
    order of :func:`mechanism_utilities`).
    """
    from designer.design.symmetry.design import solve_orbits

    curves: dict[str, list] = {"epsilon": [], "optimum": []}
    for epsilon in epsilons:
        current = scaled(structure, float(epsilon))
        optimum = solve_orbits(current).objective  # the value only: no channel, no certificate
        curves["epsilon"].append(float(epsilon))
        curves["optimum"].append(optimum)
        for row in mechanism_utilities(current, optimum):
            curves.setdefault(row.name, []).append(row.value)
    return curves


def plot_comparison(curves: dict, path, title: str) -> None:
    """Mutual information against epsilon (optimum and mechanisms), and each mechanism's share, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from designer.io import write_files

    epsilon = np.asarray(curves["epsilon"])
    optimum = np.asarray(curves["optimum"])
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(epsilon, optimum, "k-", linewidth=2, label="optimum (orbit LP)")
    for name, values in curves.items():
        if name in ("epsilon", "optimum") or len(values) != epsilon.size:
            continue
        left.plot(epsilon, values, marker="o", markersize=3, label=name)
        right.plot(epsilon, np.asarray(values) / optimum, marker="o", markersize=3, label=name)
    left.set(xlabel="epsilon (smallest level of E)", ylabel="mutual information (nats)", title=title)
    right.set(xlabel="epsilon", ylabel="share of the optimum", ylim=(0, 1.05), title="share of the optimal information")
    left.legend(fontsize=7)
    figure.tight_layout()
    write_files([(path, lambda handle: figure.savefig(handle.buffer, format="png", dpi=120))])
    plt.close(figure)
