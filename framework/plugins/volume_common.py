"""What the four volume plugins share: their filter contract (per-node
codes for all nodes at once, reasons for explain), claim lookups with
upstream's messages, and batching rules.

A volume filter computes, once per cycle and catalog version, a code per
node row (0 = fits) and a table of the statuses the non-zero codes stand
for; ``filter`` reads the codes of the evaluated rows, ``explain_status``
the status of one.  Each plugin owns a fixed reason bit
(``layout.HOST_BIT_*``): the four take no user-filter slot.

Batching: a pod with claims or disks is signed None (scheduled on its own:
its answers depend on claims that each pod of a StatefulSet names
differently and that binding changes); a pod without them is skipped by
every volume plugin whatever the cluster holds, which ``run_keeps_skip``
promises.  Reserve / PreBind change the catalog only for pods with claims,
which never join a compiled run: ``run_safe`` holds for every run.
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.parsing.volumes import (
    VOL_EPHEMERAL,
    VOL_OTHER,
    PodVolume,
    pod_volumes,
)
from tensorsched.framework.records.records import MemoKey
from tensorsched.framework.runtime.plugin import PRE_FILTER, Plugin
from tensorsched.framework.runtime.status import SKIP, Code, Status
from tensorsched.framework.state.derived import StateKey
from tensorsched.framework.state.volumes import volume_catalog

# kinds of in-tree disks VolumeRestrictions compares between pods
DISK_KINDS = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


def uses_volumes(pod) -> bool:
    """The pod has a claim, an ephemeral volume or an in-tree disk source:
    something a volume plugin reads (kept in the pod's memo)."""
    memo = pod.memo
    got = memo.get(_USES_MEMO)
    if got is None:
        # a template's pods share the memo, and the volumes the plugins read
        # (``volumes.read_volumes``) are part of the template: one answer
        got = memo[_USES_MEMO] = any(v.kind != VOL_OTHER or v.source_kind
                                     for v in pod_volumes(pod))
    return got


_USES_MEMO = MemoKey("volumes.uses", __name__,
                     "whether the pod has a volume a volume plugin reads (``uses_volumes``)")


def claim_missing_message(name: str) -> str:
    return f'persistentvolumeclaim "{name}" not found'


def not_owner_message(namespace: str, claim: str, pod) -> str:
    return (f"PVC {namespace}/{claim} was not created for pod "
            f"{pod.namespace}/{pod.name} (pod is not owner)")


def owned_by(claim, pod) -> bool:
    """An ephemeral volume's claim must be controlled by the pod (its uid)."""
    return bool(claim.controller_uid) and claim.controller_uid == pod.uid


KEPT_CODES = StateKey("volumes.kept", __name__,
                      "a filter's key of values -> its codes over every node row")


class VolumeFilter(Plugin):
    """Host filter with per-row codes (see module doc).  Subclasses set
    ``name``, ``reason_bit`` and implement ``prepare`` (PreFilter's work:
    a Status, or None after filling ``data``) and ``codes``."""

    reason_bit: int = 0
    run_safe = True
    reads_pods = False      # whether the answers depend on the pods on the nodes

    def __init__(self, handle=None):
        self.handle = handle
        self._last = None       # the data of the last cycle (see _cycle)

    # ---- batching
    def sign(self, pod):
        return None if uses_volumes(pod) else ()

    def run_keeps_skip(self, ctx, point: str) -> bool:
        return not uses_volumes(ctx.pod)

    # ---- cycle
    def _cycle(self, ctx) -> dict:
        """This plugin's per-cycle data, recomputed when the catalog or the
        node set changed (preemption's victim search removes pods)."""
        cat = volume_catalog(ctx.state)
        tag = (cat.version, ctx.state.structure_tag(),
               cat.pods_version if self.reads_pods else 0, id(cat), ctx.pod.key)
        data = ctx.data.get(self.name)
        if data is None or data.get("tag") != tag:
            # the binding cycle's context is a new one: the last cycle's
            # answers hold while nothing they read changed
            last = self._last
            if last is not None and last["tag"] == tag and last["pod"] is ctx.pod:
                data = last
            else:
                data = {"tag": tag, "catalog": cat, "pod": ctx.pod}
                data["status"] = self.prepare(ctx, cat, data)
            ctx.data[self.name] = data
            self._last = data
        return data

    def pre_filter(self, ctx):
        if not uses_volumes(ctx.pod):
            return SKIP, None           # every volume plugin skips such a pod
        st = self._cycle(ctx)["status"]
        return (st if st is not None else Status.OK), None

    def spec_answer(self, pod, point):
        """``SpecAnswerPlugin``: PreFilter skips a pod without volumes
        (nothing read, nothing kept); a pod with them is called."""
        if point == PRE_FILTER and not uses_volumes(pod):
            return Code.SKIP
        return None

    def _node_codes(self, ctx) -> tuple[np.ndarray, list]:
        """([n_rows] int64 code per node row, the statuses of the codes:
        table[0] is Success).  A plugin whose answer is the same for every
        node, or one it keeps from an earlier pod, hands over shared arrays
        (never written)."""
        data = self._cycle(ctx)
        got = data.get("codes")
        if got is None:
            state = ctx.state
            st = data["status"]
            if st is not None and st.code != Code.SKIP:
                # a failed PreFilter fails every node the same way
                codes = np.zeros(max(state.n_rows, 1), np.int64)
                codes[state.valid_rows()] = 1
                got = (codes, [Status.OK, st])
            elif st is None:
                got = self.full_codes(ctx, data)
                if got is None:
                    rows = state.valid_rows()
                    c = self.codes(ctx, data, rows)
                    if c is None:
                        got = (None, [Status.OK])
                    else:
                        codes = np.zeros(max(state.n_rows, 1), np.int64)
                        codes[rows] = c[0]
                        got = (codes, [Status.OK, *c[1]])
            else:
                got = (None, [Status.OK])
            if got[0] is None:          # every node fits
                got = (_zeros(state), got[1])
                data["all_fit"] = True
            data["codes"] = got
        return got

    def node_mask(self, ctx):
        """``NodeMaskPlugin``: (key, [n_rows] bool or None) when this pod's
        answer cannot change with the pods on the nodes: every node fits
        (key "all"), or a plugin that reads no pods (``reads_pods`` False)
        has its rows; the key names answers kept across pods (None: this
        pod's own)."""
        codes, _ = self._node_codes(ctx)
        data = ctx.data[self.name]
        if data.get("all_fit"):
            return "all", None
        if self.reads_pods:
            return None
        ok = data.get("ok")
        if ok is None:
            ok = data["ok"] = codes == 0
        return data.get("mask_key"), ok

    def full_codes(self, ctx, data):
        """``_node_codes``'s answer straight from what the plugin keeps, or
        None (then ``codes`` runs on the live rows)."""
        return None

    def kept_codes(self, ctx, data, key, owners: tuple):
        """``codes`` over every node row, kept under ``key`` for the pods
        that ask the same (a key of values; ``owners``: the records the
        answer was made from, trusted while they are the same objects) as
        long as the nodes stay; also sets the pod's mask (``node_mask``)."""
        state = ctx.state
        memo = state.derived.memo(KEPT_CODES,
                          (state.structure_tag(), id(data["catalog"])), part=self.name)
        got = memo.get(key)
        if got is None or len(got[3]) != len(owners) or any(
                a is not b for a, b in zip(got[3], owners)):
            n = max(state.n_rows, 1)
            c = self.codes(ctx, data, np.arange(n, dtype=np.int64))
            if c is None:
                codes, table = _zeros(state), [Status.OK]
            else:
                codes, table = c[0], [Status.OK, *c[1]]
                codes.flags.writeable = False
            ok = codes == 0
            ok.flags.writeable = False
            got = memo[key] = (codes, table, ok, owners)
        data["ok"] = got[2]
        data["mask_key"] = (self.name, id(got[2]))
        return got[0], got[1]

    def filter(self, ctx, rows: np.ndarray) -> np.ndarray:
        codes, _ = self._node_codes(ctx)
        data = ctx.data[self.name]
        if data.get("all_fit"):
            return np.ones(rows.shape[0], np.bool_)
        ok = data.get("ok")
        if ok is None:
            ok = data["ok"] = codes == 0
        return ok[rows]

    def explain_status(self, ctx, row: int) -> Status:
        codes, table = self._node_codes(ctx)
        return table[int(codes[row])].with_plugin(self.name)

    def explain_reasons(self, ctx, row: int) -> list:
        return list(self.explain_status(ctx, row).reasons)

    def explain_many(self, ctx, rows: np.ndarray):
        codes, table = self._node_codes(ctx)
        c = codes[rows]
        uniq, inverse = np.unique(c, return_inverse=True)
        return inverse.reshape(-1).astype(np.int64), [table[int(u)].with_plugin(self.name)
                                                      for u in uniq]

    # ---- subclass hooks
    def prepare(self, ctx, cat, data) -> Status | None:
        raise NotImplementedError

    def codes(self, ctx, data, rows: np.ndarray) -> tuple[np.ndarray, list] | None:
        """([M] int64 code per row of ``rows``: 0 fits, k > 0 the k-th
        status of the returned list), or None when every node fits."""
        raise NotImplementedError


ZEROS = StateKey("volumes.zeros", __name__,
                 "None -> [n_rows] int64 zeros (read-only)")


def _zeros(state) -> np.ndarray:
    """[n_rows] int64 zeros shared while the node set stays (read-only)."""
    memo = state.derived.memo(ZEROS, state.structure_tag())
    got = memo.get(None)
    if got is None:
        got = memo[None] = np.zeros(max(state.n_rows, 1), np.int64)
        got.flags.writeable = False
    return got


def row_positions(state, rows: np.ndarray) -> np.ndarray:
    """[n_rows] int64: the position of each node row in ``rows``, -1 absent."""
    pos = np.full(max(state.n_rows, 1), -1, np.int64)
    pos[rows] = np.arange(rows.shape[0])
    return pos


def claim_volumes(pod) -> list[PodVolume]:
    return [v for v in pod_volumes(pod) if v.kind != VOL_OTHER]


def is_ephemeral(v: PodVolume) -> bool:
    return v.kind == VOL_EPHEMERAL
