"""Writing output files atomically: a temporary file in the destination folder, then ``os.replace``.

A failure never leaves a partial output file; several files are written all or
nothing, after every destination has been checked (:func:`check_destinations`).
A character device (``/dev/null``) or a named pipe is written into directly,
never replaced by a regular file; a folder or any other kind of file is refused.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import math
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from designer.io.protected import refuse_key_file
from designer.io.reading import InputError


def format_number(value) -> str:
    """Shortest text that reads back to the same float (``inf`` for infinity)."""
    value = float(value)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


class OutputError(InputError):
    """An output could not be written (a full disk, a closed pipe, no permission).

    ``output_path`` is the destination as the user gave it, so that the command line
    can name its option too; the message is one line naming the path and the reason.
    """

    def __init__(self, path: str | Path, problem: str):
        self.output_path = Path(path)
        super().__init__(f"{path}: {problem}")


def _output_error(path: str | Path, error: OSError) -> OutputError:
    return OutputError(path, f"cannot write this output ({error.strerror or error.__class__.__name__})")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: Longest part of the destination's name kept in the temporary file's name (the
#: temporary name must stay within the file system's limit when the name itself does).
_STAGED_NAME_PREFIX = 64

#: Kinds of existing destination, by ``stat`` test; a stream is written into directly.
_STREAM_KINDS = {stat.S_ISCHR: "character device", stat.S_ISFIFO: "named pipe (FIFO)"}
_REFUSED_KINDS = {stat.S_ISDIR: "folder", stat.S_ISBLK: "block device", stat.S_ISSOCK: "socket"}


@dataclass(frozen=True)
class Destination:
    """A checked output destination (see :func:`check_destinations`).

    ``path`` is the path as the user gave it (used in messages), ``target`` the
    file that is written: the path with its folder resolved. A symbolic link named as
    the output is itself replaced by the new file (written beside it, then renamed
    over it): the file it pointed to is never written. ``stream`` is true for a character device (``/dev/null``,
    a terminal) or a named pipe: those are written into directly, never replaced.
    """

    path: Path
    target: Path
    stream: bool


def _describe(mode: int) -> tuple[str | None, bool]:
    """``(kind of a refused destination or None, whether it is a stream)`` for a ``st_mode``."""
    for test, kind in _REFUSED_KINDS.items():
        if test(mode):
            return kind, False
    return None, any(test(mode) for test in _STREAM_KINDS)


def _check_destination(path: Path) -> tuple[Destination, tuple]:
    """One destination checked, with the key that identifies the file it names."""
    if str(path) in ("", "."):
        raise InputError(f"{str(path)!r}: an output path must name a file")
    try:
        status = os.stat(path)
    except FileNotFoundError:
        status = None
    except OSError as error:
        if error.errno != errno.ENAMETOOLONG:  # a name too long is reported below, with the limit
            raise InputError(f"{path}: cannot write there ({error.strerror or error.__class__.__name__})") from None
        status = None
    if status is not None:
        refused, stream = _describe(status.st_mode)
        if refused is not None:
            raise InputError(f"{path}: is a {refused}, not a file; give the path of a file to write (nothing was written)")
        if stream:
            return Destination(path, path, True), ("inode", status.st_dev, status.st_ino)
    if status is not None and stat.S_ISREG(status.st_mode):
        refuse_key_file(path)
    try:
        resolved = Path(os.path.realpath(path))
        target = Path(os.path.realpath(path.parent)) / path.name if os.path.islink(path) else resolved
    except (OSError, ValueError) as error:
        raise InputError(f"{path}: cannot resolve this output path ({error})") from None
    folder = target.parent
    if not folder.is_dir():
        shown = path.parent if str(path.parent) else Path(".")
        what = "is not a folder" if folder.exists() else "does not exist"
        raise InputError(f"{path}: the output folder {shown} {what}")
    try:
        longest = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        longest = 255
    if len(os.fsencode(target.name)) > longest:
        raise InputError(f"{path}: the file name is longer than the {longest} bytes this file system allows")
    key = ("inode", status.st_dev, status.st_ino) if status is not None else ("path", str(resolved))
    return Destination(path, target, False), key


def check_destinations(paths: Iterable[str | Path]) -> list[Destination]:
    """Check every output destination before anything is written; refuse bad ones with one line.

    Refused (:class:`~designer.io.reading.InputError`): a folder, a block device or a
    socket; a path whose folder does not exist; a file name too long for its file
    system; and the same file named twice, also through another spelling, a
    symbolic link or a hard link (paths are compared resolved, existing files by
    device and inode); an existing key file (:mod:`designer.io.protected`). A character device (``/dev/null``) or a named pipe is
    accepted and later written into directly; an existing regular file is replaced.

    Parameters
    ----------
    paths
        The output paths, as the user gave them.

    Returns
    -------
    list of Destination
        One per path, in order.
    """
    destinations: list[Destination] = []
    seen: dict[tuple, Path] = {}
    for path in paths:
        destination, key = _check_destination(Path(path))
        if key in seen:
            first = seen[key]
            same = "is given twice" if str(first) == str(destination.path) else f"and {first} are the same file"
            raise InputError(f"{destination.path} {same}: each output needs its own file (nothing was written)")
        seen[key] = destination.path
        destinations.append(destination)
    return destinations


def same_file(first: str | Path, second: str | Path) -> bool:
    """Whether two paths name one file: equal once links are resolved, or (both existing) one inode."""
    try:
        if os.path.realpath(first) == os.path.realpath(second):
            return True
        return os.path.exists(first) and os.path.exists(second) and os.path.samefile(first, second)
    except (OSError, ValueError):  # an unresolvable path is refused later, by its reader or writer
        return False


def check_outputs_spare_inputs(outputs: Iterable[tuple[str, str | Path]], inputs: Iterable[tuple[str, str | Path]],
                               allowed: Iterable[tuple[str, str]] = ()) -> None:
    """Refuse, before anything is read or written, an output that names an input file or another output.

    Paths are compared after resolving symbolic links and ``..`` (:func:`os.path.realpath`),
    and by device and inode when both exist (hard links, :func:`os.path.samefile`). An
    output that is an existing character device (``/dev/null``, a terminal) overwrites
    nothing and is not compared.

    Parameters
    ----------
    outputs, inputs
        ``(option, path)`` pairs, the option as the user typed it (``"--out"``).
    allowed
        ``(output option, input option)`` pairs that may name the same file: the output
        rewrites that input on purpose (``--save-counts`` over ``--counts``).

    Raises
    ------
    InputError
        One line naming both options and the path.
    """
    inputs, allowed = list(inputs), set(allowed)
    seen: list[tuple[str, str | Path]] = []
    for option, path in outputs:
        try:
            if stat.S_ISCHR(os.stat(path).st_mode):
                continue
        except (OSError, ValueError):
            pass
        for other, named in seen:
            if same_file(path, named):
                raise InputError(f"{other} and {option} both name {path}: each output needs its own file (nothing was written)")
        for other, named in inputs:
            if (option, other) not in allowed and same_file(path, named):
                raise InputError(
                    f"{option} and {other} both name {path}: the output would overwrite the input; "
                    "write the output elsewhere (nothing was read or written)"
                )
        seen.append((option, path))


def _staged_write(target: Path, write: Callable[[object], None]) -> Path:
    """Write to a temporary file beside ``target`` (mode 0666 less the umask); return its path."""
    try:
        handle = tempfile.NamedTemporaryFile(
            "w", dir=target.parent, prefix=f".{target.name[:_STAGED_NAME_PREFIX]}.", suffix=".tmp", delete=False
        )
    except OSError as error:
        reason = error.strerror or error.__class__.__name__
        raise OutputError(target, f"cannot write in the folder {target.parent} ({reason})") from None
    try:
        with handle:
            write(handle)
        os.chmod(handle.name, 0o666 & ~_umask())
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    return Path(handle.name)


def write_files(writes: list[tuple[str | Path, Callable[[object], None]]]) -> None:
    """Write several files all or nothing.

    Every destination is checked first (:func:`check_destinations`: no folder, no
    device other than a character device or a pipe, no file named twice); then
    every regular file is staged as a temporary file beside its target and every
    stream's text is built in memory; then the streams are written, and only then
    is each staged file renamed onto its target (``os.replace``). A failure before
    the renames (bad destination, a writer's error, a full disk, a closed pipe)
    leaves no output file and no temporary file.
    """
    destinations = check_destinations(path for path, _ in writes)
    staged: list[tuple[Path, Path]] = []
    streams: list[tuple[Path, str]] = []
    try:
        for destination, (_, write) in zip(destinations, writes):
            if destination.stream:
                buffer = io.StringIO()
                write(buffer)
                streams.append((destination, buffer.getvalue()))
            else:
                try:
                    staged.append((_staged_write(destination.target, write), destination.target))
                except OSError as error:
                    raise _output_error(destination.path, error) from None
        for destination, text in streams:
            try:
                with open(destination.target, "w") as handle:
                    handle.write(text)
            except OSError as error:
                raise _output_error(destination.path, error) from None
    except BaseException:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
        raise
    for index, (temporary, target) in enumerate(staged):
        try:
            os.replace(temporary, target)
        except BaseException as error:
            for remaining, _ in staged[index:]:
                remaining.unlink(missing_ok=True)
            if isinstance(error, OSError):
                raise _output_error(target, error) from None
            raise


#: Float matrices larger than this with at most FEW_VALUES distinct entries are written
#: by formatting each distinct value once (same text as format_number, 8x faster at 10^6 entries).
FEW_VALUES_SIZE = 10_000
FEW_VALUES = 4096


def matrix_csv_writer(matrix: Iterable[Iterable[float]]) -> Callable[[object], None]:
    """A writer of ``matrix`` as CSV with round-trip precision (Fractions as ``p/q``)."""
    array = np.asarray(matrix) if isinstance(matrix, np.ndarray) else np.asarray(matrix, dtype=object)

    def write(handle) -> None:  # formats row by row: memory stays O(columns) beyond the matrix itself
        if array.dtype.kind == "f" and array.ndim == 2 and array.size > FEW_VALUES_SIZE:
            values, codes = np.unique(array, return_inverse=True)
            if values.size <= FEW_VALUES:  # designed channels take few values: format each once
                texts = np.array([format_number(value) for value in values], dtype=object)
                codes = codes.reshape(array.shape)
                for row in codes:
                    handle.write(",".join(texts[row]) + "\n")
                return
        if array.dtype.kind == "f" and array.ndim == 2:  # repr is format_number for floats (inf, -inf, nan alike)
            for row in array.tolist():
                handle.write(",".join(map(repr, row)) + "\n")
            return
        writer = csv.writer(handle, lineterminator="\n")
        for row in array:
            writer.writerow([str(value) if isinstance(value, Fraction) else format_number(value) for value in row])

    return write


def json_writer(payload: dict) -> Callable[[object], None]:
    """A writer of ``payload`` as indented JSON."""
    return lambda handle: json.dump(payload, handle, indent=2)


def write_matrix_csv(path: str | Path, matrix: Iterable[Iterable[float]]) -> None:
    """Write a numeric matrix as CSV, atomically, with round-trip precision.

    Fractions (exact channels) are written exactly as ``p/q``.
    """
    write_files([(path, matrix_csv_writer(matrix))])


def write_json(path: str | Path, payload: dict) -> None:
    """Write a JSON document atomically."""
    write_files([(path, json_writer(payload))])
