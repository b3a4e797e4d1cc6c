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
percentage of nodes to score reaches, normalize, weigh, the seeded tie
rule among the top-scored nodes: ``kernels.fused.ties``, the rank of a
probe's node by its row in the probe's own cluster, the i-th of its node
names, and the pods on it); a pod that fits nowhere is set aside (its
FailedScheduling) and retried only after the queue is empty (the
unschedulable pool's flush, on the clock), when nothing it could use has
been freed (no pod leaves, a node-local filter's answer only closes as pods
are placed): it stays unschedulable and the placements of the others are
those of the first pass.  The probe's messages are the Scheduler's; a
caller that needs them (a pod that does not fit) asks the Scheduler.

InterPodAffinity is covered as constants of each pod class: its filter
verdict per node (the plugin's own Filter, its reason bit among the
usage-independent ones, so the messages name its rule) and its raw score
per node (the plugin's Score after its PreScore; the kernel normalizes it
min-max over the nodes each cycle scores and weighs it with the profile's
weight), computed once on the universe's initial state.  They stay
constants while no pod the batch places is selected by another queued
pod's terms or selects it: placed pods change nothing the plugin reads.
A probe without some node whose bound pods those constants read (a
drain's removal: a DaemonSet pod a class's terms select, a bound pod
whose anti-affinity selects a class, a lone pod whose terms select its
own class) reads the constants of its group instead: probes that lack the
same such nodes share one group, whose filter verdicts, raw scores and
FailedScheduling statuses are the plugin's on the universe without those
nodes' pods (``LocalBatch.static_group``).  One call holds at most
``group_budget`` bytes of group tables (the probes left over go in the
next call); when not one group fits, ``run(..., partial=True)`` answers
None for those probes (``left_out`` says why) and the caller's Scheduler
answers them.

Refused (``BatchProfileError``, naming the plugin; the caller then takes
the per-probe path): a plugin outside the default profile's; a pod for
which PodTopologySpread has work (constraints, the system default
spreading of a Deployment's, ReplicaSet's or StatefulSet's pod); pods
whose InterPodAffinity terms (required or preferred affinity or
anti-affinity, with their namespaces) select another queued pod, or whose
terms select their own class when a probe places more than one of it
(named with both pods); volumes, claims (DRA),
host ports, scheduling gates, a PreFilter that narrows or rejects; pods of
more than one profile; a pod that could preempt (DefaultPreemption with a
pod of lower priority in the cluster or the workload).
"""

from __future__ import annotations

import dataclasses
import math

import numba
import numpy as np

from tensorsched.framework.config.plugin_names import INTER_POD_AFFINITY as IPA
from tensorsched.framework.errors import BackendError, TensorschedError
from tensorsched.framework.parsing.priorities import pod_priority
from tensorsched.framework.parsing.selectors import pod_terms
from tensorsched.framework.records.records import NodeRecord, PodRecord
from tensorsched.framework.runtime.framework import CyclePlan, num_feasible_nodes_to_find
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.runtime.status import Code
from tensorsched.framework.scheduler.cluster import Cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.kernels import layout as L
from tensorsched.kernels._errors import BackendUnavailable
from tensorsched.kernels.backend_names import AUTO, BATCH
from tensorsched.kernels.fused.backends import resolve_backend
from tensorsched.kernels.batch.local_cpu import (
    IPA_SLOT,
    N_SLOTS,
    NORM_MINMAX,
    LocalBatch,
    run_local_batch,
)
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
GROUP_BUDGET = 256 << 20    # bytes of static group tables per kernel call
_STATIC_SLOTS = (L.S_TAINT, L.S_NODE_AFFINITY)
_KIND_NAMES = {"req_aff": "required affinity", "req_anti": "required anti-affinity",
               "pref_aff": "preferred affinity", "pref_anti": "preferred anti-affinity"}


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

    group_budget = GROUP_BUDGET     # bytes of one call's static group tables

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
        self.ipa: list = []         # per class (CycleContext, IPA's filter, its score)
        plans = self._classes(state)
        self.c = len(plans)
        self.names = {name: row for name, row in state.node_rows.items()}
        self.row_name = {row: name for name, row in self.names.items()}
        self._check_interactions(state)
        self._arrays(state, plans)
        self._group_cache: dict[tuple, tuple] = {}
        self.left_out = ""          # why the last partial call left probes out

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
        ctx = CycleContext(state, pod, self.fw)
        plan, _skipped = self.fw.plan_cycle(ctx)
        if not isinstance(plan, CyclePlan):
            raise _refuse(getattr(plan, "plugin", "") or "PreFilter", f"PreFilter rejects pod {pod.key}")
        busy = [p.name for p, _ in plan.host_filters] + [p.name for p, _ in plan.host_scores]
        others = [name for name in busy if name != IPA]
        if others:
            raise _refuse(others[0], f"has work for pod {pod.key} (not node-local)")
        # InterPodAffinity's answers on the initial state: constants of the
        # class while no queued pod's terms select another queued pod
        # (``_check_interactions``)
        self.ipa.append((ctx, [pb for pb in plan.host_filters if pb[0].name == IPA],
                         [ps for ps in plan.host_scores if ps[0].name == IPA]))
        ipa_slots = [slot for _p, slot in self.ipa[-1][2]]
        if plan.node_names is not None or plan.masks:
            names = list(plan.restricted_by) + list(plan.masks)
            raise _refuse(names[0] if names else "PreFilter",
                          f"narrows the nodes of pod {pod.key}")
        q = plan.query
        if q.filter_flags & L.F_PORTS and q.port_conflicts.any():
            raise _refuse("NodePorts", f"pod {pod.key} asks for host ports")
        user = np.asarray(plan.active).copy()
        user[:L.N_BUILTIN_SCORES] = False
        user[ipa_slots] = False
        if user.any():
            raise _refuse("score", f"a score plugin outside the built-in slots for {pod.key}")
        return plan

    def _check_interactions(self, state) -> None:
        """Refuse pods whose InterPodAffinity answers would move as the
        batch places pods: a queued class's terms (required or preferred
        affinity or anti-affinity, with their namespaces) selecting another
        queued class's pods, or its own when it has more than one pod; and
        note the bound pods those answers read (``_ipa_rows``)."""
        nsl = getattr(state, "namespace_labels", None)
        counts = np.bincount(self.class_of, minlength=self.c)
        reps = self.class_pods
        self.self_selecting: set[int] = set()
        working = [k for k, (_ctx, f, sc) in enumerate(self.ipa) if f or sc]
        for a, rep in enumerate(reps):
            terms = pod_terms(rep)
            for kind in ("req_aff", "req_anti", "pref_aff", "pref_anti"):
                for t in terms[kind]:
                    for b, other in enumerate(reps):
                        if not t.matches(other.namespace, other.labels, nsl):
                            continue
                        if a == b:
                            self.self_selecting.add(a)
                            if counts[a] < 2:
                                continue
                        raise _refuse(IPA, f"a {_KIND_NAMES[kind]} term of pod {rep.key} "
                                           f"selects pod {other.key}, both queued (its "
                                           "answers change as the batch places pods)")
        self._ipa_pods = self._ipa_pods_of(working, nsl)
        self._ipa_rows = np.unique(np.asarray(
            [state.node_rows[p.node_name] for p in self._ipa_pods.values()], np.int64))
        self._ipa_state = None      # the universe's nodes with only those pods

    def _ipa_pods_of(self, working: list[int], nsl) -> dict[str, PodRecord]:
        """The bound pods InterPodAffinity reads for the classes ``working``
        (a pod their terms select, or whose terms select them), by key: a
        probe without the node of one of these would see other answers."""
        if not working:
            return {}
        reps = [self.class_pods[k] for k in working]
        own = [t for rep in reps for ts in pod_terms(rep).values() for t in ts]
        out = {}
        for bp in self.universe.objects.pods:
            if not bp.node_name:
                continue
            theirs = [t for ts in pod_terms(bp).values() for t in ts]
            if any(t.matches(bp.namespace, bp.labels, nsl) for t in own) or any(
                    t.matches(rep.namespace, rep.labels, nsl) for t in theirs for rep in reps):
                out[bp.key] = bp
        return out

    def _check_probes(self, orders: list[list[int]]) -> None:
        """Refuse probes the static InterPodAffinity answers do not hold
        for: one with more than one pod of a class whose terms select
        itself."""
        if self.self_selecting:
            for order in orders:
                n = np.bincount(self.class_of[np.asarray(order, np.int64)],
                                minlength=self.c) if order else np.zeros(self.c, np.int64)
                for k in self.self_selecting:
                    if n[k] > 1:
                        raise _refuse(IPA, f"pod {self.class_pods[k].key}'s terms select "
                                           f"itself and the probe places {int(n[k])} of them")

    # ------------------------------------------------------ static groups

    def _static_groups(self, rows: list[np.ndarray]) -> tuple[np.ndarray, list, list[int]]:
        """(group [B] of each probe, -1: the base constants; the tables of
        groups 0..G-1 (``_group_tables``); the probes left out, beyond
        ``group_budget``): probes that lack the same nodes whose bound pods
        InterPodAffinity reads share a group."""
        group = np.full(len(rows), -1, np.int64)
        if not self._ipa_rows.shape[0]:
            return group, [], []
        per = self._group_bytes
        cap = self.group_budget // per
        present = np.zeros(self.cols.allocatable.shape[0], np.bool_)
        index: dict[tuple, int] = {}
        tables, over = [], []
        for j, r in enumerate(rows):
            present[:] = False
            present[r] = True
            gone = self._ipa_rows[~present[self._ipa_rows]]
            if not gone.shape[0]:
                continue
            key = tuple(gone.tolist())
            g = index.get(key)
            if g is None:
                if len(tables) >= cap:
                    over.append(j)
                    continue
                g = index[key] = len(tables)
                tables.append(self._group_tables(key, cap))
            group[j] = g
        return group, tables, over

    def _group_tables(self, gone: tuple, cap: int) -> tuple:
        """(bits, ipa_raw, s_key), each [C, U] int64: the usage-independent
        reason bits, InterPodAffinity's raw score and the static statuses
        of every class on the universe without the bound pods of rows
        ``gone`` (kept for later calls, at most ``cap`` groups)."""
        got = self._group_cache.get(gone)
        if got is not None:
            return got
        if self._ipa_state is None:
            # the plugin's answers read these pods alone: a state of the
            # universe's nodes and them, whose removals are cheap
            self._ipa_state = fresh_cluster(self.universe,
                                            pods=list(self._ipa_pods.values())).state
            u = self.cols.allocatable.shape[0]
            self._ipa_state_rows = np.asarray(
                [self._ipa_state.node_rows[self.row_name[r]] for r in range(u)], np.int64)
        state = self._ipa_state
        names = {self.row_name[r] for r in gone}
        taken = [state.remove_pod(p.key) for p in self._ipa_pods.values()
                 if p.node_name in names]
        try:
            got = self._tables_on(state)
        finally:
            for entry in reversed(taken):
                state.restore_pod(entry)
        if len(self._group_cache) >= cap:
            self._group_cache.clear()
        self._group_cache[gone] = got
        return got

    def _tables_on(self, state) -> tuple:
        """``_group_tables``'s answer on ``state`` (the universe's nodes,
        ``_ipa_state_rows`` the row of each universe row)."""
        rows = self._ipa_state_rows
        base = self.base
        bits = base["static_bits"].copy()
        raw = np.ascontiguousarray(base["static_raw"][:, :, 2])
        s_key = base["s_key"].copy()
        pods = list(self.class_pods)
        working = []
        for k, (_ctx, ipa_filter, ipa_score) in enumerate(self.ipa):
            if not ipa_filter and not ipa_score:
                continue
            working.append(k)
            # a pod object of its own: the plugin keeps its last filter's
            # answers per pod object and state version
            pods[k] = dataclasses.replace(self.class_pods[k])
            ctx = CycleContext(state, pods[k], self.fw)
            for p, bit in ipa_filter:
                bits[k] &= ~(np.int64(1) << bit)
                if p.pre_filter(ctx)[0].code != Code.SKIP:
                    ok = np.asarray(p.filter(ctx, rows), np.bool_)
                    bits[k] |= np.where(ok, 0, np.int64(1) << bit)
            for p, _slot in ipa_score:
                # a PreScore that skips leaves the slot at 0 on every node,
                # as the min-max of equal scores normalizes it
                raw[k] = (0 if p.pre_score(ctx).code == Code.SKIP
                          else np.asarray(p.score(ctx, rows), np.int64))
        if working:
            got = self.keys.add(state, self.plans, bits, classes=working, pods=pods, rows=rows)
            s_key[working] = got[working]
        return bits, raw, s_key

    # ------------------------------------------------------------- arrays

    def _arrays(self, state, plans: list) -> None:
        cols = state.columns()
        u = cols.allocatable.shape[0]
        n_res = cols.allocatable.shape[1]
        rows = np.arange(u, dtype=np.int64)
        c = len(plans)
        self.cols = cols
        self.plans = plans
        req = np.zeros((c, n_res), np.int64)
        nz = np.zeros((c, 2), np.int64)
        anything = np.zeros(c, np.bool_)
        ignored = np.zeros((c, n_res), np.bool_)
        fit_filter = np.zeros(c, np.bool_)
        active = np.zeros((c, N_SLOTS), np.bool_)
        norm = np.zeros((c, N_SLOTS), np.int64)
        weights = np.zeros((c, N_SLOTS), np.int64)
        static_bits = np.zeros((c, u), np.int64)
        static_raw = np.zeros((c, u, 3), np.int64)
        for k, plan in enumerate(plans):
            q = plan.query
            width = min(q.request.shape[0], n_res)
            req[k, :width] = q.request[:width]
            nz[k] = q.nonzero_request
            anything[k] = q.requests_anything
            ignored[k, :q.fit_ignored.shape[0]] = q.fit_ignored[:n_res]
            fit_filter[k] = bool(q.filter_flags & L.F_FIT)
            nb = L.N_BUILTIN_SCORES
            active[k, :nb] = np.asarray(plan.active)[:nb]
            norm[k, :nb] = np.asarray(plan.norm)[:nb]
            weights[k, :nb] = np.asarray(plan.weights)[:nb]
            qs = q._replace(filter_flags=q.filter_flags & ~L.F_FIT)
            static_bits[k] = KF.node_reasons(cols, rows, qs, xp=np)
            if q.score_flags & (1 << L.S_TAINT):
                static_raw[k, :, 0] = SC.taint_count(cols, rows, q, xp=np)
            if q.score_flags & (1 << L.S_NODE_AFFINITY):
                static_raw[k, :, 1] = SC.affinity_weight(cols, rows, q, xp=np)
            ctx, ipa_filter, ipa_score = self.ipa[k]
            for p, bit in ipa_filter:
                ok = np.asarray(p.filter(ctx, rows), np.bool_)
                static_bits[k] |= np.where(ok, 0, np.int64(1) << bit)
            for p, slot in ipa_score:
                # raw per node; the kernel normalizes it min-max over the
                # nodes each cycle scores (the plugin's NormalizeScore)
                static_raw[k, :, 2] = p.score(ctx, rows)
                active[k, IPA_SLOT] = True
                norm[k, IPA_SLOT] = NORM_MINMAX
                weights[k, IPA_SLOT] = int(np.asarray(plan.weights)[slot])
        # one static group's tables: bits, raw score and status ids per
        # class and node
        self._group_bytes = 3 * 8 * max(c, 1) * max(u, 1)
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

    def run(self, node_sets: list, pod_lists: list,
            partial: bool = False) -> list[list[tuple[int, str | None]] | None]:
        """Each probe b: the cluster of the universe nodes ``node_sets[b]``
        (names, in the cluster's order) scheduling the pods
        ``pod_lists[b]`` (indices into ``pods``; they enter the queue in
        that order).  Returns per probe [(pod index, node name or None)] in
        queue order (the order of their first attempts).  The probes go in
        calls of at most ``CHUNK`` probes and ``group_budget`` bytes of
        static group tables (the probes a call leaves over go in the next);
        those no call can take (not one group's tables fit the budget):
        ``BatchProfileError``, or with ``partial`` None in their place
        (``left_out`` says why)."""
        return self._run_all(node_sets, pod_lists, 0, partial)

    def run_failures(self, node_sets: list, pod_lists: list, fail_cap: int,
                     partial: bool = False) -> list:
        """``run``'s probes, each with the FailedScheduling messages of its
        first ``fail_cap`` pods that fit nowhere: per probe (placements as
        ``run``'s, [(pod index, message)] in queue order) or None (left
        out, as ``run``'s); a message is None on a probe without nodes (the
        Scheduler's text there is its own)."""
        return self._run_all(node_sets, pod_lists, fail_cap, partial)

    def _run_all(self, node_sets: list, pod_lists: list, fail_cap: int, partial: bool) -> list:
        """``run`` / ``run_failures``: the calls, each probe's answer or None."""
        self.left_out = ""
        out: list = [None] * len(node_sets)
        todo = list(range(len(node_sets)))
        while todo:
            chunk, todo = todo[:CHUNK], todo[CHUNK:]
            got = self._run_chunk([node_sets[j] for j in chunk], [pod_lists[j] for j in chunk],
                                  fail_cap)
            over = []
            for j, r in zip(chunk, got):
                out[j] = r
                if r is None:
                    over.append(j)
            if len(over) < len(chunk):
                todo = over + todo          # the groups a later call holds
                continue
            why = self._over_budget(len(over))
            if not partial:
                raise _refuse(IPA, why)
            self.left_out = f"{IPA}: {why}"
        return out

    def _over_budget(self, n: int) -> str:
        return (f"{n} probe(s) whose removals change its answers, and not one group of "
                f"its constants ({self._group_bytes} bytes) fits in {self.group_budget} "
                "bytes")

    def batch(self, node_sets, pod_lists, fail_cap: int = 0) -> tuple[LocalBatch, list]:
        """The kernel's inputs for these probes (see ``run``), and each
        probe's pods in queue order; ``fail_cap`` failures' diagnoses per
        probe.  ``BatchProfileError`` when their static groups exceed
        ``group_budget``."""
        batch, orders, kept = self._batch(node_sets, pod_lists, fail_cap)
        if len(kept) < len(node_sets):
            raise _refuse(IPA, f"{len(node_sets) - len(kept)} probe(s) whose removals change "
                               f"its answers beyond {self.group_budget} bytes of constants")
        return batch, orders

    def _batch(self, node_sets, pod_lists, fail_cap: int) -> tuple[LocalBatch, list, list[int]]:
        """``batch``'s answer for the probes whose static groups fit
        ``group_budget``, and the indices of the probes it holds."""
        rows = [self.rows_of(ns) for ns in node_sets]
        orders = [self.queue_order(pl) for pl in pod_lists]
        self._check_probes(orders)
        group, tables, over = self._static_groups(rows)
        kept = list(range(len(rows)))
        if over:
            gone = set(over)
            kept = [j for j in kept if j not in gone]
            rows = [rows[j] for j in kept]
            orders = [orders[j] for j in kept]
            group = group[kept]
        statics = {}
        if tables:
            statics = dict(static_group=group,
                           group_bits=np.stack([t[0] for t in tables]),
                           group_raw=np.stack([t[1] for t in tables]),
                           group_s_key=np.stack([t[2] for t in tables]))
        node_ptr = np.zeros(len(rows) + 1, np.int64)
        node_ptr[1:] = np.cumsum([r.shape[0] for r in rows])
        pod_ptr = np.zeros(len(orders) + 1, np.int64)
        pod_ptr[1:] = np.cumsum([len(o) for o in orders])
        pod_cls = np.asarray([self.class_of[i] for o in orders for i in o], np.int64)
        image_raw, group = self._image_table(rows)
        pct = self.fw.percentage if self.fw is not None else None
        batch = LocalBatch(
            **{**self.base, "key_first": self.keys.key_first}, image_raw=image_raw, **statics,
            node_ptr=node_ptr,
            node_rows=np.concatenate(rows) if rows else np.zeros(0, np.int64),
            pod_ptr=pod_ptr, pod_cls=pod_cls, image_group=group,
            num_to_find=np.asarray([num_feasible_nodes_to_find(pct, r.shape[0])
                                    for r in rows], np.int64),
            seed=self.seed, fail_cap=fail_cap)
        return batch, orders, kept

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
        self._check_probes([order.tolist()])
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

    def _run_chunk(self, node_sets, pod_lists, fail_cap: int = 0) -> list:
        """One call: each probe's answer, None for those beyond the budget."""
        batch, orders, kept = self._batch(node_sets, pod_lists, fail_cap)
        pod_ptr = batch.pod_ptr
        res = self._kernel(batch)
        result: list = [None] * len(node_sets)
        for b, order in enumerate(orders):
            got = res.rows[pod_ptr[b]:pod_ptr[b + 1]]
            placed = [(i, self.row_name[int(r)] if r >= 0 else None)
                      for i, r in zip(order, got)]
            if not fail_cap:
                result[kept[b]] = placed
                continue
            n = int(batch.node_ptr[b + 1] - batch.node_ptr[b])
            fails = []
            for f in range(b * fail_cap, (b + 1) * fail_cap):
                k = int(res.fail_pod[f])
                if k < 0:
                    break
                pod = self.pods[order[k]]
                fails.append((order[k], self.keys.message(pod, n, res.fail_counts[f])))
            result[kept[b]] = (placed, fails)
        return result
