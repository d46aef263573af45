"""Report aggregation at scale: count reports out of core, then estimate with intervals.

* :mod:`designer.aggregate.sources` — ``--reports`` as files (a file, a folder, a ``**`` glob,
  Hive partitions, a remote URL), listed and read by DuckDB;
* :mod:`designer.aggregate.filters` — ``--where`` checked by DuckDB's parser, identifiers quoted;
* :mod:`designer.aggregate.counting` — one grouped count per distinct report value (and ``--by``
  group) with DuckDB (embedded, default) or on a Dask cluster (batches, tree reduction);
* :mod:`designer.aggregate.increments` — count each report file once, by content (a manifest), under a lock;
* :mod:`designer.aggregate.counts_file` — the saved counts: digest, signature, plain tables of other engines;
* :mod:`designer.aggregate.rollup` — saved counts regrouped and filtered on their group columns;
* :mod:`designer.aggregate.estimate` — the mechanism (channel CSV or deploy package),
  the counts mapped onto its output alphabet (reports outside it counted, never
  dropped silently), and the estimators of :mod:`designer.estimation` with
  confidence intervals, per group, optionally simultaneous.

The bridge for other engines (Spark, Ray, a warehouse): count there with
``SELECT <by>, y, count(*) ... GROUP BY ALL`` and pass each group's values and counts to
:func:`designer.aggregate.estimate.estimate_reports`; :func:`designer.aggregate.counting.count_reports`
is the same count done here.
"""
