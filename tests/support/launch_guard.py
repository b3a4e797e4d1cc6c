"""Every simulated kernel launch hands the kernel device arrays only.

Numba's CUDA simulator takes a host NumPy array as a kernel argument
without a word; on a device the launch copies it up before the kernel and
back after it, every call (a kernel that writes it is then right, but pays
two transfers and a synchronization per launch).  ``install`` wraps the
simulator's launch so that each launch of a kernel records the positions
of its host-array arguments (arrays nested in tuple arguments too);
``unintended`` keeps those not listed in ``INTENDED``.

As a pytest plugin (``PYTHONPATH=tests pytest -p support.launch_guard -m
cudasim ...``) it fails every test whose launches passed a host array that
``INTENDED`` does not list (a test that fails for its own reason reports
that first): the whole cudasim suite checked at once.  In the ordinary
suite, a test module that imports the autouse fixture
``device_arrays_only`` is checked the same way (the cuda backend's cycle,
run and sort paths, the DRA search, the batched engines' launchers).
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

#: kernel (``"<module>:<function>"``, the module as the simulator's kernel
#: function names it) -> the argument positions that may be host arrays,
#: and why.  Empty: no launch of the package means to hand over a host
#: array.
INTENDED: dict[str, tuple[tuple[int, ...], str]] = {}


def kernel_key(kernel) -> str:
    """``"<module>:<function>"`` of a simulator kernel."""
    fn = kernel.fn
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__name__', '?')}"


def host_array_positions(args) -> tuple:
    """Positions of the host NumPy arrays (ndim >= 1) among ``args``; one
    inside a tuple argument as ``(position, index)``."""
    found = []
    for p, a in enumerate(args):
        if isinstance(a, np.ndarray) and a.ndim > 0:
            found.append(p)
        elif isinstance(a, tuple):
            found += [(p, q) for q, b in enumerate(a)
                      if isinstance(b, np.ndarray) and b.ndim > 0]
    return tuple(found)


_RECORDS: list = []         # the lists the open ``recording`` blocks fill


def install() -> None:
    """Wrap the simulator's kernel launch (idempotent): each launch
    appends (kernel key, host-array positions) to every open
    ``recording``."""
    from numba.cuda.simulator import kernel as sim_kernel

    launch = sim_kernel.FakeCUDAKernel.__call__
    if getattr(launch, "launch_guard", False):
        return

    def guarded(self, *args):
        if _RECORDS and not vars(self)["_device"] and not sim_kernel._kernel_context:
            got = (kernel_key(self), host_array_positions(args))
            for r in _RECORDS:
                r.append(got)
        return launch(self, *args)

    guarded.launch_guard = True
    sim_kernel.FakeCUDAKernel.__call__ = guarded


@contextlib.contextmanager
def recording():
    """Yields the list of (kernel key, host-array positions) of every
    launch made inside the block."""
    install()
    got: list = []
    _RECORDS.append(got)
    try:
        yield got
    finally:
        del _RECORDS[next(i for i, r in enumerate(_RECORDS) if r is got)]


def unintended(launches, package: str | None = "tensorsched.") -> list[tuple[str, tuple]]:
    """The (kernel, positions) among ``launches`` of the package's kernels
    (module under ``package``; None: every kernel, a test's own too) that
    handed over a host array ``INTENDED`` does not allow, each once, first
    seen first."""
    out = []
    for key, positions in launches:
        if package is not None and not key.startswith(package):
            continue
        allowed = INTENDED.get(key, ((), ""))[0]
        bad = tuple(p for p in positions if p not in allowed)
        if bad and (key, bad) not in out:
            out.append((key, bad))
    return out


def assert_device_arrays_only(launches) -> None:
    """AssertionError naming each launch of ``unintended(launches)``."""
    bad = unintended(launches)
    if bad:
        raise AssertionError("kernel launches handed host arrays (not in "
                             "launch_guard.INTENDED): "
                             + "; ".join(f"{k} arguments {p}" for k, p in bad))


# -- the pytest plugin -----------------------------------------------------

def _enabled() -> bool:
    """Only the simulator's launches are wrapped."""
    from tensorsched.kernels._deps import CUDA_SIMULATOR
    return bool(CUDA_SIMULATOR)


@pytest.fixture(autouse=True)
def device_arrays_only():
    """A test module that imports this fixture fails a test whose kernel
    launches handed over a host array ``INTENDED`` does not list (under
    the simulator; elsewhere nothing is wrapped)."""
    if not _enabled():
        yield
        return
    with recording() as got:
        yield
    assert_device_arrays_only(got)


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """The test run inside a ``recording``; it fails when its launches
    handed over an unintended host array (and passed otherwise)."""
    if not _enabled():
        yield
        return
    with recording() as got:
        outcome = yield
    if outcome.excinfo is None:
        try:
            assert_device_arrays_only(got)
        except AssertionError as e:
            outcome.force_exception(e)
