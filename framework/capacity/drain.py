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
from .batch_probe import BatchProfileError, LocalProber, batched_backend, probe_path
from .limits import EXACT_LIMIT, MAX_EXACT_LIMIT
from .report import DrainReport, NodeDrain

__all__ = ["removable_nodes", "EXACT_LIMIT", "MAX_EXACT_LIMIT"]

BATCH_SUBSETS = 1024        # subsets of one size per batched call



class _Drainer:
    def __init__(self, cluster: Cluster, backend: str, seed: int, batch: bool = True):
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
        # sets the batch found not removable with no node left (the
        # Scheduler's message is asked only when a report shows it)
        self.fails: set[frozenset] = set()
        self.prober: LocalProber | None = None
        self.refused = ""
        # removals the batch left to the Scheduler (beyond its memory for
        # per-probe InterPodAffinity constants), and why
        self.left_out: set[frozenset] = set()
        self.left_why = ""
        self.device = batched_backend(backend) if batch else ""
        if self.device:
            self._start_batch()

    def _start_batch(self) -> None:
        movable = [p for p in self.bound if not drain_exemption(p)]
        self.index = {p.key: i for i, p in enumerate(movable)}
        pending = [self.cluster.resolve(dataclasses.replace(p, node_name=""))
                   for p in movable]
        try:
            self.prober = LocalProber(self.cluster, self.nodes, self.bound, pending, self.seed,
                                      device=self.device)
        except BatchProfileError as exc:
            self.refused = str(exc)

    def path(self) -> str:
        if self.prober is not None:
            path = f"batched ({self.device})"
            if self.left_out:
                path += f"; per probe for {len(self.left_out)} removal(s) ({self.left_why})"
            return path
        return f"per probe ({self.refused})" if self.refused else "per probe"

    def precompute(self, sets) -> None:
        """Trials of the removal ``sets`` (lists of names) not known yet, as
        one batched call (nothing when the batch does not run); a set is
        cached with its moves, or why not (the first pod that fits nowhere,
        with the message the kernel's diagnosis gives); one that leaves no
        node and whose pods do not fit is kept in ``fails``."""
        if self.prober is None:
            return
        todo = []
        queued: set[frozenset] = set()
        for names in sets:
            key = frozenset(names)
            if key in self.cache or key in self.fails or key in queued or key in self.left_out:
                continue
            queued.add(key)
            move, _ = self.movers(names)
            problem = self.pdb_problem(move)
            if problem:
                self.cache[key] = (False, problem, {})
            elif not move:
                self.cache[key] = (True, "", {})
            else:
                todo.append(list(names))
        if not todo:
            return
        node_sets = []
        for t in todo:
            gone = frozenset(t)
            node_sets.append([n.name for n in self.nodes if n.name not in gone])
        pod_lists = [[self.index[p.key] for p in self.movers(t)[0]] for t in todo]
        pods = self.prober.pods
        try:
            runs = self.prober.run_failures(node_sets, pod_lists, 1, partial=True)
        except BatchProfileError as exc:
            # a removal the kernel's answers do not hold for (InterPodAffinity
            # of a class whose terms select itself, placed twice): this and
            # later sets per probe
            self.refused = str(exc)
            self.prober = None
            return
        for names, run in zip(todo, runs):
            if run is None:
                # beyond the batch's memory for per-probe constants: the
                # Scheduler answers it (``try_remove``)
                self.left_out.add(frozenset(names))
                self.left_why = self.prober.left_out
                continue
            placed, fails = run
            key = frozenset(names)
            moves = {pods[i].key: node for i, node in placed if node is not None}
            if not fails:
                self.cache[key] = (True, "", moves)
            elif fails[0][1] is None:
                self.fails.add(key)         # no node left: the Scheduler's text
            else:
                i, message = fails[0]
                self.cache[key] = (False, f"{len(placed) - len(moves)} pod(s) fit nowhere "
                                          f"else: {pods[i].key}: {message}", moves)

    def removable(self, names) -> bool:
        """Whether ``names`` can go together (``try_remove``'s first answer,
        from the batch when it ran)."""
        key = frozenset(names)
        if key in self.fails:
            return False
        if key not in self.cache:
            self.precompute([list(names)])
            if key in self.fails:
                return False
        return self.try_remove(names)[0]

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
                    progress: Callable[[int], None] | None = None,
                    batch: bool = True) -> DrainReport:
    """Every candidate node on its own and the largest set found that can
    be removed together (see the module doc).  ``nodes``: the candidate
    node names (default: every node, in load order); ``progress(1)`` after
    each trial.  ``batch``: the trials run as batches of the node-local
    kernel where it covers the profile and the pods (numba, auto: the CPU
    twin; cuda: the device; ``probe_path`` of the report says which ran,
    and how many removals it left to the Scheduler: those beyond the
    batch's memory for per-probe InterPodAffinity constants); False, or
    numpy: every trial through the Scheduler.  The answers are
    the same.  The cluster is not modified."""
    args = capacity_arguments("removable_nodes", cluster, backend, seed, progress)
    nodes = args.names("nodes", nodes, optional=True)
    exact_limit = args.integer("exact_limit", exact_limit, 0, MAX_EXACT_LIMIT)
    args.flag("batch", batch)
    t0 = time.perf_counter()
    with no_gc():
        d = _Drainer(cluster, backend, seed, batch)
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
        d.precompute([[name] for name in candidates])
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
    report = DrainReport(backend, seed, report_nodes, chosen, search, set_moves,
                         time.perf_counter() - t0)
    report.probe_path = probe_path([d.path()])
    return report


def _exact(d: _Drainer, candidates, progress) -> list[str]:
    for size in range(len(candidates), 0, -1):
        combos = itertools.combinations(candidates, size)
        while True:
            # every subset of this size as batches (in order: the first
            # removable one is the answer)
            chunk = list(itertools.islice(combos, BATCH_SUBSETS))
            if not chunk:
                break
            d.precompute(chunk)
            for combo in chunk:
                ok = d.removable(combo)
                if progress is not None:
                    progress(1)
                if ok:
                    return list(combo)
    return []


def _greedy(d: _Drainer, ordered, progress) -> list[str]:
    chosen: list[str] = []
    for name in ordered:
        if d.removable([name]) and d.removable(chosen + [name]):
            chosen.append(name)
        if progress is not None:
            progress(1)
    return chosen
