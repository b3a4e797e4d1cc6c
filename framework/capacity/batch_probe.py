"""Capacity probes as one batch: many what-if clusters cut from one
universe of nodes (the cluster's nodes plus the nodes some probes add),
each scheduling its pods with the default profile's node-local plugins in
one call of the batched kernel (``kernels.batch.local_cpu``), with the
placements the Scheduler's ``schedule_pending`` gives on a fresh cluster
of those nodes and the bound pods.

``LocalProber(cluster, nodes, bound, pods, seed)`` compiles the pods once
(their classes: pods of one scheduling signature share one) against the
universe; ``prober.run(node_sets, pod_lists)`` answers every probe (a set of
node names, the pods it schedules) in one call.

What a probe of the Scheduler does, and the kernel with it: the pods enter
the queue together and are attempted in queue order (priority, then the
order given), every attempt a cycle (filter, score over the nodes the
percentage of nodes to score reaches, normalize, weigh, the seeded
tie-break of that attempt); a pod that fits nowhere is set aside (its
FailedScheduling) and retried only after the queue is empty (the
unschedulable pool's flush, on the clock), when nothing it could use has
been freed (no pod leaves, a node-local filter's answer only closes as pods
are placed): it stays unschedulable and the placements of the others are
those of the first pass.  The probe's messages are the Scheduler's; a
caller that needs them (a pod that does not fit) asks the Scheduler.

Refused (``BatchProfileError``, naming the plugin; the caller then takes
the per-probe path): a plugin outside the default profile's; a pod for
which PodTopologySpread or InterPodAffinity has work (constraints or
terms, the system default spreading of a Deployment's, ReplicaSet's or
StatefulSet's pod, existing pods' terms), volumes, claims (DRA), host
ports, scheduling gates, a PreFilter that narrows or rejects; pods of more
than one profile; a pod that could preempt (DefaultPreemption with a pod of
lower priority in the cluster or the workload).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from tensorsched.framework.errors import BackendError, TensorschedError
from tensorsched.framework.parsing.priorities import pod_priority
from tensorsched.framework.records.records import NodeRecord, PodRecord
from tensorsched.framework.runtime.framework import CyclePlan, num_feasible_nodes_to_find
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import Cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.kernels import layout as L
from tensorsched.kernels._errors import BackendUnavailable
from tensorsched.kernels.backend_names import AUTO, BATCH
from tensorsched.kernels.fused.backends import resolve_backend
from tensorsched.kernels.batch.local_cpu import LocalBatch, run_local_batch
from tensorsched.kernels.fused import filters as KF
from tensorsched.kernels.fused import scores as SC

from .batch_messages import FailureKeys
from .common import fresh_cluster

__all__ = ["BatchProfileError", "LocalProber", "DEFAULT_PLUGINS", "batched_backend",
           "speculation_levels", "probe_path"]

# kube-scheduler's default profile (and its queue sort, binder, gates)
DEFAULT_PLUGINS = frozenset({
    "PrioritySort", "SchedulingGates", "NodeUnschedulable", "NodeName", "TaintToleration",
    "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
    "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DefaultPreemption",
    "NodeResourcesBalancedAllocation", "ImageLocality", "DefaultBinder", "DynamicResources"})
CHUNK = 256                 # probes per kernel call (bounds the per-call arrays)
_STATIC_SLOTS = (L.S_TAINT, L.S_NODE_AFFINITY)


class BatchProfileError(TensorschedError):
    """A profile or pod the batched node-local kernel does not cover (the
    message names the plugin): the per-probe path answers instead."""


def batched_backend(backend: str) -> str:
    """Where a backend runs capacity probes as one batch: "cuda" (the CUDA
    kernel; ``auto`` with a GPU, the batch stage's choice), "cpu" (the CPU
    twin: numba, auto without a GPU) or "" (numpy: per probe)."""
    if backend == AUTO:
        backend = resolve_backend(backend, BATCH)
    return {"cuda": "cuda", "numba": "cpu"}.get(backend, "")


def speculation_levels(device: str) -> int:
    """Levels of a binary search to evaluate per batched call: six (63
    counts) on a GPU; on the CPU twin enough to keep its threads busy (at
    least two: three counts)."""
    if device == "cuda":
        return 6
    return max(2, int(math.log2(numba.get_num_threads() + 1)))


def probe_path(paths) -> str:
    """One line for the reports' ``probe_path``: the distinct paths taken."""
    return "; ".join(dict.fromkeys(paths)) or "per probe"


