"""Ed25519 keys and package signatures (``cryptography``).

A package is signed over its canonical form (:func:`designer.deploy.sampler.canonical_bytes`:
the object without ``sha256`` and ``signature``, the same bytes the hash covers) and
carries ``signature = {"algorithm": "Ed25519", "public_key": base64, "value": base64}``.
The clients verify it with a public key the caller trusts
(:func:`designer.deploy.sampler.verify_signature`); the embedded ``public_key`` only
names the signer, it is never trusted by itself.

Key files (``ldp-designer keygen --out KEY``) are one line of standard base64 each:
``KEY`` holds 64 bytes, the 32-byte private seed (RFC 8032) followed by the 32-byte public
key (the layout of libsodium's and Go's Ed25519 private keys), created with mode 0600;
``KEY.pub`` holds the 32-byte raw public key, the form WebCrypto imports as ``"raw"``.
The sizes tell the two apart by content: a public key given where a private one is expected
(``--sign KEY.pub``) is refused, and so is a private key whose public half is not its seed's.
Neither file is ever overwritten, by keygen or any other command (:mod:`designer.io.protected`).
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

from designer.deploy.sampler import (
    SIGNATURE,
    SIGNATURE_ALGORITHM,
    SPACE,
    PackageError,
    canonical_bytes,
    check_public_key,
    decode_base64,
)

PUBLIC_SUFFIX = ".pub"
#: Bytes of a private key file (seed and public key) and of a public key file.
PRIVATE_KEY_BYTES, PUBLIC_KEY_BYTES = 64, 32


def public_key_path(private_path: str | Path) -> Path:
    """Where the public key of the private key at ``private_path`` is written (``KEY.pub``)."""
    path = Path(private_path)
    return path.with_name(path.name + PUBLIC_SUFFIX)


def generate_key_files(private_path: str | Path) -> tuple[Path, Path, bytes]:
    """Create a new Ed25519 key pair: ``KEY`` (mode 0600) and ``KEY.pub``; return both paths and the public key.

    Raises ``ValueError`` (one line) if either file exists (a key is never overwritten)
    or cannot be created.
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private_path, public_path = Path(private_path), public_key_path(private_path)
    for path in (private_path, public_path):
        if os.path.lexists(path):
            raise ValueError(f"{path} exists: keygen never overwrites a key (choose another --out)")
    key = Ed25519PrivateKey.generate()
    seed = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    _create(private_path, base64.b64encode(seed + public).decode("ascii") + "\n", 0o600)
    try:
        _create(public_path, base64.b64encode(public).decode("ascii") + "\n", 0o644)
    except BaseException:
        private_path.unlink(missing_ok=True)
        raise
    return private_path, public_path, public


def read_private_key(path: str | Path):
    """The Ed25519 private key in a ``keygen`` file (one line: base64 of the seed and the public key).

    Raises :class:`PackageError` (one line naming the file) for a public key (32 bytes: ``KEY.pub``),
    any other size, and a public half that is not the seed's public key (a damaged or spliced file).
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    text = _read_line(path)
    try:
        raw = decode_base64(text, PRIVATE_KEY_BYTES, f"{path}: private key")
    except PackageError:
        if _decoded_size(text) == PUBLIC_KEY_BYTES:
            raise PackageError(f"{path}: a public key (32 bytes), not a private key: give the private key file "
                               "written by keygen (KEY, not KEY.pub; 64 bytes: seed and public key)") from None
        raise
    seed, public = raw[:32], raw[32:]
    key = Ed25519PrivateKey.from_private_bytes(seed)
    if key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw) != public:
        raise PackageError(f"{path}: private key damaged: its public half is not the public key of its seed")
    return key


def private_key_warning(path: str | Path) -> str | None:
    """One line warning that the private key file ``path`` is open to group or others (any of the
    mode bits 0077, as OpenSSH refuses), naming the fix ``chmod 600``; None otherwise."""
    try:
        mode = os.stat(path).st_mode & 0o777
    except OSError:
        return None
    if mode & 0o077:
        access = "readable" if mode & 0o044 else "accessible"
        return f"{path}: private key {access} by group or others (mode {mode:04o}); run: chmod 600 {path}"
    return None


def read_public_key(path: str | Path) -> bytes:
    """The raw 32-byte Ed25519 public key in a ``KEY.pub`` file (one line of base64), checked as a key
    (:func:`designer.deploy.sampler.check_public_key`: canonical, on the curve, not of small order)."""
    where = f"{path}: public key"
    text = _read_line(path)
    if _decoded_size(text) == PRIVATE_KEY_BYTES:
        raise PackageError(f"{path}: a private key (64 bytes), not a public key: give KEY.pub (and keep KEY secret)")
    return check_public_key(decode_base64(text, PUBLIC_KEY_BYTES, where), where)


def _decoded_size(text: str) -> int | None:
    """How many bytes the base64 ``text`` holds (None when it is not base64)."""
    try:
        return len(base64.b64decode(text.strip(SPACE), validate=True))
    except ValueError:  # binascii.Error too
        return None


def sign_package(document: dict, private_key) -> dict:
    """The package with its ``signature`` member: Ed25519 over the canonical form (the hash is unchanged)."""
    from cryptography.hazmat.primitives import serialization

    public = private_key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    value = private_key.sign(canonical_bytes(document))
    signed = {key: item for key, item in document.items() if key not in ("sha256", SIGNATURE)}
    signed[SIGNATURE] = {
        "algorithm": SIGNATURE_ALGORITHM,
        "public_key": base64.b64encode(public).decode("ascii"),
        "value": base64.b64encode(value).decode("ascii"),
    }
    signed["sha256"] = document["sha256"]
    return signed


def _read_line(path: str | Path) -> str:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read(200).strip()
    except OSError as error:
        raise PackageError(f"{path}: cannot read the key ({error.strerror or error.__class__.__name__})") from None
    except UnicodeDecodeError:
        raise PackageError(f"{path}: not a key file (one line of base64 expected)") from None


def _create(path: Path, text: str, mode: int) -> None:
    """Write ``text`` to a new file with ``mode`` from the start: a temporary file linked into place (never over one)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except OSError as error:
        raise ValueError(f"{path}: cannot create the key file ({error.strerror or error.__class__.__name__})") from None
    try:
        with os.fdopen(descriptor, "w", encoding="ascii") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(temporary, path)
    except FileExistsError:
        raise ValueError(f"{path} exists: keygen never overwrites a key (choose another --out)") from None
    except OSError as error:
        raise ValueError(f"{path}: cannot create the key file ({error.strerror or error.__class__.__name__})") from None
    finally:
        temporary.unlink(missing_ok=True)
