"""Failures remembered: a pod that fits nowhere, on a cluster where nothing
changed since an alike pod failed, fails again without a pass over the nodes.

Alike: the same profile (``Framework``), the same scheduling signature
(``Framework.signature``: what every deciding plugin reads of the pod, the
runs' key), the same priority and preemptionPolicy (what DefaultPreemption
reads besides), and no nominatedNodeName of its own (its eligibility to
preempt then depends on that node).  Nothing changed: the cluster state's
mutation counter (``ClusterState.version``: every node or pod added, updated
or deleted, every binding, eviction, expiry or terminating mark moves it)
and the nominator's are where they were, and no pod is nominated (nominated
pods are counted into a cycle).  The profile's PostFilter plugins must
promise that their "nothing found" depends on no more
(``RepeatableFailurePlugin``; ``Framework.failures_repeat``).

The queue's queueing hints (a plugin's ``events``) say which events may make
a pod schedulable; they are not enough here, where the failure's every word
must come out as a full cycle's would: a pod bound elsewhere, an event
NodeResourcesFit ignores, may add "Insufficient memory" to a node's reasons
or bring a lower-priority pod that DefaultPreemption could evict.  So every
change of the state forgets every remembered failure; the pods it may help
are moved by the queue, as before, and their next cycle is a full one.

What a remembered failure gives back: the FailedScheduling message (the
diagnosis, PostFilter's message appended), the plugins that rejected the pod
(the unschedulable pool's bookkeeping reads them) and how many nodes the
cycle processed (the rotating start index advances by as many).  The rest -- the
attempt counter (later tie-breaks), requeue and backoff, the event, the
metrics, the outcome -- goes through the same steps as a full cycle's
failure (``SchedulingCycle.attempt``).  A cycle that nominated a node is
never remembered: its preemption changed the cluster.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from tensorsched.framework.parsing.priorities import pod_priority
from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.records.records import MemoKey, PodRecord


@dataclass(frozen=True, slots=True)
class RememberedFailure:
    """A failed cycle's outcome, as a later alike pod gets it again.

    ``advance``: how far the rotating start index moved (the nodes the
    cycle processed, modulo the node count); ``start_index``: where the
    cycle began, or -1 when it processed every node (any start gives the
    same answer)."""

    message: str
    rejectors: frozenset
    advance: int
    start_index: int


def failure_stamp(state, nominator) -> tuple:
    """What a remembered failure holds for: the versions of the cluster
    state and of the nominator (module doc)."""
    return (state.version, nominator.version)


def nominated_in(obj) -> str:
    """A Pod manifest's ``status.nominatedNodeName`` ("" when none)."""
    return ((obj or {}).get("status") or {}).get("nominatedNodeName") or ""


def nominated_node_name(pod: PodRecord) -> str:
    """The pod's ``status.nominatedNodeName`` ("" when none)."""
    return nominated_in(pod.obj)


FAILURE_KEY = MemoKey("failure_memory.key", __name__,
                      "with a memory's number: the pod's failure key")


