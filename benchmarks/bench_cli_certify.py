"""Benchmark: ``ldp-designer certify`` end to end, float and exact mode, against a plain numpy script.

Baseline (measured in the same run, interleaved with the CLI round by round): a
script that ``np.loadtxt``-s both CSVs and computes the tight E with a row loop
(``max_y log Q[x, y] - log Q[x', y]`` for one x at a time), then compares with E.
Cases: dense random channels k = 100, 300, 1000 (entries written as ``repr``
floats) with E = the tight E + 0.5 and ``inf`` on 10% of the pairs; at k = 1000
also a violated E (the same E with 10 pairs set to half their tight level).

Timed end to end (each a fresh process, median over ``--repeats`` rounds):

* the numpy script, k = 100, 300, 1000;
* ``ldp-designer certify`` (float mode), k = 100, 300, 1000;
* ``ldp-designer certify --exact``, k = 1000, certified and violated;
* the start-up floor of a typer command: ``python -c "import typer, rich.console"``,
  and the numpy script wrapped as a one-command typer app that prints with rich
  (what any typer CLI doing this job pays: typer's pydantic option conversion,
  rich, numpy);
* with ``--before PATH`` (another checkout, e.g. a copy of the tree before a
  change): float ``certify`` at k = 100 and 300 as ``python -m designer.cli`` in
  that tree and in this one, in the same rounds; with ``--exact-before PATH``
  the same for ``certify --exact`` at k = 1000 (certified case).

Timed in-process (median over ``--repeats``): the reader layer in float mode
against ``np.loadtxt``; exact mode at k = 1000 split into reading (``read_channel``
+ ``read_privacy_matrix``, ``exact=True``) and ``certify(..., exact=True)``; with
``--parsers``, the candidate vectorised parsers on the 1000 x 1000 channel.
The load average is printed at the start and the end (the machine may be shared).
The children run with byte-code cached as in an installed package
(:func:`bench_startup.cached_bytecode`; ``--as-called`` keeps the caller's settings).

Run: ``.venv/bin/python benchmarks/bench_cli_certify.py [--repeats 3] [--before PATH] [--exact-before PATH]
[--parsers] [--as-called]``
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench_startup import cached_bytecode
from timing import run_times, timed

from designer.certify import certify
from designer.io import read_channel, read_privacy_matrix

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / ".venv" / "bin" / "ldp-designer"
PYTHON = sys.executable
COMPUTE = """
E = np.loadtxt(e_file, delimiter=",")
Q = np.loadtxt(channel_file, delimiter=",")
logQ = np.log(Q)
tight = np.empty_like(E)
for x in range(Q.shape[0]):
    tight[x] = np.max(logQ[x][None, :] - logQ, axis=1)
verdict = "certified" if np.all(tight <= E + 1e-9) else "violated"
"""
SCRIPT = (  # exit code 1 when violated, as the CLI
    "import sys\nimport numpy as np\ne_file, channel_file = sys.argv[1:3]\n" + COMPUTE
    + "print(verdict)\nsys.exit(verdict == 'violated')\n"
)
#: The same job as a one-command typer app printing with rich: the floor of any typer CLI.
TYPER_SCRIPT = (
    "from pathlib import Path\nimport typer\n"
    "def main(e_file: Path = typer.Option(..., '--E'), channel_file: Path = typer.Option(..., '--channel')) -> None:\n"
    "    import numpy as np\n    from rich.console import Console\n"
    + "".join(f"    {line}\n" for line in COMPUTE.strip().splitlines())
    + "    Console().print(verdict)\n"
    "typer.run(main)\n"
)
VIOLATED_PAIRS = 10


def write_matrix(path: Path, matrix: np.ndarray) -> Path:
    """Write floats as the writer writes them (``repr``)."""
    with path.open("w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows([[repr(v) for v in row] for row in matrix.tolist()])
    return path


def tight_epsilon(Q: np.ndarray) -> np.ndarray:
    """``max_y log Q[x, y] - log Q[x', y]``, one row x at a time."""
    logs = np.log(Q)
    return np.stack([np.max(logs[x][None, :] - logs, axis=1) for x in range(Q.shape[0])])


def write_case(folder: Path, k: int, seed: int) -> tuple[Path, Path]:
    """A dense random channel and a loose E with inf entries (10% of the pairs)."""
    rng = np.random.default_rng(seed)
    Q = rng.random((k, k)) + 0.05
    Q /= Q.sum(axis=1, keepdims=True)
    E = tight_epsilon(Q) + 0.5
    E[rng.random((k, k)) < 0.1] = np.inf
    np.fill_diagonal(E, 0.0)
    return write_matrix(folder / f"E{k}.csv", E), write_matrix(folder / f"Q{k}.csv", Q)


def write_violated(folder: Path, e_path: Path, q_path: Path, seed: int) -> Path:
    """E of the case with :data:`VIOLATED_PAIRS` off-diagonal pairs set to half their tight level."""
    rng = np.random.default_rng(seed)
    E, Q = np.loadtxt(e_path, delimiter=","), np.loadtxt(q_path, delimiter=",")
    k = E.shape[0]
    pairs = rng.choice(k * k, size=4 * VIOLATED_PAIRS, replace=False)
    rows, others = np.divmod(pairs, k)
    keep = rows != others
    rows, others = rows[keep][:VIOLATED_PAIRS], others[keep][:VIOLATED_PAIRS]
    logs = np.log(Q)
    E[rows, others] = [np.max(logs[x] - logs[x_prime]) / 2 for x, x_prime in zip(rows, others)]
    return write_matrix(folder / f"E{k}_violated.csv", E)


def run(command: list[str], verdict: str, cwd: Path, environment: dict[str, str] | None) -> None:
    """Run one case; a wrong exit code or verdict stops the benchmark (a timing of an error is no timing)."""
    result = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=environment)
    expected = 1 if verdict == "violated" else 0
    if result.returncode != expected or verdict not in result.stdout.lower():
        raise SystemExit(f"{' '.join(command)}: exit {result.returncode}, {result.stdout[:200]!r} {result.stderr[-300:]!r}")


