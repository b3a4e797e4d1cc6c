"""The contracts between a ClusterState and what follows its pods.

Derived state kept beside a ClusterState (per-domain pod counts, claims,
volumes, the GPU table in ``topology``) learns of pods through these
protocols, which the state defines and calls; it never names an
implementation.

* :class:`PodListener`: told after each pod is added to (+1) or removed
  from (-1) a node row; :class:`PodBatchListener` also takes the pods of a
  compiled run or block at once.
* :class:`PodRestorer`: derived state whose answer for a pod can differ
  after ``remove_pod`` then ``restore_pod`` (which GPUs it holds);
  preemption's victim search checkpoints it around a temporary removal.

``PodListeners`` is the state's list of listeners, in the order they were
added (the order they are told in).
"""

from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

import numpy as np

from tensorsched.framework.parsing.volumes import pod_volumes
from tensorsched.framework.records.records import PodRecord


@runtime_checkable
class PodListener(Protocol):
    def on_pod(self, record: PodRecord, row: int, delta: int) -> None:
        """Pod ``record`` was just added to (``delta`` +1) or removed from
        (-1) node row ``row``; the state already reflects it."""


@runtime_checkable
class PodBatchListener(PodListener, Protocol):
    def on_pods(self, records, rows: np.ndarray, delta: int) -> None:
        """``on_pod`` for many pods at once: ``records`` a sequence of
        records or a ``PodColumns`` (each item a record built on request),
        ``rows`` [k] int64 their node rows, ``delta`` +1 (a compiled run's
        or block's pods) or +1 / -1 (``cluster_state.add_pods`` /
        ``remove_pods``: pods without host ports or volumes, told after
        all of them changed)."""


@runtime_checkable
class PodRestorer(Protocol):
    def checkpoint(self) -> object:
        """A mark of the whole derived state's transient parts."""

    def rollback(self, mark: object) -> None:
        """Back to ``mark`` (after every suspended pod is restored)."""

    def hold(self, key: str) -> object:
        """What pod ``key`` holds now, before it is taken off for a while."""

    def regain(self, key: str, record: PodRecord, row: int, held: object) -> None:
        """Pod ``key`` is back on ``row``: make it hold ``held`` again."""


def _no_volumes(record: PodRecord) -> bool:
    """``not pod_volumes(record)``, without the parse where the manifest
    lists no volumes (most pods)."""
    spec = record.obj.get("spec") if isinstance(record.obj, dict) else None
    if not (isinstance(spec, dict) and spec.get("volumes")):
        return True
    return not pod_volumes(record)


def _all_plain(records: list) -> bool:
    """Whether no record holds host ports or volumes (each manifest object
    looked at once: pods of a template often share theirs)."""
    seen: set = set()
    for r in records:
        if r.host_ports:
            return False
        obj = id(r.obj)
        if obj not in seen:
            if not _no_volumes(r):
                return False
            seen.add(obj)
    return True


class OnPod:
    """A ``PodListener`` made of one function ``fn(record, row, delta)``."""

    __slots__ = ("on_pod",)

    def __init__(self, fn: Callable[[PodRecord, int, int], None]) -> None:
        self.on_pod = fn


class PodListeners:
    """The listeners of one state, told in the order they were added."""

    def __init__(self) -> None:
        self.each: list = []            # bound on_pod of every listener (read-only)
        self._many: dict = {}           # on_pod -> on_pods, for batch listeners

    def add(self, listener: PodListener) -> None:
        if not isinstance(listener, PodListener):
            raise TypeError(f"{listener!r}: not a PodListener (no on_pod)")
        fn = listener.on_pod
        self.each.append(fn)
        if isinstance(listener, PodBatchListener):
            self._many[fn] = listener.on_pods

    def __len__(self) -> int:
        return len(self.each)

    def pod_added(self, record: PodRecord, row: int) -> None:
        for fn in self.each:
            fn(record, row, 1)

    def pod_removed(self, record: PodRecord, row: int) -> None:
        for fn in self.each:
            fn(record, row, -1)

    def all_many(self) -> bool:
        """Whether every listener has a many-pod form (``PodBatchListener``):
        then all may be told of many pods after they all changed."""
        return len(self._many) == len(self.each)

    def pods_changed(self, records: list, rows: np.ndarray, delta: int) -> None:
        """Pods ``records`` (a list) just added to (``delta`` +1) or removed
        from (-1) ``rows`` ([k] int64) at once (``cluster_state.add_pods`` /
        ``remove_pods``; every listener a batch listener): each listener
        takes them in its many-pod form when no pod holds host ports or
        volumes (what that form promises, as for a compiled run), else
        pod by pod."""
        if _all_plain(records):
            for fn in self.each:
                self._many[fn](records, rows, delta)
            return
        rl = rows.tolist()
        for fn in self.each:
            for rec, row in zip(records, rl):
                fn(rec, row, delta)

    def pods_added(self, pods, rows: np.ndarray) -> None:
        """Pods of a run or block recorded on ``rows`` at once: a batch
        listener takes them as given (records or ``PodColumns``), any other
        pod by pod (records built once for all of them)."""
        many = self._many
        rl = recs = None
        for fn in self.each:
            bulk = many.get(fn)
            if bulk is not None:
                bulk(pods, rows, 1)
            else:
                rl = rows.tolist() if rl is None else rl
                recs = list(pods) if recs is None else recs
                for pod, row in zip(recs, rl):
                    fn(pod, row, 1)
