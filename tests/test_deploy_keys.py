"""Keys checked as keys, and the same verdict in every client for every malformed input (issue 30).

The eight Ed25519 points of small order are computed here from the group law (a point of
order 8 is ``[L] P`` for a curve point ``P`` whose torsion part has order 8; its multiples are
the torsion subgroup), not copied from a list. With one of them as the trusted key, ``cryptography``
and WebCrypto verify a made-up signature (checked below for the identity ``AQAA...A=``), so the
clients must refuse the key itself. The same malformed keys and packages then run through the
stdlib client, the vectorised client, Node and headless Chromium, which must agree.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
from deploy_fixtures import run_cases_in_chromium, run_cases_in_node
from typer.testing import CliRunner

from designer.cli import app
from designer.deploy.package import build_package
from designer.deploy.sampler import FIELD_PRIME, SMALL_ORDER_Y, PackageError, load_sampler, parse_package
from designer.deploy.signing import generate_key_files, read_private_key, sign_package
from designer.deploy.table import deployable_table
from designer.deploy.vectorised import VectorisedSampler
from designer.examples import example_path
from designer.io import read_channel, read_privacy_matrix

runner = CliRunner()
P = 2**255 - 19
D = -121665 * pow(121666, P - 2, P) % P
L = 2**252 + 27742317777372353535851937790883648493  # the prime order of the base point


def add(first, second):
    """Twisted Edwards addition on -x^2 + y^2 = 1 + d x^2 y^2 (RFC 8032, section 5.1.4, affine)."""
    (x1, y1), (x2, y2) = first, second
    t = D * x1 * x2 * y1 * y2 % P
    return ((x1 * y2 + x2 * y1) * pow(1 + t, P - 2, P) % P, (y1 * y2 + x1 * x2) * pow(1 - t, P - 2, P) % P)


def multiply(n: int, point):
    result = (0, 1)
    while n:
        if n & 1:
            result = add(result, point)
        point, n = add(point, point), n >> 1
    return result


def decode(y: int, sign: int):
    """The point with this y and sign of x (RFC 8032, section 5.1.3), or None."""
    square = (y * y - 1) * pow(D * y * y + 1, P - 2, P) % P
    x = pow(square, (P + 3) // 8, P)
    if (x * x - square) % P:
        x = x * pow(2, (P - 1) // 4, P) % P
    if (x * x - square) % P or (x == 0 and sign):
        return None
    return (x if x % 2 == sign else P - x, y)


def encode(point) -> bytes:
    x, y = point
    return (y | (x % 2) << 255).to_bytes(32, "little")


def small_order_encodings() -> list[bytes]:
    y = 2
    while True:
        point = decode(y, 0)
        if point is not None:
            torsion = multiply(L, point)
            if multiply(4, torsion) != (0, 1):  # order 8: generates the torsion subgroup
                break
        y += 1
    points = {multiply(i, torsion) for i in range(8)}
    assert all(multiply(8, point) == (0, 1) for point in points) and len(points) == 8
    return sorted(encode(point) for point in points)


SMALL_ORDER = small_order_encodings()
IDENTITY = (1).to_bytes(32, "little")


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def test_the_eight_small_order_points_are_the_ones_the_clients_refuse():
    assert IDENTITY in SMALL_ORDER and b64(IDENTITY) == "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
    assert {int.from_bytes(raw, "little") & ((1 << 255) - 1) for raw in SMALL_ORDER} == set(SMALL_ORDER_Y)
    assert FIELD_PRIME == P


def test_the_identity_key_verifies_a_made_up_signature_in_cryptography():
    """Why the check is needed: OpenSSL accepts the key, and R = identity, S = 0 verifies anything."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    Ed25519PublicKey.from_public_bytes(IDENTITY).verify(IDENTITY + bytes(32), b"any content")  # raises if not


def not_on_the_curve() -> bytes:
    y = 2
    while decode(y, 0) is not None:
        y += 1
    return y.to_bytes(32, "little")


def forged_with(document: dict, key: bytes) -> str:
    """The package with a made-up signature naming ``key`` as its signer (R = identity, S = 0)."""
    forged = dict(document, signature={"algorithm": "Ed25519", "public_key": b64(key), "value": b64(IDENTITY + bytes(32))})
    return json.dumps(forged)


