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
  covariance of the linear estimator).
* ``mle`` — :func:`designer.estimation.maximum_likelihood` (EM); the interval is
  the percentile interval of a nonparametric bootstrap: ``B`` resamples of the
  output counts from Multinomial(n, f), each re-estimated by EM (seeded).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np

#: Distinct outside-alphabet values listed in a report (the total is always given).
LISTED_OUTSIDE = 20
#: Largest channel (k x m entries) materialised for a structured package.
MAX_DENSE_ENTRIES = 4_000_000
#: Bootstrap resamples of the EM interval.
BOOTSTRAP_SAMPLES = 200


@dataclass(frozen=True)
class ReportMechanism:
    """A channel with its input and output labels, as reports are matched against it."""

    matrix: np.ndarray
    input_labels: tuple[str, ...]
    output_labels: tuple[str, ...]
    source: str


def load_mechanism(path: str | Path) -> ReportMechanism:
    """A channel CSV (``designer.io.read_channel``) or a package JSON of ``ldp-designer package``.

    A package is verified first (``designer.deploy.package.verify_package``: structure,
    SHA-256, exact certificate or structural proof): a table package, or a block-Hadamard
    package as its materialised channel (up to :data:`MAX_DENSE_ENTRIES` entries).
    """
    path = Path(path)
    if path.suffix.lower() == ".json":
        from designer.deploy import package

        document = package.read_package(path)
        if document.get("kind") == "block-hadamard":
            return _block_hadamard(document, path)
        try:
            verification = package.verify_package(document)
        except (package.PackageError, package.PackageTampered) as error:
            raise ValueError(f"{path}: {str(error).splitlines()[0]}") from None
        if not verification.certified:
            raise ValueError(f"{path}: the package's table is not E-LDP (its certificate does not verify)")
        table = verification.table
        channel = table.channel()
        return ReportMechanism(np.asarray(channel.matrix, dtype=float), tuple(table.input_labels),
                               tuple(table.output_labels), "package")
    from designer.io import read_channel

    channel = read_channel(path, exact=False)
    return ReportMechanism(np.asarray(channel.matrix, dtype=float), channel.input_labels, channel.output_labels, "channel")


def _block_hadamard(document: dict, path: Path) -> ReportMechanism:
    """A ``block-hadamard`` package (verified) as its materialised block HR channel.

    The package's sampler reports inside ``S_x`` with probability exactly
    ``T / 2^b`` (designer/deploy/structured.py); block HR at
    ``eps' = log(T / (2^b - T))`` has the same channel (``e^eps' / (1 + e^eps') = T / 2^b``)
    and the same output layout (block offsets, Sylvester rows 1, 2, ... in a block).
    """
    from designer.deploy.sampler import PackageError
    from designer.deploy.structured import verify_hadamard_package
    from designer.mechanisms import BlockHadamardResponse

    try:
        verification = verify_hadamard_package(document)
    except PackageError as error:
        raise ValueError(f"{path}: {str(error).splitlines()[0]}") from None
    if not verification.certified:
        raise ValueError(f"{path}: the package's privacy proof does not verify")
    sizes = [int(size) for size in document["block_sizes"]]
    coin, scale = int(document["coin"]), 2 ** int(document["bits"])
    mechanism = BlockHadamardResponse(sizes, math.log(coin / (scale - coin)))
    if mechanism.k * mechanism.n_outputs > MAX_DENSE_ENTRIES:
        raise ValueError(f"{path}: block HR with k = {mechanism.k} and {mechanism.n_outputs} outputs is too large "
                         f"for the interval computation (at most {MAX_DENSE_ENTRIES:.0e} channel entries)")
    matrix = np.asarray(mechanism.channel().matrix, dtype=float)
    labels = tuple(str(j) for j in range(mechanism.n_outputs))
    return ReportMechanism(matrix, tuple(str(x) for x in range(mechanism.k)), labels, "package (block-hadamard)")


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


def unbiased_interval(counts: np.ndarray, matrix: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The unbiased estimate and its standard errors (see the module docstring)."""
    from designer.estimation import unbiased_estimate

    estimate = unbiased_estimate(counts, matrix)
    n = counts.sum()
    frequencies = counts / n
    inverse = np.linalg.pinv(matrix.T)
    covariance = (np.diag(frequencies) - np.outer(frequencies, frequencies)) / n
    variances = np.einsum("ij,jk,ik->i", inverse, covariance, inverse)
    return estimate, np.sqrt(np.maximum(variances, 0.0))


def mle_interval(counts: np.ndarray, matrix: np.ndarray, confidence: float, samples: int = BOOTSTRAP_SAMPLES,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The EM estimate and its bootstrap percentile interval (low, high)."""
    from designer.estimation import maximum_likelihood

    estimate = maximum_likelihood(counts, matrix).estimate
    rng = np.random.default_rng(seed)
    n = int(counts.sum())
    draws = rng.multinomial(n, counts / n, size=samples)
    resampled = np.array([maximum_likelihood(draw, matrix, start=None).estimate for draw in draws])
    tail = (1 - confidence) / 2
    return estimate, np.quantile(resampled, tail, axis=0), np.quantile(resampled, 1 - tail, axis=0)


def estimate_reports(mechanism: ReportMechanism, values: list, counts: list[int], estimator: str = "unbiased",
                     confidence: float = 0.95, seed: int = 0) -> dict:
    """The JSON-ready estimate of the input distribution from counted reports.

    Raises
    ------
    ValueError
        No report in the alphabet, an unknown estimator, a confidence outside (0, 1).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"--confidence must be in (0, 1), got {confidence!r}")
    inside, outside = alphabet_counts(values, counts, mechanism.output_labels)
    n = int(inside.sum())
    if n == 0:
        raise ValueError(f"no report is in the mechanism's output alphabet ({_alphabet(mechanism)}); "
                         f"{sum(outside.values())} reports outside it")
    if estimator == "unbiased":
        estimate, errors = unbiased_interval(inside, mechanism.matrix, confidence)
        z = NormalDist().inv_cdf(0.5 + confidence / 2)
        low, high = estimate - z * errors, estimate + z * errors
        method = "normal approximation, covariance of the linear unbiased estimator"
    elif estimator == "mle":
        estimate, low, high = mle_interval(inside, mechanism.matrix, confidence, seed=seed)
        errors = None
        method = f"bootstrap percentile, {BOOTSTRAP_SAMPLES} resamples (seed {seed})"
    else:
        raise ValueError(f"unknown estimator {estimator!r}; choose unbiased or mle")
    listed = dict(sorted(outside.items(), key=lambda item: -item[1])[:LISTED_OUTSIDE])
    return {
        "reports": n + sum(outside.values()),
        "in_alphabet": n,
        "outside_alphabet": {"count": sum(outside.values()), "distinct": len(outside), "values": listed},
        "estimator": estimator,
        "confidence": confidence,
        "interval_method": method,
        "estimate": [
            {"input": label, "value": float(estimate[i]), "low": float(low[i]), "high": float(high[i]),
             **({"std_error": float(errors[i])} if errors is not None else {})}
            for i, label in enumerate(mechanism.input_labels)
        ],
    }


def _text(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (np.integer, np.floating)):
        return _text(value.item())
    return str(value)


def _alphabet(mechanism: ReportMechanism) -> str:
    labels = mechanism.output_labels
    return ", ".join(labels[:5]) + (", ..." if len(labels) > 5 else "")
