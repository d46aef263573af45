"""Set-up shared by every test module."""

from __future__ import annotations

import functools
import gc
import os

import pytest
import typer.testing

#: One BLAS and OpenMP thread for this process and every process it starts, set before numpy is first
#: imported (a library reads these when it is loaded; pytest and typer load none, and test modules are
#: imported after this file). The suite's matrices are small and the machine it runs on is shared (2 cores):
#: an idle OpenBLAS worker thread spin-waits for the next call, so a second thread costs CPU and buys no
#: time. Measured on the whole suite: 250 CPU s of tests against 273 with the libraries' defaults (2 threads
#: each); e.g. 1.0 CPU s -> 0.01 for an instantaneous-stage design of test_longitudinal_designs.py, 2.0 -> 0.3
#: for test_metric_beyond_doubles.py's certification of every baseline. The code under test runs as before:
#: none of it asks for more threads (``solvers.kronecker`` only caps them; the learned attacks of audits
#: already run on one, :func:`designer.audit.attacks.single_thread`). An explicit value in the environment
#: is kept.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")


@pytest.fixture(scope="session", autouse=True)
def one_click_command_per_app():
    """Typer's ``CliRunner.invoke`` builds the app's Click command again on every call (25 ms for
    ``designer.cli.app``: its commands, their options and Pydantic adapters; about 800 calls in the suite,
    15 to 30 CPU s measured); a program builds it once, and so does this session, once per app. Each call
    still parses and runs in full on that command. Warnings while building are still checked:
    ``tests/test_fuzz_inputs.py`` builds each command it runs inside a run that fails on any warning."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer.testing, "_get_command", functools.cache(typer.testing._get_command))
        yield


def pytest_collectstart(collector):
    """Move every object alive when a test module starts to be collected into the collector's permanent
    generation (:func:`gc.freeze`, constant time): what collection imports (numpy, scipy, scikit-learn,
    dask, the package: some 250,000 tracked objects) lives for the whole session, yet each full collection
    walked all of it again (19 during collection, 1.7 CPU s; 11 more while the tests ran, 3.2 s: measured on
    the whole suite). Objects the tests create are collected as before; forked workers (audit samplers,
    :mod:`forked_cli`) also no longer copy the pages a collection in them would touch."""
    gc.freeze()


def pytest_collection_finish(session):
    """Freeze what the last module's collection left alive too (:func:`pytest_collectstart`)."""
    gc.freeze()
