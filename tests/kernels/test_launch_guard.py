"""``support.launch_guard``: a kernel launch that hands over a host NumPy
array is seen (the simulator takes one silently; a device copies it up and
back every launch), one with device arrays only is not."""

import numpy as np
import pytest
from numba import cuda
from support import launch_guard as LG
from support.backends import cudasim_enabled

pytestmark = [pytest.mark.cudasim,
              pytest.mark.skipif(not cudasim_enabled(), reason="wraps the CUDA simulator")]


@cuda.jit
def copy_kernel(src, dst, pair):
    i = cuda.grid(1)
    if i < src.shape[0]:
        dst[i] = src[i] + pair[0][i] + pair[1][i]


def _kernel():
    return cuda, copy_kernel


def test_a_host_array_argument_is_recorded_with_its_position():
    cuda, kernel = _kernel()
    dst = cuda.to_device(np.zeros(4, np.int64))
    host = np.arange(4, dtype=np.int64)
    dev = cuda.to_device(host)
    with LG.recording() as got:
        kernel[1, 4](host, dst, (dev, host))
    assert len(got) == 1 and got[0][0].endswith(":copy_kernel")
    assert got[0][1] == (0, (2, 1))
    assert LG.unintended(got, package=None) == got
    assert LG.unintended(got) == []         # a test's own kernel
    assert dst.copy_to_host().tolist() == [0, 3, 6, 9]


def test_device_arrays_only_record_nothing_unintended():
    cuda, kernel = _kernel()
    dev = cuda.to_device(np.arange(4, dtype=np.int64))
    dst = cuda.to_device(np.zeros(4, np.int64))
    with LG.recording() as got:
        kernel[1, 4](dev, dst, (dev, dev))
    assert len(got) == 1 and got[0][1] == ()
    assert LG.unintended(got, package=None) == []


def test_an_intended_host_argument_is_allowed(monkeypatch):
    cuda, kernel = _kernel()
    dev = cuda.to_device(np.arange(4, dtype=np.int64))
    with LG.recording() as got:
        kernel[1, 4](np.arange(4, dtype=np.int64), dev, (dev, dev))
    key = got[0][0]
    monkeypatch.setitem(LG.INTENDED, key, ((0,), "a test's own launch"))
    assert LG.unintended(got, package=None) == []
    monkeypatch.setitem(LG.INTENDED, key, ((1,), "another argument"))
    assert LG.unintended(got, package=None) == [(key, (0,))]


def test_recordings_nest():
    cuda, kernel = _kernel()
    dev = cuda.to_device(np.arange(4, dtype=np.int64))
    with LG.recording() as outer:
        with LG.recording() as inner:
            kernel[1, 4](dev, dev, (dev, np.zeros(4, np.int64)))
        kernel[1, 4](dev, dev, (dev, dev))
    assert [p for _, p in inner] == [((2, 1),)]
    assert [p for _, p in outer] == [((2, 1),), ()]


def test_a_package_kernel_handed_a_host_array_fails_the_check():
    from tensorsched.kernels.fused import _cuda as FC

    old = tuple(cuda.to_device(np.ones((2, w), t)) for w, t in ((2, np.int64), (1, np.int8),
                                                                (1, np.int32)))
    new = tuple(cuda.to_device(np.zeros((3, w), t)) for w, t in ((2, np.int64), (1, np.int8),
                                                                 (1, np.int32)))
    colmap = np.array([0, 1, 0, 0], np.int64)
    with LG.recording() as got:
        FC.launch_relayout(old, new, colmap)            # the column map left on the host
    assert got == [("tensorsched.kernels.fused._cuda:relayout_kernel", (6,))]
    with pytest.raises(AssertionError, match="relayout_kernel arguments"):
        LG.assert_device_arrays_only(got)
    with LG.recording() as got:
        FC.launch_relayout(old, new, cuda.to_device(colmap))
    LG.assert_device_arrays_only(got)
    assert new[0].copy_to_host().tolist() == [[1, 1], [1, 1], [0, 0]]
    assert new[2].copy_to_host().tolist() == [[1], [1], [-1]]
