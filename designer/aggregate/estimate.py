"""Estimates with confidence intervals from counted reports.

The counts of :mod:`designer.aggregate.counting` are matched to the mechanism's
output alphabet: a report value names output ``j`` when it equals the output's label
(as text) or, for unlabelled outputs, the index ``j``. Every other value (NULL
included) is *outside the alphabet*: counted, listed, and left out of the
estimate — never dropped silently.

Intervals, at level ``1 - a`` with ``z = Phi^{-1}(1 - a/2)``:

* ``unbiased`` — the least-squares inverse ``p_hat = A f`` of
  :func:`designer.estimation.unbiased_estimate` (``A`` the pseudo-inverse of
  ``Q^T``, ``f`` the output frequencies) is linear in the multinomial ``f``, so
  ``Cov(p_hat) = A (diag(q) - q q^T) A^T / n``, estimated with ``q = f`` (plug-in);
  the interval is ``p_hat ± z sqrt(diag Cov)`` (normal approximation, exact
  covariance of the linear estimator). For a structured package (block or high-low
  Hadamard response) ``A`` is the paper's estimator ((19), or (15)-(16)) computed with
  fast Walsh–Hadamard transforms, and the diagonal of the same covariance has a closed
  form (:mod:`designer.aggregate.structured`): any k, ``Q`` never materialised. For an orbit
  package ``A = (Q Q^T)^{-1} Q`` is computed in Fourier blocks of its cyclic columns, with the
  same exact variance (:mod:`designer.aggregate.orbit_unbiased`); it exists only when ``Q`` has
  rank k, which the MI-optimal designs often lack (``--estimator mle`` then).
  Every unbiased estimate reports its expected TV error ``sqrt(2/pi)/2 sum_x se_x``
  (:func:`expected_tv_error`) and, for an orbit package, the condition number
  ``sigma_max / sigma_min`` of ``Q``: an ill-conditioned channel gives an unbiased estimate
  with huge errors, flagged above :data:`USELESS_TV_ERROR`.
* ``mle`` — :func:`designer.estimation.maximum_likelihood` (EM); the interval is
  the percentile interval of a nonparametric bootstrap: ``B`` resamples of the
  output counts from Multinomial(n, f), each re-estimated by EM (seeded). A structured
  package runs EM through its transforms (an orbit package through
  :class:`~designer.deploy.orbit_operator.OrbitOperator`), up to :data:`MAX_MLE_ENTRIES` channel entries.

Without intervals (``intervals=False``, the CLI's ``--no-intervals``): the point estimate only, at
any k (one EM, no bootstrap: no :data:`MAX_MLE_ENTRIES` limit), also for an orbit package whose
channel has rank < k (no unbiased estimator exists); ``low``, ``high`` (and ``std_error``) are
``None`` and ``interval_method`` is ``"none"``.

Simultaneous intervals (``family = m`` intervals that must hold together, e.g. every symbol of
a histogram, or every symbol of every group): each interval is computed at a level raised so
that all ``m`` cover together with probability at least ``1 - a``:

* ``unbiased`` — Šidák: each at level ``(1 - a)^(1/m)``. For a centred jointly normal vector
  ``P(|Z_i| <= c_i for all i) >= prod_i P(|Z_i| <= c_i)`` whatever the correlations (Z. Šidák,
  "Rectangular confidence regions for the means of multivariate normal distributions",
  JASA 62 (1967), 626-633), so under the normal approximation the product of the ``m``
  levels bounds the joint coverage. Estimates of disjoint groups are independent.
* ``mle`` — Bonferroni: each percentile interval at level ``1 - a/m`` (the union bound;
  valid for any dependence, and the bootstrap gives no normal vector to apply Šidák to).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

from designer.deploy.orbit_operator import OrbitOperator
from designer.errors import one_line

if TYPE_CHECKING:
    from designer.aggregate.orbit_unbiased import OrbitSpectrum
    from designer.mechanisms.base import Mechanism

#: Distinct outside-alphabet values listed in a report (the total is always given).
LISTED_OUTSIDE = 20
#: Largest structured package (k x m channel entries, never materialised) for ``--estimator mle``.
MAX_MLE_ENTRIES = 4_000_000
#: Bootstrap resamples of the EM interval.
BOOTSTRAP_SAMPLES = 200
#: The expected TV error (:func:`expected_tv_error`) above which an unbiased estimate is flagged: half the
#: largest TV distance between two distributions (1). Classic LDP at k = 1000, eps = 1, as an orbit package
#: (condition number 5.4e4) has 87 at 10^6 reports.
USELESS_TV_ERROR = 0.5


@dataclass(frozen=True)
class ReportMechanism:
    """A channel with its input and output labels, as reports are matched against it.

    ``matrix`` is the dense channel (k x m), or ``None`` for a structured package, whose
    ``structured`` mechanism estimates through fast transforms (:mod:`designer.aggregate.structured`).
    """

    matrix: np.ndarray | None
    input_labels: tuple[str, ...]
    output_labels: tuple[str, ...]
    source: str
    structured: Mechanism | OrbitOperator | None = None

    @property
    def channel(self):
        """What :mod:`designer.estimation` takes: the dense matrix, or the structured operator."""
        return self.matrix if self.structured is None else self.structured

    @cached_property
    def spectrum(self) -> OrbitSpectrum:
        """An orbit package's ``Q Q^T`` in Fourier blocks (:mod:`designer.aggregate.orbit_unbiased`), built once."""
        return _spectrum(self.structured)

    @property
    def entries(self) -> int:
        """``k x m``: the size of the channel (materialised or not)."""
        return len(self.input_labels) * len(self.output_labels)


