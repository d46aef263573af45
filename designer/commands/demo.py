"""``ldp-designer demo``: the main job on built-in examples (what ``make run`` runs)."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from designer.certify import certify
from designer.examples import example_path
from designer.io import read_channel, read_privacy_matrix

#: (description, E file, channel file) certified by the demo.
CERTIFY_EXAMPLES = [
    ("survey question, Mangat p=1/3", "survey_E.csv", "survey_mangat_Q.csv"),
    ("4-ary RR, e^eps=3, classic LDP", "ldp4_E.csv", "grr4_Q.csv"),
    ("4-ary RR, e^eps=4, classic LDP e^eps=3", "ldp4_E.csv", "grr4_too_loose_Q.csv"),
    ("two cities, Warner in each, decimals", "blocks4_E.csv", "blocks4_Q.csv"),
]


def certify_examples(console: Console) -> None:
    """Certify the shipped example channels in float and exact mode and print a table."""
    table = Table(title="Certifying shipped channels against shipped E matrices")
    for column in ("example", "E", "channel", "float verdict", "exact verdict", "margin", "witness"):
        table.add_column(column)
    for description, e_name, q_name in CERTIFY_EXAMPLES:
        privacy = read_privacy_matrix(example_path(e_name))
        channel = read_channel(example_path(q_name))
        floating = certify(channel, privacy)
        proof = certify(channel, privacy, exact=True)
        witness = ""
        if proof.violations:
            v = proof.violations[0]
            witness = f"x={v.x}, x'={v.x_prime}, y={v.y}: {v.log_ratio:.4g} > {v.allowed:.4g}"
        table.add_row(
            description,
            e_name,
            q_name,
            _coloured(floating.verdict),
            _coloured(proof.verdict),
            f"{proof.margin:.3g}",
            witness,
        )
    console.print(table)


def demo_command() -> None:
    """Run the built-in examples and print a readable report."""
    console = Console()
    certify_examples(console)


def _coloured(verdict: str) -> str:
    return f"[green]{verdict}[/]" if verdict == "certified" else f"[red]{verdict}[/]"


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_command)
