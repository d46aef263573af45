"""Memoized (two-stage) mechanisms: a permanent channel kept per value, an instantaneous one every round.

The permanent channel ``Q1`` (k x m1) is drawn once per true value and memoized; every
round reports ``Q2[Y1, :]`` with the instantaneous channel ``Q2`` (m1 x m2). One report
is the channel ``Q1 Q2`` (its level ``E1``); all reports of any number of rounds are a
post-processing of the permanent response (Proposition 1 of context-aware-ldp.md), so
``E(Q1)`` (the long-term level ``E_inf``) bounds them. Both stages are certified
against their levels (:func:`certify_two_stage`), exactly when the entries are rational.
"""

from __future__ import annotations

from dataclasses import dataclass

from designer.certify import Certificate, certify
from designer.channel import Channel
from designer.spec import PrivacyMatrix


@dataclass(frozen=True)
class TwoStage:
    """A permanent channel and, optionally, an instantaneous one (None: the permanent response is reported)."""

    permanent: Channel
    instantaneous: Channel | None = None

    def __post_init__(self):
        if self.instantaneous is not None and self.instantaneous.k != self.permanent.n_outputs:
            raise ValueError(f"the instantaneous stage has {self.instantaneous.k} inputs but the permanent stage "
                             f"{self.permanent.n_outputs} outputs")

    def report(self) -> Channel:
        """The channel of one report, ``Q1 Q2`` (exact rationals when both stages are exact)."""
        if self.instantaneous is None:
            return self.permanent
        if self.permanent.is_exact and self.instantaneous.is_exact:
            product = self.permanent.exact_matrix.dot(self.instantaneous.exact_matrix)
            return Channel(product, self.permanent.input_labels, self.instantaneous.output_labels)
        return Channel(self.permanent.matrix @ self.instantaneous.matrix, self.permanent.input_labels,
                       self.instantaneous.output_labels)

    def long_term_privacy(self) -> PrivacyMatrix:
        """The tight E of the permanent stage: the level of all rounds under memoization."""
        return self.permanent.tight_privacy()

    def report_privacy(self) -> PrivacyMatrix:
        """The tight E of one report."""
        return self.report().tight_privacy()

    def describe(self) -> str:
        first = f"permanent {self.permanent.k} x {self.permanent.n_outputs}"
        if self.instantaneous is None:
            return f"{first}, reported as is"
        return f"{first}, instantaneous {self.instantaneous.k} x {self.instantaneous.n_outputs}"


def certify_two_stage(stages: TwoStage, long_term: PrivacyMatrix, report: PrivacyMatrix,
                      exact: bool = True) -> tuple[Certificate, Certificate]:
    """Certify the permanent stage against ``long_term`` (E_inf) and one report ``Q1 Q2`` against ``report`` (E1).

    Returns the two certificates (Definition 2, eq. 4, each decided by :func:`designer.certify.certify`).
    """
    return (certify(stages.permanent, long_term, exact=exact), certify(stages.report(), report, exact=exact))