def load_mechanism(path: str | Path, estimator: str | None = None, intervals: bool = True) -> ReportMechanism:
    """A channel CSV (``designer.io.read_channel``) or a package JSON of ``ldp-designer package``.

    A package is verified first (``designer.deploy.package.verify_package``: structure,
    SHA-256, exact certificate or structural proof): a table package as its channel (with a
    ``longitudinal`` member, one report's channel ``Q1 Q2``: :func:`_two_stage`), a
    ``block-hadamard`` or ``high-low-hadamard`` package as its structured mechanism at any k
    (:func:`designer.aggregate.structured.deployed_mechanism`; never materialised), an ``orbit``
    package (exact structural proof re-run) as its :class:`~designer.deploy.orbit_operator.OrbitOperator`
    (cyclic interval sums; never materialised). With ``estimator = "mle"`` an orbit package beyond
    :data:`MAX_MLE_ENTRIES` is refused from its verified structure's k and m, before anything of
    size m (the output labels, the operator's index arrays) is built (not with ``intervals=False``:
    no bootstrap).
    """
    path = Path(path)
    if path.suffix.lower() == ".json":
        from designer.deploy import package

        document = package.read_package(path)
        from designer.aggregate.structured import STRUCTURED_KINDS

        if document.get("kind") in STRUCTURED_KINDS:
            return _structured(document, path)
        if document.get("kind") == "orbit":
            return _orbit(document, path, estimator if intervals else None)
        try:
            verification = package.verify_package(document)
        except (package.PackageError, package.PackageTampered) as error:
            raise ValueError(f"{path}: {one_line(error)}") from None
        if not verification.certified:
            raise ValueError(f"{path}: the package's table is not E-LDP (its certificate does not verify)")
        if "longitudinal" in document:
            return _two_stage(document, verification, path)
        table = verification.table
        channel = table.channel()
        return ReportMechanism(np.asarray(channel.matrix, dtype=float), tuple(table.input_labels),
                               tuple(table.output_labels), "package")
    from designer.io import read_channel

    channel = read_channel(path, exact=False)
    return ReportMechanism(np.asarray(channel.matrix, dtype=float), channel.input_labels, channel.output_labels, "channel")


