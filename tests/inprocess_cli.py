"""The command line run in the test's process: no interpreter start-up and no re-import per run."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import warnings

from designer import cli

#: Warnings a fresh interpreter does not print (Python's default filters); any other is printed on stderr.
SILENT_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def run_cli(*arguments: str) -> subprocess.CompletedProcess:
    """``ldp-designer ARGUMENTS`` through the console entry point, in this process (no interpreter start-up).

    The exit code, stdout and stderr are those of the command run as a program: a warning Python
    would print there is added to stderr, so a test of a one-line error or of an empty stderr sees it.
    """
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv
    sys.argv = ["ldp-designer", *arguments]
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            warnings.resetwarnings()
            for category in SILENT_WARNINGS:
                warnings.simplefilter("ignore", category)
            try:
                cli.main()
                code = 0
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    finally:
        sys.argv = saved
    printed = "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno) for w in caught)
    return subprocess.CompletedProcess(arguments, code, out.getvalue(), err.getvalue() + printed)
