"""What the four volume plugins share: their filter contract (per-node
codes for all nodes at once, reasons for explain), claim lookups with
upstream's messages, and batching rules.

A volume filter computes, once per cycle and catalog version, a code per
node row (0 = fits) and a table of the statuses the non-zero codes stand
for; ``filter`` reads the codes of the evaluated rows, ``explain_status``
the status of one.  Each plugin owns a fixed reason bit
(``layout.R_VOLUME_*``): the four take no user-filter slot.

Batching: a pod with claims or disks is signed None (scheduled on its own:
its answers depend on claims that each pod of a StatefulSet names
differently and that binding changes); a pod without them is skipped by
every volume plugin whatever the cluster holds, which ``run_keeps_skip``
promises.  Reserve / PreBind change the catalog only for pods with claims,
which never join a compiled run: ``run_safe`` holds for every run.
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.objects.volumes import (
    VOL_EPHEMERAL,
    VOL_OTHER,
    PodVolume,
    pod_volumes,
)
from tensorsched.framework.runtime.plugin import Plugin
from tensorsched.framework.runtime.status import Code, Status
from tensorsched.framework.state.volumes import volume_catalog

# kinds of in-tree disks VolumeRestrictions compares between pods
DISK_KINDS = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


def uses_volumes(pod) -> bool:
    """The pod has a claim, an ephemeral volume or an in-tree disk source:
    something a volume plugin reads."""
    return any(v.kind != VOL_OTHER or v.source_kind for v in pod_volumes(pod))


def claim_missing_message(name: str) -> str:
    return f'persistentvolumeclaim "{name}" not found'


def not_owner_message(namespace: str, claim: str, pod) -> str:
    return (f"PVC {namespace}/{claim} was not created for pod "
            f"{pod.namespace}/{pod.name} (pod is not owner)")


def owned_by(claim, pod) -> bool:
    """An ephemeral volume's claim must be controlled by the pod (its uid)."""
    return bool(claim.controller_uid) and claim.controller_uid == pod.uid


class VolumeFilter(Plugin):
    """Host filter with per-row codes (see module doc).  Subclasses set
    ``name``, ``reason_bit`` and implement ``prepare`` (PreFilter's work:
    a Status, or None after filling ``data``) and ``codes``."""

    reason_bit: int = 0
    run_safe = True

    def __init__(self, handle=None):
        self.handle = handle

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
        tag = (cat.version, ctx.state.structure_tag(), ctx.state.version)
        data = ctx.data.get(self.name)
        if data is None or data.get("tag") != tag:
            data = {"tag": tag, "catalog": cat}
            data["status"] = self.prepare(ctx, cat, data)
            ctx.data[self.name] = data
        return data

    def pre_filter(self, ctx):
        st = self._cycle(ctx)["status"]
        return (st if st is not None else Status.OK), None

    def _node_codes(self, ctx) -> tuple[np.ndarray, list]:
        data = self._cycle(ctx)
        got = data.get("codes")
        if got is None:
            state = ctx.state
            rows = state.valid_rows()
            codes = np.zeros(max(state.n_rows, 1), np.int64)
            table: list = [Status.OK]
            st = data["status"]
            if st is not None and st.code != Code.SKIP:
                # a failed PreFilter fails every node the same way
                codes[rows] = 1
                table.append(st)
            elif st is None:
                c, t = self.codes(ctx, data, rows)
                codes[rows] = c
                table.extend(t)
            got = data["codes"] = (codes, table)
        return got

    def filter(self, ctx, rows: np.ndarray) -> np.ndarray:
        codes, _ = self._node_codes(ctx)
        return codes[rows] == 0

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

    def codes(self, ctx, data, rows: np.ndarray) -> tuple[np.ndarray, list]:
        """([M] int64 code per row of ``rows``: 0 fits, k > 0 the k-th
        status of the returned list)."""
        raise NotImplementedError


def claim_volumes(pod) -> list[PodVolume]:
    return [v for v in pod_volumes(pod) if v.kind != VOL_OTHER]


def is_ephemeral(v: PodVolume) -> bool:
    return v.kind == VOL_EPHEMERAL