def _two_stage(document: dict, verification, path: Path) -> ReportMechanism:
    """A package with a longitudinal policy: each round's reports follow one report's channel ``Q1 Q2``
    (:func:`designer.longitudinal.policy.package_stages`). Reports of one user in several rounds share
    the permanent response: estimate one round at a time (``--by``, ``--where``) for intervals that hold."""
    from designer.deploy.sampler import PackageError
    from designer.longitudinal.policy import package_stages

    try:
        report = package_stages(document, verification).report()
    except PackageError as error:
        raise ValueError(f"{path}: {one_line(error)}") from None
    return ReportMechanism(np.asarray(report.matrix, dtype=float), tuple(report.input_labels),
                           tuple(report.output_labels), "package (two-stage: one report is Q1 Q2)")


def _structured(document: dict, path: Path) -> ReportMechanism:
    """A verified structured package as its mechanism; inputs and outputs labelled by index."""
    from designer.aggregate.structured import deployed_mechanism

    try:
        mechanism = deployed_mechanism(document)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    return ReportMechanism(None, tuple(str(x) for x in range(mechanism.k)),
                           tuple(str(j) for j in range(mechanism.n_outputs)),
                           f"package ({document['kind']})", mechanism)


def _orbit(document: dict, path: Path, estimator: str | None) -> ReportMechanism:
    """A verified orbit package as its channel operator; inputs and outputs labelled by index."""
    from designer.deploy.orbit import verify_orbit_package
    from designer.deploy.orbit_operator import OrbitOperator
    from designer.deploy.sampler import PackageError, PackageTampered, check_orbit_structure

    try:
        verification = verify_orbit_package(document)
    except (PackageError, PackageTampered) as error:
        raise ValueError(f"{path}: {one_line(error)}") from None
    if not verification.certified:
        raise ValueError(f"{path}: the orbit package's privacy proof does not verify")
    operator = OrbitOperator(check_orbit_structure(document))  # bands only: O(k + orbits x classes)
    if estimator == "mle":
        _refuse_large_mle(operator.k, operator.n_outputs, operator, lambda: _spectrum(operator))
    return ReportMechanism(None, tuple(str(x) for x in range(operator.k)),
                           tuple(str(j) for j in range(operator.n_outputs)), "package (orbit)", operator)


def check_confidence(confidence: float) -> None:
    """Refuse a confidence level outside (0, 1)."""
    if not 0 < confidence < 1:
        raise ValueError(f"--confidence must be in (0, 1), got {confidence!r}")


def check_estimator(mechanism: ReportMechanism, estimator: str, intervals: bool = True) -> None:
    """Refuse, before any report is counted, an unknown estimator or an EM bootstrap too large to run.

    EM through transforms works at any k, but its bootstrap interval repeats it
    :data:`BOOTSTRAP_SAMPLES` times, and one EM on block HR at k = 43,750 (35 blocks of
    1250, n = 10^7) took 2854 SQUAREM steps, 249 s: ``mle`` on a structured package is
    limited to :data:`MAX_MLE_ENTRIES` channel entries (a dense channel is already in
    memory: no limit); ``unbiased`` has exact intervals at any k, where it exists (an orbit
    package's channel may have rank < k: refused then, with the frequency that is lost).
    ``intervals=False`` (one EM, no bootstrap) lifts the ``mle`` limit.
    """
    if estimator not in ("unbiased", "mle"):
        raise ValueError(f"unknown estimator {estimator!r}; choose unbiased or mle")
    if estimator == "unbiased" and isinstance(mechanism.structured, OrbitOperator):
        reason = mechanism.spectrum.unidentifiable()
        if reason is not None:
            raise ValueError(f"--estimator unbiased: {reason}; no unbiased estimator exists (the input distribution "
                             "is not identifiable from the reports): use --estimator mle")
    if estimator == "mle" and intervals and mechanism.structured is not None:
        _refuse_large_mle(len(mechanism.input_labels), len(mechanism.output_labels), mechanism.structured,
                          lambda: mechanism.spectrum)


