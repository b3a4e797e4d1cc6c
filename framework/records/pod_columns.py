"""Pods as columns: a pod class and the per-pod fields, records on request.

Pods of one template are equal but for a few per-pod fields; their records
share a ``pod_class`` (``records.PodClass``).  A pod *class* is what they
share: every field but ``name``, ``uid``, ``creation_ns``, ``start_ns``,
``node_name``, ``phase``, ``deleting`` and ``obj`` (``key`` follows from the
name), held as the first record of the class seen (its *prototype*; its
own per-pod fields are never read through the class).  A pod is then a
class id, its key, its creation time, its object (by reference) and, only
when any is set, its other per-pod fields (``EXTRA_FIELDS``: a pod parsed
already bound or running, or with a uid).  ``build_record`` makes the
record back, equal to the one the pod came as and sharing its memo.

:class:`PodColumns` holds many pods so, as a read-only sequence of records
built on request; the scheduling queue keeps pending pods in it and the
bound-pod table (``state.bound_pods``) takes them from it without a record
per pod.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import compress, repeat
from operator import attrgetter

import numpy as np

from tensorsched.framework.arguments import Arguments, shown

from .records import PodRecord

__all__ = ["EXTRA_FIELDS", "NO_EXTRAS", "PodColumns", "build_record", "extras_of"]

#: The per-pod fields kept apart only when any differs from ``NO_EXTRAS``.
EXTRA_FIELDS = ("uid", "start_ns", "node_name", "phase", "deleting")
NO_EXTRAS = ("", None, "", "", False)
extras_of = attrgetter(*EXTRA_FIELDS)
_class_of, _key_of, _obj_of = attrgetter("pod_class"), attrgetter("key"), attrgetter("obj")
_creation_of = attrgetter("creation_ns")
_new = object.__new__
_FEW_CLASSES = 8                # classes found by a scan of the list each


def build_record(proto: PodRecord, key: str, creation_ns: int, obj,
                 extra: tuple = NO_EXTRAS) -> PodRecord:
    """The record of the pod of class ``proto`` with these per-pod fields
    (``extra``: the ``EXTRA_FIELDS`` values).  A dict copy, about half a
    microsecond; the memo is the class's."""
    fields = proto.__dict__.copy()
    fields["key"] = key
    fields["name"] = key[len(proto.namespace) + 1:]
    fields["creation_ns"] = creation_ns
    fields["obj"] = obj
    (fields["uid"], fields["start_ns"], fields["node_name"], fields["phase"],
     fields["deleting"]) = extra
    out = _new(type(proto))
    out.__dict__ = fields
    return out


