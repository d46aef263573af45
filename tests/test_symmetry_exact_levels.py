"""Exact orbit-LP designs read each class's exact row level once, and scale linearly in the number of blocks."""

import math
from dataclasses import replace

import pytest

from designer.design.symmetry import ClassStructure, design_symmetric
from designer.design.symmetry.exact import exact_row_levels
from designer.design.symmetry.orbits import row_levels


def test_each_exact_level_is_read_once_per_design(monkeypatch):
    structure = ClassStructure.block([3] * 60, "log(3)")  # 60 classes, each its own component
    reads = []
    level = ClassStructure.exact_level

    def counted(self, a, b):
        reads.append((a, b))
        return level(self, a, b)

    monkeypatch.setattr(ClassStructure, "exact_level", counted)
    design = design_symmetric(structure, exact=True, materialise=False)
    assert len(reads) == 60  # one level per class (its own component); before: once per class per step (>= 240)
    assert design.certified and design.certificate.mode == "exact structural"
    # a direct sum of 60 blocks: log 60 plus the classic optimum on 3 symbols at e^eps = 3 (Kairouz-Oh-Viswanath)
    within = max(math.log(3 / (d * 3 + 3 - d)) + d * 3 * math.log(3) / (d * 3 + 3 - d) for d in (1, 2))
    assert design.bracket.lower <= math.log(60) + within + 1e-12
    assert design.bracket.upper >= math.log(60) + within - 1e-12
    assert design.bracket.width < 1e-12


def test_exact_row_levels_refuses_differently_written_equal_floats():
    structure = ClassStructure.high_low(6, 2, "log(3)")  # class 0: 2 sensitive symbols at log(3); class 1: free
    assert [None if level is None else level.exp_value for level in exact_row_levels(structure, *row_levels(structure)[::-1])] == [3, None]
    levels = structure.exact_levels.copy()
    levels[0, 1] = type(levels[0, 0]).parse(repr(math.log(3)))  # the same float, a different exact number
    changed = replace(structure, exact_levels=levels)
    with pytest.raises(ValueError, match="differ exactly"):
        exact_row_levels(changed, *row_levels(changed)[::-1])