def load() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def end_to_end(
    cases: dict[str, tuple[list[str], str, Path]], repeats: int, environment: dict[str, str] | None
) -> dict[str, list[float]]:
    """Seconds of every case, one run of each per round, rounds repeated (interleaved)."""
    for command, verdict, cwd in cases.values():  # warm the file cache and the byte-code
        run(command, verdict, cwd, environment)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for round_number in range(repeats):
        for name, (command, verdict, cwd) in cases.items():
            times[name].extend(run_times(lambda: run(command, verdict, cwd, environment), 1)[0])
        print(f"  round {round_number + 1} done, load average {load()}", flush=True)
    return times


def parsers(q_path: Path) -> dict[str, float]:
    """Seconds to parse the channel CSV with each candidate (median of 3)."""
    found = {}
    found["numpy loadtxt"], _ = timed(lambda: np.loadtxt(q_path, delimiter=",", ndmin=2))
    found["python float per cell"], _ = timed(
        lambda: [[float(cell) for cell in line.split(",")] for line in q_path.read_text().splitlines()]
    )
    try:
        import pandas

        found["pandas C engine"], _ = timed(lambda: pandas.read_csv(q_path, header=None, engine="c").to_numpy())
        imports = [
            float(subprocess.run([PYTHON, "-c", "import time, numpy; s = time.perf_counter(); import pandas; "
                                  "print(time.perf_counter() - s)"], capture_output=True, text=True).stdout)
            for _ in range(3)
        ]
        found["pandas import (fresh interpreter)"] = statistics.median(imports)
    except ImportError:
        pass
    try:
        import pyarrow.csv as arrow

        options = arrow.ReadOptions(autogenerate_column_names=True)
        found["pyarrow"], _ = timed(lambda: arrow.read_csv(q_path, read_options=options))
    except ImportError:
        found["pyarrow"] = float("nan")  # not installed (not a dependency)
    return found


