"""``ldp-designer sweep``: run a TOML plan of designs as Dask tasks into a resumable Parquet store."""

from __future__ import annotations

from pathlib import Path

import typer

from designer.commands import guarded

#: Exit code after Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED = 130


@guarded(reads=("PLAN",), writes=("--plot",), writes_into=("--out",))
def sweep_command(
    plan: Path = typer.Argument(None, help="The plan (TOML; see designer/sweep/plan.py and benchmarks/plans/)."),
    out: Path = typer.Option(..., "--out", help="Results directory of Parquet parts (resumed when it exists)."),
    scheduler: str = typer.Option(None, "--scheduler", help="A running Dask scheduler, e.g. tcp://host:8786."),
    workers: int = typer.Option(None, "--workers", help="Worker processes of the embedded cluster (default: CPUs; 0 = serial)."),
    cell_timeout: float = typer.Option(None, "--cell-timeout", help="Seconds after which a cell is recorded as timed out."),
    plot: Path = typer.Option(None, "--plot", help="Also save the trade-off curves (utility vs epsilon) of PLAN's cells here (PNG, PDF, SVG, ...)."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Also recompute PLAN's stored cells that failed or timed out."),
    compact: bool = typer.Option(False, "--compact", help="Only merge the small parts of --out into one (no PLAN, no cell runs)."),
) -> None:
    """Run every cell of PLAN not yet stored in OUT; one row per cell (inputs, objective, certified, seconds, error)."""
    import os

    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from designer.sweep import load_plan, run_sweep
    from designer.sweep.store import ResultStore

    console = Console(stderr=True, soft_wrap=True)
    store = ResultStore(out, warn=lambda message: console.print(f"warning: {escape(message)}"))
    if compact:
        if plan is not None:
            raise ValueError("--compact merges the parts of --out and runs no plan: give either PLAN or --compact")
        merged, rows = store.compact()
        console.print(f"{escape(str(out))}: {merged} parts merged into one ({rows} rows); {_parts(len(store.parts()))} now")
        return
    if plan is None:
        raise ValueError("missing PLAN (a TOML plan file), or --compact to merge the parts of --out")
    loaded = load_plan(plan)
    if plot is not None:
        from designer.io import check_destinations
        from designer.sweep.plot import check_one_objective, check_plot_path

        check_plot_path(plot)
        check_destinations([plot])
        check_one_objective(cell.inputs for cell in loaded.cells)
    if workers is None:
        workers = os.cpu_count() or 1
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=console, transient=True)
    bar = progress.add_task(f"sweep {escape(loaded.name)}", total=None)

    def started(todo: int, skipped: int) -> None:
        progress.update(bar, total=todo)
        if skipped:
            console.print(f"resuming: {skipped} of {len(loaded.cells)} cells already stored in {escape(str(out))}")
        if todo:
            progress.start()

    try:
        summary = run_sweep(loaded, out, scheduler=scheduler, workers=workers, cell_timeout=cell_timeout,
                            progress=lambda done, todo: progress.update(bar, completed=done), on_start=started,
                            retry_failed=retry_failed, store=store)
    except KeyboardInterrupt:
        _stop(progress)
        stored = len(store.stored_hashes() & {cell.hash for cell in loaded.cells})
        console.print(f"interrupted: {stored} of {len(loaded.cells)} cells stored in {escape(str(out))}; "
                      "rerun the same command to resume")
        raise typer.Exit(INTERRUPTED) from None
    finally:
        _stop(progress)
    console.print(
        f"{escape(loaded.name)}: {summary.total} cells, {summary.skipped} already stored, {summary.computed} computed "
        f"in {summary.seconds:.1f} s, {summary.errors} failed ({summary.timed_out} timed out); results in "
        f"{escape(str(out))} ({_parts(summary.parts)})"
    )
    for line in summary.first_errors:
        console.print(f"  {escape(line)}")
    if summary.failed_stored:
        console.print(f"{summary.failed_stored} of the plan's stored cells record an error; "
                      "--retry-failed recomputes them (with a larger --cell-timeout for timeouts)")
    if plot is not None:
        from designer.sweep.plot import plot_tradeoff

        plot_tradeoff(store.read({cell.hash for cell in loaded.cells}), plot, title=loaded.name)
        console.print(f"trade-off curves in {escape(str(plot))}")


def _parts(count: int) -> str:
    return f"{count} part file{'' if count == 1 else 's'}"


def _stop(progress) -> None:
    """Stop the progress bar if it was started (stopping an idle one prints a blank line)."""
    if progress.live.is_started:
        progress.stop()


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep_command)
