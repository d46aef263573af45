"""Binding a package to the organisation's policy: its E must be no weaker than the policy E, anywhere.

A package proves E-LDP for *its own* E; whoever writes the package chooses that E. A
policy ``P`` (k x k levels, the organisation's E) is met when, for every pair,

* the package's level is at most the policy's, ``E[x, x'] <= P[x, x']``, compared exactly
  (:func:`level_exceeds`: rationals and ``log(r)`` levels, no rounding), and
* the deployed channel is P-LDP (Definition 2, eq. 4 of context-aware-ldp.md). This follows
  from the package's own certificate and the first point: a channel that is E-LDP is
  E'-LDP for every ``E' >= E`` (each constraint ``Q[x,y] <= e^E[x,x'] Q[x',y]`` only
  loosens). So the table is certified against ``P`` in exact mode only when some pair is
  weaker, to say whether the table itself breaks the policy.

A package whose E was weakened (say to ``inf``) with a matching table passes its own
certificate but fails the first point.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from designer.certify import LEVEL_DIGITS, Certificate, certify
from designer.deploy.sampler import PackageError
from designer.exact import ExactEpsilon
from designer.spec import PrivacyMatrix

#: Relative width within which two float levels are compared exactly (faithful floats are
#: within 2^-52 of the exact levels; this leaves a wide margin).
SCREEN = 1e-12
#: Pairs listed in a refusal.
SHOWN_PAIRS = 3


@dataclass(frozen=True)
class PolicyCheck:
    """Outcome of :func:`check_policy`.

    ``weaker`` lists up to :data:`SHOWN_PAIRS` pairs ``(x, x', package level, policy level)``
    where the package's E exceeds the policy (``n_weaker`` counts them all);
    ``certificate`` is the exact certificate of a table against the policy when some pair is
    weaker (``None`` otherwise, and for structured packages: P-LDP then follows from the
    package's own certificate, see the module docstring).
    """

    weaker: tuple[tuple[int, int, str, str], ...]
    n_weaker: int
    certificate: Certificate | None

    @property
    def met(self) -> bool:
        return self.n_weaker == 0 and (self.certificate is None or self.certificate.certified)

    def failure(self) -> str:
        """One line saying why the policy is not met (empty when it is)."""
        parts = []
        if self.n_weaker:
            shown = "; ".join(f"E[{x}, {x_prime}] = {level} > policy {bound}"
                              for x, x_prime, level, bound in self.weaker)
            parts.append(f"the package's E is weaker than the policy on {self.n_weaker} pair(s): {shown}")
        if self.certificate is not None and not self.certificate.certified:
            parts.append(f"the table breaks the policy: {self.certificate.violations[0].describe('policy')}")
        return "; ".join(parts)

    def to_dict(self) -> dict:
        return {
            "met": self.met,
            "weaker_pairs": self.n_weaker,
            "first_weaker": [list(pair) for pair in self.weaker],
            "policy_margin": None if self.certificate is None else self.certificate.margin,
        }


def level_exceeds(level: ExactEpsilon, bound: ExactEpsilon) -> bool:
    """Decide ``level > bound`` exactly (``inf`` exceeds every finite level; ``inf`` does not exceed ``inf``).

    ``log(r) > b`` iff ``r > exp(b)`` (:meth:`ExactEpsilon.allows`); ``q > log(s)`` iff
    ``q - log(s) > 0`` (:meth:`ExactEpsilon.gap`, sign decided exactly); two rationals compare directly.
    """
    if bound.infinite or level == bound:
        return False
    if level.infinite:
        return True
    if level.exp_value is not None:
        return not bound.allows(level.exp_value, Fraction(1))
    if bound.exp_value is not None:
        return level.gap(bound.exp_value) > 0
    return level.value > bound.value


def weaker_pairs(levels: np.ndarray, exact_levels, policy: PrivacyMatrix) -> tuple[list[tuple], int]:
    """Pairs where the package's levels exceed the policy, decided exactly.

    Parameters
    ----------
    levels : ndarray (k, k)
        The package's levels as floats (faithful: within a unit in the last place).
    exact_levels : callable
        ``exact_levels(rows, columns)`` gives the package's exact levels of those pairs.
    policy : PrivacyMatrix

    Returns
    -------
    The first :data:`SHOWN_PAIRS` pairs ``(x, x', level, policy level)`` as text, and how many there are.
    A pair whose float level is clearly below the policy's is not read exactly.
    """
    bound = policy.epsilon
    with np.errstate(invalid="ignore"):
        screened = (levels < bound * (1 - SCREEN)) | (np.isinf(levels) & np.isinf(bound))
    np.fill_diagonal(screened, True)
    rows, columns = np.nonzero(~screened)
    shown, count = [], 0
    if rows.size:
        bounds = policy.exact_levels(rows, columns)
        for x, x_prime, level, limit in zip(rows.tolist(), columns.tolist(), exact_levels(rows, columns), bounds):
            if level_exceeds(level, limit):
                count += 1
                if len(shown) < SHOWN_PAIRS:
                    shown.append((x, x_prime, level.describe(LEVEL_DIGITS), limit.describe(LEVEL_DIGITS)))
    return shown, count


def check_policy(document: dict, policy: PrivacyMatrix, verification=None) -> PolicyCheck:
    """Check a package (already verified against its own E) against the policy ``policy``.

    The package must already be verified against its own E (its certificate is what makes
    it P-LDP when its E is no weaker). Table packages: the package's E against the policy,
    exactly, and, if some pair is weaker, ``table / 2^bits`` certified against the policy
    in exact mode. Orbit packages: ``class_E[c(x)][c(x')]`` against the policy, exactly.
    Structured packages: their E
    (block: ``epsilon`` inside a block, ``inf`` across; high-low: ``epsilon`` on the rows
    of sensitive symbols, ``inf`` elsewhere) against the policy, exactly.

    ``verification``: the package's verification (:func:`~designer.deploy.package.verify_package` for a
    table, :func:`~designer.deploy.orbit.verify_orbit_package` for an orbit package), whose parsed E and
    table, or orbit structure, are reused (None: parse the package again). It must be of the same
    package, by its stored ``sha256`` (a mix-up check: the hash itself was checked by the verification).

    Raises
    ------
    PackageError
        The policy's size differs from the package's number of inputs, or ``verification``
        is of another package.
    """
    from designer.deploy.package import load_package

    kind = document["kind"]
    if verification is not None and verification.sha256 != document.get("sha256"):
        raise PackageError("the verification passed to the policy check is of another package (SHA-256 differs)")
    if kind == "table":
        privacy, table = load_package(document) if verification is None else (verification.privacy, verification.table)
        _check_size(privacy.k, policy)
        shown, count = weaker_pairs(privacy.epsilon, privacy.exact_levels, policy)
        return PolicyCheck(tuple(shown), count, certify(table.channel(), policy, exact=True) if count else None)
    if kind == "orbit":
        from designer.deploy.sampler import check_orbit_structure

        structure = verification.structure if verification is not None and verification.structure is not None \
            else check_orbit_structure(document)
        return _orbit_policy(structure, policy)
    if kind == "block-hadamard":
        sizes = [int(size) for size in document["block_sizes"]]
        _check_size(sum(sizes), policy)
        group = np.repeat(np.arange(len(sizes)), sizes)
        constrained = group[:, None] == group[None, :]
    else:
        k = int(document["k"])
        _check_size(k, policy)
        sensitive = np.zeros(k, dtype=bool)
        sensitive[[int(x) for x in document["sensitive"]]] = True
        constrained = np.repeat(sensitive[:, None], k, axis=1)
    level = ExactEpsilon.parse(document["epsilon"])
    infinite = ExactEpsilon(infinite=True)
    levels = np.where(constrained, float(level), np.inf)
    np.fill_diagonal(levels, 0.0)

    def exact_levels(rows: np.ndarray, columns: np.ndarray) -> list[ExactEpsilon]:
        return [level if constrained[x, x_prime] else infinite for x, x_prime in zip(rows.tolist(), columns.tolist())]

    shown, count = weaker_pairs(levels, exact_levels, policy)
    return PolicyCheck(tuple(shown), count, None)


def _orbit_policy(structure, policy: PrivacyMatrix) -> PolicyCheck:
    """An orbit package's class-level E (its checked :class:`~designer.deploy.sampler.OrbitStructure`),
    expanded to symbols, against the policy (exactly)."""
    _check_size(structure.k, policy)
    group = np.array([structure.locate(x)[0] for x in range(structure.k)], dtype=np.int64)
    exact = [[ExactEpsilon.parse(text) for text in row] for row in structure.levels]
    levels = np.array([[float(level) for level in row] for row in exact])[np.ix_(group, group)]
    np.fill_diagonal(levels, 0.0)

    def exact_levels(rows: np.ndarray, columns: np.ndarray) -> list[ExactEpsilon]:
        return [exact[group[x]][group[x_prime]] for x, x_prime in zip(rows.tolist(), columns.tolist())]

    shown, count = weaker_pairs(levels, exact_levels, policy)
    return PolicyCheck(tuple(shown), count, None)


def _check_size(k: int, policy: PrivacyMatrix) -> None:
    if policy.k != k:
        raise PackageError(f"the policy E is {policy.k} x {policy.k} but the package has {k} inputs")
