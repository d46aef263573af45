"""Synthetic confidence sets for the robust-LDP tests (import as `robust_samples`)."""

from __future__ import annotations

import numpy as np

from designer.robust.confidence import ConfidenceSet


def sample_confidence(seed: int, shape=(3, 3), n: int = 1000, alpha: float = 0.05) -> ConfidenceSet:
    """n records from a Jeffreys-prior distribution (Section VIII), every secret value present."""
    rng = np.random.default_rng(seed)
    while True:
        counts = rng.multinomial(n, rng.dirichlet(np.full(shape[0] * shape[1], 0.5))).reshape(shape)
        if np.all(counts.sum(axis=1) > 0):
            return ConfidenceSet(counts, alpha)
