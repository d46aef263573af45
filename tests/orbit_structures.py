"""Class structures shared by the orbit-package tests (deployment and server-side estimation)."""

from __future__ import annotations

from designer.design.symmetry import ClassStructure

#: Classic, block, high-low and utility-optimized designs small enough for the dense table.
BASIC_STRUCTURES = {
    "classic6": ClassStructure.classic(6, 1.0),
    "block3-4": ClassStructure.block([3, 4], 2.0),
    "high-low9": ClassStructure.high_low(9, 4, 0.5),
    "uldp7": ClassStructure.utility_optimized(7, 3, 1.0),
}