#: Verdict per case, the same in the four clients: "ok" or the error class, and a message fragment.
def expected() -> dict[str, tuple[str, str]]:
    small = {f"small-order key {raw.hex()[:8]}..{raw.hex()[-2:]}": ("PackageError", "point of small order")
             for raw in SMALL_ORDER}
    return small | {
        "y = p (non-canonical 0)": ("PackageError", "not a canonical Ed25519 encoding"),
        "y = p + 1 (non-canonical identity)": ("PackageError", "not a canonical Ed25519 encoding"),
        "y = 2^255 - 1, x sign set": ("PackageError", "not a canonical Ed25519 encoding"),
        "not a curve point": ("PackageError", "not a point of the Ed25519 curve"),
        "genuine key": ("ok", "Ed25519 signature by"),
        "genuine key, line end around": ("ok", "Ed25519 signature by"),
        "genuine key, unpadded": ("PackageError", "not base64 text"),
        "genuine key, space inside": ("PackageError", "not base64 text"),
        "genuine key, no-break space around": ("PackageError", "not base64 text"),
        "pinned hash, upper case": ("ok", "pinned SHA-256"),
        "pinned hash, spaces around": ("PackageError", "must be 64 hex digits"),
        "pinned hash, 63 digits": ("PackageError", "must be 64 hex digits"),
        "kind __proto__": ("PackageError", "unknown package kind"),
        "kind toString": ("PackageError", "unknown package kind"),
        "kind constructor": ("PackageError", "unknown package kind"),
        "5,000-digit bits": ("PackageError", "5000-digit number"),
        "30-digit schema_version": ("PackageError", "30-digit number"),
        "signature value unpadded": ("PackageError", "signature.value: not base64 text"),
    }


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> list[dict]:
    folder = tmp_path_factory.mktemp("keys")
    private, public_path, public = generate_key_files(folder / "author")
    document = build_package(deployable_table(read_channel(example_path("survey_mangat_Q.csv")),
                                              read_privacy_matrix(example_path("survey_E.csv"))))
    signed = sign_package(document, read_private_key(private))
    text, key = json.dumps(signed), b64(public)
    opt_out = {"allowUnauthenticated": True}
    high = (1 << 255)
    made = {f"small-order key {raw.hex()[:8]}..{raw.hex()[-2:]}": (forged_with(document, raw), {"publicKey": b64(raw)})
            for raw in SMALL_ORDER}
    for name, raw in {"y = p (non-canonical 0)": P.to_bytes(32, "little"),
                      "y = p + 1 (non-canonical identity)": (P + 1).to_bytes(32, "little"),
                      "y = 2^255 - 1, x sign set": (high | (high - 1)).to_bytes(32, "little"),
                      "not a curve point": not_on_the_curve()}.items():
        made[name] = (forged_with(document, raw), {"publicKey": b64(raw)})
    unpadded_signature = json.loads(text)
    unpadded_signature["signature"]["value"] = unpadded_signature["signature"]["value"].rstrip("=")
    made |= {
        "genuine key": (text, {"publicKey": key}),
        "genuine key, line end around": (text, {"publicKey": f" {key}\r\n"}),
        "genuine key, unpadded": (text, {"publicKey": key.rstrip("=")}),
        "genuine key, space inside": (text, {"publicKey": key[:20] + " " + key[20:]}),
        "genuine key, no-break space around": (text, {"publicKey": key + "\u00a0"}),
        "pinned hash, upper case": (text, {"sha256": signed["sha256"].upper()}),
        "pinned hash, spaces around": (text, {"sha256": f" {signed['sha256']} "}),
        "pinned hash, 63 digits": (text, {"sha256": signed["sha256"][:63]}),
        "5,000-digit bits": (text.replace('"bits": 32', '"bits": ' + "9" * 5000), opt_out),
        "30-digit schema_version": (text.replace('"schema_version": 1', '"schema_version": ' + "1" * 30), opt_out),
        "signature value unpadded": (json.dumps(unpadded_signature), {"publicKey": key}),
    }
    for kind in ("__proto__", "toString", "constructor"):
        edited = dict(document, kind=kind)
        made[f"kind {kind}"] = (json.dumps(edited), opt_out)
    assert set(made) == set(expected())
    return [{"name": name, "text": source, "options": options} for name, (source, options) in made.items()]


def check(results: dict) -> None:
    for name, (verdict, fragment) in expected().items():
        assert results[name].startswith(verdict + ":") and fragment in results[name], (name, results[name])