def _refuse_large_mle(k: int, m: int, structured, spectrum) -> None:
    """Refuse EM's bootstrap on a structured channel of more than :data:`MAX_MLE_ENTRIES` entries.

    ``spectrum``: a callable giving an orbit package's :class:`OrbitSpectrum` (only built when
    refusing, to say whether ``unbiased`` exists instead).
    """
    if k * m <= MAX_MLE_ENTRIES:
        return
    instead = "use --no-intervals (the EM estimate alone) or --estimator unbiased (exact intervals at any k)"
    if isinstance(structured, OrbitOperator) and spectrum().unidentifiable() is not None:
        instead = ("use --no-intervals (the EM estimate alone, at any k); this package has no unbiased estimator "
                   "(its channel has rank < k)")
    raise ValueError(f"--estimator mle: k = {k} inputs x {m} outputs is beyond the EM bootstrap limit "
                     f"({MAX_MLE_ENTRIES:.0e} channel entries); {instead}")


def _spectrum(operator: OrbitOperator) -> OrbitSpectrum:
    from designer.aggregate.orbit_unbiased import OrbitSpectrum

    return OrbitSpectrum(operator)


def alphabet_counts(values: list, counts: list[int], output_labels: tuple[str, ...]) -> tuple[np.ndarray, dict]:
    """Counts per output (in the mechanism's order) and ``{value text: count}`` outside the alphabet."""
    index = {label: j for j, label in enumerate(output_labels)}
    inside = np.zeros(len(output_labels), dtype=np.int64)
    outside: dict[str, int] = {}
    for value, count in zip(values, counts):
        text = _text(value)
        if text in index:
            inside[index[text]] += count
        else:
            outside[text] = outside.get(text, 0) + int(count)
    return inside, outside


