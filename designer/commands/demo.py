"""``ldp-designer demo``: the main job on built-in examples (what ``make run`` runs)."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from designer.commands import guarded
from designer.examples import example_path

#: (description, E file, channel file) certified by the demo.
CERTIFY_EXAMPLES = [
    ("survey question, Mangat p=1/3", "survey_E.csv", "survey_mangat_Q.csv"),
    ("4-ary RR, e^eps=3, classic LDP", "ldp4_E.csv", "grr4_Q.csv"),
    ("4-ary RR, e^eps=4, classic LDP e^eps=3", "ldp4_E.csv", "grr4_too_loose_Q.csv"),
    ("two cities, Warner eps=1, 16 digits", "blocks4_E.csv", "blocks4_Q.csv"),
]


def certify_examples(console: Console) -> None:
    """Certify the shipped example channels in float and exact mode and print a table."""
    from designer.certify import certify
    from designer.io import read_channel, read_privacy_matrix

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


#: (description, E file, prior file or None) designed by the demo.
DESIGN_EXAMPLES = [
    ("survey, yes deniable", "survey_E.csv", None),
    ("2 cities, 2x3 grids", "geo_blocks_E.csv", None),
    ("6 URLs, 2 sensitive", "urls_high_low_E.csv", "urls_prior.csv"),
]


def design_examples(console: Console) -> None:
    """Design the optimal channel (mutual information) for the shipped E examples, exactly.

    Each design is certified by the exact certifier and compared with k-ary
    randomised response at the smallest level of E (the best RR that is E-LDP).
    The survey design is checked to be exactly Mangat's scheme (Theorem 2, eq. 11).
    """
    import numpy as np

    from designer.design.vertex import design_by_vertices
    from designer.io import read_channel, read_privacy_matrix, read_vector
    from designer.mechanisms import GeneralizedRandomizedResponse
    from designer.utility import mutual_information

    table = Table(title="Designing optimal channels: I(X;Y) in nats, exact mode")
    for column in ("example", "k", "vertices", "outputs", "I opt", "I of RR", "proof", "s"):
        table.add_column(column)
    for description, e_name, prior_name in DESIGN_EXAMPLES:
        privacy = read_privacy_matrix(example_path(e_name))
        prior = read_vector(example_path(prior_name), "prior") if prior_name else np.full(privacy.k, 1 / privacy.k)
        result = design_by_vertices(privacy, prior=prior, exact=True)
        off_diagonal = privacy.epsilon[~np.eye(privacy.k, dtype=bool)]
        baseline = GeneralizedRandomizedResponse(privacy.k, float(off_diagonal.min())).channel()
        table.add_row(
            description,
            str(privacy.k),
            str(result.n_vertices),
            str(result.n_outputs),
            f"{result.objective:.4f}",
            f"{mutual_information(prior, baseline):.4f}",
            _coloured(result.certificate.verdict),
            f"{result.seconds:.3f}",
        )
    console.print(table)
    survey = design_by_vertices(read_privacy_matrix(example_path("survey_E.csv")), exact=True)
    rows = "; ".join(", ".join(str(value) for value in row) for row in survey.channel.exact_matrix)
    mangat = read_channel(example_path("survey_mangat_Q.csv")).exact_matrix
    same = np.array_equal(survey.channel.exact_matrix, mangat)
    console.print(f"  survey design Q = [{rows}]: " + ("exactly Mangat's scheme (eq. 11)" if same else "differs from Mangat"))
    console.print("  I of RR: k-ary randomised response at the smallest level of E, the best RR that is E-LDP")


def deploy_example(console: Console) -> None:
    """Write a mechanism package, verify it, reject two tampered copies, and sample it exactly."""
    import json
    import tempfile
    from pathlib import Path

    from designer.commands.deploy import certified_package, describe_package
    from designer.deploy.package import read_package, verify_package, write_package
    from designer.deploy.sampler import PackageTampered, TableSampler, package_digest
    from designer.deploy.vectorised import VectorisedSampler
    from designer.io import read_channel, read_privacy_matrix

    console.print("[bold]Deploying a mechanism[/]: survey_mangat_Q.csv as a 32-bit integer table (designer/deploy/)")
    privacy = read_privacy_matrix(example_path("survey_E.csv"))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mech.json"
        document = certified_package(read_channel(example_path("survey_mangat_Q.csv")), privacy, 32, path)
        write_package(path, document)
        describe_package(document, Path("mech.json"), console)
        verification = verify_package(read_package(path))
        console.print(f"  verify-package: [green]{verification.certificate.verdict}[/] again from scratch (exit 0), "
                      f"table {document['table']}")
        tampered = json.loads(path.read_text())
        tampered["table"][0] = ["2863311531", "1431655765"]  # one unit moved: rows still sum to 2^32
        forged = dict(tampered, sha256=package_digest(tampered))
        for what, candidate in (("one unit moved", tampered), ("same edit, re-hashed", forged)):
            try:
                outcome = verify_package(candidate)
                message = "certified" if outcome.certified else f"not E-LDP: {outcome.certificate.violations[0].exact_ratio} > 3"
            except PackageTampered as error:
                message = str(error).split(":")[0]
            console.print(f"  tampered ({what}): [red]rejected[/] (exit 1): {escape(message)}")
        sign_example(document, forged, Path(folder), console)
        counts = TableSampler(document, sha256=document["sha256"]).counts(0, 30_000)
        bulk = VectorisedSampler(document, sha256=document["sha256"]).counts(0, 1_000_000)
        console.print(
            f"  sampled input 'no' exactly: secrets 30000 reports {counts}, ChaCha20 10^6 reports {bulk.tolist()} "
            f"(table: {int(document['table'][0][0]) / 2**32:.10f} / {int(document['table'][0][1]) / 2**32:.10f})"
        )


def sign_example(document: dict, forged: dict, folder, console: Console) -> None:
    """Sign the package with a new Ed25519 key; a forgery re-signed by another key is refused by the author's key."""
    from designer.deploy.sampler import PackageUntrusted, authenticate
    from designer.deploy.signing import generate_key_files, read_private_key, sign_package

    author_key, _, author_public = generate_key_files(folder / "author.key")
    attacker_key, _, _ = generate_key_files(folder / "attacker.key")
    signed = sign_package(document, read_private_key(author_key))
    console.print(f"  signed (keygen, package --sign): clients given the author's public key accept it "
                  f"({escape(authenticate(signed, public_key=author_public))})")
    try:
        authenticate(sign_package(forged, read_private_key(attacker_key)), public_key=author_public)
        console.print("  [red]a forgery re-signed by another key was accepted[/]")
    except PackageUntrusted as error:
        console.print(f"  re-hashed forgery re-signed by another key: [red]refused[/]: {escape(str(error))}")


@guarded
def demo_command() -> None:
    """Run the built-in examples and print a readable report."""
    console = Console()
    certify_examples(console)
    design_examples(console)
    deploy_example(console)


def _coloured(verdict: str) -> str:
    return f"[green]{verdict}[/]" if verdict == "certified" else f"[red]{verdict}[/]"


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_command)
