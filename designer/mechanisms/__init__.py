"""Structured mechanisms of the papers, each stated next to its privacy guarantee."""

from designer.mechanisms.binary import binary_optimal, binary_privacy, mangat, warner

__all__ = ["binary_optimal", "binary_privacy", "mangat", "warner"]
