"""Metric LDP for range counting (metric-ldp-range-counting.md): workloads, matrix-mechanism strategies, the L1 range mechanism.

- :mod:`designer.metric.workloads` — the workloads of eq. (2) and the fixed strategy matrices of Section III-B;
- :mod:`designer.metric.strategy` — the matrix mechanism under E-LDP (Propositions 1 and 2, problem (1)),
  released as exact lattice noise;
- :mod:`designer.metric.range_mechanism` — the L1 range mechanism and its range oracle (Section IV).
"""
