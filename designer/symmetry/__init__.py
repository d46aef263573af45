"""Symmetry-reduced optimal design: class structures of E, vertex orbits, the orbit LP."""

from designer.symmetry.classes import ClassStructure, twin_classes
from designer.symmetry.design import SymmetricDesign, design_symmetric
from designer.symmetry.orbits import SymmetryLostError

__all__ = ["ClassStructure", "SymmetricDesign", "SymmetryLostError", "design_symmetric", "twin_classes"]
