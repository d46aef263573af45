"""Where the pairs of a shuffle analysis come from: a channel (with an optional E) or a mechanism package.

A table package gives its exact table and its E; a ``block-hadamard`` or
``high-low-hadamard`` package gives its parameters (block sizes or sensitive set, the
coin and keep thresholds), from which the pair classes follow exactly
(:mod:`designer.shuffle.clones`) without building the k x m table (k = 43,750 is fine);
an ``orbit`` package (a symmetric design at class level) gives its classes, orbits and
cells, from which :mod:`designer.shuffle.orbits` derives the pair classes per class pair
and group of rank offsets, again without the table.
The package's hash and proof are checked first (:class:`PackageTampered` if they fail).
"""

from __future__ import annotations

import numpy as np

from designer.shuffle.clones import PairClass, block_hadamard_pairs, high_low_pairs, table_pairs

#: Most inputs of a channel table analysed pair by pair.
MAX_TABLE_INPUTS = 100


def channel_pairs(channel, privacy=None) -> list[PairClass]:
    """The pair classes of a channel; E (optional) says which directions are protected (finite entries)."""
    protected = None
    if privacy is not None:
        if privacy.k != channel.k:
            raise ValueError(f"the channel has {channel.k} rows but E is {privacy.k} x {privacy.k}")
        protected = np.isfinite(privacy.epsilon)
    if channel.k < 2:
        raise ValueError("the channel has one input: no pair of neighbouring datasets to compare")
    if channel.k > MAX_TABLE_INPUTS:
        raise ValueError(f"the channel has {channel.k} inputs: at most {MAX_TABLE_INPUTS} are analysed pair by pair "
                         "(every distinct pair needs its own proof); package a structured mechanism instead")
    return table_pairs(channel.matrix, protected, channel.input_labels)


def package_pairs(document: dict, verification=None) -> tuple[list[PairClass], str]:
    """The pair classes of a verified package and a one-line description of it.

    ``verification``: the result of :func:`~designer.deploy.package.verify_package` (table) or
    :func:`~designer.deploy.structured.verify_structured_package` already computed for this
    document, reused instead of proving the package again (None: prove it here).

    Raises
    ------
    PackageError
        A malformed package; :class:`PackageTampered` a hash or proof mismatch.
    """
    from designer.deploy.package import verify_package
    from designer.deploy.sampler import (
        PackageTampered,
        check_common,
        check_hadamard_structure,
        check_high_low_structure,
        check_orbit_structure,
    )
    from designer.shuffle.orbits import orbit_pairs
    from designer.deploy.structured import verify_structured_package

    kind = check_common(document)
    if kind == "table":
        verification = verify_package(document) if verification is None else verification
        if not verification.certified:
            raise PackageTampered("the table is not E-LDP for the package's E")
        table = verification.table
        pairs = channel_pairs(table.channel(), verification.privacy)
        return pairs, f"table package, {table.k} inputs, {table.bits}-bit table"
    verification = verify_structured_package(document) if verification is None else verification
    if not verification.certified:
        raise PackageTampered("the structural proof fails: " + "; ".join(verification.failed))
    if kind == "orbit":
        structure = check_orbit_structure(document)
        return orbit_pairs(structure), (f"orbit package, k = {structure.k}, {len(structure.sizes)} classes, "
                                        f"{len(structure.columns)} support orbits")
    bits = document["bits"]
    if kind == "block-hadamard":
        sizes, coin = check_hadamard_structure(document)
        return block_hadamard_pairs(sizes, coin, bits), f"block Hadamard package, k = {sum(sizes)}, {len(sizes)} blocks"
    k, sensitive, coin, keep = check_high_low_structure(document)
    return high_low_pairs(k, len(sensitive), coin, keep, bits), (
        f"high-low Hadamard package, k = {k}, {len(sensitive)} sensitive")
