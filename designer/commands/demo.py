"""``ldp-designer demo``: the main job on built-in examples (what ``make run`` runs)."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from designer.certify import certify
from designer.examples import example_path
from designer.io import read_channel, read_privacy_matrix

#: (description, E file, channel file) certified by the demo.
CERTIFY_EXAMPLES = [
    ("survey question, Mangat p=1/3", "survey_E.csv", "survey_mangat_Q.csv"),
    ("4-ary RR, e^eps=3, classic LDP", "ldp4_E.csv", "grr4_Q.csv"),
    ("4-ary RR, e^eps=4, classic LDP e^eps=3", "ldp4_E.csv", "grr4_too_loose_Q.csv"),
    ("two cities, Warner eps=1, 16 digits", "blocks4_E.csv", "blocks4_Q.csv"),
]


def certify_examples(console: Console) -> None:
    """Certify the shipped example channels in float and exact mode and print a table."""
    table = Table(title="Certifying shipped channels (designer/examples/)")
    for column in ("example", "float", "exact", "margin"):
        table.add_column(column)
    notes = []
    for description, e_name, q_name in CERTIFY_EXAMPLES:
        privacy = read_privacy_matrix(example_path(e_name))
        channel = read_channel(example_path(q_name))
        floating = certify(channel, privacy)
        proof = certify(channel, privacy, exact=True)
        table.add_row(description, _coloured(floating.verdict), _coloured(proof.verdict), f"{proof.margin:.3g}")
        if proof.violations:
            v = proof.violations[0]
            notes.append(
                f"{q_name} vs {e_name}: {len(proof.violations)} violating pair(s), e.g. x={v.x}, x'={v.x_prime}, "
                f"witness y={v.y}: Q[x,y]/Q[x',y] = {v.exact_ratio} > exp({privacy.exact_epsilon[v.x, v.x_prime]})"
            )
    console.print(table)
    for note in notes:
        console.print(f"  {escape(note)}")


def demo_command() -> None:
    """Run the built-in examples and print a readable report."""
    console = Console()
    certify_examples(console)


def _coloured(verdict: str) -> str:
    return f"[green]{verdict}[/]" if verdict == "certified" else f"[red]{verdict}[/]"


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_command)
