"""``method="auto"`` for the expected loss at large ``k m``: column generation by output, then a method on the whole LP.

Grids close by columns alone (a 40 x 40 grid in 51 s), irregular graphs do not: there the whole edge-only LP
goes to the block-angular interior-point method (:mod:`designer.design.block_interior`) when its estimated time
fits the budget left, else to the first-order method (:mod:`designer.design.first_order`).
"""

from __future__ import annotations

import time
from functools import partial

import numpy as np

from designer.design.block_interior import block_interior, estimated_seconds
from designer.design.first_order import Designed, expected_loss, first_order
from designer.design.loss_decomposition import decompose_by_output
from designer.design.progress import Progress, shifted
from designer.spec import PrivacyMatrix

#: Share of the budget column generation by output gets alone before a method on the whole LP takes the rest.
#: A 40 x 40 grid closes by columns in 51 s (masters by the dense interior-point method; 148 s before); on a
#: 1,000-node random geometric graph 200 s of columns left a gap of 60% with a bound that never rose, and 600 s
#: gave 3.6% with a third of the budget for columns against 2.4% with the first-order method alone
#: (benchmarks/RESULTS.md).
COLUMN_GENERATION_SHARE = 1 / 6
#: Share of the interior-point method's estimated time column generation gets alone when that is less than its share
#: of the budget: a 200-node random geometric graph took 115 s with a 600 s budget (100 s of columns, then 15 s of
#: the interior-point method) and 36 s with a 120 s one.
INTERIOR_POINT_SHARE = 0.5


def by_output_then_whole_lp(privacy: PrivacyMatrix, cost: np.ndarray, gap: float, max_seconds: float,
                            progress: Progress = None) -> Designed:
    """Column generation by output first, then a method on the whole LP when the gap is still open.

    Column generation alone gets :data:`COLUMN_GENERATION_SHARE` of the budget, or :data:`INTERIOR_POINT_SHARE` of
    the block-angular interior-point method's estimated time (:func:`designer.design.block_interior.estimated_seconds`)
    when that is less. The second method runs only when column generation stopped on its share: the interior-point
    method (:mod:`designer.design.block_interior`) when its estimate fits the budget left, else
    :func:`first_order`. Both bounds are proven, so the larger lower bound stands, and the channels of both are
    returned, least expected loss first (the first one's is kept when it costs less).
    """
    start = time.perf_counter()
    estimate = estimated_seconds(privacy, cost.shape[1])
    share = min(COLUMN_GENERATION_SHARE * max_seconds, INTERIOR_POINT_SHARE * estimate)
    by_output = decompose_by_output(privacy, cost, gap, share, progress)
    channels, lower, stopped, history, methods = by_output
    remaining = max_seconds - (time.perf_counter() - start)
    if stopped != "time" or remaining <= 0:
        return by_output
    whole_lp = block_interior if estimate <= remaining else first_order
    more, more_lower, stopped, more_history, more_methods = whole_lp(
        privacy, cost, gap, remaining, shifted(progress, time.perf_counter() - start))
    combined = sorted([*channels, *more], key=partial(expected_loss, cost))
    return combined, max(lower, more_lower), stopped, history + more_history, methods + more_methods
