"""Pending pods as columns: the scheduling queue's lane of pods added
together, and the runs the queue hands out of it.

``add_many`` puts pods that all go to activeQ into a ``QueueLane``: the pods
as columns (``records.pod_columns.PodColumns``: a class id, key, creation
time and object per pod, a record built only when one is asked for) and
their sort keys (a list, or ``ColumnKeys`` when the QueueSort plugin gives
them as columns), in activeQ order, position ``i`` being the activeQ entry
``(sort_keys[i], seq0 + i, keys[i])``.  Such a pod
has no ``QueuedPodInfo`` until something looks at it alone (a single pop,
an update, a delete, a read of ``SchedulingQueue.infos``); the queue's
``infos`` maps its key to the block meanwhile.  A position is live while its
key still maps to the block (the pod was not deleted, updated or popped
alone) or, once the pod has an info, while the queue's token for the key is
``seq0 + i``.

``QueueRun`` is what ``SchedulingQueue.pop_run`` hands out: the first head
(an info, popped as ``pop`` would) and either a stretch of block positions
``[start, stop)`` (the fast form: the pods stay without infos unless one is
asked for) or a list of further infos (any other mix of heads).
"""

from __future__ import annotations

import bisect

import numpy as np

from tensorsched.framework.records.pod_columns import NO_EXTRAS, PodColumns, build_record
from tensorsched.framework.records.records import PodRecord


class ColumnKeys:
    """A lane's sort keys kept as columns (the QueueSort plugin's
    ``sort_columns``: equal-length int64 arrays): ``[i]`` is pod i's key,
    the tuple of the columns' i-th values as Python ints (what the
    plugin's ``sort_key`` gives), made when asked (a lane's keys are read
    at a few positions: its head, binary searches).  A lane popped pod by
    pod reads every key: after ``ROWS_AFTER`` reads the keys are made all
    at once (a Python tuple per row, a list index per read)."""

    __slots__ = ("columns", "_rows", "_reads")

    ROWS_AFTER = 64

    def __init__(self, columns: tuple):
        self.columns = columns
        self._rows: list | None = None
        self._reads = 0

    def __len__(self) -> int:
        return int(self.columns[0].shape[0])

    def __getitem__(self, i: int) -> tuple:
        rows = self._rows
        if rows is not None:
            return rows[i]
        self._reads += 1
        if self._reads <= self.ROWS_AFTER:
            return tuple([int(c[i]) for c in self.columns])
        rows = self._rows = list(zip(*[c.tolist() for c in self.columns]))
        return rows[i]


def columns_in_order(columns: tuple) -> bool:
    """The rows of ``columns`` (equal-length arrays) are in ascending
    lexicographic order (ties allowed)."""
    le = None
    for c in reversed(columns):
        a, b = c[:-1], c[1:]
        le = (a <= b) if le is None else (a < b) | ((a == b) & le)
    return le is None or bool(le.all())


def column_order(columns: tuple) -> np.ndarray:
    """The stable ascending lexicographic order of ``columns``' rows ([n]
    int64 positions; equal rows keep their order)."""
    n = columns[0].shape[0]
    return np.lexsort((np.arange(n),) + tuple(reversed(columns)))


