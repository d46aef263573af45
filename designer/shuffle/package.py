"""The ``shuffle`` member of a mechanism package: its central guarantee, recorded and re-proved.

``package --shuffle-n N --delta D`` stores ``{"n", "delta", "epsilon", "neighbours",
"population"}`` (numbers as text) before the package is hashed. ``verify-package``
re-proves it from the package's own table or parameters: the outward
``delta(epsilon)`` of every protected pair (:func:`designer.shuffle.analysis.shuffle_guarantee`
in ``epsilon`` mode) must be at most the stored ``delta``; otherwise the member is
rejected as not proved.
"""

from __future__ import annotations

import math

from designer.deploy.sampler import PackageError, PackageTampered, package_digest
from designer.io.writing import format_number
from designer.shuffle.analysis import shuffle_guarantee
from designer.shuffle.sources import package_pairs

MEMBERS = ("n", "delta", "epsilon", "neighbours", "population")


def add_shuffle_member(document: dict, n: int, delta: float, population: int | None = None) -> dict:
    """Compute the central guarantee of ``document`` at ``(n, delta)``, store it and re-hash (in place).

    Raises
    ------
    ValueError
        No finite central epsilon is proved at this ``delta`` (nothing to record).
    """
    pairs, _ = package_pairs(document)
    guarantee = shuffle_guarantee(pairs, n, delta=delta, population=population)
    if not math.isfinite(guarantee.epsilon):
        raise ValueError(f"no finite central epsilon is proved for n = {n}, delta = {delta:g}: nothing to record")
    document["shuffle"] = {
        "n": str(n), "delta": format_number(delta), "epsilon": format_number(guarantee.epsilon),
        "neighbours": "replace-one", "population": None if population is None else str(population),
    }
    document["sha256"] = package_digest(document)
    return guarantee


def verify_shuffle_member(document: dict, verification=None):
    """Re-prove a package's stored ``shuffle`` member; return the recomputed guarantee (``delta`` at the stored epsilon).

    ``verification``: the package's verification if already done (:func:`~designer.shuffle.sources.package_pairs`).

    Raises
    ------
    PackageError
        A malformed member (exit 2).
    PackageTampered
        The stored epsilon is not proved at the stored delta.
    """
    member = document["shuffle"]
    if not isinstance(member, dict) or set(member) != set(MEMBERS):
        raise PackageError(f"shuffle must have exactly the members {', '.join(MEMBERS)}")
    if member["neighbours"] != "replace-one":
        raise PackageError("shuffle.neighbours must be replace-one")
    try:
        n = int(member["n"])
        delta, epsilon = float(member["delta"]), float(member["epsilon"])
        population = None if member["population"] is None else int(member["population"])
    except (TypeError, ValueError):
        raise PackageError("shuffle members n, delta, epsilon, population must be numbers written as text") from None
    pairs, _ = package_pairs(document, verification)
    try:
        guarantee = shuffle_guarantee(pairs, n, epsilon=epsilon, population=population)
    except ValueError as error:
        raise PackageError(f"shuffle: {error}") from None
    if not guarantee.delta <= delta:
        raise PackageTampered(
            f"the stored central guarantee (epsilon {member['epsilon']}, delta {member['delta']}, n {n}) is not "
            f"proved: delta at that epsilon is {format_number(guarantee.delta)}"
        )
    return guarantee