def _refuse(plugin: str, why: str) -> BatchProfileError:
    return BatchProfileError(f"{plugin}: {why}; the batched node-local kernel does not "
                             "cover it")


class LocalProber:
    """Probes over ``nodes`` (NodeRecords: the universe, in the order a
    probe's cluster lists them) with the ``bound`` pods (PodRecords) and
    ``pods`` to schedule (resolved PodRecords, pending); see the module doc.
    Raises ``BatchProfileError`` when the profile or a pod is not covered."""

    def __init__(self, cluster: Cluster, nodes: list[NodeRecord], bound: list[PodRecord],
                 pods: list[PodRecord], seed: int, threads: int | None = None,
                 device: str = "cpu"):
        self.seed = seed
        self.device = device
        self.threads = threads
        self.pods = list(pods)
        self.universe = fresh_cluster(cluster, nodes=nodes, pods=bound)
        sched = Scheduler(self.universe, "numpy", seed)
        self.sort_key = sched.queue.sort_key
        state = self.universe.state
        self.fw = self._framework(sched)
        self._check_preemption(bound)
        self.class_of = np.zeros(len(self.pods), np.int64)
        plans = self._classes(state)
        self.names = {name: row for name, row in state.node_rows.items()}
        self.row_name = {row: name for name, row in self.names.items()}
        self._arrays(state, plans)

    # ----------------------------------------------------------- coverage

    def _framework(self, sched: Scheduler):
        fws = {}
        known = set(sched.profiles.names)
        for name in dict.fromkeys(p.scheduler_name for p in self.pods):
            if name not in known:
                raise _refuse("profiles", f"no profile is named {name!r} (its pods are "
                                          "left alone)")
            fw = sched.profiles.of(next(p for p in self.pods if p.scheduler_name == name))
            fws[id(fw)] = fw
        if len(fws) > 1:
            raise _refuse("profiles", f"the pods use {len(fws)} scheduler profiles")
        if not fws:
            return None
        fw = next(iter(fws.values()))
        for point, refs in fw.profile.plugins.items():
            for ref in refs:
                if ref.name not in DEFAULT_PLUGINS:
                    raise _refuse(ref.name, f"plugin at {point}, not of the default profile")
        for p in self.pods:
            if p.node_name:
                raise _refuse("NodeName", f"pod {p.key} is bound already (spec.nodeName)")
            if p.scheduling_gates:
                raise _refuse("SchedulingGates", f"pod {p.key} has scheduling gates")
            if p.host_ports:
                raise _refuse("NodePorts", f"pod {p.key} asks for host ports")
            if p.resource_claims:
                raise _refuse("DynamicResources", f"pod {p.key} has resource claims")
        return fw

    def _check_preemption(self, bound: list[PodRecord]) -> None:
        fw = self.fw
        if fw is None or "DefaultPreemption" not in fw.profile.names("postFilter"):
            return
        lowest = min((pod_priority(p) for p in list(bound) + self.pods), default=None)
        for p in self.pods:
            if p.preemption_policy != "Never" and pod_priority(p) > lowest:
                raise _refuse("DefaultPreemption", f"pod {p.key} (priority {pod_priority(p)}) could preempt "
                                     f"pods of priority {lowest}")

    def _classes(self, state) -> list:
        fw = self.fw
        keys: dict = {}
        plans = []
        self.class_pods: list[PodRecord] = []      # one pod of each class
        for i, pod in enumerate(self.pods):
            sig = fw.signature(pod)
            key = ("pod", i) if sig is None else sig
            c = keys.get(key)
            if c is None:
                c = keys[key] = len(plans)
                plans.append(self._plan(state, pod))
                self.class_pods.append(pod)
            self.class_of[i] = c
        return plans

    def _plan(self, state, pod: PodRecord) -> CyclePlan:
        plan, _skipped = self.fw.plan_cycle(CycleContext(state, pod, self.fw))
        if not isinstance(plan, CyclePlan):
            raise _refuse(getattr(plan, "plugin", "") or "PreFilter", f"PreFilter rejects pod {pod.key}")
        busy = [p.name for p, _ in plan.host_filters] + [p.name for p, _ in plan.host_scores]
        if busy:
            raise _refuse(busy[0], f"has work for pod {pod.key} (not node-local)")
        if plan.node_names is not None or plan.masks:
            names = list(plan.restricted_by) + list(plan.masks)
            raise _refuse(names[0] if names else "PreFilter",
                          f"narrows the nodes of pod {pod.key}")
        q = plan.query
        if q.filter_flags & L.F_PORTS and q.port_conflicts.any():
            raise _refuse("NodePorts", f"pod {pod.key} asks for host ports")
        if np.asarray(plan.active)[L.N_BUILTIN_SCORES:].any():
            raise _refuse("score", f"a score plugin outside the built-in slots for {pod.key}")
        return plan

    # ------------------------------------------------------------- arrays

    def _arrays(self, state, plans: list) -> None:
        cols = state.columns()
        u = cols.allocatable.shape[0]
        n_res = cols.allocatable.shape[1]
        rows = np.arange(u, dtype=np.int64)
        c = len(plans)
        self.c = c
        self.cols = cols
        self.plans = plans
        req = np.zeros((c, n_res), np.int64)
        nz = np.zeros((c, 2), np.int64)
        anything = np.zeros(c, np.bool_)
        ignored = np.zeros((c, n_res), np.bool_)
        fit_filter = np.zeros(c, np.bool_)
        active = np.zeros((c, L.N_BUILTIN_SCORES), np.bool_)
        norm = np.zeros((c, L.N_BUILTIN_SCORES), np.int64)
        weights = np.zeros((c, L.N_BUILTIN_SCORES), np.int64)
        static_bits = np.zeros((c, u), np.int64)
        static_raw = np.zeros((c, u, 2), np.int64)
        for k, plan in enumerate(plans):
            q = plan.query
            width = min(q.request.shape[0], n_res)
            req[k, :width] = q.request[:width]
            nz[k] = q.nonzero_request
            anything[k] = q.requests_anything
            ignored[k, :q.fit_ignored.shape[0]] = q.fit_ignored[:n_res]
            fit_filter[k] = bool(q.filter_flags & L.F_FIT)
            active[k] = np.asarray(plan.active)[:L.N_BUILTIN_SCORES]
            norm[k] = np.asarray(plan.norm)[:L.N_BUILTIN_SCORES]
            weights[k] = np.asarray(plan.weights)[:L.N_BUILTIN_SCORES]
            qs = q._replace(filter_flags=q.filter_flags & ~L.F_FIT)
            static_bits[k] = KF.node_reasons(cols, rows, qs, xp=np)
            if q.score_flags & (1 << L.S_TAINT):
                static_raw[k, :, 0] = SC.taint_count(cols, rows, q, xp=np)
            if q.score_flags & (1 << L.S_NODE_AFFINITY):
                static_raw[k, :, 1] = SC.affinity_weight(cols, rows, q, xp=np)
        q0 = plans[0].query if plans else None
        self.keys = FailureKeys.of(self.fw, state, plans, self.class_pods, static_bits)
        self.base = dict(
            s_key=self.keys.s_key, key_first=self.keys.key_first,
            alloc=cols.allocatable, used0=cols.requested, nz0=cols.nonzero_requested,
            c_request=req, c_nonzero=nz, c_anything=anything, c_ignored=ignored,
            c_fit_filter=fit_filter, c_active=active, c_norm=norm, c_weights=weights,
            static_bits=static_bits, static_raw=static_raw,
            strategy=int(q0.fit_strategy) if q0 is not None else 0,
            **{f: (getattr(q0, f) if q0 is not None else np.zeros(0, np.int64))
               for f in ("fit_res", "fit_kind", "fit_weights", "shape_util", "shape_score",
                         "bal_res", "bal_kind")})
        # ImageLocality's per-node sums depend on how many of a probe's nodes
        # have each image: (class, entry) -> the universe rows with its name
        self.images = []
        for k, plan in enumerate(plans):
            q = plan.query
            if not (q.score_flags & (1 << L.S_IMAGE) and active[k, L.S_IMAGE]):
                self.images.append(None)
                continue
            names = state.images.items
            entries = []
            for e in q.image_entries:
                name = names[int(e)][0]
                same = [x for x, (nm, _s) in enumerate(names) if nm == name]
                has = np.zeros(u, np.bool_)
                for x in same:
                    has |= ((cols.image_bits[:, x >> 6] >> (x & 63)) & 1) == 1
                entries.append((int(names[int(e)][1]), has))
            self.images.append(entries)

    def _image_table(self, node_sets: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(image_raw [G, C, U], group of each probe): ImageLocality as a
        probe's cluster scores it (sizes scaled by the share of its nodes
        holding the image), one group per distinct scaling."""
        u = self.cols.allocatable.shape[0]
        rows = np.arange(u, dtype=np.int64)
        groups: dict = {}
        tables = []
        group = np.zeros(len(node_sets), np.int64)
        for b, present in enumerate(node_sets):
            key = []
            for entries in self.images:
                if entries is None:
                    key.append(None)
                    continue
                total = present.shape[0]
                key.append(tuple(int(float(size) * (int(has[present].sum()) / total))
                                 if total else 0 for size, has in entries))
            key = tuple(key)
            g = groups.get(key)
            if g is None:
                g = groups[key] = len(tables)
                table = np.zeros((self.c, u), np.int64)
                for k, scaled in enumerate(key):
                    if scaled is not None:
                        q = self.plans[k].query._replace(
                            image_scaled=np.asarray(scaled, np.int64))
                        table[k] = SC.image_score(self.cols, rows, q, xp=np)
                tables.append(table)
            group[b] = g
        if not tables:
            tables.append(np.zeros((self.c, u), np.int64))
        return np.stack(tables), group

    # ---------------------------------------------------------------- run

    def rows_of(self, names) -> np.ndarray:
        """The universe rows of node ``names`` (in that order)."""
        return np.asarray([self.names[n] for n in names], np.int64)

    def queue_order(self, pod_indices) -> list[int]:
        """Pod indices in the order the queue attempts them."""
        idx = list(pod_indices)
        return sorted(idx, key=lambda i: self.sort_key(self.pods[i]))

    def run(self, node_sets: list, pod_lists: list) -> list[list[tuple[int, str | None]]]:
        """Each probe b: the cluster of the universe nodes ``node_sets[b]``
        (names, in the cluster's order) scheduling the pods
        ``pod_lists[b]`` (indices into ``pods``; they enter the queue in
        that order).  Returns per probe [(pod index, node name or None)] in
        queue order (the order of their first attempts)."""
        out = []
        for lo in range(0, len(node_sets), CHUNK):
            out.extend(self._run_chunk(node_sets[lo:lo + CHUNK], pod_lists[lo:lo + CHUNK]))
        return out

    def run_failures(self, node_sets: list, pod_lists: list, fail_cap: int) -> list:
        """``run``'s probes, each with the FailedScheduling messages of its
        first ``fail_cap`` pods that fit nowhere: per probe (placements as
        ``run``'s, [(pod index, message)] in queue order); a message is
        None on a probe without nodes (the Scheduler's text there is its
        own)."""
        out = []
        for lo in range(0, len(node_sets), CHUNK):
            out.extend(self._run_chunk(node_sets[lo:lo + CHUNK], pod_lists[lo:lo + CHUNK],
                                       fail_cap))
        return out

    def batch(self, node_sets, pod_lists, fail_cap: int = 0) -> tuple[LocalBatch, list]:
        """The kernel's inputs for these probes (see ``run``), and each
        probe's pods in queue order; ``fail_cap`` failures' diagnoses per
        probe."""
        rows = [self.rows_of(ns) for ns in node_sets]
        orders = [self.queue_order(pl) for pl in pod_lists]
        node_ptr = np.zeros(len(rows) + 1, np.int64)
        node_ptr[1:] = np.cumsum([r.shape[0] for r in rows])
        pod_ptr = np.zeros(len(orders) + 1, np.int64)
        pod_ptr[1:] = np.cumsum([len(o) for o in orders])
        pod_cls = np.asarray([self.class_of[i] for o in orders for i in o], np.int64)
        image_raw, group = self._image_table(rows)
        pct = self.fw.percentage if self.fw is not None else None
        batch = LocalBatch(
            **self.base, image_raw=image_raw,
            node_ptr=node_ptr,
            node_rows=np.concatenate(rows) if rows else np.zeros(0, np.int64),
            pod_ptr=pod_ptr, pod_cls=pod_cls, image_group=group,
            num_to_find=np.asarray([num_feasible_nodes_to_find(pct, r.shape[0])
                                    for r in rows], np.int64),
            seed=self.seed, fail_cap=fail_cap)
        return batch, orders

    def fill(self, count: int) -> tuple[list, str | None]:
        """``count`` copies of the first pod, one after another, on every
        node of the universe (how many fit): (the node name each copy of
        the first run that all bind took, in order, up to the first copy
        that fits nowhere; that copy's FailedScheduling message, None when
        all ``count`` bound)."""
        names = [self.row_name[r] for r in range(len(self.row_name))]
        batch, _orders = self.batch([names], [[0]], 1)
        c = int(self.class_of[0])
        batch = batch._replace(pod_cls=np.full(count, c, np.int64),
                               pod_ptr=np.asarray([0, count], np.int64))
        res = self._kernel(batch)
        f = int(res.fail_pod[0])
        k = count if f < 0 else f
        placed = [self.row_name[int(r)] for r in res.rows[:k]]
        if f < 0:
            return placed, None
        return placed, self.keys.message(self.pods[0], len(names), res.fail_counts[0])

    def place_groups(self, order: np.ndarray) -> tuple[np.ndarray, list]:
        """Copies of the pods on every node of the universe, attempted in
        ``order`` ([P] indices into ``pods``, at most ``MAX_GROUPS`` pods);
        a pod's copies are a group: once one fits nowhere, the later ones
        are dropped, never attempted (a Scheduler that deletes the rest of
        a template at its first failure).  Returns (the universe row of
        each copy [P] int64, -1 when it fit nowhere or was dropped; the
        copies that fit nowhere, at most one per pod, as [(position in
        ``order``, FailedScheduling message)] in order; a message is None
        on a universe without nodes, where the Scheduler's text is its
        own)."""
        order = np.ascontiguousarray(order, np.int64)
        names = [self.row_name[r] for r in range(len(self.row_name))]
        batch, _orders = self.batch([names], [[0]], len(self.pods))
        batch = batch._replace(pod_cls=self.class_of[order],
                               pod_ptr=np.asarray([0, order.shape[0]], np.int64),
                               pod_group=order)
        res = self._kernel(batch)
        fails = [(int(k), self.keys.message(self.pods[int(order[k])], len(names),
                                             res.fail_counts[f]))
                 for f, k in enumerate(res.fail_pod.tolist()) if k >= 0]
        return res.rows, fails

    def added_usage(self, rows: np.ndarray, pods: np.ndarray) -> np.ndarray:
        """[U, R] int64: what copies of ``pods`` ([P] indices into
        ``pods``) bound on universe ``rows`` ([P], -1: not bound) request,
        the pods column counting them (the usage the kernel adds)."""
        req = self.base["c_request"]
        out = np.zeros((self.cols.allocatable.shape[0], req.shape[1]), np.int64)
        ok = rows >= 0
        np.add.at(out, rows[ok], req[self.class_of[pods[ok]]])
        out[:, L.RES_PODS] += np.bincount(rows[ok], minlength=out.shape[0])
        return out

    def _kernel(self, batch: LocalBatch):
        if self.device == "cuda":
            try:
                from tensorsched.kernels.batch.local_cuda import run_local_batch_cuda
            except BackendUnavailable as exc:
                raise BackendError(str(exc)) from exc
            return run_local_batch_cuda(batch)
        return run_local_batch(batch, self.threads)

    def _run_chunk(self, node_sets, pod_lists, fail_cap: int = 0):
        batch, orders = self.batch(node_sets, pod_lists, fail_cap)
        pod_ptr = batch.pod_ptr
        res = self._kernel(batch)
        result = []
        for b, order in enumerate(orders):
            got = res.rows[pod_ptr[b]:pod_ptr[b + 1]]
            placed = [(i, self.row_name[int(r)] if r >= 0 else None)
                      for i, r in zip(order, got)]
            if not fail_cap:
                result.append(placed)
                continue
            n = int(batch.node_ptr[b + 1] - batch.node_ptr[b])
            fails = []
            for f in range(b * fail_cap, (b + 1) * fail_cap):
                k = int(res.fail_pod[f])
                if k < 0:
                    break
                pod = self.pods[order[k]]
                fails.append((order[k], self.keys.message(pod, n, res.fail_counts[f])))
            result.append((placed, fails))
        return result
