"""Central privacy after shuffling: the (epsilon, delta) guarantee of n shuffled reports of a channel.

* :mod:`designer.shuffle.clones` — the clone decomposition of a pair of inputs, from a table or
  a structured package's parameters (shares, ratio, total variation, rounded outward);
* :mod:`designer.shuffle.divergence` — the counting experiment's hockey-stick divergence, bounded
  with outward rounding (Arb binomial tails, or an FFT with an explicit error bound), and the
  epsilon search;
* :mod:`designer.shuffle.binary` — the exact worst case of a binary channel's (or binary class's)
  shuffled count over every composition of the other users (FFT with an explicit error bound; a
  grid of compositions with a few users dropped beyond 4,096 others);
* :mod:`designer.shuffle.lower` — a lower bound: the exact divergence of a concrete test;
* :mod:`designer.shuffle.rounds` — the same users shuffled over T rounds: privacy-loss
  distributions of per-round dominating pairs, composed (:mod:`solvers.pld`);
* :mod:`designer.shuffle.analysis` — per-pair and worst-case guarantees, E-aware, with an
  optional population assumption (:func:`~designer.shuffle.analysis.shuffle_channel`);
* :mod:`designer.shuffle.orbits` — the pair classes of an orbit package (a symmetric design at
  class level), per class pair and group of rank offsets, without its table;
* :mod:`designer.shuffle.sources` — pairs from a channel (and E) or a mechanism package;
* :mod:`designer.shuffle.package` — the ``shuffle`` member of a package, recorded and re-proved.

Importing this package loads nothing heavy.
"""
