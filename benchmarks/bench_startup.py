"""Benchmark: start-up time of the command line, as ratios against ``python -c "import numpy"``.

Cases (each a fresh interpreter, timed end to end from the parent):

* baseline: ``python -c "import numpy"``;
* ``python -c "import designer"``;
* ``ldp-designer --help``;
* ``ldp-designer certify`` of a k = 10 channel (k-ary randomised response at
  ``e^eps = 2``) against classic LDP with ``eps = 1`` (float mode);
* ``ldp-designer design`` for classic LDP, k = 8, ``eps = 1`` (mutual information).

The commands run as ``python -m designer.cli ...`` with the working directory set to
the tree under test, so ``--before PATH`` also times another checkout (e.g. ``git
archive HEAD`` unpacked elsewhere) with the same interpreter and packages, in the
same rounds and against the same baseline. The cases are interleaved round by
round so that a change of machine load hits all of them; the figures are medians
over ``--repeats`` rounds (default 7).

Byte-code is cached as in an installed package: the children run with
:func:`cached_bytecode` (``PYTHONDONTWRITEBYTECODE`` dropped, the caches under a
temporary ``PYTHONPYCACHEPREFIX``, filled by a warm-up run), so no run pays for
compiling sources, whatever the calling environment says (``--as-called`` keeps
the caller's settings, to measure their effect).

Run: ``.venv/bin/python benchmarks/bench_startup.py [--before PATH] [--repeats 7] [--as-called]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import run_times

ROOT = Path(__file__).resolve().parents[1]
CERTIFY_K = 10
DESIGN_K = 8


def classic_e_csv(k: int) -> str:
    """Classic LDP with eps = 1: 0 on the diagonal, 1 elsewhere (Definition 2)."""
    return "".join(",".join("0" if x == y else "1" for y in range(k)) + "\n" for x in range(k))


def randomised_response_csv(k: int) -> str:
    """k-ary randomised response with ratio 2: Q[x, x] = 2 / (k + 1), else 1 / (k + 1), as exact fractions."""
    return "".join(
        ",".join(f"{2 if x == y else 1}/{k + 1}" for y in range(k)) + "\n" for x in range(k)
    )


def cases(folder: Path) -> dict[str, list[str]]:
    """Argument vectors of the cases timed in a tree (run with the tree as working directory)."""
    (folder / "E10.csv").write_text(classic_e_csv(CERTIFY_K))
    (folder / "Q10.csv").write_text(randomised_response_csv(CERTIFY_K))
    (folder / "E8.csv").write_text(classic_e_csv(DESIGN_K))
    cli = [sys.executable, "-m", "designer.cli"]
    return {
        'python -c "import designer"': [sys.executable, "-c", "import designer"],
        "ldp-designer --help": [*cli, "--help"],
        f"ldp-designer certify, k = {CERTIFY_K}": [
            *cli, "certify", "--E", str(folder / "E10.csv"), "--channel", str(folder / "Q10.csv"),
        ],
        f"ldp-designer design, classic LDP k = {DESIGN_K}": [
            *cli, "design", "--E", str(folder / "E8.csv"), "--out", str(folder / "Q8.csv"),
        ],
    }


def cached_bytecode(folder: Path) -> dict[str, str]:
    """This environment with byte-code written to and read from ``folder`` (never to the trees).

    With ``PYTHONDONTWRITEBYTECODE=1`` (set in some shells and CI jobs) every run
    would compile the sources of an editable install again (about 25 ms for the
    certify path alone), which an installed package never does.
    """
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPYCACHEPREFIX"] = str(folder)
    return environment


def run(arguments: list[str], tree: Path, environment: dict[str, str] | None) -> None:
    """Run one case to completion; a failure stops the benchmark (a timing of an error is no timing)."""
    result = subprocess.run(arguments, cwd=tree, capture_output=True, text=True, env=environment)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(arguments)} exited {result.returncode}: {result.stderr.strip()[-500:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout to time in the same rounds")
    parser.add_argument("--repeats", type=int, default=7, help="rounds; each case runs once per round")
    parser.add_argument("--as-called", action="store_true", help="keep the calling environment's byte-code settings")
    options = parser.parse_args()
    trees = {"": ROOT} if options.before is None else {"before: ": options.before.resolve(), "after: ": ROOT}
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as cache:
        environment = None if options.as_called else cached_bytecode(Path(cache))
        timed = {'python -c "import numpy" (baseline)': ([sys.executable, "-c", "import numpy"], ROOT)}
        for label, tree in trees.items():
            timed.update({f"{label}{name}": (arguments, tree) for name, arguments in cases(Path(folder)).items()})
        for arguments, tree in timed.values():  # warm the file cache and the byte-code
            run(arguments, tree, environment)
        times: dict[str, list[float]] = {name: [] for name in timed}
        for _ in range(options.repeats):
            for name, (arguments, tree) in timed.items():
                times[name].extend(run_times(lambda arguments=arguments, tree=tree: run(arguments, tree, environment), 1)[0])
    medians = {name: statistics.median(values) for name, values in times.items()}
    baseline = next(iter(medians.values()))
    caching = "as called" if options.as_called else "byte-code cached"
    print(f"{options.repeats} rounds ({caching}); trees: {', '.join(f'{label}{tree}' for label, tree in trees.items())}")
    print("| case | median (s) | min-max (s) | ratio to import numpy |")
    print("|---|---|---|---|")
    for name, values in times.items():
        print(f"| {name} | {medians[name]:.3f} | {min(values):.3f}-{max(values):.3f} | {medians[name] / baseline:.2f} |")


if __name__ == "__main__":
    main()
