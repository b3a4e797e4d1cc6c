"""Attached CSI volumes per node, kept as pods come and go (NodeVolumeLimits'
counts without recounting a node's pods every cycle).

A volume counts against a node's CSI attach limit under its unique name
``<driver>/<handle>`` (``volume_ids``): a bound claim's CSI volume (or its
migratable in-tree volume as the plugin's CSI driver), an unbound claim
through its StorageClass's provisioner as ``<driver>/<namespace>/<claim>``,
an inline migratable volume likewise.  :class:`AttachCounts` keeps, per
node row, how many bound pods use each unique name and how many unique
names each driver has there; a pod's names are recomputed when the claims
it uses change (a binding, a provisioning, an Unreserve), so the counts are
always what recounting the node's pods from scratch gives.  Nothing is
kept until the first reader asks (``ensure``): a cluster whose CSINodes
limit no driver never pays for the counts.
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.parsing.volumes import (
    IN_TREE_TO_CSI,
    MIGRATABLE,
    VOL_EPHEMERAL,
    VOL_OTHER,
    pod_volumes,
)


def volume_ids(cat, pod, migrated: bool = True) -> dict[str, str]:
    """{unique name: driver} of ``pod``'s volumes that count against CSI
    limits on a node where in-tree migration is ``migrated``; a missing
    claim, or an ephemeral claim the pod does not own, counts nothing."""
    out: dict[str, str] = {}
    for v in pod_volumes(pod):
        if v.kind == VOL_OTHER:
            got = MIGRATABLE.get(v.source_kind)
            if got is not None and migrated:
                out[f"{got[1]}/{v.field(got[2], '')}"] = got[1]
            continue
        claim = cat.claim(pod.namespace, v.claim)
        if claim is None:
            continue
        if v.kind == VOL_EPHEMERAL and not (claim.controller_uid
                                            and claim.controller_uid == pod.uid):
            continue
        pv = cat.pvs.get(claim.volume_name) if claim.volume_name else None
        if pv is not None:
            got = pv.csi_id(migrated)
            if got is not None:
                out[f"{got[0]}/{got[1]}"] = got[0]
            continue
        cls = cat.classes.get(claim.storage_class) if claim.storage_class else None
        if cls is None:
            continue
        driver = cls.provisioner
        if driver in IN_TREE_TO_CSI:
            if not migrated:
                continue
            driver = IN_TREE_TO_CSI[driver]
        out[f"{driver}/{claim.namespace}/{claim.name}"] = driver
    return out


class AttachCounts:
    """Per node row: unique volume name -> number of bound pods using it,
    and driver -> number of unique names; per name, the rows holding it."""

    def __init__(self, cat):
        self.cat = cat
        self.refs: dict[int, dict[str, int]] = {}       # row -> name -> pods
        self.drivers: dict[str, dict[int, int]] = {}    # driver -> row -> names
        self.holders: dict[str, set[int]] = {}          # name -> rows
        self.pods: dict[str, tuple] = {}                # pod key -> (row, pod, ids)
        self.by_claim: dict[str, set[str]] = {}         # claim key -> pod keys
        self.active = False

    def ensure(self) -> "AttachCounts":
        """Start keeping the counts (counting the bound pods once)."""
        if not self.active:
            self.active = True
            for row, pods in self.cat.row_pods.items():
                for pod in pods.values():
                    self.add(pod, row)
        return self

    # ------------------------------------------------------------------ reads
    def attached(self, row: int) -> dict[str, int]:
        """{unique name: pods using it} on node ``row``."""
        return self.refs.get(int(row), {})

    def rows_holding(self, name: str) -> set[int]:
        """The node rows where volume ``name`` is attached."""
        return self.holders.get(name, set())

    def driver_column(self, driver: str, n_rows: int) -> np.ndarray:
        """[n_rows] int64: unique volumes of ``driver`` attached per row."""
        col = np.zeros(max(n_rows, 1), np.int64)
        per = self.drivers.get(driver)
        if per:
            col[np.fromiter(per.keys(), np.int64, len(per))] = np.fromiter(
                per.values(), np.int64, len(per))
        return col

    # ---------------------------------------------------------------- updates
    def add(self, pod, row: int) -> None:
        if not self.active:
            return
        ids = volume_ids(self.cat, pod)
        self.pods[pod.key] = (int(row), pod, ids)
        for v in pod_volumes(pod):
            if v.claim:
                self.by_claim.setdefault(f"{pod.namespace}/{v.claim}", set()).add(pod.key)
        self._apply(int(row), ids, 1)

    def remove(self, pod_key: str) -> None:
        got = self.pods.pop(pod_key, None)
        if got is None:
            return
        row, pod, ids = got
        for v in pod_volumes(pod):
            if v.claim:
                k = f"{pod.namespace}/{v.claim}"
                users = self.by_claim.get(k)
                if users is not None:
                    users.discard(pod_key)
                    if not users:
                        del self.by_claim[k]
        self._apply(row, ids, -1)

    def claims_changed(self, claim_keys) -> None:
        """The claims ``claim_keys`` (or the volumes bound to them) changed:
        the bound pods using them count their volumes again."""
        if not self.active:
            return
        touched = set()
        for k in claim_keys:
            touched |= self.by_claim.get(k, set())
        for key in sorted(touched):
            row, pod, old = self.pods[key]
            new = volume_ids(self.cat, pod)
            if new != old:
                self._apply(row, old, -1)
                self._apply(row, new, 1)
                self.pods[key] = (row, pod, new)

    def recount(self) -> None:
        """Every pod's volumes again (the catalog's claims were replaced)."""
        self.claims_changed(list(self.by_claim))

    def _apply(self, row: int, ids: dict[str, str], sign: int) -> None:
        if not ids:
            return
        refs = self.refs.setdefault(row, {})
        for name, driver in ids.items():
            n = refs.get(name, 0) + sign
            if n > 0:
                refs[name] = n
                if n == 1:              # a name new on the row
                    self._driver(driver, row, 1)
                    self.holders.setdefault(name, set()).add(row)
            else:
                refs.pop(name, None)
                self._driver(driver, row, -1)
                rows = self.holders.get(name)
                if rows is not None:
                    rows.discard(row)
                    if not rows:
                        del self.holders[name]
        if not refs:
            del self.refs[row]

    def _driver(self, driver: str, row: int, sign: int) -> None:
        per = self.drivers.setdefault(driver, {})
        n = per.get(row, 0) + sign
        if n > 0:
            per[row] = n
        else:
            per.pop(row, None)
            if not per:
                del self.drivers[driver]