def unbiased_interval(counts: np.ndarray, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The unbiased estimate and its standard errors (see the module docstring)."""
    from designer.estimation import unbiased_estimate

    estimate = unbiased_estimate(counts, matrix)
    n = counts.sum()
    frequencies = counts / n
    inverse = np.linalg.pinv(matrix.T)
    # diag(A (diag f - f f^T) A^T) = (A * A) f - (A f)^2: O(k m), not the O(k m^2) of the full product
    variances = ((inverse * inverse) @ frequencies - (inverse @ frequencies) ** 2) / n
    return estimate, np.sqrt(np.maximum(variances, 0.0))


def mle_interval(counts: np.ndarray, channel, confidence: float, samples: int = BOOTSTRAP_SAMPLES,
                 seed: int = 0, progress: Callable[[str], None] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The EM estimate and its bootstrap percentile interval (low, high).

    ``channel``: a dense k x m matrix, or a mechanism with ``forward``/``adjoint`` (EM through transforms).
    ``progress``: called with a status line (EM step and gap, then the resample being estimated).
    """
    estimate = em_estimate(counts, channel, progress)
    rng = np.random.default_rng(seed)
    n = int(counts.sum())
    draws = rng.multinomial(n, counts / n, size=samples)
    resampled = []
    for index, draw in enumerate(draws):
        if progress is not None:
            progress(f"EM bootstrap: resample {index + 1} of {samples}")
        resampled.append(em_estimate(draw, channel, start=None))
    resampled = np.array(resampled)
    tail = (1 - confidence) / 2
    return estimate, np.quantile(resampled, tail, axis=0), np.quantile(resampled, 1 - tail, axis=0)


def em_estimate(counts: np.ndarray, channel, progress: Callable[[str], None] | None = None, **options) -> np.ndarray:
    """:func:`designer.estimation.maximum_likelihood`'s estimate; ``progress`` gets "EM step i: gap g" lines."""
    from designer.estimation import EM_TOLERANCE, maximum_likelihood

    status = None if progress is None else (
        lambda step, gap: progress(f"EM step {step}: gap {gap:.2e} nats per report (stops at {EM_TOLERANCE:.0e})"))
    return maximum_likelihood(counts, channel, progress=status, **options).estimate


def expected_tv_error(errors: np.ndarray) -> float:
    """``E TV(p_hat, p) ~ sqrt(2 / pi) / 2 * sum_x se_x``: the unbiased estimate's expected TV error.

    Under the normal approximation ``p_hat_x - p_x ~ N(0, se_x^2)``, and ``E|N(0, s^2)| = s sqrt(2/pi)``
    (the mean of the half-normal distribution); TV is half the L1 distance.
    """
    return float(np.sqrt(2 / np.pi) / 2 * np.sum(errors))


def accuracy_warning(entry: dict) -> str | None:
    """A one-line warning when an unbiased estimate's expected TV error exceeds :data:`USELESS_TV_ERROR`."""
    error = entry.get("expected_tv_error")
    if error is None or error <= USELESS_TV_ERROR:
        return None
    condition = entry.get("condition_number")
    cause = f" (condition number of Q: {condition:.3g})" if condition is not None else ""
    return (f"the unbiased estimate's expected TV error is {error:.3g} > {USELESS_TV_ERROR}{cause}: it says little "
            "about the distribution; use --estimator mle (or more reports)")


def interval_level(confidence: float, family: int, estimator: str) -> float:
    """Each interval's level so that ``family`` intervals hold together at ``confidence`` (module docstring)."""
    if family == 1:
        return confidence
    if estimator == "unbiased":
        return confidence ** (1 / family)  # Šidák (1967)
    return 1 - (1 - confidence) / family  # Bonferroni


def estimate_reports(mechanism: ReportMechanism, values: list, counts: list[int], estimator: str = "unbiased",
                     confidence: float = 0.95, seed: int = 0, family: int = 1, intervals: bool = True,
                     progress: Callable[[str], None] | None = None) -> dict:
    """The JSON-ready estimate of the input distribution from counted reports.

    The bridge from any engine: ``values`` are the distinct report values (as the output labels'
    text, or integers for unlabelled outputs) and ``counts`` how often each occurred, e.g. the
    rows of ``SELECT y, count(*) FROM reports GROUP BY y`` run in Spark, Ray or a warehouse.
    ``family``: the number of intervals that must hold simultaneously (1: each on its own;
    ``k`` for a whole-histogram claim), see the module docstring. ``intervals=False``: the point
    estimate only (``low``, ``high``, ``std_error`` are ``None``; ``mle`` runs one EM, at any k).
    ``progress``: called with status lines while EM runs (``mle``; see :func:`mle_interval`).

    Raises
    ------
    ValueError
        No report in the alphabet, an unknown estimator (or ``mle`` too large: :func:`check_estimator`),
        a confidence outside (0, 1).
    """
    check_confidence(confidence)
    check_estimator(mechanism, estimator, intervals)
    level = interval_level(confidence, family, estimator)
    inside, outside = alphabet_counts(values, counts, mechanism.output_labels)
    n = int(inside.sum())
    if n == 0:
        raise ValueError(f"no report is in the mechanism's output alphabet ({_alphabet(mechanism)}); "
                         f"{sum(outside.values())} reports outside it")
    if estimator == "unbiased":
        if mechanism.structured is None:
            estimate, errors = unbiased_interval(inside, mechanism.matrix)
            method = "normal approximation, covariance of the linear unbiased estimator"
        elif isinstance(mechanism.structured, OrbitOperator):
            estimate, errors = mechanism.spectrum.interval(inside)
            method = ("normal approximation, exact variance of the least-squares unbiased estimator (Q Q^T)^-1 Q f, "
                      "by Fourier blocks of the cyclic columns")
        else:
            from designer.aggregate.structured import estimator_equations, structured_unbiased_interval

            estimate, errors = structured_unbiased_interval(inside, mechanism.structured)
            method = (f"normal approximation, exact variance of the unbiased estimator "
                      f"{estimator_equations(mechanism.structured)} of context-aware-ldp.md, by fast Walsh-Hadamard "
                      "transforms")
        z = NormalDist().inv_cdf(0.5 + level / 2)
        low, high = estimate - z * errors, estimate + z * errors
        accuracy = {"expected_tv_error": expected_tv_error(errors)}
        if isinstance(mechanism.structured, OrbitOperator):
            accuracy["condition_number"] = mechanism.spectrum.condition
    elif not intervals:
        estimate = em_estimate(inside, mechanism.channel, progress)
        errors, accuracy = None, {}
    else:
        estimate, low, high = mle_interval(inside, mechanism.channel, level, seed=seed, progress=progress)
        errors, accuracy = None, {}
        method = f"bootstrap percentile, {BOOTSTRAP_SAMPLES} resamples (seed {seed})"
    if not intervals:  # the unbiased errors are computed with the estimate (its accuracy figures are kept)
        low = high = errors = None
        method = "none"
    elif family > 1:
        method += (f"; simultaneous over {family} intervals: each at level {level:.6g} "
                   + ("(Šidák 1967)" if estimator == "unbiased" else "(Bonferroni)"))
    listed = dict(sorted(outside.items(), key=lambda item: -item[1])[:LISTED_OUTSIDE])
    return {
        "reports": n + sum(outside.values()),
        "in_alphabet": n,
        "outside_alphabet": {"count": sum(outside.values()), "distinct": len(outside), "values": listed},
        "estimator": estimator,
        "confidence": confidence if intervals else None,
        "interval_method": method,
        **accuracy,
        "estimate": [
            {"input": label, "value": float(estimate[i]), "low": _at(low, i), "high": _at(high, i),
             **({"std_error": _at(errors, i)} if errors is not None or not intervals else {})}
            for i, label in enumerate(mechanism.input_labels)
        ],
    }


def estimate_groups(mechanism: ReportMechanism, counted, estimator: str = "unbiased", confidence: float = 0.95,
                    simultaneous: bool = False, seed: int = 0, intervals: bool = True,
                    progress: Callable[[str], None] | None = None) -> dict:
    """One estimate per group of ``counted`` (:class:`designer.aggregate.counting.ReportCounts`).

    Returns ``{"groups": [{"by": {...}, "reports": n, "estimate": [...], ...}, ...]}`` with the
    fields of :func:`estimate_reports` in each group; a group without any report in the
    output alphabet has ``"estimate": []`` and an ``"error"``. ``simultaneous``: every interval
    of every group holds together at ``confidence`` (family = k x groups). ``intervals=False``: point
    estimates only (see :func:`estimate_reports`). ``progress``: status lines, prefixed by the group.
    """
    groups = counted.groups()
    family = len(mechanism.input_labels) * len(groups) if simultaneous else 1
    entries = []
    for by, values, counts in groups:
        try:
            label = ", ".join(f"{key}={value}" for key, value in by.items())
            status = None if progress is None else (lambda text, label=label: progress(f"{label}: {text}" if label else text))
            entry = estimate_reports(mechanism, values, counts, estimator, confidence, seed, family, intervals, status)
        except ValueError as error:
            entry = {"reports": int(sum(counts)), "estimate": [], "error": str(error)}
        entries.append({"by": by, **entry})
    return {"by": list(counted.by), "reports": counted.total, "estimator": estimator,
            "confidence": confidence if intervals else None, "simultaneous": simultaneous, "groups": entries}


def _at(values: np.ndarray | None, i: int) -> float | None:
    """``values[i]`` as a float, ``None`` where nothing was computed (JSON ``null``)."""
    return None if values is None else float(values[i])


def _text(value) -> str:
    from designer.aggregate.counting import report_text

    text = report_text(value)
    return "NULL" if text is None else text


def _alphabet(mechanism: ReportMechanism) -> str:
    labels = mechanism.output_labels
    return ", ".join(labels[:5]) + (", ..." if len(labels) > 5 else "")
