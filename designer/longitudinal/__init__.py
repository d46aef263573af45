"""Privacy over time: a user who reports every round, with or without memoization.

* :mod:`designer.longitudinal.accounting` — the loss after T rounds: sequential composition of E
  (Proposition 2), (epsilon, delta) from the exact privacy-loss distribution of the composed
  channel, and the bound memoization gives for any T;
* :mod:`designer.longitudinal.two_stage` — memoized (two-stage) mechanisms: a permanent channel
  drawn once per value and an instantaneous channel applied every round, certified stage by stage;
* :mod:`designer.longitudinal.families` — RAPPOR, L-GRR and L-OSUE as two-stage mechanisms;
* :mod:`designer.longitudinal.design` — the optimal instantaneous stage for a given permanent one
  (a cone-vertex LP);
* :mod:`designer.longitudinal.policy` — the signed ``longitudinal`` member of a package.

Importing this package loads nothing heavy.
"""
