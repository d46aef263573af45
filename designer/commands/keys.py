"""``ldp-designer keygen`` and ``export-js``: signing keys and the JavaScript client."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from designer.commands import guarded, print_json

JS_CLIENT = Path(__file__).resolve().parent.parent / "deploy" / "js" / "ldp-client.mjs"
#: The memo-keeping client (docs/longitudinal.md); it imports ``./ldp-client.mjs``, so both go together.
JS_MEMO = JS_CLIENT.with_name("ldp-memo.mjs")


@guarded(writes=("--out",))
def keygen_command(
    out: Path = typer.Option(..., "--out", help="Private key file to create (mode 0600); the public key goes to OUT.pub."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Create an Ed25519 key pair for signing packages (never overwrites a key). Exit 0 written, 2 bad input."""
    import base64

    from designer.deploy.sampler import key_fingerprint
    from designer.deploy.signing import generate_key_files

    private_path, public_path, public = generate_key_files(out)
    encoded = base64.b64encode(public).decode("ascii")
    if as_json:
        print_json({"private_key": str(private_path), "public_key": str(public_path), "public_key_base64": encoded,
                    "fingerprint": key_fingerprint(public)})
        return
    console = Console()
    console.print(escape(f"private key {private_path} (mode 0600: keep it secret; package --sign {private_path})"))
    console.print(escape(f"public key  {public_path}: {encoded} (fingerprint {key_fingerprint(public)}; give it "
                         f"to the clients: verify-package --public-key {public_path})"))


@guarded(writes_into=("--out",))
def export_js_command(
    out: Path = typer.Option(..., "--out", help="Folder to write ldp-client.mjs and ldp-memo.mjs into."),
) -> None:
    """Write the JavaScript clients (ES modules, no dependencies) into a folder: ldp-client.mjs and the
    memo-keeping ldp-memo.mjs that imports it."""
    from designer.io.writing import write_files

    if not out.is_dir():
        raise ValueError(f"--out {out} is not an existing folder")
    texts = {source.name: source.read_text() for source in (JS_CLIENT, JS_MEMO)}
    write_files([(out / name, lambda handle, text=text: handle.write(text)) for name, text in texts.items()])
    Console().print(escape(f"wrote {out / JS_CLIENT.name} (ES module: import {{ loadPackage }} from "
                           f"'./{JS_CLIENT.name}') and {out / JS_MEMO.name} (memoizing clients: import "
                           f"{{ loadMemoized }} from './{JS_MEMO.name}')"))


def register(app: typer.Typer) -> None:
    app.command("keygen")(keygen_command)
    app.command("export-js")(export_js_command)
