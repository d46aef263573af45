"""The empirical E matrix beside the declared one: two heat maps on one colour scale."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def plot_lower_bounds(lower: np.ndarray, declared: np.ndarray, path: str | Path, title: str = "") -> None:
    """Save ``declared E | empirical lower bounds L | L - E`` (finite entries) to ``path`` (PNG, PDF, SVG).

    Infinite E entries are drawn blank; a cell of the right panel above 0 is a
    pair whose lower bound exceeds its allowed level.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from designer.io import write_files

    finite = np.where(np.isfinite(declared), declared, np.nan)
    top = float(np.nanmax(np.concatenate([finite.ravel(), lower.ravel()]))) or 1.0
    figure, axes = plt.subplots(1, 3, figsize=(12, 4))
    panels = [(finite, "declared E", "viridis", 0, top), (lower, "empirical lower bounds L", "viridis", 0, top),
              (lower - finite, "L - E (> 0: violated)", "coolwarm", -top, top)]
    for axis, (matrix, name, colours, low, high) in zip(axes, panels):
        image = axis.imshow(matrix, cmap=colours, vmin=low, vmax=high)
        axis.set_title(name, fontsize=9)
        axis.set_xlabel("x'")
        axis.set_ylabel("x")
        figure.colorbar(image, ax=axis, fraction=0.046)
    figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    suffix = Path(path).suffix.lstrip(".") or "png"
    write_files([(path, lambda handle: figure.savefig(handle.buffer, format=suffix, dpi=120))])
    plt.close(figure)
