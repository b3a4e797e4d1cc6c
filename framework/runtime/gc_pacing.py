"""Fewer cyclic garbage collections while the scheduler makes and drops
many small objects, and its medium arrays served from the heap.

A scheduling pass or a simulation makes millions of small acyclic objects
(records, queue entries, bindings, events) beside a large live heap (the
cluster, the pods bound), and Python's default pacing (a young collection
every 700 allocations) spends a fifth to a third of such a pass rescanning
them.  ``few_collections()`` makes young collections come every 50,000
allocations instead, restored when the last of the passes running at once
(threads, nested calls) is done.  Nothing is frozen or disabled: cyclic
garbage made meanwhile is still collected, a little later.  (``gc.freeze``
would also freeze the garbage of earlier passes, which then piles up.)

It also asks the C allocator once per process to keep medium blocks on the
heap (``reuse_medium_blocks``).  glibc's malloc serves a block of at least
its mmap threshold (128 KiB at start) with fresh pages from the kernel and
unmaps them on free, and it gives the heap's free top back to the kernel
past a trim threshold (128 KiB too).  A cycle over 10,000 nodes makes and
drops several arrays of 128-300 KiB a pod (a column over the rows'
capacity, a [N, 2] pair, their gathers), each then paying page faults and
zeroing again: the ReplicaSet workload one pod at a time measured 600 us a
pod or 1,000 us depending only on whether something earlier had happened
to free a large block.  Freeing one mmapped block raises both thresholds
for the rest of the process (glibc's dynamic threshold: to the block's
size, trim to twice that, at most 32 MiB), so one block of
``MEDIUM_BLOCK_BYTES`` made and freed makes every smaller block come from,
and go back to, the heap.  Elsewhere (other allocators) it costs one
allocation.
"""

from __future__ import annotations

import contextlib
import gc
import threading

YOUNG_THRESHOLD = 50_000
#: the block freed once (512 KiB: a [16,384, 4] int64 array, the node
#: columns' capacity at 10,000 nodes); blocks up to this size then stay on
#: the heap and up to twice it of free heap is kept.  Larger blocks keep
#: their own pages: a big np.zeros then costs only the pages it touches
#: (1 and 8 MiB measured ~5 % slower on compiled runs).
MEDIUM_BLOCK_BYTES = 512 << 10

_lock = threading.Lock()
_depth = [0, None]          # passes running now, the thresholds before the first
_medium_blocks_asked = [False]


def reuse_medium_blocks() -> bool:
    """Make and free one ``MEDIUM_BLOCK_BYTES`` block, once per process
    (module doc); True the first time."""
    with _lock:
        if _medium_blocks_asked[0]:
            return False
        _medium_blocks_asked[0] = True
    block = bytearray(MEDIUM_BLOCK_BYTES)
    del block
    return True


@contextlib.contextmanager
def few_collections():
    """Young collections every ``YOUNG_THRESHOLD`` allocations inside (and
    medium blocks on the heap from the first pass on)."""
    reuse_medium_blocks()
    with _lock:
        if _depth[0] == 0:
            _depth[1] = old = gc.get_threshold()
            gc.set_threshold(max(old[0], YOUNG_THRESHOLD), old[1], old[2])
        _depth[0] += 1
    try:
        yield
    finally:
        with _lock:
            _depth[0] -= 1
            if _depth[0] == 0:
                gc.set_threshold(*_depth[1])
