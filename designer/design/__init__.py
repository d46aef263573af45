"""Optimal channels for an E, behind one call: :func:`designer.design.front.design_channel`.

- :mod:`designer.design.front` — the front door: checks the problem, picks the route
  (:mod:`designer.design.routes`, closed forms in :mod:`designer.design.closed_form`), moves a float
  channel inside E (:mod:`designer.design.interior`) and returns a :class:`~designer.design.outcome.Design`;
- :mod:`designer.design.vertex` — the vertex LP over the cone's vertices (mutual information,
  f-divergences); :mod:`designer.design.expected_loss` — the direct expected-loss LP;
- :mod:`designer.design.symmetry` — class structures, vertex orbits, the orbit LP, comparison with
  the shipped mechanisms;
- :mod:`designer.design.gap` — column generation with a certified lower and upper bound.
"""
