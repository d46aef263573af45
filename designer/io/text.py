"""Reading an input file's text: size-bounded, UTF-8 (a leading BOM is dropped), never binary.

Every failure is an :class:`InputError` whose message is one line naming the file.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

#: Input files larger than this are refused before they exhaust memory (``--E /dev/zero``).
MAX_INPUT_BYTES = 1 << 30
#: The UTF-8 byte-order mark some spreadsheets write at the start of a CSV file.
UTF8_BOM = b"\xef\xbb\xbf"
_PROBE_BYTES = 1 << 16
_HASH_BLOCK = 1 << 20


class InputError(ValueError):
    """Bad user input; ``str(error)`` is one line naming file, row and value."""


def read_bytes(path: str | Path, what: str) -> bytes:
    """The file's bytes without a leading UTF-8 BOM.

    Raises :class:`InputError` for a missing/unreadable file, a folder, a named
    pipe with no writer (which would block forever), more than
    :data:`MAX_INPUT_BYTES`, or binary content (a NUL byte), which is detected
    in the first 64 KiB before reading on (so a device like ``/dev/zero`` is
    refused at once). A pipe with a writer (``--E <(command)``) is read to its end.
    """
    path = Path(path)
    try:
        with _opened(path, what) as (handle, first):
            chunks = [first]
            if b"\x00" in chunks[0]:
                raise InputError(f"{path}: the {what} file is binary, not CSV text (it contains NUL bytes)")
            size = len(chunks[0])
            status = os.fstat(handle.fileno())
            if stat.S_ISREG(status.st_mode):
                if status.st_size > MAX_INPUT_BYTES:
                    raise InputError(f"{path}: the {what} file is larger than {MAX_INPUT_BYTES >> 20:,} MiB")
                chunks.append(handle.read())  # one read of a regular file's rest (no copy per chunk)
                size += len(chunks[-1])
            while chunks[-1] and size <= MAX_INPUT_BYTES:
                chunks.append(handle.read(min(MAX_INPUT_BYTES + 1 - size, 1 << 24) or 1))
                size += len(chunks[-1])
    except OSError as error:
        reason = error.strerror or error.__class__.__name__
        raise InputError(f"{path}: cannot read the {what} file ({error.__class__.__name__}: {reason})") from None
    if size > MAX_INPUT_BYTES:
        raise InputError(f"{path}: the {what} file is larger than {MAX_INPUT_BYTES >> 20:,} MiB")
    data = b"".join(chunks)
    if b"\x00" in data:
        raise InputError(f"{path}: the {what} file is binary, not CSV text (it contains NUL bytes)")
    return data[len(UTF8_BOM) :] if data.startswith(UTF8_BOM) else data


def file_sha256(path: str | Path) -> str:
    """SHA-256 (hex) of a file's bytes, read in 1 MiB blocks.

    Raises :class:`InputError` naming the file when it cannot be read.
    """
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while block := handle.read(_HASH_BLOCK):
                digest.update(block)
    except OSError as error:
        raise InputError(f"cannot read {path} ({error.strerror or error})") from None
    return digest.hexdigest()


def decode(data: bytes, path: str | Path, what: str) -> str:
    """UTF-8 text of ``data``; a decoding error names the byte offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            f"{path}: the {what} file is not UTF-8 text (byte {error.start:,} is 0x{data[error.start]:02x})"
        ) from None


@contextmanager
def _opened(path: Path, what: str) -> Iterator[tuple[BinaryIO, bytes]]:
    """The file opened for binary reading and its first :data:`_PROBE_BYTES` bytes at most.

    Opening a named pipe (FIFO) blocks until a writer opens it. Opened without blocking,
    its first read returns end-of-file at once when there is no writer (and raises
    ``BlockingIOError`` when a writer has sent nothing yet), so a pipe with no writer is
    refused instead of hanging; one with a writer is then read in blocking mode.
    """
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        first = None
        if stat.S_ISFIFO(os.fstat(descriptor).st_mode):
            try:
                first = os.read(descriptor, _PROBE_BYTES)
            except BlockingIOError:  # a writer, nothing sent yet: read it blocking below
                pass
            else:
                if not first:
                    raise InputError(f"{path}: the {what} file is a named pipe with no writer (nothing to read)")
        os.set_blocking(descriptor, True)
        handle = os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise
    with handle:
        yield handle, handle.read(_PROBE_BYTES) if first is None else first
