"""Robust LDP over χ² confidence sets (robust-ldp-chi-square.md).

* :class:`ConfidenceSet` — the confidence set F of eq. (3) built from (s, u)
  records or counts, with its radii and tight bounds (Section IV).
* :mod:`designer.robust.protocols` — SRR (Definition 5), IR (Theorems 15-16),
  GRR-CR (Theorems 17-18), UE-CR (Theorems 19-20), Proposition 4.
* :func:`certify_robust` — decide (eps, F)-RLDP with proofs or witnesses.
* :func:`polyopt`, :func:`robust_lower_bound` — PolyOpt (Section V, Theorems
  11-12): Q1 maximising I_P̂(X; Y) over the cone (44), and Q2 with L;
  :func:`verify_optimality` — the proved upper bound on Q1's optimum.
"""

from designer.robust.certify import RobustCertificate, RobustWitness, certify_robust
from designer.robust.confidence import ConfidenceSet
from designer.robust.polyopt import (
    OptimalityProof,
    PolyOptResult,
    RobustLowerBound,
    polyopt,
    robust_lower_bound,
    verify_optimality,
)
from designer.robust.protocols import (
    RobustProtocol,
    grr_cr,
    independent_reporting,
    proposition4_privacy_matrix,
    srr,
    ue_cr,
)

__all__ = [
    "ConfidenceSet",
    "OptimalityProof",
    "PolyOptResult",
    "RobustCertificate",
    "RobustLowerBound",
    "RobustProtocol",
    "RobustWitness",
    "certify_robust",
    "grr_cr",
    "independent_reporting",
    "polyopt",
    "proposition4_privacy_matrix",
    "robust_lower_bound",
    "srr",
    "ue_cr",
    "verify_optimality",
]
