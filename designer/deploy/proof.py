"""What a structural package proof is, and how a package is sealed with it or re-checked against it.

Shared by the structured packages (:mod:`designer.deploy.structured`: block and high-low
Hadamard response) and the orbit packages (:mod:`designer.deploy.orbit`): each kind proves
its privacy from its parameters (a list of exactly decided steps), stores the steps as its
certificate, and a verifier recomputes them and compares.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction

from designer.deploy.sampler import PackageTampered, package_digest, verify_digest
from designer.io.writing import format_number


@dataclass(frozen=True)
class HadamardVerification:
    """Outcome of :func:`verify_structured_package`: the proof steps and the exact verdict.

    ``ratio`` is the largest ratio ``Q(y|x) / Q(y|x')`` over the constrained pairs (``None``
    when no pair is constrained, or a ratio is unbounded), ``margin`` = ``epsilon - log(ratio)``; ``failed`` lists the
    proof steps whose bound is broken. ``structure``: an orbit package's checked
    :class:`~designer.deploy.sampler.OrbitStructure` (reused by the policy check; None for other kinds)
    and ``sha256`` the digest of the package it was proved from (empty when not from a package).
    """

    certified: bool
    ratio: Fraction | None
    margin: float
    proof: tuple[str, ...]
    k: int
    n_outputs: int
    mechanism: str = "block Hadamard response"
    failed: tuple[str, ...] = ()
    structure: object = field(default=None, repr=False, compare=False)
    sha256: str = ""


def sealed(document: dict, verification: HadamardVerification) -> dict:
    """Store the proof as the certificate and the hash; a built package must prove itself."""
    if not verification.certified:  # largest_coin guarantees the ratios; kept as a guard on the proof itself
        raise ValueError(f"the {verification.mechanism} thresholds do not satisfy their own bound")
    document["certificate"] = {
        "verdict": "certified", "mode": "exact", "margin": format_number(verification.margin),
        "proof": list(verification.proof),
    }
    document["sha256"] = package_digest(document)
    return document


def recheck(document: dict, verification: HadamardVerification) -> HadamardVerification:
    """The hash must match, and a certified package's stored proof must be the recomputed one (else PackageTampered).

    Returns the verification bound to the document's ``sha256``.
    """
    verify_digest(document)
    if verification.certified and document["certificate"].get("proof") != list(verification.proof):
        raise PackageTampered("the stored proof differs from the recomputed one")
    return replace(verification, sha256=document["sha256"])
