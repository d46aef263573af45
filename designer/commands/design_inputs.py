"""What ``ldp-designer design`` reads: E by family parameters, a prior or an alternative distribution, number lists."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from designer.design.symmetry import ClassStructure
    from designer.spec import PrivacyMatrix

#: Families ``design --family`` accepts (no dense file needed for the first four).
FAMILIES = ("ldp", "high-low", "block", "utility-optimized", "metric-line", "metric-cycle", "metric-grid")


def family_input(family: str, k: int | None, eps, sensitive: int | None, blocks: str | None, grid: str | None):
    """The E of ``--family``: a ClassStructure (ldp, high-low, block, utility-optimized) or a dense PrivacyMatrix (metric).

    ``eps`` is read exactly (a number, ``log(3)``, ``1/2``): the class-structured families
    keep it for ``--exact``.
    """
    from designer.commands.spec import equal_block_sizes, parse_int_list
    from designer.design.symmetry import ClassStructure
    from designer.exact import ExactEpsilon
    from designer.spec import PrivacyMatrix

    if family not in FAMILIES:
        raise ValueError(f"--family must be one of {', '.join(FAMILIES)}, got {family!r}")
    text = eps
    try:
        eps = ExactEpsilon.parse(text)
    except ValueError:
        eps = None
    if eps is None or eps.infinite or eps.beyond_double:
        raise ValueError(f"--eps must be a finite number >= 0 (or log(r) with r >= 1), got {text!r}")
    if family == "metric-grid":
        shape = parse_int_list(_need(grid, "grid", family).replace("x", ","), "grid")
        return PrivacyMatrix.grid_l1(shape, float(eps))
    k = _need(k, "k", family)
    if family == "ldp":
        return ClassStructure.classic(k, eps)
    if family in ("high-low", "utility-optimized"):
        count = _need(sensitive, "sensitive", family)
        maker = ClassStructure.high_low if family == "high-low" else ClassStructure.utility_optimized
        return maker(k, count, eps)
    if family == "block":
        sizes = parse_int_list(_need(blocks, "blocks", family), "blocks")
        sizes = equal_block_sizes(k, sizes[0]) if len(sizes) == 1 else sizes
        if sum(sizes) != k:
            raise ValueError(f"--blocks sizes add up to {sum(sizes)}, not --k {k}")
        return ClassStructure.block(sizes, eps)
    import numpy as np

    # shortest paths of the path and cycle graphs in closed form (networkx's Floyd-Warshall: 15 s at k = 1000)
    steps = np.abs(np.arange(k)[:, None] - np.arange(k)[None, :])
    distance = steps if family == "metric-line" else np.minimum(steps, k - steps)
    privacy = PrivacyMatrix.metric(distance, float(eps), [str(node) for node in range(k)])
    privacy.name = f"graph metric {float(eps):g}-LDP, {k} nodes"
    return privacy


def _need(value, name: str, family: str):
    if value is None:
        raise ValueError(f"--family {family} needs --{name}")
    return value


def read_distribution(path: Path | None, what: str, privacy: PrivacyMatrix | ClassStructure) -> np.ndarray | None:
    if path is None:
        return None
    import numpy as np

    from designer.io import read_vector

    values = read_vector(path, what)
    if values.size != privacy.k:
        raise ValueError(f"{path}: the {what} has {values.size} entries but E is {privacy.k} x {privacy.k}")
    if np.any(values < 0) or abs(values.sum() - 1) > 1e-9:
        raise ValueError(f"{path}: the {what} must be non-negative and sum to 1 (sums to {float(values.sum())!r})")
    return values


def parse_floats(text: str, what: str) -> list[float]:
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--{what}: expected numbers separated by commas, got {text!r}") from None
    if not values or min(values) <= 0 or not all(v < float("inf") for v in values):
        raise ValueError(f"--{what}: expected positive finite numbers, got {text!r}")
    return values
