"""Which nodes can be removed (cluster-autoscaler's scale-down question),
answered by the Scheduler.

``removable_nodes(cluster)`` tries each candidate node (every node, or the
ones named) on a fresh cluster without it: the pods it runs become pending
and go through ``schedule_pending`` on the other nodes (every Filter and
Score of the profile).  A node is removable when

- every pod it runs is bound elsewhere, without preempting anything (a
  victim would be a pod lost, not moved), and
- no PodDisruptionBudget is violated: the pods moved that a PDB selects are
  at most its ``disruptionsAllowed`` (``status.disruptionsAllowed``, or the
  disruption controller's rule over the bound pods,
  ``parsing.pdb.disruptions_allowed``).

DaemonSet-owned pods and static (mirror) pods stay with their node and go
with it, as ``kubectl drain`` and cluster-autoscaler leave them (the one
rule: ``parsing.node_lifecycle.drain_exemption``); pending pods of the
cluster take no part.

The set: nodes that can go together, every pod of all of them rescheduled
at once (queued node by node in candidate order, each node's pods in load
order: with equal priorities and creation times the queue keeps that order,
which can decide whether they fit) and the PDBs counted over all of them.  With at most
``exact_limit`` candidates every subset is tried, largest first (ties: the
first in candidate order), so the set is a largest removable one; beyond
that the search is cluster-autoscaler's: candidates by ascending
utilization (the larger of requested/allocatable cpu and memory; then by
name), each added when the set with it is still removable (a maximal set,
each step verified by a schedule).
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable

from tensorsched.framework.errors import StateError
from tensorsched.framework.parsing.node_lifecycle import drain_exemption
from tensorsched.framework.parsing.pdb import applies, disruptions_allowed
from tensorsched.framework.scheduler.cluster import Cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.framework.state.volumes import volume_catalog

from .common import (
    bound_pods,
    capacity_arguments,
    fresh_cluster,
    no_gc,
    node_utilization,
)
from .limits import EXACT_LIMIT, MAX_EXACT_LIMIT
from .report import DrainReport, NodeDrain

__all__ = ["removable_nodes", "EXACT_LIMIT", "MAX_EXACT_LIMIT"]



class _Drainer:
    def __init__(self, cluster: Cluster, backend: str, seed: int):
        self.cluster = cluster
        self.backend = backend
        self.seed = seed
        self.nodes = list(cluster.objects.nodes)
        self.bound = bound_pods(cluster)
        self.on: dict[str, list] = {}
        for p in self.bound:
            self.on.setdefault(p.node_name, []).append(p)
        self.allowed = [(pdb, disruptions_allowed(pdb, self.bound))
                        for pdb in cluster.objects.pdbs]
        self.cache: dict[frozenset, tuple[bool, str, dict]] = {}

    def movers(self, names) -> tuple[list, list]:
        move, stay = [], []
        for n in names:
            for p in self.on.get(n, ()):
                (stay if drain_exemption(p) else move).append(p)
        return move, stay

    def pdb_problem(self, move) -> str:
        for pdb, allowed in self.allowed:
            hit = sum(1 for p in move if applies(pdb, p))
            if hit > allowed:
                return (f"PodDisruptionBudget {pdb.namespace}/{pdb.name}: {hit} of its pods "
                        f"would be evicted, {allowed} disruption(s) allowed")
        return ""

    def try_remove(self, names) -> tuple[bool, str, dict]:
        """(removable, why not, pod -> new node) for removing ``names``."""
        key = frozenset(names)
        got = self.cache.get(key)
        if got is not None:
            return got
        move, _ = self.movers(names)
        problem = self.pdb_problem(move)
        if problem:
            got = (False, problem, {})
        elif not move:
            got = (True, "", {})
        else:
            keep_nodes = [n for n in self.nodes if n.name not in key]
            keep_pods = [p for p in self.bound if p.node_name not in key]
            pending = [dataclasses.replace(p, node_name="") for p in move]
            work = fresh_cluster(self.cluster, nodes=keep_nodes, pods=keep_pods)
            sched = Scheduler(work, self.backend, self.seed, batch=True)
            bindings, preemptions = sched.schedule_pending(pending)
            moves = {b.pod: b.node for b in bindings if b.node is not None}
            failed = [b for b in bindings if b.node is None]
            if failed:
                got = (False, f"{len(failed)} pod(s) fit nowhere else: {failed[0].pod}: "
                              f"{failed[0].message}", moves)
            elif sched.evictions:
                got = (False, f"rescheduling would preempt {len(sched.evictions)} pod(s) "
                              f"({sched.evictions[0]['pod']})", moves)
            else:
                got = (True, "", moves)
        self.cache[key] = got
        return got


def removable_nodes(cluster: Cluster, *, nodes=None, backend: str = "numba", seed: int = 0,
                    exact_limit: int = EXACT_LIMIT,
                    progress: Callable[[int], None] | None = None) -> DrainReport:
    """Every candidate node on its own and the largest set found that can
    be removed together (see the module doc).  ``nodes``: the candidate
    node names (default: every node, in load order); ``progress(1)`` after
    each trial.  The cluster is not modified."""
    args = capacity_arguments("removable_nodes", cluster, backend, seed, progress)
    nodes = args.names("nodes", nodes, optional=True)
    exact_limit = args.integer("exact_limit", exact_limit, 0, MAX_EXACT_LIMIT)
    t0 = time.perf_counter()
    with no_gc():
        d = _Drainer(cluster, backend, seed)
        known = [n.name for n in d.nodes]
        if nodes is None:
            candidates = known
        else:
            candidates = list(dict.fromkeys(nodes))
            missing = [n for n in candidates if n not in set(known)]
            if missing:
                raise StateError(f"Node {missing[0]}: not in the cluster")
        util = {n: node_utilization(cluster.state, n) for n in candidates}
        catalog = volume_catalog(cluster.state)
        report_nodes = []
        for name in candidates:
            ok, why, moves = d.try_remove([name])
            move, stay = d.movers([name])
            pinned = {p.key: vols for p in move if (vols := catalog.pinning_volumes(p))}
            report_nodes.append(NodeDrain(name, ok, why, moves if ok else {},
                                          [p.key for p in stay], util[name], pinned))
            if progress is not None:
                progress(1)
        if len(candidates) <= exact_limit:
            chosen, search = _exact(d, candidates, progress), "exact (every subset)"
        else:
            chosen = _greedy(d, sorted(candidates, key=lambda n: (util[n], n)), progress)
            search = "greedy by utilization (cluster-autoscaler's order), each step verified"
        set_moves = d.try_remove(chosen)[2] if chosen else {}
    return DrainReport(backend, seed, report_nodes, chosen, search, set_moves,
                       time.perf_counter() - t0)


def _exact(d: _Drainer, candidates, progress) -> list[str]:
    for size in range(len(candidates), 0, -1):
        for combo in itertools.combinations(candidates, size):
            ok = d.try_remove(combo)[0]
            if progress is not None:
                progress(1)
            if ok:
                return list(combo)
    return []


def _greedy(d: _Drainer, ordered, progress) -> list[str]:
    chosen: list[str] = []
    for name in ordered:
        if d.try_remove([name])[0] and d.try_remove(chosen + [name])[0]:
            chosen.append(name)
        if progress is not None:
            progress(1)
    return chosen
