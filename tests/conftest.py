"""Shared fixtures: the ``backend`` fixture runs a test on every backend.

numpy and numba always run.  cuda runs under Numba's CUDA simulator when
``NUMBA_ENABLE_CUDASIM=1`` is set (CI runs ``-m cudasim`` separately with it)
or on a machine with a real CUDA device; otherwise it is skipped.  The cuda
parameter carries the ``cudasim`` mark so ``-m cudasim`` selects it.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import settings

# tests/ holds the helper packages ``support`` (builders, strategies, the
# golden cases, the backend gate) and ``reference`` (the scalar oracles).
_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from support.backends import backend_params, cudasim_enabled  # noqa: E402
from support.cudasim_shared import atomic_shared_arrays  # noqa: E402

# Numba's CUDA simulator runs a block's threads as Python threads, handed
# the GIL by a polling loop at every syncthreads; at Python's default switch
# interval (5 ms) much of a kernel's time is spent waiting for a handoff.
# At 0.1 ms the cudasim tests take about half the time (CPU and wall); the
# answers do not depend on it (the simulated threads synchronize explicitly).
# (the simulator's shared arrays are then allocated under a lock:
# ``support.cudasim_shared``, a race of the simulator that interval exposes)
if cudasim_enabled():
    sys.setswitchinterval(1e-4)
    atomic_shared_arrays()

# Property tests draw the same examples on every run, so a CI run is
# reproducible; HYPOTHESIS_RANDOM=1 draws new ones (for exploring locally).
settings.register_profile("reproducible", derandomize=True)
if os.environ.get("HYPOTHESIS_RANDOM") != "1":
    settings.load_profile("reproducible")


@pytest.fixture(params=backend_params())
def backend(request) -> str:
    """Every backend name: numpy, numba, cuda (cuda only where it can run)."""
    return request.param


def pytest_collection_modifyitems(config, items):
    """Tests marked ``runs_late`` move to the end of the collection (their
    order kept): they call engines that their own tests compile, so run
    after those they load the machine code from the kernel cache (on an
    empty cache, as in CI, the compile lands on the engines' own tests, not
    on a smoke test that may run beside them on the other worker).  Every
    worker collects the same order, as pytest-xdist needs."""
    late = [item for item in items if item.get_closest_marker("runs_late")]
    if late:
        items[:] = [item for item in items if not item.get_closest_marker("runs_late")] + late


_GOLDEN_HELPERS = ("support.golden", "support.parity")


_READS_GOLDEN: dict[str, bool] = {}


def _reads_golden_cases(module) -> bool:
    """Whether a test module takes anything from the golden-case helpers
    (answered once per module)."""
    name = module.__name__
    if name not in _READS_GOLDEN:
        found = False
        for value in list(vars(module).values()):
            try:
                source = getattr(value, "__module__", None) or getattr(value, "__name__", None)
            except Exception:       # an object whose attribute lookup itself fails
                continue
            if source in _GOLDEN_HELPERS:
                found = True
                break
        _READS_GOLDEN[name] = found
    return _READS_GOLDEN[name]


@pytest.fixture(autouse=True)
def _golden_names_unchecked(request, monkeypatch):
    """The golden cases come from upstream's Go unit tests, which build
    objects without the API server and name them freely ('nodeA',
    'Vol_1'): a module that reads them (through ``support.golden`` or
    ``support.parity``) loads its clusters with the name rule off
    (``meta.NameRules``); namespaces, labels and every other field stay
    checked."""
    if request.module is not None and _reads_golden_cases(request.module):
        from tensorsched.framework.parsing.meta import NameRules

        monkeypatch.setattr(NameRules, "enforced", False)


def pytest_sessionfinish(session):
    """An xdist worker whose tests are done ignores SIGINT from here on.
    When the controller has every worker's results it ends their
    gateways, and execnet sends a worker still tearing down 5 s later
    (its final garbage collections on a large heap, on a loaded machine)
    a SIGINT.  Nothing is left to interrupt then, but the
    KeyboardInterrupt lands wherever the worker is; in a gc callback
    (hypothesis keeps one) Python prints it as an ignored exception, and
    pytest reports that as a PytestUnraisableExceptionWarning after the
    last test, with no test to blame.  (Ctrl-C during the tests is the
    controller's; it still interrupts the workers.)"""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After a test module's last test (its fixtures torn down): its
    garbage collected, then every object alive frozen (``gc.freeze``: left
    out of later collections).  A test process keeps millions of objects
    to its end (the package and the test modules imported, the collected
    items, the engines Numba compiled), and the tests' churn of
    temporaries triggers full collections that walked them all and found
    nearly nothing: late in a run seconds each, most of a worker's
    collector time.  Frozen, a collection walks what the running module
    made.  Garbage is freed as before; an object frozen alive and dropped
    later in a cycle stays (memory only).  The worker's final collection
    (pytest's, after the last test) is then short too."""
    result = yield
    if nextitem is None or nextitem.path != item.path:
        gc.collect()
        gc.freeze()
    return result
