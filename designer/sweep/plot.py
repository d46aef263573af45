"""Trade-off curves of a sweep: utility against epsilon, one curve per family/protocol.

A curve is the mean objective over the draws (robust plans) or replicates
(simulations) at each epsilon, with a band of ``mean ± z_{0.975} s / sqrt(m)``
(normal approximation over the m successful cells; no band when m = 1). Cells with
an error are left out; each panel's title says how many.

One axis holds one objective: the rows of different tasks, or of design cells with
different utilities (mutual information in nats against an expected loss), are
refused (``ValueError``, one line). Two families differing only in a parameter
(``sensitive``, ``blocks``, an E file) are separate curves; when nothing else tells
them apart the label carries the first 8 hex digits of ``E_hash``.
"""

from __future__ import annotations

from pathlib import Path

#: Columns that split a sweep into curves, when they vary (``E_hash`` last: it labels only when needed).
CURVE_KEYS = ("family", "k", "sensitive", "blocks", "protocol", "utility", "shape", "records", "alpha", "E_hash")
#: Two-sided 95% normal quantile.
Z_95 = 1.959963984540054
YLABELS = {"design": "optimal utility (nats) / expected loss", "robust-design": "mean I(X;Y) / H(X)",
           "certify": "margin min(E - E_Q)", "simulate": "total-variation error"}


def objective_kind(row) -> str:
    """What a row's (or a cell's inputs') objective measures: the task, and the utility of a design."""
    utility = row.get("utility")
    return f"{row['task']} ({utility})" if row["task"] == "design" and isinstance(utility, str) else row["task"]


def check_one_objective(rows) -> None:
    """Refuse rows (dicts: cell inputs or stored rows) whose objectives would share one axis."""
    kinds = sorted({objective_kind(row) for row in rows})
    if len(kinds) > 1:
        raise ValueError(f"--plot draws one objective per axis, and these cells have {len(kinds)}: "
                         f"{', '.join(kinds)}; plot each from its own plan")


def check_plot_path(path: str | Path) -> None:
    """Refuse a plot file whose suffix matplotlib cannot write (before any cell runs)."""
    from matplotlib.backend_bases import FigureCanvasBase

    suffix = Path(path).suffix.lstrip(".").lower() or "png"
    formats = FigureCanvasBase.get_supported_filetypes()
    if suffix not in formats:
        raise ValueError(f"--plot {path}: cannot write .{suffix} images; use one of {', '.join(sorted(formats))}")


def curve_table(frame):
    """Mean, standard error, band and count per (curve keys, epsilon) of the successful rows."""
    ok = frame[frame["error"].isna()]
    keys = [key for key in CURVE_KEYS if frame[key].nunique(dropna=True) > 1] or ["task"]
    grouped = ok.fillna({key: "" for key in keys}).groupby([*keys, "epsilon"])["objective"]
    table = grouped.agg(["mean", "std", "count"]).reset_index()
    table["half_width"] = (Z_95 * table["std"] / table["count"] ** 0.5).fillna(0.0)
    return table, keys


def curve_names(table, keys: list[str]):
    """(label, rows) per curve: the varying keys' values, ``E_hash`` shortened and only when needed."""
    curves = []
    for label, curve in table.groupby(keys):
        values = dict(zip(keys, label if isinstance(label, tuple) else (label,)))
        curves.append((values, curve))
    shown = [key for key in keys if key != "E_hash"]
    names = [", ".join(f"{key}={values[key]}" if key in ("k", "sensitive", "blocks") else f"{values[key]}"
                       for key in shown if values[key] != "") for values, _ in curves]
    if "E_hash" in keys and len(set(names)) < len(names):
        names = [f"{name}, E {values['E_hash'][:8]}".lstrip(", ") for name, (values, _) in zip(names, curves)]
    return [(name, curve) for name, (_, curve) in zip(names, curves)]


def plot_tradeoff(frame, path: str | Path, title: str | None = None) -> None:
    """Save the trade-off curves of a sweep's rows (a DataFrame from the store) to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from designer.io import write_files

    check_one_objective(frame[["task", "utility"]].drop_duplicates().to_dict("records"))
    table, keys = curve_table(frame)
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for name, curve in curve_names(table, keys):
        curve = curve.sort_values("epsilon")
        axis.plot(curve["epsilon"], curve["mean"], marker="o", ms=3, label=name)
        axis.fill_between(curve["epsilon"], curve["mean"] - curve["half_width"],
                          curve["mean"] + curve["half_width"], alpha=0.2)
    failed = int(frame["error"].notna().sum())
    tasks = sorted(frame["task"].dropna().unique())
    axis.set_xlabel("ε")
    axis.set_ylabel(YLABELS.get(tasks[0], "objective") if tasks else "objective")
    axis.set_title(f"{title or ''} ({len(frame)} cells, {failed} failed; bands: 95% over draws)".strip(), fontsize=9)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7)
    figure.tight_layout()
    suffix = Path(path).suffix.lstrip(".") or "png"
    write_files([(path, lambda handle: figure.savefig(handle.buffer, format=suffix, dpi=120))])
    plt.close(figure)