class QueueLane:
    """Pods added together, in activeQ order (module doc).  ``pos``: the
    first position not taken yet; ``now``: when they were added."""

    __slots__ = ("pods", "keys", "sort_keys", "seq0", "pos", "now", "_index", "_columns",
                 "_asks", "_detached")

    LISTS_AFTER = 64

    def __init__(self, pods: PodColumns, sort_keys, seq0: int, now: float):
        self.pods = pods
        self.keys = pods.keys
        self.sort_keys = sort_keys
        self.seq0 = seq0
        self.pos = 0
        self.now = now
        self._index: dict[str, int] | None = None
        self._columns: tuple | None = None
        self._asks = 0
        # positions whose key no longer maps to this block in the queue's
        # ``infos`` (the pod got an info, left or was re-added), ascending:
        # a stretch of positions is handed out without a look at each key
        self._detached: list[int] = []

    def __len__(self) -> int:
        return len(self.keys)

    def index(self, key: str) -> int:
        """The position of ``key`` (a map made on the first ask)."""
        if self._index is None:
            self._index = dict(zip(self.keys, range(len(self.keys))))
        return self._index[key]

    def record(self, i: int) -> PodRecord:
        """``pods[i]`` (``i`` >= 0).  Its class id and creation time are
        read from the arrays for the first ``LISTS_AFTER`` asks (a lane
        handed out in runs asks for each run's first pod only), then from
        Python lists made at once (pods popped one by one skip a numpy
        scalar each)."""
        pods = self.pods
        if self._columns is None:
            self._asks += 1
            if self._asks <= self.LISTS_AFTER:
                return build_record(pods.classes[pods.class_id[i]], self.keys[i],
                                    int(pods.creation_ns[i]), pods.manifests[i],
                                    pods.extras.get(i, NO_EXTRAS))
            self._columns = (pods.class_id.tolist(), pods.creation_ns.tolist())
        ids, born = self._columns
        return build_record(pods.classes[ids[i]], self.keys[i], born[i], pods.manifests[i],
                            pods.extras.get(i, NO_EXTRAS))

    def entry(self, i: int) -> tuple:
        """Position ``i`` as an activeQ heap entry."""
        return (self.sort_keys[i], self.seq0 + i, self.keys[i])

    def detach(self, i: int) -> None:
        """Position ``i``'s key stops mapping to this block in the queue's
        ``infos`` (the queue calls this wherever it replaces that value)."""
        d = self._detached
        if not d or d[-1] < i:
            d.append(i)             # the usual order: heads are taken in turn
        else:
            j = bisect.bisect_left(d, i)
            if j == len(d) or d[j] != i:
                d.insert(j, i)

    def stretch_end(self, start: int, stop: int, bound) -> int:
        """The end of the positions ``[start, stop)`` that are still the
        block's own (not detached) and, when ``bound`` (an activeQ entry)
        is given, come before it in activeQ order: positions are in
        ascending (sort key, seq) order, so both ends are binary searches."""
        d = self._detached
        j = bisect.bisect_left(d, start)
        if j < len(d):
            stop = min(stop, d[j])
        if bound is not None and start < stop:
            sort_keys, seq0, head = self.sort_keys, self.seq0, bound[:2]
            stop = bisect.bisect_right(range(stop), head, start, stop,
                                       key=lambda i: (sort_keys[i], seq0 + i))
        return stop

    def class_stretch_end(self, start: int, stop: int, joins) -> int:
        """The first position in ``[start, stop)`` whose pod class
        ``joins(position)`` refuses (asked once per class, at the class's
        first position in the stretch), else ``stop``.  Scans chunks of
        growing length, so a stretch that ends early costs little."""
        class_id = self.pods.class_id
        answers: dict[int, bool] = {}
        a, chunk = start, 32
        while a < stop:
            b = min(stop, a + chunk)
            cid = class_id[a:b]
            firsts = np.flatnonzero(cid[1:] != cid[:-1]) + 1
            for s in [0] + firsts.tolist():
                c = int(cid[s])
                ok = answers.get(c)
                if ok is None:
                    ok = answers[c] = joins(a + s)
                if not ok:
                    return a + s
            a, chunk = b, chunk * 4
        return stop


class QueueRun:
    """Heads of activeQ popped together (module doc): ``first`` (an info),
    then block positions ``[start, stop)`` of ``block``, or ``rest`` (infos)
    with their activeQ ``entries``."""

    __slots__ = ("first", "first_entry", "block", "start", "stop", "rest", "entries")

    def __init__(self, first, first_entry: tuple, block: QueueLane | None = None,
                 start: int = 0, stop: int = 0, rest: list | None = None,
                 entries: list | None = None):
        self.first = first
        self.first_entry = first_entry
        self.block = block
        self.start = start
        self.stop = stop
        self.rest = rest if rest is not None else []
        self.entries = entries if entries is not None else []

    def __len__(self) -> int:
        if self.block is not None:
            return 1 + self.stop - self.start
        return 1 + len(self.rest)

    @property
    def pods(self) -> PodColumns:
        """[len] the pods, in order, as columns (records built on request)."""
        if self.block is not None:
            return self.block.pods.take(range(self.start, self.stop)).with_first(self.first.pod)
        return PodColumns.from_records([self.first.pod] + [pi.pod for pi in self.rest])

    @property
    def keys(self) -> list[str]:
        if self.block is not None:
            return [self.first.key] + self.block.keys[self.start:self.stop]
        return [self.first.key] + [pi.key for pi in self.rest]

    def initial_timestamps(self) -> list[float]:
        """When each pod first entered the queue."""
        first = self.first.initial_timestamp
        if self.block is not None:
            return [first] + [self.block.now] * (self.stop - self.start)
        return [first] + [pi.initial_timestamp for pi in self.rest]
