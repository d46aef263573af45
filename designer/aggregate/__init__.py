"""Report aggregation at scale: count reports out of core, then estimate with intervals.

* :mod:`designer.aggregate.counting` — counts per distinct report value over CSV or
  Parquet globs, with DuckDB (embedded, default) or Dask dataframes (a scheduler);
* :mod:`designer.aggregate.estimate` — the mechanism (channel CSV or deploy package),
  the counts mapped onto its output alphabet (reports outside it counted, never
  dropped silently), and the estimators of :mod:`designer.estimation` with
  confidence intervals.
"""
