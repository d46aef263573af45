"""Optimal channels for an E: the vertex LP, the orbit LP, column generation with bounds, expected loss.

- :mod:`designer.design.vertex` — the vertex LP over the cone's vertices (mutual information,
  f-divergences) and the direct expected-loss LP;
- :mod:`designer.design.symmetry` — class structures, vertex orbits, the orbit LP, comparison with
  the shipped mechanisms;
- :mod:`designer.design.gap` — column generation with a certified lower and upper bound.
"""
