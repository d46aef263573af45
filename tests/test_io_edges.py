"""Inputs that would hang and outputs that cannot be written: one line, exit 2, never a hang.

A named pipe with no writer blocks ``open`` forever; the reading layer refuses it at
once, and still reads a pipe that has a writer. A write that fails (``/dev/full``:
no space left) names the output path and its option, not just ``[Errno 28]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from designer.cli import app
from designer.examples import example_path
from designer.io import InputError, OutputError, read_privacy_matrix, write_matrix_csv

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from designer.cli import main; main()"]
runner = CliRunner()
E_FILE, CHANNEL = str(example_path("ldp4_E.csv")), str(example_path("grr4_Q.csv"))


@pytest.mark.parametrize(
    "arguments, what",
    [(["certify", "--E", "{fifo}", "--channel", CHANNEL, "--exact"], "E"), (["verify-package", "{fifo}"], "package")],
)
def test_a_pipe_with_no_writer_is_refused_at_once(tmp_path, arguments, what):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    command = [*CLI, *(argument.format(fifo=fifo) for argument in arguments)]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {fifo}: the {what} file is a named pipe with no writer (nothing to read)"


def test_a_pipe_with_a_writer_is_read_to_its_end(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    text = Path(E_FILE).read_bytes()
    opened = threading.Event()

    def writer() -> None:
        with open(fifo, "wb") as handle:  # blocks until the reader opens
            opened.set()
            handle.write(text[:10])
            handle.flush()
            threading.Event().wait(0.2)  # the reader meets an open pipe with data still to come
            handle.write(text[10:])

    thread = threading.Thread(target=writer)
    thread.start()
    threading.Event().wait(0.3)  # the writer is waiting in open(), as a writing process would be
    try:
        privacy = read_privacy_matrix(fifo)
    finally:
        thread.join(timeout=10)
    assert opened.is_set() and privacy.k == read_privacy_matrix(E_FILE).k
    assert (privacy.epsilon == read_privacy_matrix(E_FILE).epsilon).all()


@pytest.mark.parametrize(
    "arguments, option",
    [
        (["package", "--E", E_FILE, "--channel", CHANNEL, "--out", "/dev/full"], "--out"),
        (["design", "--E", E_FILE, "--out", "{tmp}/Q.csv", "--summary", "/dev/full"], "--summary"),
    ],
)
def test_a_failed_write_names_the_option_and_the_path(tmp_path, arguments, option):
    result = runner.invoke(app, [argument.format(tmp=tmp_path) for argument in arguments])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {option} /dev/full: cannot write this output (No space left on device)"
    assert list(tmp_path.iterdir()) == []  # all or nothing: the other output was not written either


def test_the_library_writer_raises_an_output_error_naming_the_path():
    with pytest.raises(OutputError) as caught:
        write_matrix_csv("/dev/full", [[1.0]])
    assert isinstance(caught.value, InputError) and caught.value.output_path == Path("/dev/full")