PYTHON_NAMES = {"publicKey": "public_key", "sha256": "sha256", "allowUnauthenticated": "allow_unauthenticated"}


@pytest.mark.parametrize("client", ["stdlib", "vectorised"])
def test_python_clients(cases, client):
    results = {}
    for case in cases:
        options = {PYTHON_NAMES[key]: value for key, value in case["options"].items()}
        try:
            document = parse_package(case["text"])
            sampler = load_sampler(document, **options) if client == "stdlib" else VectorisedSampler(document, **options)
            results[case["name"]] = f"ok: {sampler.trust}"
        except PackageError as error:  # PackageTampered and PackageUntrusted are PackageErrors: name the class
            results[case["name"]] = f"{type(error).__name__}: {error}"
    check(results)


def test_node_client(tmp_path, cases):
    check(run_cases_in_node(tmp_path, cases))


def test_headless_chromium_client(tmp_path, cases):
    check(run_cases_in_chromium(tmp_path, cases))


# ----------------------------------------------------------------- the command line
def cli(*arguments):
    return runner.invoke(app, [str(argument) for argument in arguments])


def one_line_error(result, *fragments: str) -> str:
    message = result.stderr.strip()
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert len(message.splitlines()) == 1 and all(fragment in message for fragment in fragments), message
    return message


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("package") / "m.json"
    result = cli("package", "--E", example_path("survey_E.csv"), "--channel", example_path("survey_mangat_Q.csv"),
                 "--out", path)
    assert result.exit_code == 0, result.output
    return path


@pytest.mark.parametrize("raw", [IDENTITY, P.to_bytes(32, "little"), not_on_the_curve()], ids=["identity", "y = p", "off"])
def test_verify_package_refuses_a_malformed_trusted_key_naming_the_file(tmp_path, package, raw):
    key = tmp_path / "trusted.pub"
    key.write_text(b64(raw) + "\n")
    for command in ("verify-package", "sample-package"):
        extra = ["--input", "no"] if command == "sample-package" else []
        one_line_error(cli(command, package, *extra, "--public-key", key), str(key), "public key")


def test_sign_refuses_a_public_key_and_verify_refuses_a_private_one(tmp_path, package):
    private, public, _ = generate_key_files(tmp_path / "author")
    out = tmp_path / "signed.json"
    arguments = ["package", "--E", example_path("survey_E.csv"), "--channel", example_path("survey_mangat_Q.csv"),
                 "--out", out]
    one_line_error(cli(*arguments, "--sign", public), str(public), "a public key", "not a private key")
    renamed = tmp_path / "author-secret"  # the name says nothing: the content does
    renamed.write_text(public.read_text())
    renamed.chmod(0o600)
    one_line_error(cli(*arguments, "--sign", renamed), str(renamed), "a public key")
    assert not out.exists()
    one_line_error(cli("verify-package", package, "--public-key", private), str(private), "a private key")


def test_a_spliced_private_key_is_refused(tmp_path):
    first, _, _ = generate_key_files(tmp_path / "one")
    _, _, other = generate_key_files(tmp_path / "two")
    spliced = tmp_path / "spliced"
    spliced.write_text(b64(base64.b64decode(first.read_text())[:32] + other) + "\n")
    with pytest.raises(PackageError, match="public half is not the public key of its seed"):
        read_private_key(spliced)


def test_a_private_key_readable_by_others_is_warned_about(tmp_path):
    private, _, _ = generate_key_files(tmp_path / "author")
    out = tmp_path / "m.json"
    arguments = ["package", "--E", example_path("survey_E.csv"), "--channel", example_path("survey_mangat_Q.csv"),
                 "--out", out, "--sign", private]
    quiet = cli(*arguments)
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr, quiet.output
    os.chmod(private, 0o644)
    out.unlink()
    loud = cli(*arguments)
    assert loud.exit_code == 0 and out.exists(), loud.output
    warnings = [line for line in loud.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: --sign {private}: private key readable by group or others (mode 0644); run: chmod 600 {private}"]


def test_the_command_line_refuses_a_padded_pin_like_the_clients(package):
    digest = json.loads(package.read_text())["sha256"]
    one_line_error(cli("verify-package", package, "--sha256", f" {digest} "), "--sha256", "64 hex digits")
    assert cli("verify-package", package, "--sha256", digest.upper()).exit_code == 0
