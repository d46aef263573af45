"""User code the audit calls: samplers, parsers, support and feature functions named ``module:function``.

* :func:`load_callable` — the function named ``module:function`` or ``path/to/file.py:function``;
* :func:`call_user` — a call whose exceptions and exits become one-line errors (bad input, exit 2);
* :func:`parse_arguments` — ``--arg key=value`` pairs as keyword arguments.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import signal
from collections.abc import Callable
from pathlib import Path

from designer.errors import one_line


def parse_arguments(pairs: list[str] | None) -> dict:
    """``["eps=1", "protocol=OUE"]`` -> ``{"eps": 1, "protocol": "OUE"}`` (Python literals, else text)."""
    arguments = {}
    for pair in pairs or []:
        key, separator, text = pair.partition("=")
        key = key.strip()
        if not separator or not key.isidentifier():
            raise ValueError(f"--arg {pair!r}: expected key=value with a Python identifier as key")
        try:
            arguments[key] = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            arguments[key] = text.strip()
    return arguments


def load_callable(spec: str, what: str = "sampler") -> Callable:
    """The function named ``module:function`` or ``path/to/file.py:function``."""
    module_name, separator, function_name = spec.rpartition(":")
    if not separator or not module_name or not function_name:
        raise ValueError(f"{what} {spec!r}: expected module:function or path/to/file.py:function")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise ValueError(f"{what} {spec!r}: no file {module_name}")
            loader_spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(loader_spec)
            loader_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except (ValueError, KeyboardInterrupt):
        raise
    except BaseException as error:  # the module's own code may raise anything, even SystemExit
        raise ValueError(f"{what} {spec!r}: cannot import {module_name}: {one_line(error)}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ValueError(f"{what} {spec!r}: {module_name} has no function {function_name!r}")
    return function


def call_user(function: Callable, where: str, *arguments, **keywords):
    """Call user code; its exceptions and exits become one-line ``ValueError`` (Ctrl-C still interrupts).

    A ``sys.exit(0)`` inside a sampler must not end the audit as "no violation
    found", nor ``sys.exit(1)`` as "violated": both are bad input. A ``KeyboardInterrupt``
    raised by the code itself in the worker process (which ignores SIGINT, so no Ctrl-C
    can cause it) is bad input too; in the main process it stops the audit like Ctrl-C.
    """
    try:
        return function(*arguments, **keywords)
    except SystemExit as error:
        raise ValueError(f"{where} called sys.exit({error.code!r}) instead of returning") from None
    except KeyboardInterrupt as error:
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # a real Ctrl-C may have raised it: stop
            raise
        # the worker process ignores SIGINT (designer.audit.worker): the code raised it itself
        raise ValueError(f"{where} raised KeyboardInterrupt{': ' + one_line(error) if str(error) else ''} "
                         "(not a Ctrl-C: the code raised it itself)") from None
    except Exception as error:
        raise ValueError(f"{where} raised {type(error).__name__}: {one_line(error)}") from None