class PodColumns(Sequence):
    """n pods as columns (module doc), a ``Sequence[PodRecord]`` whose
    records are built on request.

    ``keys`` list[str] (``namespace/name``); ``class_id`` [n] int32 into
    ``classes`` (prototype records, shared by slices); ``creation_ns`` [n]
    int64; ``manifests`` list (each pod's ``obj``); ``extras`` position ->
    ``EXTRA_FIELDS`` values, for the pods that have any set."""

    __slots__ = ("keys", "class_id", "classes", "creation_ns", "manifests", "extras")

    def __init__(self, keys: list[str], class_id: np.ndarray, classes: list[PodRecord],
                 creation_ns: np.ndarray, manifests: list, extras: dict[int, tuple]):
        self.keys = keys
        self.class_id = class_id
        self.classes = classes
        self.creation_ns = creation_ns
        self.manifests = manifests
        self.extras = extras

    @classmethod
    def from_records(cls, records) -> PodColumns:
        """The columns of ``records`` (a ``PodColumns`` is returned as is);
        pods sharing a memo share a class.  Per pod only C-level passes
        (``map``, dict building), per class a Python step."""
        if isinstance(records, PodColumns):
            return records
        if not isinstance(records, list):
            records = Arguments("PodColumns.from_records").sequence(
                "records", records, items="PodRecords")
        if not all(map(isinstance, records, repeat(PodRecord))):     # a C-level pass
            i = next(i for i, r in enumerate(records) if not isinstance(r, PodRecord))
            raise Arguments("PodColumns.from_records").error(
                f"records[{i}]", f"must be a PodRecord, got {shown(records[i])}")
        n = len(records)
        # classes numbered in order of first appearance, each prototype its
        # first record: dict passes at C level, Python per class only
        class_of = list(map(_class_of, records))
        ids_of = dict.fromkeys(class_of)
        ids_of = dict(zip(ids_of, range(len(ids_of))))
        if len(ids_of) <= _FEW_CLASSES:     # a run's or a template's: a scan each
            classes = [records[class_of.index(c)] for c in ids_of]
        else:
            first_at = dict(zip(reversed(class_of), range(n - 1, -1, -1)))   # last write wins
            classes = [records[first_at[c]] for c in ids_of]
        ids = (np.zeros(n, np.int32) if len(ids_of) == 1
               else np.fromiter(map(ids_of.__getitem__, class_of), np.int32, n))
        extra = list(map(extras_of, records))
        unusual = list(map(NO_EXTRAS.__ne__, extra))
        extras = {i: extra[i] for i in compress(range(n), unusual)} if any(unusual) else {}
        try:
            creation = np.fromiter(map(_creation_of, records), np.int64, n)
        except TypeError:       # a record built by hand with creation_ns None
            creation = np.fromiter((r.creation_ns or 0 for r in records), np.int64, n)
        return cls(list(map(_key_of, records)), ids, classes, creation,
                   list(map(_obj_of, records)), extras)

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.take(range(len(self.keys))[i])
        if i < 0:
            i += len(self.keys)
        return build_record(self.classes[self.class_id[i]], self.keys[i],
                            int(self.creation_ns[i]), self.manifests[i],
                            self.extras.get(i, NO_EXTRAS))

    def __iter__(self) -> Iterator[PodRecord]:
        classes, keys, objs, extras = self.classes, self.keys, self.manifests, self.extras
        for i, (c, t) in enumerate(zip(self.class_id.tolist(), self.creation_ns.tolist())):
            yield build_record(classes[c], keys[i], t, objs[i], extras.get(i, NO_EXTRAS))

    def take(self, positions) -> PodColumns:
        """The pods at ``positions`` (a range or a list of ints), in that
        order, as columns sharing this one's classes."""
        if isinstance(positions, range) and positions.step == 1:
            a, b = positions.start, positions.stop
            extras = {i - a: e for i, e in self.extras.items() if a <= i < b}
            return PodColumns(self.keys[a:b], self.class_id[a:b], self.classes,
                              self.creation_ns[a:b], self.manifests[a:b], extras)
        pos = list(positions)
        idx = np.array(pos, np.int64)
        extras = {}
        if self.extras:
            get = self.extras.get
            extras = {j: e for j, e in enumerate(map(get, pos)) if e is not None}
        keys, objs = self.keys, self.manifests
        return PodColumns([keys[i] for i in pos], self.class_id[idx], self.classes,
                          self.creation_ns[idx], [objs[i] for i in pos], extras)

    def with_first(self, record: PodRecord) -> PodColumns:
        """These pods after ``record``, with a class list of their own
        holding only the classes they use (a run's pods out of a large
        block: the cost follows the run, not the block)."""
        # the classes used, in id order, renumbered from 1 through a table
        # over the class list (no sort of the pods' ids)
        present = np.zeros(len(self.classes), np.bool_)
        present[self.class_id] = True
        used = np.flatnonzero(present)
        renumber = np.zeros(len(self.classes), np.int32)
        renumber[used] = np.arange(1, used.shape[0] + 1, dtype=np.int32)
        classes = [record] + [self.classes[c] for c in used.tolist()]
        extras = {i + 1: e for i, e in self.extras.items()}
        extra = extras_of(record)
        if extra != NO_EXTRAS:
            extras[0] = extra
        return PodColumns(
            [record.key] + self.keys,
            np.concatenate([np.zeros(1, np.int32), renumber[self.class_id]]),
            classes,
            np.concatenate([np.array([record.creation_ns or 0], np.int64), self.creation_ns]),
            [record.obj] + self.manifests, extras)

    def has_node_names(self) -> bool:
        """Whether any pod has ``spec.nodeName`` set."""
        at = EXTRA_FIELDS.index("node_name")
        return any(e[at] for e in self.extras.values())

    def priorities(self) -> np.ndarray:
        """[n] int64 ``spec.priority`` (0 when absent), from the classes."""
        per_class = np.array([c.priority or 0 for c in self.classes], np.int64)
        return per_class[self.class_id] if len(self.keys) else np.zeros(0, np.int64)
