"""Designs with a certified optimality gap for E without useful symmetry (column generation)."""

from designer.design.gap.column_generation import GapDesign, design_with_gap

__all__ = ["GapDesign", "design_with_gap"]
