"""The documentation site builds strictly (a broken link or docstring reference fails the build)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_mkdocs_builds_strictly(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    assert mkdocs is not None, "mkdocs is not installed: the docs extra is part of the install (Makefile)"
    site = tmp_path / "site"
    completed = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    reference = (site / "reference" / "certification" / "index.html").read_text()
    assert "Decide whether" in reference  # certify's docstring rendered by mkdocstrings
    benchmarks = (site / "benchmarks" / "index.html").read_text()
    assert "Certifier" in benchmarks  # benchmarks/RESULTS.md included by the hook


def test_readme_links_point_to_existing_pages():
    readme = (ROOT / "README.md").read_text()
    for target in [part.split(")")[0] for part in readme.split("](docs/")[1:]]:
        assert (ROOT / "docs" / target.split("#")[0]).is_file(), target


def test_plans_in_the_sweep_guide_are_valid():
    """Every TOML block of docs/scale.md is valid TOML; those naming a task are plans that build their cells."""
    import re
    import tomllib

    from designer.sweep.plan import parse_plan

    blocks = re.findall(r"```toml\n(.*?)```", (ROOT / "docs" / "scale.md").read_text(), flags=re.S)
    plans = [tomllib.loads(block) for block in blocks]
    complete = [plan for plan in plans if "task" in plan]
    assert len(blocks) == 3 and len(complete) == 2
    sizes = sorted(len(parse_plan(plan).cells) for plan in complete)
    assert sizes == [6, 14_400]  # 2 families x 3 eps; 200 draws x 12 eps x 6 protocols
