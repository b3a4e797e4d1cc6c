"""FailedScheduling messages of the batched node-local kernel's failures,
built by the framework's own diagnosis (``Framework.diagnosis``,
``Diagnosis.message``, the preemption evaluator's statuses and codes),
from what the kernel counts for a pod that fits nowhere.

``FailureKeys.of(fw, state, plans, pods, static_bits)`` runs, once per pod
class over the universe's nodes, the framework's diagnosis of the
usage-independent filters' reason bits (taints, affinity, unschedulable,
nodeName): each node's status there is a key, the same status interned
once.  The kernel counts, for a failed pod, the nodes each key decides
(the key's filter comes before NodeResourcesFit in the profile, or Fit
passes the node) and, for the nodes Fit decides, each of Fit's reason
bits (``kernels/batch/_local_core.count_failure``).  ``message`` turns
those counts into the text the Scheduler's cycle gives: the statuses
counted (Fit's one per bit: its text is one reason per bit), then, with
DefaultPreemption in the profile, its PostFilter's outcome for a pod that
can preempt nothing (the batch refuses one that could): every node whose
status is UnschedulableAndUnresolvable "not helpful", the others "no
victims", or preemptionPolicy Never's sentence; with DynamicResources,
its answer for a pod without claims ahead of it, in profile order.
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.parsing.priorities import NEVER
from tensorsched.framework.plugins.dynamic_resources import (
    MSG_NO_CYCLE_STATE,
    MSG_NO_NEW_CLAIMS,
    NAME as DRA,
    prefilter_reached,
)
from tensorsched.framework.preemption.evaluator import (
    NO_VICTIMS,
    NOT_ELIGIBLE_POLICY,
    NOT_HELPFUL,
    status_codes,
    status_of_bits,
)
from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.runtime.framework import CycleResult
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.runtime.status import Code, Diagnosis, NodeStatuses, Status
from tensorsched.kernels.batch._local_core import FIT_SLOTS

__all__ = ["FailureKeys"]

_FIT = "NodeResourcesFit"
_UNRESOLVABLE = int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


class FailureKeys:
    """The static statuses of a prober's classes (see the module doc):
    ``s_key`` [C, U] int64 (-1: the static filters pass the node),
    ``key_first`` [K] bool, ``statuses`` [K] and their status codes.
    ``add`` interns the statuses of another state's static bits (a
    probe group whose InterPodAffinity answers differ) into the same keys."""

    def __init__(self, fw, state, pods: list[PodRecord]):
        self.fw = fw
        self.state = state
        self.pods = pods        # one pod of each class (its CycleContext)
        self.statuses: list[Status] = []
        self._key_bits: list[int] = []
        self._index: dict[Status, int] = {}
        self._order = [p.name for p in fw.filters] if fw is not None else []
        # a host filter whose one bit stands for statuses of either code
        # (InterPodAffinity: its required affinity is unresolvable, its
        # anti-affinity not) reports the code with the status, as the
        # Scheduler's preemption reads it (``unresolvable``)
        self._two_codes = {p.name for p in (fw.filters if fw is not None else ())
                           if hasattr(p, "unresolvable")}
        self.key_first = np.zeros(0, np.bool_)
        self.codes: list[int] = []
        self.s_key = np.zeros((0, 0), np.int64)
        post = fw.profile.names("postFilter") if fw is not None else ()
        self.preempts = "DefaultPreemption" in post
        # the PostFilter plugins whose answers the message holds, in profile
        # order: DynamicResources' for a pod that passed PreFilter (the
        # batch holds no pod with claims), DefaultPreemption's
        self._post = [n for n in post if n in ("DefaultPreemption", DRA)]
        self._dra_state = fw is not None and prefilter_reached(fw.profile, Status.OK)
        self._fit: dict[int, Status] = {}
        self._memo: dict = {}

    @staticmethod
    def of(fw, state, plans: list, pods: list[PodRecord], static_bits: np.ndarray) -> FailureKeys:
        """The keys of classes ``plans`` (``pods``: one pod of each) over
        the universe ``state`` whose usage-independent reason bits are
        ``static_bits`` [C, U]."""
        keys = FailureKeys(fw, state, pods)
        keys.s_key = keys.add(state, plans, static_bits)
        return keys

    def add(self, state, plans: list, static_bits: np.ndarray, classes=None,
            pods: list[PodRecord] | None = None, rows: np.ndarray | None = None) -> np.ndarray:
        """[C, U] int64: the status ids of ``static_bits`` [C, U] (the
        universe's rows) as the framework's diagnosis gives them on
        ``state`` (``rows`` [U]: its row of each universe row; default the
        same), for the classes ``classes`` (default every one; the others
        -1), diagnosed with ``pods`` (default the keys' own); new statuses
        are interned after the known ones (ids already given stay)."""
        c, u = static_bits.shape
        pods = self.pods if pods is None else pods
        s_key = np.full((c, u), -1, np.int64)
        rows = np.arange(u, dtype=np.int64) if rows is None else rows
        back = np.full(max(state.n_rows, u), -1, np.int64)
        back[rows] = np.arange(u, dtype=np.int64)
        for k in (range(c) if classes is None else classes):
            bits = static_bits[k]
            if not bits.any():
                continue
            result = CycleResult(all_rows=rows, start=0, reasons=bits, scores=None, total=None,
                                 processed=u, found=0, selected_row=-1,
                                 prefilter_status=Status.OK, prefilter_plugin_rejects={},
                                 active_score_plugins=[], skipped_filters=set(),
                                 query=plans[k].query)
            ns = self.fw.diagnosis(CycleContext(state, pods[k], self.fw), result).node_statuses
            at = back[ns.rows]
            gid = np.empty(len(ns.table), np.int64)
            for j, st in enumerate(ns.table):
                g = self._index.get(st)
                if g is None:
                    g = self._index[st] = len(self.statuses)
                    self.statuses.append(st)
                    self._key_bits.append(int(bits[at[ns.ids == j][0]]))
                gid[j] = g
            s_key[k, at] = gid[ns.ids]
        self._refresh()
        return s_key

    def _refresh(self) -> None:
        """``key_first`` and ``codes`` of every status interned so far."""
        order = self._order
        fit_at = order.index(_FIT) if _FIT in order else len(order)
        self.key_first = np.array(
            [st.plugin not in order or order.index(st.plugin) < fit_at for st in self.statuses],
            np.bool_)
        self.codes = (status_codes(self.fw, np.asarray(self._key_bits, np.int64)).tolist()
                      if self.statuses else [])
        for j, st in enumerate(self.statuses):
            if st.plugin in self._two_codes:
                self.codes[j] = int(st.code)

    def _fit_status(self, bit: int) -> Status:
        st = self._fit.get(bit)
        if st is None:
            ctx = CycleContext(self.state, self.pods[0], self.fw)
            st = self._fit[bit] = status_of_bits(self.fw, ctx, 0, 1 << bit)
        return st

    def message(self, pod: PodRecord, num_nodes: int, counts: np.ndarray) -> str | None:
        """The FailedScheduling message of ``pod`` on a cluster of
        ``num_nodes`` nodes from the kernel's ``counts`` [K + 65]; None
        for a cluster without nodes (the Scheduler's text then is its
        own: ask it)."""
        if num_nodes == 0:
            return None
        never = pod.preemption_policy == NEVER
        key = (never, num_nodes, counts.tobytes())
        got = self._memo.get(key)
        if got is not None:
            return got
        # the statuses known when the kernel counted (later ones come after)
        k = counts.shape[0] - FIT_SLOTS
        table, n, unhelpful = [], [], 0
        for j in np.flatnonzero(counts[:k]).tolist():
            table.append(self.statuses[j])
            n.append(int(counts[j]))
            if self.codes[j] == _UNRESOLVABLE:
                unhelpful += int(counts[j])
        for b in np.flatnonzero(counts[k:k + 64]).tolist():
            table.append(self._fit_status(b))
            n.append(int(counts[k + b]))
        diag = Diagnosis(num_nodes, _statuses(table, n))
        parts = []
        for name in self._post:
            if name == DRA:
                if not self._dra_state:         # its Error ends the PostFilter plugins
                    parts = [MSG_NO_CYCLE_STATE]
                    break
                parts.append(MSG_NO_NEW_CLAIMS)
            elif never:
                parts.append(NOT_ELIGIBLE_POLICY)
            else:
                helps = num_nodes - unhelpful
                pre = Diagnosis(num_nodes, _statuses(
                    [Status(Code.UNSCHEDULABLE, (NOT_HELPFUL,)),
                     Status(Code.UNSCHEDULABLE, (NO_VICTIMS,))], [unhelpful, helps]))
                parts.append("preemption: " + pre.message())
        if parts:
            diag.post_filter_msg = ", ".join(parts)
        got = self._memo[key] = diag.message()
        return got


def _statuses(table: list, counts: list) -> NodeStatuses:
    """NodeStatuses where ``counts[i]`` nodes have ``table[i]`` (zeros dropped)."""
    keep = [i for i, c in enumerate(counts) if c]
    ids = np.repeat(np.arange(len(keep), dtype=np.int64),
                    np.asarray([counts[i] for i in keep], np.int64))
    return NodeStatuses(np.zeros(0, np.int64), ids, [table[i] for i in keep])
