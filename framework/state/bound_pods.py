"""The bound pods of a cluster state as columns; records built on request.

A bound pod occupies a slot of preallocated arrays that grow by doubling; a
removed pod frees its slot for the next one (last freed, first reused), and
a pod put back as it was (``PodRow.slot``, preemption's dry runs) returns to
its own slot, so a suspension need only hold the bind order
(``hold_order`` / ``restore_order``).  Per slot:

  ``node_row``     [cap] int32, the node row it is accounted on (-1: free slot);
  ``shape_id``     [cap] int32, its accounted shape: ``shapes[id]`` is the
                   (request [R] int64 with pods = 1, (non-zero cpu, memory))
                   pair, one per distinct shape (pods of a template share it);
  ``class_id``     [cap] int32, its pod class (below);
  ``creation_ns``  [cap] int64, ``metadata.creationTimestamp`` in ns (0: absent);
  ``start_ns``     [cap] int64, ``status.startTime`` in ns (``NO_START``: absent);
  ``deleting``     [cap] bool, the pod is terminating (``metadata.deletionTimestamp``);
  ``manifests``    the pod's object (``PodRecord.obj``), by reference.

``start_ns`` and ``deleting`` repeat two of the per-pod fields kept in
``extras`` as columns, so a compiled pass gathers them by slot (the victim
table's row writes) with no dict lookup per pod.  A slot whose pod has no
extras, and a free slot, hold the defaults (``NO_START``, False): only a
pod with a start time or terminating writes them, and its ``pop`` puts
them back, so binding and removing the other pods (most) costs these
columns nothing.

A pod class (``records.pod_columns``) is what pods of one template share:
every field of their records but the per-pod ones; pods share a class
exactly when their records share a ``pod_class``, so classing a pod is one dict
lookup.  ``classes[id]`` is the first record bound of the class (its
per-pod fields are never read through the class), ``class_priority[id]``
its priority; a class is dropped when its last pod leaves.  The per-pod
fields other than name, creation time and object (``EXTRA_FIELDS``) are
kept by slot only for the pods where any of them is set (a pod parsed
already bound or running, or with a uid; pods of synthetic workloads and
tables have none).

A bound pod's :class:`PodRecord` is not kept: ``record(key)`` builds it
from its class and its slot (``build_record``: a dict copy, about half a
microsecond), equal to the record it was bound with.  ``add_many`` takes
pods as ``PodColumns`` (a compiled run's, from the queue) without a record
per pod.  The names column is the key -> slot index (``namespace/name``,
in bind order; a run's keys join it when it is next read, so binding a
run costs no Python step per pod); host ports, which few pods hold, are kept by slot in a
dict.  The table is a read-only ``Mapping`` from key
to :class:`PodRow`, a view built on request; ``arrays()`` gives the live
columns for vectorized questions (pods per node, requests by priority)
without a Python object per pod.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import chain, islice

import numpy as np

from tensorsched.framework.records.pod_columns import (
    EXTRA_FIELDS,
    NO_EXTRAS,
    PodColumns,
    build_record,
    extras_of,
)
from tensorsched.framework.records.records import PodRecord

# ``start_ns`` of a pod without ``status.startTime`` (the largest int64:
# the victim search's "started now", which sorts after every real time)
NO_START = (1 << 63) - 1
_START = EXTRA_FIELDS.index("start_ns")
_DELETING = EXTRA_FIELDS.index("deleting")


@dataclass(slots=True)
class PodRow:
    """A bound pod as the state accounts it: its record, its node row, its
    shape (``shape_id`` into the table's shapes; ``request`` [R] int64 at
    bind time with the pods slot 1, and the ``nonzero`` (cpu, memory) pair)
    and its host port ids.  Built on request; ``ClusterState.restore_pod``
    takes one back as ``remove_pod`` returned it."""

    record: PodRecord
    node_row: int
    shape_id: int
    shape: tuple               # (request [R] int64, (nonzero cpu, nonzero memory))
    port_ids: tuple[int, ...]
    slot: int = -1             # the table slot it had (-1: not yet bound)

    @property
    def request(self) -> np.ndarray:
        return self.shape[0]

    @property
    def nonzero(self) -> tuple[int, int]:
        return self.shape[1]


class BoundPods(Mapping):
    """Key (``namespace/name``) -> :class:`PodRow`, stored as columns (see
    the module docstring).  Only ``ClusterState`` writes it."""

    def __init__(self, capacity: int = 64) -> None:
        cap = max(1, capacity)
        self.node_row = np.full(cap, -1, np.int32)
        self.shape_id = np.zeros(cap, np.int32)
        self.class_id = np.zeros(cap, np.int32)
        self.creation_ns = np.zeros(cap, np.int64)
        self.start_ns = np.full(cap, NO_START, np.int64)
        self.deleting = np.zeros(cap, np.bool_)
        self.manifests: list = [None] * cap
        self.extras: dict[int, tuple] = {}              # slot -> EXTRA_FIELDS values
        self.ports: dict[int, tuple[int, ...]] = {}     # slot -> host port ids
        self.shapes: list[tuple] = []                   # id -> (request, (cpu, memory))
        self._shape_ids: dict[tuple, int] = {}
        self.classes: list[PodRecord | None] = []       # id -> first record of the class
        self.class_priority = np.zeros(8, np.int64)
        self._class_refs: list[int] = []                # id -> bound pods of the class
        self._class_ids: dict = {}                      # record.pod_class -> class id
        self._free_classes: list[int] = []
        self._index: dict[str, int] = {}                # key -> slot, in bind order
        # runs bound by ``add_many`` whose keys are not in ``_index`` yet:
        # (keys, reused slots, first fresh slot), merged in bind order on
        # the first read of ``_slot`` (a run of 400,000 pods otherwise
        # costs a dict insert per pod that nobody may ask for)
        self._unindexed: list[tuple[list[str], list[int], int]] = []
        self._free: dict[int, None] = {}                # freed slots, reused last-in first
        self._top = 0                                   # slots ever used (high-water)
        # row -> its pods' {key: slot} (``pods_on_rows``), only for the rows
        # a read has asked for (built from the row's keys on its first read),
        # then kept by ``add`` and ``pop``; the rows of ``add_many``'s runs
        # since, while any row is kept: a kept row a run touched is dropped
        # on the next read (built again from its keys)
        self._by_row: dict[int, dict[str, int]] = {}
        self._by_row_runs: list[np.ndarray] = []

    # ------------------------------------------------------------ Mapping
    @property
    def _slot(self) -> dict[str, int]:
        """key -> slot of every bound pod, in bind order (the runs not yet
        indexed merged in first)."""
        if self._unindexed:
            index = self._index
            for keys, reused, start in self._unindexed:
                r = len(reused)
                index.update(zip(keys, chain(reused, range(start, start + len(keys) - r))))
            self._unindexed = []
        return self._index

    @_slot.setter
    def _slot(self, index: dict[str, int]) -> None:
        self._index = index
        self._unindexed = []

    def __len__(self) -> int:
        return len(self._index) + sum(len(run[0]) for run in self._unindexed)

    def __iter__(self) -> Iterator[str]:
        return iter(self._slot)

    def __contains__(self, key) -> bool:
        return key in self._slot

    def __getitem__(self, key: str) -> PodRow:
        s = self._slot[key]
        sid = int(self.shape_id[s])
        return PodRow(self._build(key, s), int(self.node_row[s]), sid, self.shapes[sid],
                      self.ports.get(s, ()), s)

    def record(self, key: str) -> PodRecord:
        """The bound pod's record, built from its class and slot (KeyError
        when not bound)."""
        return self._build(key, self._slot[key])

    def _build(self, key: str, s: int) -> PodRecord:
        return build_record(self.classes[self.class_id[s]], key, int(self.creation_ns[s]),
                            self.manifests[s], self.extras.get(s, NO_EXTRAS))

    def bound(self) -> Iterator[tuple[PodRecord, int]]:
        """(record, node row) of every bound pod, in bind order (records
        built on request, no views)."""
        rows, build = self.node_row, self._build
        for key, s in self._slot.items():
            yield build(key, s), int(rows[s])

    def row_of(self, key: str) -> int:
        """The node row the pod is bound to (KeyError when not bound)."""
        return int(self.node_row[self._slot[key]])

    # ------------------------------------------------------------- shapes
    def shape_of(self, request: np.ndarray, cpu: int, memory: int) -> int:
        """The id of the (request [R] int64, (cpu, memory)) shape, added when
        new (the stored request is read-only; callers pass their own copy)."""
        key = (request.tobytes(), int(cpu), int(memory))
        got = self._shape_ids.get(key)
        if got is None:
            request.flags.writeable = False
            got = self._shape_ids[key] = len(self.shapes)
            self.shapes.append((request, (int(cpu), int(memory))))
        return got

    # ------------------------------------------------------------ classes
    def _class_of(self, record: PodRecord) -> int:
        """The class id of ``record``, a new class when its memo has none
        (its reference is not counted here)."""
        got = self._class_ids.get(record.pod_class)
        if got is not None:
            return got
        if self._free_classes:
            got = self._free_classes.pop()
            self.classes[got] = record
        else:
            got = len(self.classes)
            self.classes.append(record)
            self._class_refs.append(0)
            if got >= self.class_priority.shape[0]:
                grown = np.zeros(2 * got, np.int64)
                grown[:got] = self.class_priority[:got]
                self.class_priority = grown
        self.class_priority[got] = record.priority or 0
        self._class_ids[record.pod_class] = got
        return got

    def _release_class(self, cid: int) -> None:
        left = self._class_refs[cid] - 1
        self._class_refs[cid] = left
        if not left:
            del self._class_ids[self.classes[cid].pod_class]
            self.classes[cid] = None
            self._free_classes.append(cid)

    # ------------------------------------------------------------- writes
    def _grow(self, need: int) -> None:
        cap = self.node_row.shape[0]
        if need <= cap:
            return
        new = max(need, 2 * cap)
        for attr, fill in (("node_row", -1), ("shape_id", 0), ("class_id", 0),
                           ("creation_ns", 0), ("start_ns", NO_START), ("deleting", False)):
            old = getattr(self, attr)
            arr = np.full(new, fill, old.dtype)
            arr[:cap] = old
            setattr(self, attr, arr)
        self.manifests.extend([None] * (new - cap))

    def _take_slots(self, k: int) -> tuple[np.ndarray, list[int], int]:
        """k free slots: (all of them [k] int64, the freed ones reused first
        (a list, last freed first), the first of the fresh ones that follow,
        which are consecutive)."""
        reuse = min(k, len(self._free))
        # popitem's order (last freed first), by C-level passes
        taken = list(islice(reversed(self._free), reuse))
        deque(map(self._free.pop, taken), maxlen=0)
        fresh = k - reuse
        self._grow(self._top + fresh)
        out = np.empty(k, np.int64)
        out[:reuse] = taken
        start = self._top
        out[reuse:] = np.arange(start, start + fresh)
        self._top += fresh
        return out, taken, start

    def add(self, record: PodRecord, row: int, shape_id: int,
            port_ids: tuple[int, ...] = (), slot: int = -1) -> None:
        """Bind one pod (its key must not be bound), in ``slot`` when that
        slot is free (a pod put back where it was), else in any."""
        if slot >= 0 and slot in self._free:
            del self._free[slot]
            s = slot
        elif self._free:
            s = self._free.popitem()[0]
        else:       # one slot without arrays: dry runs add pods one at a time
            s = self._top
            if s >= len(self.manifests):
                self._grow(s + 1)
            self._top = s + 1
        cid = self._class_of(record)
        self._class_refs[cid] += 1
        self.node_row[s] = row
        self.shape_id[s] = shape_id
        self.class_id[s] = cid
        self.creation_ns[s] = record.creation_ns or 0
        self.manifests[s] = record.obj
        extra = extras_of(record)
        if extra != NO_EXTRAS:      # (a free slot's start_ns / deleting are the defaults)
            self.extras[s] = extra
            start = extra[_START]
            if start is not None:
                self.start_ns[s] = start
            if extra[_DELETING]:
                self.deleting[s] = True
        if port_ids:
            self.ports[s] = port_ids
        self._slot[record.key] = s
        kept = self._by_row.get(row)
        if kept is not None:
            kept[record.key] = s

    def add_many(self, pods, rows: np.ndarray, shape_ids) -> np.ndarray:
        """Bind ``pods`` (records, or ``PodColumns`` taken as they are) on
        ``rows`` ([k] int64) with ``shape_ids`` (one id, or [k] ids); none
        holds host ports and no key is bound.  Returns their slots ([k]
        int64)."""
        cols = PodColumns.from_records(pods)
        k = len(cols)
        if not k:
            return np.zeros(0, np.int64)
        slots, reused, start = self._take_slots(k)
        self.node_row[slots] = rows
        self.shape_id[slots] = shape_ids
        refs = self._class_refs
        cls = cols.class_id
        lo = int(cls.min())
        span = int(cls.max()) - lo + 1
        if span <= 4096:
            # The pods' classes are few (a run's: its first pod's and the
            # rest's) and numbered close together: counted and mapped
            # through a table over their span, each looked up (or made)
            # once, in class order; no sort.
            counts = np.bincount(cls - lo, minlength=span)
            used = np.flatnonzero(counts)
            ours = np.zeros(span, np.int32)
            for c, n in zip(used.tolist(), counts[used].tolist()):
                cid = ours[c] = self._class_of(cols.classes[c + lo])
                refs[cid] += n
            self.class_id[slots] = ours[cls - lo]
        else:
            used, inverse, counts = np.unique(cls, return_inverse=True, return_counts=True)
            ours = np.zeros(used.shape[0], np.int32)
            for j, (c, n) in enumerate(zip(used.tolist(), counts.tolist())):
                cid = ours[j] = self._class_of(cols.classes[c])
                refs[cid] += n
            self.class_id[slots] = ours[inverse]
        self.creation_ns[slots] = cols.creation_ns
        # the reused slots (freed in any order) by one C-level pass, the
        # fresh ones, consecutive, as one slice
        mf, objs, r = self.manifests, cols.manifests, len(reused)
        if r:
            deque(map(mf.__setitem__, reused, objs), maxlen=0)
        mf[start:start + k - r] = objs[r:] if r else objs
        # start_ns / deleting: a free slot holds the defaults (``pop``
        # resets a pod's with extras), so only the pods with extras write
        for i, extra in cols.extras.items():
            s = reused[i] if i < r else start + i - r
            self.extras[s] = extra
            if extra[_START] is not None:
                self.start_ns[s] = extra[_START]
            if extra[_DELETING]:
                self.deleting[s] = True
        # the keys go into the index when it is next read (``_slot``), and
        # into the rows' pods when those are next read (``pods_on_rows``)
        self._unindexed.append((cols.keys, reused, start))
        if self._by_row:
            self._by_row_runs.append(np.array(rows, np.int64))
        return slots

    def pop(self, key: str, *default):
        """Unbind ``key``: its :class:`PodRow` (or ``default``, else KeyError)."""
        s = self._slot.pop(key, None)        # one lookup (a victim's removal)
        if s is None:
            if default:
                return default[0]
            raise KeyError(key)
        sid = int(self.shape_id[s])
        cid = int(self.class_id[s])
        extra = self.extras.pop(s, NO_EXTRAS)
        # the free slot back to the defaults, where ``add`` wrote them (a pod
        # with only a uid or a phase wrote neither)
        if extra[_START] is not None:
            self.start_ns[s] = NO_START
        if extra[_DELETING]:
            self.deleting[s] = False
        entry = PodRow(build_record(self.classes[cid], key, int(self.creation_ns[s]),
                                    self.manifests[s], extra),
                       int(self.node_row[s]), sid, self.shapes[sid], self.ports.pop(s, ()), s)
        self.node_row[s] = -1
        self.manifests[s] = None
        self._release_class(cid)
        self._free[s] = None
        kept = self._by_row.get(entry.node_row)
        if kept is not None:
            kept.pop(key, None)     # (a run's pod on a kept row, not joined yet: none)
        return entry

    def pods_on_rows(self, rows: list[int], keys_of_row) -> list[dict[str, int]]:
        """Per node row of ``rows`` its bound pods as {key: slot} (the
        live dicts: read them, do not keep or change them).  A row is built
        on its first read from ``keys_of_row[row]`` (the keys bound on it:
        ``ClusterState.pods_on_node``; O(its pods)), then kept by ``add`` /
        ``pop``; a kept row an ``add_many`` run touched since the last read
        is built again.  Rows never asked cost nothing, on reads or binds."""
        if not rows:
            return []
        kept = self._by_row
        if self._by_row_runs:
            runs, self._by_row_runs = self._by_row_runs, []
            held = np.fromiter(kept, np.int64, len(kept))
            for r in np.intersect1d(np.concatenate(runs), held).tolist():
                del kept[r]
        out = []
        for r in rows:
            got = kept.get(r)
            if got is None:
                keys = keys_of_row[r]
                got = kept[r] = dict(zip(keys, map(self._slot.__getitem__, keys)))
            out.append(got)
        return out

    def hold_order(self) -> dict:
        """Start a suspension: the bind order as it is now (a token for
        ``restore_order``); later pops and adds work on a copy of it."""
        held = self._slot
        self._slot = dict(held)
        return held

    def restore_order(self, held: dict) -> None:
        """End a suspension: every pod popped since ``hold_order`` has been
        added back in its own slot (``PodRow.slot``) and no other pod came or
        went, so the held order is exact again."""
        if len(held) != len(self._slot):
            raise RuntimeError(f"bound pods: {len(self._slot)} pods at the end of a "
                               f"suspension that began with {len(held)}")
        self._slot = held

    def copy(self) -> BoundPods:
        """An independent table with the same pods, slots and order."""
        out = BoundPods.__new__(BoundPods)
        for attr in ("node_row", "shape_id", "class_id", "creation_ns", "start_ns", "deleting",
                     "class_priority"):
            setattr(out, attr, getattr(self, attr).copy())
        for attr in ("manifests", "classes", "_class_refs", "_free_classes"):
            setattr(out, attr, list(getattr(self, attr)))
        for attr in ("extras", "ports", "_class_ids", "_slot", "_free"):
            setattr(out, attr, dict(getattr(self, attr)))
        out._by_row, out._by_row_runs = {}, []     # rows built again on their first read
        out.shapes = self.shapes                    # shapes are only ever appended
        out._shape_ids = self._shape_ids
        out._top = self._top
        return out

    # ------------------------------------------------------------ columns
    def slots_of(self, keys) -> np.ndarray:
        """[k] int64 slots of the bound pods ``keys`` (KeyError when one is not)."""
        # a C-level map: no Python step per key
        return np.fromiter(map(self._slot.__getitem__, keys), np.int64, len(keys))

    def start_times(self, slots: np.ndarray, absent: int) -> np.ndarray:
        """[k] int64 ``status.startTime`` in ns of the pods in ``slots``,
        ``absent`` for those without one."""
        extras = self.extras
        out = np.full(slots.shape[0], absent, np.int64)
        for j, s in enumerate(slots.tolist()):
            extra = extras.get(s)
            if extra is not None and extra[1] is not None:
                out[j] = extra[1]
        return out

    def class_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Per class id (``classes``): its bound pods [C] int64 and how many
        of them are terminating [C] int64 (a free id: 0, 0)."""
        c = len(self.classes)
        dying = np.flatnonzero(self.deleting[:self._top])
        return (np.array(self._class_refs, np.int64),
                np.bincount(self.class_id[dying], minlength=c).astype(np.int64))

    def slots_of_classes(self, chosen: np.ndarray) -> np.ndarray:
        """[k] int64 ascending slots of the bound pods whose class id is
        set in ``chosen`` [C] bool (C = ``len(classes)``), in one pass
        over the slots."""
        top = self._top
        live = self.node_row[:top] >= 0
        return np.flatnonzero(live & chosen[self.class_id[:top]]).astype(np.int64)

    def priorities(self, slots: np.ndarray) -> np.ndarray:
        """[k] int64 ``spec.priority`` (0 when absent) of the pods in ``slots``."""
        return self.class_priority[self.class_id[slots]]

    def arrays(self) -> dict[str, np.ndarray]:
        """The live pods' columns, in bind order: ``key`` [P] object,
        ``node_row`` [P] int64, ``priority`` [P] int64, ``creation_ns`` [P]
        int64 (0: absent), ``class_id`` [P] int32, ``shape_id`` [P] int32,
        ``request`` [P, R] int64 (R: the widest shape; the pods slot is 1)
        and ``nonzero`` [P, 2] int64."""
        slots = np.fromiter(self._slot.values(), np.int64, len(self._slot))
        sid = self.shape_id[slots]
        width = max((s[0].shape[0] for s in self.shapes), default=0)
        req = np.zeros((len(self.shapes), width), np.int64)
        nz = np.zeros((len(self.shapes), 2), np.int64)
        for i, (r, pair) in enumerate(self.shapes):
            req[i, : r.shape[0]] = r
            nz[i] = pair
        return {"key": np.array(list(self._slot), dtype=object),
                "node_row": self.node_row[slots].astype(np.int64),
                "priority": self.priorities(slots),
                "creation_ns": self.creation_ns[slots],
                "class_id": self.class_id[slots],
                "shape_id": sid,
                "request": req[sid], "nonzero": nz[sid]}
