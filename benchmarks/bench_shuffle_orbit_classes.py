"""How the orbit shuffle analysis grows with the number of classes, against r = 20 in the same run.

Run: ``python benchmarks/bench_shuffle_orbit_classes.py`` (about 20 s). Structure: r blocks of
distinct sizes 2..r+1, each varying on its own orbit only, E = inf across (the fixture
``distinct_blocks`` of ``tests/test_shuffle_orbit.py``): no two class pairs share numbers, so
every one of the r (r+1)/2 class pairs is analysed. A class pair's test convolves only the
classes with positive values on its orbits (here its own two; the r - 2 others are one
closed-form candidate), so the time grows like the number of class pairs, r^2 (ratio 16 from
r = 20 to 80), not r^3 (64). Median of 3 (r = 20, 40) or 1 (r = 80), and the work units the
analysis counted against :data:`designer.shuffle.orbits.MAX_WORK_UNITS` before spending them.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_shuffle_orbit import distinct_blocks  # noqa: E402
from timing import timed  # noqa: E402

import designer.shuffle.orbits as orbits  # noqa: E402


def main() -> None:
    counted = []
    checked = orbits._within_budget
    orbits._within_budget = lambda units, what: counted.append(units) or checked(units, what)
    print("| classes r | class pairs | s (median) | ratio to r = 20 | work units | units per s |")
    print("|---|---|---|---|---|---|")
    baseline = None
    for r, repeats in ((20, 3), (40, 3), (80, 1)):
        structure = distinct_blocks(r)
        seconds, pairs = timed(lambda: orbits.orbit_pairs(structure), repeats)
        baseline = baseline or seconds
        print(f"| {r} | {len(pairs):,} | {seconds:.2f} | {seconds / baseline:.1f} | {counted[-1]:.3g} | "
              f"{counted[-1] / seconds:.3g} |")


if __name__ == "__main__":
    main()