class FailureMemory:
    """Remembered failures of one scheduler, valid for one stamp (the
    cluster's state and nominator versions): a new stamp forgets them all.

    Keys are small ints, one per (framework, signature, priority,
    preemptionPolicy), kept in the pod's memo under this memory's own name
    and the framework (pods and frameworks may outlive a scheduler): a
    lookup hashes an int, not the signature."""

    def __init__(self) -> None:
        self._name = (FAILURE_KEY, next(_MEMORIES))
        self._stamp: tuple | None = None
        self._failures: dict[int, RememberedFailure] = {}
        self._ids: dict[tuple, int] = {}
        self.hits = 0           # failures answered from memory
        # (pod class, framework) -> key of the last asked (``recall_pod``)
        self._last_class = self._last_fw = None
        self._last_key: int | None = None

    def key(self, fw, pod: PodRecord) -> int | None:
        """The pod's key under profile ``fw``, or None when its failures
        are not remembered (no signature, a PostFilter plugin without the
        promise, a nomination of its own)."""
        if not fw.failures_repeat:
            return None
        memo = pod.memo
        mk = (self._name, fw)
        got = memo.get(mk, _NONE)
        if got is _NONE:
            sig = fw.signature(pod)
            if sig is None:
                got = None
            else:
                full = (fw, sig, pod_priority(pod), pod.preemption_policy)
                got = self._ids.setdefault(full, len(self._ids))
            memo[mk] = got
        if got is None or nominated_node_name(pod):
            return None
        return got

    def recall_pod(self, fw, pod: PodRecord, state, nominator,
                   start_index: int) -> tuple:
        """(key, stamp, failure) of ``pod`` in one call (a cycle's first
        question, asked per pod): ``key`` as ``key`` gives it (None: not
        remembered, and then no stamp), the ``failure_stamp`` of ``state``
        and ``nominator``, and the failure ``recall`` gives (or None).

        The key of the last pod class asked is kept beside the memo (alike
        pods come one after another: no memo key hashed per pod), and an
        unmoved stamp is the remembered one (no tuple made per pod)."""
        if not fw.failures_repeat:
            return _NOTHING
        if pod.pod_class is self._last_class and fw is self._last_fw:
            got = self._last_key
        else:
            got = pod.memo.get((self._name, fw), _NONE)
            if got is _NONE or got is None:
                got = self.key(fw, pod)
                if got is None:
                    return _NOTHING
            # a class's key is its memo's, whatever pod of it asks
            self._last_class, self._last_fw, self._last_key = pod.pod_class, fw, got
        obj = pod.obj       # nominated_node_name, inline
        status = obj.get("status") if obj else None
        if status and status.get("nominatedNodeName"):
            return _NOTHING
        stamp = self._stamp
        if stamp is None or stamp[0] != state.version or stamp[1] != nominator.version:
            return got, (state.version, nominator.version), None
        failure = self._failures.get(got)
        if failure is None or (failure.start_index >= 0 and failure.start_index != start_index):
            return got, stamp, None
        return got, stamp, failure

    def holds(self, state, nominator) -> bool:
        """Whether some failure is remembered for the cluster as it is now
        (``failure_stamp`` of ``state`` and ``nominator``): when not,
        ``recall_pod`` gives no failure whatever the pod, and a cycle may
        take the pod's key only if its own failure is to be remembered
        (``SchedulingCycle.defer_failure_keys``)."""
        stamp = self._stamp
        return (stamp is not None and stamp[0] == state.version
                and stamp[1] == nominator.version and bool(self._failures))

    def recall_alike(self, pod: PodRecord, state, nominator,
                     start_index: int) -> RememberedFailure | None:
        """The failure ``recall_pod`` gives ``pod`` when it is of the pod
        class ``recall_pod`` was last asked about, under the same profile
        (a class has one schedulerName); None otherwise, or when nothing
        is remembered for it (then ask ``recall_pod``).  The question a
        stretch of alike pods asks per pod: no profile, memo or key."""
        if pod.pod_class is not self._last_class:
            return None
        stamp = self._stamp
        if stamp is None or stamp[0] != state.version or stamp[1] != nominator.version:
            return None
        failure = self._failures.get(self._last_key)
        if failure is None or (failure.start_index >= 0 and failure.start_index != start_index):
            return None
        obj = pod.obj       # nominated_node_name, inline
        status = obj.get("status") if obj else None
        if status and status.get("nominatedNodeName"):
            return None
        return failure

    def recall(self, key: int, stamp: tuple, start_index: int) -> RememberedFailure | None:
        """The failure remembered for ``key`` under ``stamp`` (for a cycle
        starting at ``start_index``), or None."""
        if stamp != self._stamp:
            return None
        got = self._failures.get(key)
        if got is None or (got.start_index >= 0 and got.start_index != start_index):
            return None
        return got

    def remember(self, key: int, stamp: tuple, failure: RememberedFailure) -> None:
        """Keep ``failure`` for ``key`` under ``stamp`` (the failures of an
        older stamp are forgotten)."""
        if stamp != self._stamp:
            self._failures.clear()
            self._stamp = stamp
        self._failures[key] = failure

    def forget(self) -> None:
        self._failures.clear()
        self._stamp = None

    def __len__(self) -> int:
        return len(self._failures)


_NONE = object()
_NOTHING = (None, None, None)
_MEMORIES = itertools.count()
