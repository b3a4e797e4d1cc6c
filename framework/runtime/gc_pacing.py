"""Fewer cyclic garbage collections while the scheduler makes and drops
many small objects.

A scheduling pass or a simulation makes millions of small acyclic objects
(records, queue entries, bindings, events) beside a large live heap (the
cluster, the pods bound), and Python's default pacing (a young collection
every 700 allocations) spends a fifth to a third of such a pass rescanning
them.  ``few_collections()`` makes young collections come every 50,000
allocations instead, restored when the last of the passes running at once
(threads, nested calls) is done.  Nothing is frozen or disabled: cyclic
garbage made meanwhile is still collected, a little later.  (``gc.freeze``
would also freeze the garbage of earlier passes, which then piles up.)
"""

from __future__ import annotations

import contextlib
import gc
import threading

YOUNG_THRESHOLD = 50_000

_lock = threading.Lock()
_depth = [0, None]          # passes running now, the thresholds before the first


@contextlib.contextmanager
def few_collections():
    """Young collections every ``YOUNG_THRESHOLD`` allocations inside."""
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
