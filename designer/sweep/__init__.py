"""Trade-off sweeps on Dask: a TOML plan expanded into cells, run as tasks, stored as Parquet.

* :mod:`designer.sweep.plan` — read and validate a plan (every error before any work);
* :mod:`designer.sweep.cells` — the cells of a plan and their content hashes;
* :mod:`designer.sweep.runners` — one cell: a thin call into the design, robust, certify
  or simulation library, returned as one tidy row;
* :mod:`designer.sweep.execution` — the cells on a Dask cluster (embedded ``LocalCluster``
  or a running scheduler) or serially, with per-cell timeouts and errors recorded;
* :mod:`designer.sweep.store` — the incremental Parquet store that makes a sweep resumable
  (unreadable parts quarantined, small parts compacted, the newest row of a cell wins);
* :mod:`designer.sweep.plot` — utility against epsilon with confidence bands over draws.

Python use (what the notebooks do)::

    from designer.sweep import load_plan, run_sweep
    summary = run_sweep(load_plan("benchmarks/plans/robust_figure2.toml"), "figure2.parquet", workers=2)
"""

from __future__ import annotations

from designer.sweep.execution import SweepSummary, run_sweep
from designer.sweep.plan import Plan, PlanError, load_plan, parse_plan

__all__ = ["Plan", "PlanError", "SweepSummary", "load_plan", "parse_plan", "run_sweep"]
