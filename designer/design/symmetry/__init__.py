"""Symmetry-reduced optimal design: class structures of E, vertex orbits, the orbit LP."""

from designer.design.symmetry.classes import ClassStructure, twin_classes
from designer.design.symmetry.design import SymmetricDesign, design_symmetric
from designer.design.symmetry.orbits import SymmetryLostError

__all__ = ["ClassStructure", "SymmetricDesign", "SymmetryLostError", "design_symmetric", "twin_classes"]
