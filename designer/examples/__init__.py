"""Shipped example E matrices and channels (CSV) used by ``make run`` and the tests."""

from pathlib import Path

EXAMPLES = Path(__file__).parent


def example_path(name: str) -> Path:
    """Absolute path of a shipped example file."""
    path = EXAMPLES / name
    if not path.is_file():
        raise FileNotFoundError(f"no shipped example {name!r} in {EXAMPLES}")
    return path
