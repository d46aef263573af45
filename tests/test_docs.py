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
