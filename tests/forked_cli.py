"""Command lines run as programs forked from one interpreter that has already imported what they share.

A test of what a command writes as a program (bytes that native libraries write straight to file
descriptor 1 included) needs a process per command: native libraries keep state per process (highspy
1.16 prints its "Running HiGHS ... Copyright" banner once a process), so commands run one after another
in one process would hide what the later ones write. :func:`run_forked` starts one interpreter that
imports the given modules once (numpy, scipy, the solvers: most of a command's start-up), then forks a
child per command, in order: each child points descriptors 1 and 2 at files of its own, runs the console
entry point and ends as the program would (``SystemExit`` through the interpreter's own shutdown: exit
handlers run and buffers are flushed into those files). A fork is a fresh copy of the interpreter that
has only imported the modules, so each command starts from the same state, as a program does. What the
imports themselves write is returned as a run of its own (:data:`START_UP`).
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import json
import os
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

#: The label of the imports done before the forks (the first entry of :func:`run_forked`'s answer).
START_UP = "imports"
#: The interpreter's program: ``-c`` keeps the working directory first on ``sys.path``, as ``python -c``
#: runs of the command line have it (the project under test, not an installed copy).
PARENT = (f"import sys; sys.path.insert(1, {str(Path(__file__).parent)!r}); import forked_cli; "
          "forked_cli.serve(*sys.argv[1:])")


def run_forked(commands: list[list[str]], preload: list[str], cwd: Path,
               timeout: float = 300) -> tuple[list[subprocess.CompletedProcess], subprocess.CompletedProcess]:
    """Run ``ldp-designer ARGUMENTS`` for each argument list, in order, each in a child forked from one
    interpreter that imported ``preload`` first.

    Parameters
    ----------
    commands : list of argument lists
    preload : list of module names
        Imported once, before the forks (``designer.cli`` is always imported).
    cwd : Path
        The working directory.
    timeout : float
        Seconds for all the commands together.

    Returns
    -------
    runs : list of CompletedProcess
        The imports (arguments ``[START_UP]``: what they wrote on descriptors 1 and 2; they must succeed),
        then one per command: its exit code and what it wrote on descriptors 1 and 2.
    parent : CompletedProcess
        The interpreter that forked them: what it wrote on its own descriptors outside every run.
    """
    with tempfile.TemporaryDirectory() as folder:
        plan, answers = Path(folder) / "plan.json", Path(folder) / "runs.json"
        plan.write_text(json.dumps({"commands": commands, "preload": ["designer.cli", *preload]}))
        parent = subprocess.run([sys.executable, "-c", PARENT, str(plan), str(answers)], cwd=cwd,
                                capture_output=True, text=True, timeout=timeout)
        assert parent.returncode == 0, parent.stderr
        runs = json.loads(answers.read_text())
    assert runs[0][0] == 0, runs[0][2]  # the imports
    labels = [[START_UP], *commands]
    return [subprocess.CompletedProcess(label, *run) for label, run in zip(labels, runs)], parent


def serve(plan: str, answers: str) -> None:
    """The interpreter: import the modules of the JSON file ``plan``, then run its commands one fork each;
    write ``[exit code, stdout, stderr]`` of the imports and of each command to the JSON file ``answers``."""
    steps = json.loads(Path(plan).read_text())
    runs = [_captured(lambda: _import_all(steps["preload"]))]
    runs += [_captured(lambda arguments=arguments: _forked(arguments)) for arguments in steps["commands"]]
    Path(answers).write_text(json.dumps(runs))


def _import_all(modules: list[str]) -> int:
    """Import ``modules`` (exit code 1 and the traceback on stderr if one fails), then move every object to
    the collector's permanent generation (``gc.freeze``): a child's collections and shutdown then leave the
    parent's pages shared, not copied."""
    try:
        for module in modules:
            importlib.import_module(module)
    except Exception:  # noqa: BLE001 - any failure: reported as the imports' own stderr
        traceback.print_exc()
        return 1
    gc.freeze()
    return 0


def _forked(arguments: list[str]) -> int:
    """The exit code of ``ldp-designer ARGUMENTS`` run in a forked child (which never returns here)."""
    pid = os.fork()
    if pid == 0:  # the child: the command line's entry point, then the interpreter's shutdown, as a program
        from designer.cli import main

        sys.argv = ["ldp-designer", *arguments]
        main()
        raise SystemExit(0)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _flush() -> None:
    """Flush Python's standard streams and every C stdio buffer into the descriptors they point at now."""
    sys.stdout.flush()
    sys.stderr.flush()
    ctypes.CDLL(None).fflush(None)


def _captured(call: Callable[[], int]) -> tuple[int, str, str]:
    """``call()`` with descriptors 1 and 2 pointed at files of its own: its exit code, stdout and stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        _flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        # no ``finally``: a forked child leaves ``call()`` by SystemExit and keeps these descriptors to its end
        code = call()
        _flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        out.seek(0)
        err.seek(0)
        return code, out.read().decode(errors="replace"), err.read().decode(errors="replace")