def in_process(cases: dict[int, tuple[Path, Path]], violated: Path, repeats: int) -> None:
    """The reader layer against np.loadtxt (float mode), and exact reading and certifying apart."""
    print("in-process reading of both files (float mode):")
    for k, (e, q) in cases.items():
        reader, _ = timed(lambda: (read_channel(q, exact=False), read_privacy_matrix(e, exact=False)), repeats)
        loadtxt, _ = timed(lambda: (np.loadtxt(q, delimiter=","), np.loadtxt(e, delimiter=",")), repeats)
        print(f"  k={k:5d}: reader layer {reader:.4f} s, np.loadtxt {loadtxt:.4f} s, ratio {reader / loadtxt:.2f}")
    e_path, q_path = cases[1000]
    print(f"in-process exact mode, k = 1000 (median of {repeats}):")
    for name, e in (("certified", e_path), ("violated", violated)):
        read_times, certify_times, float_times = [], [], []
        for _ in range(repeats):  # fresh objects each time: nothing read lazily is reused
            (seconds,), (channel, privacy) = run_times(lambda: (read_channel(q_path, exact=True), read_privacy_matrix(e, exact=True)), 1)
            read_times.append(seconds)
            (seconds,), certificate = run_times(lambda: certify(channel, privacy, exact=True), 1)
            certify_times.append(seconds)
            assert certificate.verdict == name and (name == "certified" or len(certificate.violations) == VIOLATED_PAIRS)
            (seconds,), float_certificate = run_times(lambda: certify(channel, privacy, exact=False), 1)
            float_times.append(seconds)
            assert float_certificate.verdict == name
        read, decide, decide_float = (statistics.median(t) for t in (read_times, certify_times, float_times))
        print(f"  {name:9s}: read both files {read:.2f} s (min {min(read_times):.2f}), "
              f"certify exact {decide:.2f} s (min {min(certify_times):.2f}), "
              f"float certify of the same objects {decide_float:.2f} s; read + certify exact {read + decide:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="rounds of the end-to-end cases, repeats in-process")
    parser.add_argument("--before", type=Path, help="another checkout: float certify k = 100, 300 there too")
    parser.add_argument("--exact-before", type=Path, help="another checkout: exact certify k = 1000 there too")
    parser.add_argument("--parsers", action="store_true", help="also time the candidate parsers")
    parser.add_argument("--as-called", action="store_true", help="keep the calling environment's byte-code settings")
    options = parser.parse_args()
    caching = "as called" if options.as_called else "byte-code cached"
    print(f"load average at start (1/5/15 min): {load()}, {os.cpu_count()} cores, children {caching}")
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as cache:
        environment = None if options.as_called else cached_bytecode(Path(cache))
        cases = {k: write_case(Path(folder), k, seed=k) for k in (100, 300, 1000)}
        e_path, q_path = cases[1000]
        violated = write_violated(Path(folder), e_path, q_path, seed=7)
        if options.parsers:
            print("parsers, 1000 x 1000 channel (22 MB):")
            for name, seconds in parsers(q_path).items():
                print(f"  {name:36s} {seconds:.3f} s")
        in_process(cases, violated, options.repeats)
        timed_cases: dict[str, tuple[list[str], str, Path]] = {
            'python -c "import numpy"': ([PYTHON, "-c", "import numpy"], "", ROOT),
            'python -c "import typer, rich.console"': ([PYTHON, "-c", "import typer, rich.console"], "", ROOT),
        }
        runs = {(k, "certified"): pair for k, pair in cases.items()} | {(1000, "violated"): (violated, q_path)}
        for (k, verdict), (e, q) in runs.items():
            arguments = ["certify", "--E", str(e), "--channel", str(q)]
            label = f"k={k}" + (" violated" if verdict == "violated" else "")
            timed_cases[f"numpy script {label}"] = ([PYTHON, "-c", SCRIPT, str(e), str(q)], verdict, ROOT)
            if verdict == "certified":
                timed_cases[f"typer app {label}"] = ([PYTHON, "-c", TYPER_SCRIPT, "--E", str(e), "--channel", str(q)], verdict, ROOT)
            timed_cases[f"ldp-designer certify {label}"] = ([str(CLI), *arguments], verdict, ROOT)
            if k == 1000:
                timed_cases[f"ldp-designer certify --exact {label}"] = ([str(CLI), *arguments, "--exact"], verdict, ROOT)
                if options.exact_before is not None and verdict == "certified":
                    module = [PYTHON, "-m", "designer.cli", *arguments, "--exact"]
                    timed_cases[f"before: python -m designer.cli certify --exact {label}"] = (
                        module, verdict, options.exact_before.resolve())
                    timed_cases[f"after: python -m designer.cli certify --exact {label}"] = (module, verdict, ROOT)
            elif options.before is not None:
                module = [PYTHON, "-m", "designer.cli", *arguments]
                timed_cases[f"before: python -m designer.cli certify {label}"] = (module, verdict, options.before.resolve())
                timed_cases[f"after: python -m designer.cli certify {label}"] = (module, verdict, ROOT)
        print(f"end to end, {options.repeats} rounds (every case once per round):")
        times = end_to_end(timed_cases, options.repeats, environment)
    medians = {name: statistics.median(values) for name, values in times.items()}
    print("| case | median (s) | min-max (s) | ratio to the numpy script (same files) |")
    print("|---|---|---|---|")
    for name, values in times.items():
        label = name[name.index("k="):] if "k=" in name else None
        ratio = f"{medians[name] / medians[f'numpy script {label}']:.2f}" if label else ""
        print(f"| {name} | {medians[name]:.3f} | {min(values):.3f}-{max(values):.3f} | {ratio} |")
    print(f"load average at end (1/5/15 min): {load()}")


if __name__ == "__main__":
    main()
