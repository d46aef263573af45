"""MkDocs hook: the Benchmarks page shows ``benchmarks/RESULTS.md`` as kept in the repository.

The figures live next to the scripts that produce them; this hook appends them to
``benchmarks.md`` at build time, so the site never holds a stale copy.
"""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "RESULTS.md"


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Append RESULTS.md (its title dropped, headings one level down) to the benchmarks page."""
    if page.file.src_uri != "benchmarks.md":
        return markdown
    lines = RESULTS.read_text().splitlines()
    body = [("#" + line if line.startswith("#") else line) for line in lines if not line.startswith("# ")]
    return markdown + "\n" + "\n".join(body) + "\n"
