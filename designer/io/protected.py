"""Files that no output may replace: key files, recognised by their content (not their name).

Every writer (:func:`designer.io.writing.write_files`) and the command line's output guard
(:func:`designer.commands.check_no_clobbering`) refuse to replace an existing file that
:func:`key_file_kind` recognises: a key lost to a typo (``package --out author.key.pub``) cannot
be recovered, and a public key silently replaced by a package breaks every client that trusts it.
"""

from __future__ import annotations

import base64
import binascii
import os
import stat
from pathlib import Path

from designer.io.text import InputError

#: Largest file examined (bytes): a key file of any recognised kind is smaller.
LARGEST_KEY_FILE = 16_384
#: Raw sizes of the one-line base64 keys of ``ldp-designer keygen`` (public; private: seed and public key).
KEYGEN_SIZES = {32: "Ed25519 public key", 64: "Ed25519 private key"}
#: First words of OpenSSH public key lines (``ssh-keygen``'s ``.pub`` files, ``authorized_keys``).
OPENSSH_PUBLIC = ("ssh-ed25519 ", "ssh-rsa ", "ssh-dss ", "ecdsa-sha2-", "sk-ssh-ed25519@", "sk-ecdsa-sha2-")


def key_text_kind(text: str) -> str | None:
    """What kind of key ``text`` holds (``"Ed25519 public key"``, ``"PEM private key"``, ...), or None.

    Recognised: one line of standard base64 of 32 or 64 bytes (``keygen``'s ``KEY.pub`` and
    ``KEY``), a PEM block whose label ends in ``KEY`` (``-----BEGIN PRIVATE KEY-----``,
    ``OPENSSH PRIVATE KEY``, ``PUBLIC KEY``, ``PGP PRIVATE KEY BLOCK``), and OpenSSH public
    key lines (``ssh-ed25519 AAAA...``).
    """
    stripped = text.strip()
    if stripped.startswith("-----BEGIN ") and " KEY" in stripped.partition("\n")[0]:
        label = stripped.partition("\n")[0].removeprefix("-----BEGIN ").rstrip("-")
        return f"PEM {label.lower()}"
    if stripped.startswith(OPENSSH_PUBLIC):
        return "OpenSSH public key"
    if "\n" in stripped or not stripped:
        return None
    try:
        raw = base64.b64decode(stripped, validate=True)
    except (ValueError, binascii.Error):
        return None
    return KEYGEN_SIZES.get(len(raw))


def key_file_kind(path: str | Path) -> str | None:
    """The kind of key in the existing regular file ``path`` (links followed), or None.

    None too for a missing or unreadable file, anything but a regular file, and a file
    larger than :data:`LARGEST_KEY_FILE`.
    """
    try:
        status = os.stat(path)
        if not stat.S_ISREG(status.st_mode) or status.st_size > LARGEST_KEY_FILE:
            return None
        with open(path, "rb") as handle:
            text = handle.read(LARGEST_KEY_FILE).decode("ascii")
    except (OSError, ValueError):
        return None
    return key_text_kind(text)


def refuse_key_file(path: str | Path, option: str = "") -> None:
    """Raise :class:`InputError` (one line naming ``option`` and ``path``) if ``path`` is an existing key file."""
    kind = key_file_kind(path)
    if kind is not None:
        named = f"{option} {path}" if option else str(path)
        raise InputError(f"{named} is an existing {kind} file: ldp-designer never overwrites a key "
                         "(write the output elsewhere; nothing was written)")
