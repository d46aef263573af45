"""The ``longitudinal`` member of a package: how a client must report over time, certified and signed.

A table package's table is the permanent stage ``Q1`` (its E and certificate are the
long-term guarantee: memoized reports of any number of rounds are a post-processing of one
draw). The optional member ``longitudinal`` (covered by the hash and the signature) holds

* ``memoization``: ``"required"`` — clients draw the permanent response once per
  (package, value) and keep it;
* ``rounds_per_period`` and ``period_seconds`` (decimal strings): clients refuse a report
  beyond ``rounds_per_period`` in one period (periods are ``floor(unix time / period_seconds)``);
* ``report_E``: k x k exact levels (text) that one report satisfies (E1);
* ``instantaneous``: ``null`` (the permanent response is reported as is) or the stage ``Q2``
  as ``{"bits", "outputs", "table"}``: m1 x m2 integers as decimal strings whose rows sum to
  ``2^bits``, one row per output of the package.

``verify-package`` re-certifies ``Q1 Q2`` (exact rationals over ``2^(bits + bits2)``)
against ``report_E`` (:func:`verify_longitudinal`).
"""

from __future__ import annotations

import numpy as np

from designer.deploy.memo import MEMBER, check_longitudinal
from designer.deploy.sampler import PackageError, PackageTampered, package_digest
from designer.deploy.table import IntegerTable
from designer.longitudinal.two_stage import TwoStage


def package_stages(document: dict, verification=None, hashed: bool = True) -> TwoStage:
    """The two stages of a table package: its table (permanent) and its longitudinal member's instantaneous table.

    ``verification``: the package's :class:`~designer.deploy.package.PackageVerification`, whose table is
    reused. Without it the structure is checked here, and the SHA-256 too unless ``hashed`` is False
    (a package being built).
    """
    from designer.deploy.package import load_package
    from designer.deploy.sampler import verify_digest

    if document.get("kind") != "table":
        raise PackageError(f"a {document.get('kind')} package: the longitudinal stages are read from table packages")
    if verification is None:
        _, table = load_package(document)
        if hashed:
            verify_digest(document)
    else:
        table = verification.table
    permanent = table.channel()
    member = document.get(MEMBER)
    if member is None:
        return TwoStage(permanent)
    counts = check_longitudinal(member, table.k, len(table.output_labels))
    if counts is None:
        return TwoStage(permanent)
    stage = IntegerTable(tuple(map(tuple, counts)), member["instantaneous"]["bits"], permanent.output_labels,
                         tuple(member["instantaneous"]["outputs"]))
    return TwoStage(permanent, stage.channel())


class PolicyRefused(ValueError):
    """The longitudinal policy cannot be recorded: one report is not E1-LDP (exit 1: nothing is written)."""


def instantaneous_table(channel, bits: int) -> IntegerTable:
    """The instantaneous stage as integers over ``2^bits``: exact when every entry is a multiple of
    ``2^-bits`` (dyadic), else each row rounded down with its remainder given to the largest fractional
    parts (largest remainder). The report's certificate is decided afterwards, on the rounded table."""
    total = 1 << bits
    rows = []
    for row in channel.exact_matrix.tolist():
        scaled = [value / sum(row) * total for value in row]
        counts = [int(value) for value in scaled]
        order = sorted(range(len(row)), key=lambda y: scaled[y] - counts[y], reverse=True)
        for y in order[: total - sum(counts)]:
            counts[y] += 1
        rows.append(tuple(counts))
    return IntegerTable(tuple(rows), bits, channel.input_labels, channel.output_labels)


def report_privacy_of(member: dict, labels):
    """The member's ``report_E`` as a :class:`~designer.spec.PrivacyMatrix` (exact levels)."""
    from designer.deploy.package import _package_privacy

    return _package_privacy(member["report_E"], list(labels))


def add_longitudinal_member(document: dict, report_privacy, rounds_per_period: int, period_seconds: int,
                            instantaneous=None) -> dict:
    """Store a longitudinal policy in a table package and re-hash it (in place; sign afterwards).

    Parameters
    ----------
    document : dict
        A table package (its table is the permanent stage).
    report_privacy : PrivacyMatrix
        E1, the level one report must satisfy (certified here, exactly).
    rounds_per_period, period_seconds : int
        At most this many reports per period of this many seconds.
    instantaneous : IntegerTable, optional
        The instantaneous stage Q2 (rows: the package's outputs); None: the permanent response is reported.

    Raises
    ------
    PolicyRefused
        One report (``Q1 Q2``) is not ``report_privacy``-LDP (its exact certificate fails).
    """
    k, m = len(document["inputs"]), len(document["outputs"])
    stage = None
    if instantaneous is not None:
        stage = {"bits": instantaneous.bits, "outputs": list(instantaneous.output_labels),
                 "table": [[str(value) for value in row] for row in instantaneous.counts]}
    document[MEMBER] = {
        "memoization": "required", "rounds_per_period": str(rounds_per_period), "period_seconds": str(period_seconds),
        "report_E": [[str(level) for level in row] for row in report_privacy.exact_epsilon], "instantaneous": stage,
    }
    check_longitudinal(document[MEMBER], k, m)
    certificate = _report_certificate(document)
    if not certificate.certified:
        del document[MEMBER]
        raise PolicyRefused(f"one report is not E1-LDP: {certificate.violations[0].describe('E1')}")
    document["sha256"] = package_digest(document)
    return certificate


def _report_certificate(document: dict, verification=None):
    from designer.certify import certify

    stages = package_stages(document, verification, hashed=False)
    privacy = report_privacy_of(document[MEMBER], document["inputs"])
    return certify(stages.report(), privacy, exact=True)


def verify_longitudinal(document: dict, verification) -> dict:
    """Re-certify a package's longitudinal member: one report ``Q1 Q2`` against ``report_E``, exactly.

    Returns a summary (for ``verify-package --json``).

    Raises
    ------
    PackageError
        A malformed member (exit 2).
    PackageTampered
        One report is not ``report_E``-LDP (the stored policy is not proved).
    """
    if document.get("kind") != "table":
        raise PackageError(f"a {document.get('kind')} package holds a longitudinal member: only table packages may")
    check_longitudinal(document[MEMBER], verification.table.k, len(verification.table.output_labels))
    certificate = _report_certificate(document, verification)
    if not certificate.certified:
        raise PackageTampered(f"the longitudinal policy is not proved: one report breaks report_E "
                              f"({certificate.violations[0].describe('E1')})")
    member = document[MEMBER]
    return {"memoization": "required", "rounds_per_period": int(member["rounds_per_period"]),
            "period_seconds": int(member["period_seconds"]), "report_margin": certificate.margin,
            "long_term_epsilon": float(np.max(verification.certificate.tight_epsilon)),
            "report_epsilon": float(np.max(certificate.tight_epsilon))}
