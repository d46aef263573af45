"""Trade-off curves of a sweep: utility against epsilon, one curve per family/protocol.

A curve is the mean objective over the draws (robust plans) or replicates
(simulations) at each epsilon, with a band of ``mean ± z_{0.975} s / sqrt(m)``
(normal approximation over the m successful cells; no band when m = 1). Cells with
an error are left out; each panel's title says how many.
"""

from __future__ import annotations

from pathlib import Path

#: Columns that split a sweep into curves, when they vary.
CURVE_KEYS = ("family", "protocol", "utility", "shape", "records", "alpha")
#: Two-sided 95% normal quantile.
Z_95 = 1.959963984540054
YLABELS = {"design": "optimal utility (nats) / expected loss", "robust-design": "mean I(X;Y) / H(X)",
           "certify": "margin min(E - E_Q)", "simulate": "total-variation error"}


def curve_table(frame):
    """Mean, standard error, band and count per (curve keys, epsilon) of the successful rows."""
    ok = frame[frame["error"].isna()]
    keys = [key for key in CURVE_KEYS if frame[key].nunique(dropna=True) > 1] or ["task"]
    grouped = ok.fillna({key: "" for key in keys}).groupby([*keys, "epsilon"])["objective"]
    table = grouped.agg(["mean", "std", "count"]).reset_index()
    table["half_width"] = (Z_95 * table["std"] / table["count"] ** 0.5).fillna(0.0)
    return table, keys


def plot_tradeoff(frame, path: str | Path, title: str | None = None) -> None:
    """Save the trade-off curves of a sweep's rows (a DataFrame from the store) to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from designer.io import write_files

    table, keys = curve_table(frame)
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for label, curve in table.groupby(keys):
        label = label if isinstance(label, tuple) else (label,)
        curve = curve.sort_values("epsilon")
        name = ", ".join(f"{value}" for value in label if value != "")
        axis.plot(curve["epsilon"], curve["mean"], marker="o", ms=3, label=name)
        axis.fill_between(curve["epsilon"], curve["mean"] - curve["half_width"],
                          curve["mean"] + curve["half_width"], alpha=0.2)
    failed = int(frame["error"].notna().sum())
    tasks = sorted(frame["task"].dropna().unique())
    axis.set_xlabel("ε")
    axis.set_ylabel(YLABELS.get(tasks[0], "objective") if len(tasks) == 1 else "objective")
    axis.set_title(f"{title or ''} ({len(frame)} cells, {failed} failed; bands: 95% over draws)".strip(), fontsize=9)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7)
    figure.tight_layout()
    suffix = Path(path).suffix.lstrip(".") or "png"
    write_files([(path, lambda handle: figure.savefig(handle.buffer, format=suffix, dpi=120))])
    plt.close(figure)
