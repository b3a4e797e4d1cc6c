"""A scenario's node and pod steps on one cluster as the events of the
batched node-local trace kernel (``kernels.batch.local_events``).

``plan_events(cluster, scenario)`` follows the steps in time order as the
Simulation applies them (``framework/simulation/changes.py``): a node added
(``addNodes``, a Node ``create``) takes the next row (a row from the start
in the kernel, absent until then); ``cordon`` / ``uncordon`` replace the
node's object (``set_unschedulable``: the field and the taint together) and
move the pool for Node/Update; ``drain`` cordons a node that is not
unschedulable yet, then evicts its pods (Pod/Delete) but those ``kubectl
drain`` leaves (DaemonSet's, static: the manifests' bound ones stay, a
queued one bound there stays by an ``EV_KEEP`` event before the drain's);
a Node ``delete`` /
``removeNodes`` deletes its pods (Pod/Delete), then the node (Node/Delete).
Each distinct object a node takes is a variant: the kernel's universe holds
every node once per variant (variant v of the cluster: each node's v-th
object, or its last), so a step swaps a node's static answers for those of
another universe row.  A node added while a removed node's row is free
takes that row (the last freed first, as the cluster state reuses rows):
the kernel's local row then holds another universe node from its time; a
node added again under a removed node's name is another universe node,
``<name>.<k>`` (its name the only difference, and no queued pod's node
affinity reads names).  With no node left, a pod failing there is
rejected by no plugin and every event moves it (an arrival too).

Pod steps, as the Simulation's agenda orders them at one time (deletes
with the departures, before them; node steps; creates with the arrivals,
before the trace's): a created pod is a row of the kernel's trace
(``scenario_trace``: its class built as the trace pods' are, arriving at
its step's time, leaving its ``duration`` after its binding, in
PrioritySort's order by its own priority and creation time); a Pod delete
is an event before the departures of its time (``EV_POD_DELETE``): a
bound pod frees its node (Pod/Delete moves the pods listening to it), a
pending one leaves the queue; a manifests' bound pod deleted frees its
requests on its node.  The steps are checked as the Simulation checks
them (``check_steps``, before the trace is submitted): a node absent then
or added while present, a pod not found (a trace pod: not submitted yet)
raise its own ``ScenarioError``.

A queued pod (the manifests' pending one, a created one) may be gone
before its delete: left, its ``duration`` over; evicted by a drain;
deleted with its node; preempted.  Its Simulation then stops at the
step with NotFound (``changes.pod_not_found``); the kernel's delete does
nothing and its run goes on, and ``missed_delete`` finds the run's first
such delete afterwards (``ts.simulate_batch`` raises its error, a sweep
reports the job as per job).  At one time the agenda applies the delete
before a departure (pushed first) and a node step, as the kernel does.

Refused, by the step's field and why (the per-run path takes the job): a
pod created bound (``spec.nodeName``) or of no profile, or named as
another pod (or created again); a delete of a manifests' bound pod that
left with its node, or while InterPodAffinity terms are about; a node
added or removed while ImageLocality scores an image (its score counts the nodes holding
it), a node removed or drained whose bound pods InterPodAffinity's
answers read.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from tensorsched.framework.capacity.batch_probe import BatchProfileError
from tensorsched.framework.capacity.common import bound_pods
from tensorsched.framework.parsing.manifests import parse_node
from tensorsched.framework.parsing.node_lifecycle import drain_exemption, set_unschedulable
from tensorsched.framework.scheduler.cluster import pod_from
from tensorsched.framework.simulation.scenario import check_steps
from tensorsched.kernels.batch.local_events import (
    EV_ADD,
    EV_DELETE,
    EV_EVICT,
    EV_KEEP,
    EV_POD_DELETE,
    EV_UPDATE,
)

__all__ = ["NodeEvents", "plan_events", "pod_key", "refuse", "step_phase"]


def refuse(what: str, why: str) -> BatchProfileError:
    return BatchProfileError(f"{what}: {why}; the batched node-local trace kernel does not "
                             "cover it")


@dataclass
class NodeEvents:
    """A scenario's node steps on one cluster: ``names`` the universe's
    nodes (the cluster's, then those added, in order; one added again
    under a removed node's name as ``<name>.<k>``), ``n0`` how many
    are there at the start (local rows 0..n0-1); ``local_rows`` each
    local row's first node (its universe index; a row freed by a removal
    takes the next node added); ``variants[v]`` the objects (manifests) of
    variant v of the cluster (every node's v-th object, or its last; the
    nodes added appended); per event (time order) ``t`` (seconds),
    ``kind`` (``local_events.EV_*``), ``node`` (local row), ``uid`` (the
    node's universe index), ``variant`` (the object it takes), ``live``
    (nodes in the cluster after it),
    ``bound`` / ``bound_cpu`` / ``bound_mem`` (the manifests' bound pods it
    removes, their cpu millicores and memory bytes), ``evict`` (they are
    evicted, not deleted)."""

    names: list
    n0: int
    variants: list
    local_rows: list = field(default_factory=list)
    t: list = field(default_factory=list)
    kind: list = field(default_factory=list)
    node: list = field(default_factory=list)
    uid: list = field(default_factory=list)
    variant: list = field(default_factory=list)
    live: list = field(default_factory=list)
    bound: list = field(default_factory=list)
    bound_cpu: list = field(default_factory=list)
    bound_mem: list = field(default_factory=list)
    left: list = field(default_factory=list)       # a drain: {resource: requested} it leaves
    left_nz: list = field(default_factory=list)    # ... and its non-zero cpu, memory
    # a Pod delete of a manifests' bound pod: event index -> the pod's key
    bound_deleted: dict = field(default_factory=dict)

    @property
    def n_all(self) -> int:
        return len(self.names)

    def occupants(self, local: np.ndarray, when: np.ndarray) -> np.ndarray:
        """The universe index of the node on local row ``local[j]`` at
        ``when[j]`` seconds (after that time's node events; -1 stays -1)."""
        out = np.full(local.shape[0], -1, np.int64)
        for r in np.unique(local[local >= 0]).tolist():
            times = [-np.inf] + [t for t, k, n in zip(self.t, self.kind, self.node)
                                 if k == EV_ADD and n == r]
            ids = [self.local_rows[r]] + [u for k, n, u in zip(self.kind, self.node, self.uid)
                                          if k == EV_ADD and n == r]
            on = local == r
            out[on] = np.asarray(ids, np.int64)[
                np.searchsorted(np.asarray(times), when[on], side="right") - 1]
        return out

    def add(self, t, kind, node, uid, variant, live, bound=0, cpu=0, mem=0, left=None,
            left_nz=(0, 0)) -> None:
        for lst, v in ((self.t, float(t)), (self.kind, kind), (self.node, node), (self.uid, uid),
                       (self.variant, variant), (self.live, live), (self.bound, bound),
                       (self.bound_cpu, cpu), (self.bound_mem, mem), (self.left, left or {}),
                       (self.left_nz, tuple(left_nz))):
            lst.append(v)

    def left_usage(self, resources: list, width: int) -> tuple:
        """([E, width] what each event leaves requested on its node,
        columns named ``resources``; [E, 2] its non-zero cpu, memory)."""
        used = np.zeros((len(self.t), width), np.int64)
        for e, left in enumerate(self.left):
            for name, v in left.items():
                if name in resources:
                    used[e, resources.index(name)] = v
        return used, np.asarray(self.left_nz, np.int64).reshape(len(self.t), 2)


def _reads_node_names(pod) -> bool:
    """Whether a pod's node affinity selects nodes by name (``matchFields``)."""
    return "matchFields" in repr(pod.node_affinity or {})


def step_phase(st) -> int:
    """Where a step's events go among those of its time on the Simulation's
    agenda: pod deletes with the departures (first: pushed before any),
    node steps, then pod creates with the arrivals (before the trace's)."""
    if st.kind == "Pod":
        return 0 if st.action == "delete" else 2
    return 1


def pod_key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


class _EventPlanner:
    """What ``plan_events`` keeps while it walks a scenario's steps in the
    Simulation's order: the universe (``names``; ``objs[u]`` the distinct
    objects node u took, ``cur[u]`` the one it holds), each live node's
    local row (``rows``: a removed node's row is ``free`` for the next
    added) and universe index (``uids``), the nodes present (by their own
    names; ``alias``: a name's universe node), the manifests' bound pods
    per node (``on_node``) on the cluster state they leave, the queued
    pods' rows (``index``) and the deletable ones' arrivals (``arrive``),
    and the plan written so far (``plan``)."""

    def __init__(self, cl, scenario, trace_pods):
        nodes = list(cl.objects.nodes)
        self.names = names = [n.name for n in nodes]
        self.objs = {n.name: [copy.deepcopy(n.obj)] for n in nodes}
        self.cur = {name: 0 for name in names}
        self.rows = {name: i for i, name in enumerate(names)}   # local rows (at their time)
        self.uids = dict(self.rows)                             # universe indices
        self.present = set(names)
        self.alias = {name: name for name in names}   # a live node's universe name
        self.taken = set(names) | {(o.get("metadata") or {}).get("name")
                                   for st in scenario.steps if st.kind == "Node"
                                   for o in st.objects}
        self.free: list = []
        self.state = state = cl.state
        self.ci, self.mi = state.resources.index["cpu"], state.resources.index["memory"]
        self.trace_pods = trace_pods
        # the manifests' bound pods per node
        self.on_node: dict = {}
        for p in bound_pods(cl):
            self.on_node.setdefault(p.node_name, []).append(p)
        self.bound_keys = {p.key for ps in self.on_node.values() for p in ps}
        self.profiles = {p.scheduler_name for p in cl.config.profiles}
        pending_keys = {p.key for p in cl.objects.pods if not p.node_name}
        # the Simulation's own check (as ``Simulation.scenario``, before the
        # trace is submitted): the pods a step deletes are the manifests' (a
        # pending one from after 0 s: its arrival) or the scenario's own
        check_steps(scenario, names, 0.0,
                    lambda key, t: key in self.bound_keys or (key in pending_keys and t > 0))
        self.index = self._queued_rows(scenario)
        # a deletable queued pod -> (arrival, seconds bound or None)
        self.arrive = {p.key: (0.0, None) for p in trace_pods if p.key in pending_keys}
        self.ipa_queued = any(p.pod_affinity or p.pod_anti_affinity for p in trace_pods)
        self.added: list = []
        self.plan = NodeEvents(names, len(names), [], list(range(len(names))))

    def _queued_rows(self, scenario) -> dict:
        """A queued pod's key -> its row of ``trace_pods``; refused where a
        created pod is named as another (or created twice)."""
        index: dict = {}
        for j, p in enumerate(self.trace_pods):
            index.setdefault(p.key, []).append(j)
        for st in scenario.steps:
            for o in st.objects if st.kind == "Pod" else ():
                key = pod_key(o)
                if len(index.get(key, ())) > 1 or key in self.bound_keys:
                    raise refuse(f"{st.field} (create Pod)", f"pod {key} named as another pod "
                                 "(or created again)")
        return {key: js[0] for key, js in index.items()}

    def step(self, st) -> None:
        """Plan one scenario step (its events appended to ``plan``)."""
        if st.kind == "Pod":
            (self.create_pods if st.action == "create" else self.delete_pods)(st)
        elif st.action in ("create", "addNodes"):
            self.add_nodes(st)
        else:
            for name in st.names:
                self.node_step(st, name)

    def create_pods(self, st) -> None:
        for o in st.objects:
            rec = pod_from(o)
            if rec.node_name:
                raise refuse(f"{st.field} (create Pod)", "a pod created bound (spec.nodeName)")
            if rec.scheduler_name not in self.profiles:
                raise refuse(f"{st.field} (create Pod)", f"no profile schedules pod {rec.key} "
                             f"(schedulerName {rec.scheduler_name!r})")
            self.arrive[rec.key] = (st.at, st.duration)

    def delete_pods(self, st) -> None:
        for key in st.names:
            if key in self.bound_keys:
                self._delete_bound(st, key)
                continue
            if key not in self.arrive or key not in self.index:
                raise refuse(f"{st.field} (delete Pod)", f"pod {key} is not queued (no "
                             "profile schedules it: the Simulation's NotFound)")
            # gone before (its duration over, its node drained or removed,
            # preempted): read after the run (``missed_delete``)
            self.arrive.pop(key)
            self.plan.add(st.at, EV_POD_DELETE, 0, 0, 0, len(self.present), self.index[key])

    def _delete_bound(self, st, key) -> None:
        """A manifests' bound pod deleted: its requests leave its node."""
        on_node, state = self.on_node, self.state
        home = next((n for n, ps in on_node.items() if any(p.key == key for p in ps)), None)
        if home is None:
            raise refuse(f"{st.field} (delete Pod)", f"pod {key} left with its node "
                         "before (the Simulation's NotFound)")
        pod = next(p for p in on_node[home] if p.key == key)
        if self.ipa_queued or pod.pod_affinity or pod.pod_anti_affinity:
            raise refuse("InterPodAffinity", f"bound pod {key} deleted at "
                         f"{st.at:g}s (its terms' answers change)")
        r = state.node_rows[home]
        before = state.requested[r].copy()
        nz_before = state.nonzero_requested[r].copy()
        state.remove_pod(key)
        on_node[home] = [p for p in on_node[home] if p.key != key]
        gone = {nm: int(before[k] - state.requested[r, k])
                for k, nm in enumerate(state.resources.names)}
        u = self.alias[home]
        self.plan.add(st.at, EV_POD_DELETE, self.rows[u], self.uids[u], self.cur[u],
                      len(self.present), -1, gone["cpu"], gone["memory"], gone,
                      (int(nz_before[0] - state.nonzero_requested[r, 0]),
                       int(nz_before[1] - state.nonzero_requested[r, 1])))
        self.plan.bound_deleted[len(self.plan.t) - 1] = key

    def add_nodes(self, st) -> None:
        for o in st.objects:
            name = (o.get("metadata") or {}).get("name")
            if name in self.present:
                raise refuse(f"{st.field} ({st.action})", f"node {name!r} exists")
            o = copy.deepcopy(o)
            u = self._universe_name(st, name, o)
            self.alias[name] = u
            self.uids[u] = len(self.names)
            if self.free:
                self.rows[u] = self.free.pop()
            else:
                self.rows[u] = len(self.plan.local_rows)
                self.plan.local_rows.append(self.uids[u])
            self.names.append(u)
            self.objs[u] = [o]
            self.cur[u] = 0
            self.present.add(name)
            self.added.append(u)
            self.plan.add(st.at, EV_ADD, self.rows[u], self.uids[u], 0, len(self.present))

    def _universe_name(self, st, name: str, o: dict) -> str:
        """The universe's name of node ``name`` added by ``st`` (``o``: its
        object, renamed in place where that name is another): added again
        after its removal, the universe holds it under a name of its own
        (``<name>.<k>``; only a node's name tells them apart, and no queued
        pod reads it)."""
        if name not in self.rows:
            return name
        if any(_reads_node_names(p) for p in self.trace_pods):
            raise refuse(f"{st.field} ({st.action})", f"node {name!r} added again "
                         "while a queued pod's node affinity reads node names")
        k = 1
        while f"{name}.{k}" in self.taken:
            k += 1
        u = f"{name}.{k}"
        self.taken.add(u)
        o["metadata"]["name"] = u
        return u

    def node_step(self, st, name: str) -> None:
        """A cordon, uncordon, drain or removal of node ``name``."""
        if name not in self.present:
            raise refuse(f"{st.field} ({st.action})", f"node {name!r} is not in the cluster "
                         f"at {st.at:g}s")
        u = self.alias[name]
        row, objs, cur = self.rows[u], self.objs, self.cur
        if st.action in ("cordon", "uncordon", "drain"):
            obj = objs[u][cur[u]]
            if st.action != "drain" or not parse_node(obj).unschedulable:
                new = set_unschedulable(obj, st.action != "uncordon")
                if new not in objs[u]:
                    objs[u].append(new)
                cur[u] = objs[u].index(new)
                self.plan.add(st.at, EV_UPDATE, row, self.uids[u], cur[u], len(self.present))
            if st.action != "drain":
                return
        evict = st.action == "drain"
        if evict:
            # the queued pods a drain leaves (DaemonSet's, static), in
            # case they are bound there
            for j, p in enumerate(self.trace_pods):
                if drain_exemption(p) is not None:
                    self.plan.add(st.at, EV_KEEP, row, self.uids[u], cur[u], len(self.present),
                                  j)
        pods, cpu, mem, left, left_nz = self._pods_leave(name, evict)
        if not evict:
            self.present.discard(name)
            self.free.append(row)
        self.plan.add(st.at, EV_EVICT if evict else EV_DELETE, row, self.uids[u], cur[u],
                      len(self.present), pods, cpu, mem, left, left_nz)

    def _pods_leave(self, name: str, evict: bool) -> tuple:
        """The manifests' bound pods leaving node ``name`` (a drain's
        ``evict``: those ``kubectl drain`` leaves stay): (how many, their
        cpu millicores, memory bytes, {resource: requested} left on the
        node, its non-zero cpu and memory left), by the cluster's own
        accounting (``cl``'s state is the plan's: they leave it here)."""
        pods = self.on_node.pop(name, [])
        if not pods:
            return 0, 0, 0, {}, (0, 0)
        state, ci, mi = self.state, self.ci, self.mi
        r = state.node_rows[name]
        before = state.requested[r].copy()
        if evict:
            stay = [p for p in pods if drain_exemption(p) is not None]
            if stay:
                self.on_node[name] = stay
            pods = [p for p in pods if drain_exemption(p) is None]
        for p in pods:
            state.remove_pod(p.key)
        left = {nm: int(state.requested[r, k]) for k, nm in enumerate(state.resources.names)}
        return (len(pods), int(before[ci] - state.requested[r, ci]),
                int(before[mi] - state.requested[r, mi]), left,
                (int(state.nonzero_requested[r, 0]), int(state.nonzero_requested[r, 1])))

    def variants(self, objects: list) -> list:
        """The cluster's manifests once per variant: every node's v-th
        object (or its last), the nodes added appended."""
        objs = self.objs
        n_var = max(len(v) for v in objs.values()) if objs else 1
        out = []
        for v in range(n_var):
            one = []
            for o in objects:
                if isinstance(o, dict) and o.get("kind") == "Node":
                    name = (o.get("metadata") or {}).get("name")
                    if name in objs:
                        vs = objs[name]
                        o = vs[min(v, len(vs) - 1)]
                one.append(copy.deepcopy(o))
            for name in self.added:
                vs = objs[name]
                one.append(copy.deepcopy(vs[min(v, len(vs) - 1)]))
            out.append(one)
        return out


def plan_events(objects: list, cl, scenario, trace_pods) -> NodeEvents:
    """The node events of ``scenario`` (a ``Scenario``) on the cluster
    ``cl`` built from ``objects`` (manifests; its state loses the bound
    pods the events remove); ``trace_pods`` the queued pods (records: the
    manifests' pending pods, then the rows of ``scenario_trace``).
    Raises ``BatchProfileError`` (module doc), or the Simulation's own
    ``ScenarioError`` for a step it refuses."""
    planner = _EventPlanner(cl, scenario, trace_pods)
    steps = scenario.steps
    for k in sorted(range(len(steps)), key=lambda k: (steps[k].at, step_phase(steps[k]), k)):
        planner.step(steps[k])
    plan = planner.plan
    if EV_POD_DELETE in plan.kind and not plan.local_rows:
        raise refuse("scenario (delete Pod)", "a cluster without nodes")
    plan.variants.extend(planner.variants(objects))
    return plan
