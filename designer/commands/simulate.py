"""``ldp-designer simulate``: privatise synthetic data with a scalable mechanism and report the error."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from designer.commands import check_simulation_epsilon, guarded, print_json

if TYPE_CHECKING:
    from designer.mechanisms import Mechanism

#: Runs with at least this many users show a progress bar (on stderr).
PROGRESS_THRESHOLD = 1 << 22


class MechanismName(str, Enum):
    block_hr = "block-hr"
    high_low_hr = "high-low-hr"
    hr = "hr"
    grr = "grr"


def build_mechanism(name: MechanismName, k: int, epsilon: str, blocks: str | None, sensitive: int | None) -> Mechanism:
    """The mechanism named on the command line, with its options checked."""
    from designer.mechanisms import (
        BlockHadamardResponse,
        GeneralizedRandomizedResponse,
        HadamardResponse,
        HighLowHadamardResponse,
    )

    if blocks is not None and name is not MechanismName.block_hr:
        raise ValueError("--blocks applies to --mechanism block-hr only")
    if sensitive is not None and name is not MechanismName.high_low_hr:
        raise ValueError("--sensitive applies to --mechanism high-low-hr only")
    if name is MechanismName.block_hr:
        if blocks is None:
            raise ValueError("--mechanism block-hr needs --blocks M (M equal blocks) or --blocks sizes.csv")
        sizes = block_sizes(blocks, k)
        check_mechanism_memory(k, sizes)
        return BlockHadamardResponse(list(sizes), epsilon)
    if name is MechanismName.high_low_hr:
        if sensitive is None:
            raise ValueError("--mechanism high-low-hr needs --sensitive S (the first S symbols are sensitive)")
        if not 1 <= sensitive <= k:
            raise ValueError(f"--sensitive {sensitive}: the number of sensitive symbols must be in 1..{k}")
        check_mechanism_memory(k, [sensitive], unblocked=k - sensitive)
        return HighLowHadamardResponse(k, sensitive, epsilon)
    if name is MechanismName.hr:
        check_mechanism_memory(k, [k])
        return HadamardResponse(k, epsilon)
    check_mechanism_memory(k, None)
    return GeneralizedRandomizedResponse(k, epsilon)


def check_mechanism_memory(k: int, hadamard_blocks, unblocked: int = 0) -> None:
    """Refuse, before anything is allocated, a simulation that would not fit in the available memory.

    ``hadamard_blocks``: the block sizes of a Hadamard mechanism (each block of
    size b has ``2^ceil(log2(b + 1))`` outputs), an :class:`EqualBlocks`, or None
    for GRR (k outputs); ``unblocked`` symbols report themselves (one output each).
    """
    from designer.simulation import check_memory, simulation_memory
    from solvers.hadamard import next_power_of_two_above

    if hadamard_blocks is None:
        outputs, count = k, 1
    elif isinstance(hadamard_blocks, EqualBlocks):
        outputs, count = hadamard_blocks.outputs(), hadamard_blocks.count
    else:
        outputs, count = sum(next_power_of_two_above(size) for size in hadamard_blocks) + unblocked, len(hadamard_blocks)
    check_memory(simulation_memory(k, outputs, count), f"--k {k:,} ({outputs:,} outputs)")


class EqualBlocks:
    """``M`` equal consecutive blocks of ``k`` symbols (sizes differ by at most one), never listed
    until needed: a list of 10^9 sizes would itself exhaust memory."""

    def __init__(self, k: int, count: int):
        self.k, self.count = k, count
        self.base, self.extra = divmod(k, count)

    def outputs(self) -> int:
        """Total outputs: ``extra`` blocks of ``base + 1`` symbols, the others of ``base``."""
        from solvers.hadamard import next_power_of_two_above

        return self.extra * next_power_of_two_above(self.base + 1) + (self.count - self.extra) * next_power_of_two_above(self.base)

    def __iter__(self):
        yield from [self.base + 1] * self.extra
        yield from [self.base] * (self.count - self.extra)


def block_sizes(blocks: str, k: int) -> EqualBlocks | list[int]:
    """``M`` -> M equal consecutive blocks (sizes differ by at most one); a CSV -> its sizes."""
    from designer.io import read_vector
    from designer.io.numbers import POSITIVE_INTEGER

    text = blocks.strip()
    if text.isdigit():
        count = int(text)
        if not 1 <= count <= k:
            raise ValueError(f"--blocks {text}: the number of blocks must be in 1..{k}")
        return EqualBlocks(k, count)
    sizes = read_vector(Path(text), "block sizes", POSITIVE_INTEGER)
    if int(sizes.sum()) != k:
        raise ValueError(f"{text}: block sizes sum to {int(sizes.sum())}, not k = {k}")
    return [int(size) for size in sizes]


@guarded
def simulate_command(
    mechanism: MechanismName = typer.Option(..., "--mechanism", help="block-hr, high-low-hr, hr or grr."),
    k: int = typer.Option(..., "--k", help="Domain size."),
    epsilon: str = typer.Option(..., "--eps", help="Privacy level (a number, or log(r))."),
    n: int = typer.Option(..., "--n", help="Number of users (reports)."),
    dist: str = typer.Option("uniform", "--dist", help="uniform, zipf:LAM, geometric:LAM or a CSV of k weights."),
    blocks: str | None = typer.Option(None, "--blocks", help="block-hr: M equal blocks, or a CSV of block sizes."),
    sensitive: int | None = typer.Option(None, "--sensitive", help="high-low-hr: the first S symbols are sensitive."),
    seed: int | None = typer.Option(None, "--seed", min=0, help="Random seed (reproducible runs)."),
    max_seconds: float = typer.Option(
        3600.0, "--max-seconds",
        help="Refuse, after the first 2^21 users, a run projected to take longer than this (inf: no limit).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Simulate n users: draw data, privatise, estimate; print TV/l2 errors, the paper's bound and timings."""
    from designer.exact import ExactEpsilon
    from designer.mechanisms import BlockHadamardResponse, HadamardResponse, HighLowHadamardResponse
    from designer.simulation import SimulationTooLong, named_distribution, simulate

    if k < 1:
        raise ValueError(f"--k must be >= 1, got {k}")
    if n < 1:
        raise ValueError(f"--n must be >= 1, got {n}")
    if not max_seconds > 0:
        raise ValueError(f"--max-seconds must be a positive number (inf: no limit), got {max_seconds!r}")
    try:
        level = float(ExactEpsilon.parse(epsilon))
    except ValueError as error:
        raise ValueError(f"--eps {epsilon!r}: {error}") from None
    check_simulation_epsilon(level)
    chosen = build_mechanism(mechanism, k, epsilon, blocks, sensitive)
    prior = named_distribution(dist, k)
    console = Console(stderr=True)
    with Progress(
        TextColumn("privatising"),
        BarColumn(),
        TextColumn("{task.completed:,}/{task.total:,} users"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=n < PROGRESS_THRESHOLD,
    ) as progress:
        task = progress.add_task("simulate", total=n)
        try:
            result = simulate(
                chosen, prior, n, seed, progress=lambda done: progress.update(task, completed=done),
                max_seconds=max_seconds,
            )
        except SimulationTooLong as error:
            raise ValueError(f"--n: {error} (--max-seconds); lower --n or raise --max-seconds") from None
    payload = {
        "mechanism": mechanism.value,
        "k": k,
        "n": n,
        "epsilon": float(chosen.epsilon),
        "distribution": dist,
        "outputs": chosen.n_outputs,
        "bits_per_report": chosen.bits,
        **result.to_dict(),
    }
    if isinstance(chosen, BlockHadamardResponse) and not isinstance(chosen, HadamardResponse):
        payload["blocks"] = len(chosen.blocks)
    if isinstance(chosen, HighLowHadamardResponse):
        payload["sensitive"] = chosen.s
    if as_json:
        print_json(payload)
        return
    out = Console()
    bound = "none stated" if result.tv_bound is None else f"{result.tv_bound:.4g}"
    out.print(f"{chosen!r}: {chosen.bits} bits per report, distribution {dist}, n = {n:,}", markup=False, emoji=False)
    out.print(
        f"TV error {result.tv_error:.4g} (projected onto the simplex), {result.tv_error_raw:.4g} (raw unbiased); "
        f"l2 error {result.l2_error:.4g}; paper's TV bound {bound}"
    )
    out.print(
        f"time {result.seconds:.3f} s (privatise {result.sample_seconds:.3f} s + estimate "
        f"{result.estimate_seconds:.3f} s); drawing the data {result.data_seconds:.3f} s"
    )


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate_command)
