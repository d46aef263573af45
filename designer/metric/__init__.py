"""Metric LDP for range counting (metric-ldp-range-counting.md): workloads, matrix-mechanism strategies, the L1 range mechanism.

- :mod:`designer.metric.workloads` — workloads as implicit objects (Gram matrices, Kronecker
  products, unions; eq. 2's prefix and all-range workloads);
- :mod:`designer.metric.strategy_matrices` — strategy matrices A, dense or structured (``L_m``,
  identity, b-ary tree, Kronecker products), with the reconstruction costs of problem (1);
- :mod:`designer.metric.pairs` — the pairs Proposition 1 is checked on (line and grid edges);
- :mod:`designer.metric.lattice` — the released discrete Laplace noise on dyadic lattices;
- :mod:`designer.metric.strategy` — the matrix mechanism under E-LDP (Propositions 1 and 2,
  problem (1)), released as exact lattice noise and certified exactly;
- :mod:`designer.metric.optimize` — optimising A (p-Identity on a line, Kronecker products on a grid);
- :mod:`designer.metric.range_mechanism` — the L1 range mechanism and its range oracle (Section IV).
"""
