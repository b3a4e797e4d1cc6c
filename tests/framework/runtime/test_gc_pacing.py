"""``runtime.gc_pacing``: young collections paced out while passes run,
the collector's thresholds restored when the last of nested or concurrent
passes ends (also on error), and never lowered; medium blocks on the heap
after the first pass."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import platform
import subprocess
import sys
import threading

import pytest

from tensorsched.framework.runtime.gc_pacing import (
    YOUNG_THRESHOLD,
    few_collections,
    reuse_medium_blocks,
)


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_thresholds_inside_and_after(thresholds):
    with few_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        assert gc.isenabled()                       # paced, never disabled
    assert gc.get_threshold() == (700, 10, 10)


def test_nested_passes_restore_once_at_the_end(thresholds):
    with few_collections():
        with few_collections():
            pass
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    assert gc.get_threshold() == (700, 10, 10)


def test_restored_on_error(thresholds):
    with pytest.raises(KeyError):
        with few_collections():
            raise KeyError
    assert gc.get_threshold() == (700, 10, 10)


def test_a_higher_threshold_is_kept(thresholds):
    gc.set_threshold(10 * YOUNG_THRESHOLD, 10, 10)
    with few_collections():
        assert gc.get_threshold()[0] == 10 * YOUNG_THRESHOLD
    assert gc.get_threshold()[0] == 10 * YOUNG_THRESHOLD


def test_concurrent_passes(thresholds):
    inside, leave = threading.Event(), threading.Event()

    def other():
        with few_collections():
            inside.set()
            leave.wait(5)

    t = threading.Thread(target=other)
    with few_collections():
        t.start()
        inside.wait(5)
    # this pass ended first: the other still runs paced
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    leave.set()
    t.join(5)
    assert gc.get_threshold() == (700, 10, 10)


_MMAPPED_AFTER = """
import ctypes, ctypes.util, sys
import numpy as np
from tensorsched.framework.runtime.gc_pacing import few_collections

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.mallinfo2.restype = Info
if sys.argv[1] == "pass":
    with few_collections():
        pass
before = libc.mallinfo2().hblkhd
block = np.ones(1 << 15, np.int64)          # 256 KiB, as a cycle's gathers are
print(libc.mallinfo2().hblkhd - before)
"""


def _mmapped_growth(first: str) -> int:
    """Bytes the allocator mapped for one 256 KiB array in a fresh process,
    after a pass (``first == "pass"``) or without one."""
    out = subprocess.run([sys.executable, "-c", _MMAPPED_AFTER, first], capture_output=True,
                         text=True, check=True)
    return int(out.stdout.split()[-1])


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc"
                    or not hasattr(ctypes.CDLL(ctypes.util.find_library("c")), "mallinfo2"),
                    reason="glibc's malloc statistics (mallinfo2) are what is observed")
def test_after_a_pass_medium_arrays_come_from_the_heap():
    """A 256 KiB array gets fresh mapped pages in a process that never ran
    a pass, and heap memory once a pass has asked for medium blocks."""
    assert _mmapped_growth("none") >= 1 << 18
    assert _mmapped_growth("pass") == 0
    assert reuse_medium_blocks() in (True, False)
    assert reuse_medium_blocks() is False           # once per process
