"""A scenario's node and pod steps as the batched node-local trace
kernel's events (``kernels.batch.local_events``), and a run's sweep row
from them.

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
from tensorsched.framework.runtime.cluster_events import (
    NODE_ADD,
    NODE_DELETE,
    NODE_UPDATE,
    POD_DELETE,
    UNSCHEDULED_POD_ADD,
    plugin_events,
)
from tensorsched.framework.scheduler.cluster import pod_from
from tensorsched.framework.simulation.changes import pod_not_found
from tensorsched.framework.simulation.errors import SimulationError
from tensorsched.framework.simulation.scenario import check_steps
from tensorsched.framework.simulation.series import percentile
from tensorsched.kernels.batch.local_events import (
    EV_ADD,
    EV_DELETE,
    EV_EVICT,
    EV_KEEP,
    EV_POD_DELETE,
    EV_UPDATE,
    I_NODE_ADD,
    I_NODE_DELETE,
    I_NODE_UPDATE,
    I_POD_DELETE,
    REJ_FIRST,
    WHY_DELETED,
    WHY_EVICTED,
)

from .sweep_batch import _at, finite, sample_times, time_mean

_BITS = ((POD_DELETE, I_POD_DELETE), (NODE_ADD, I_NODE_ADD), (NODE_UPDATE, I_NODE_UPDATE),
         (NODE_DELETE, I_NODE_DELETE))


def missed_delete(plan: NodeEvents, keys: list, run, bound_rows: dict | None = None
                  ) -> SimulationError | None:
    """The error a run's Simulation stops with at a scenario's Pod delete
    whose pod was gone before it, the first in the Simulation's order
    (``plan``'s events): ``SimulationError`` NotFound
    (``changes.pod_not_found``; a note says how the pod left), else None.
    ``keys`` the queued pods' keys (the run's rows); ``run`` its
    ``why`` (per queued pod, then per bound pod of the manifests where it
    preempts), ``log_t`` / ``log_pod`` and ``victim`` (None: no
    preemption); ``bound_rows`` a manifests' bound pod's key -> its row
    in ``victim`` (where it preempts).

    Read from the run: a delete that finds its pod marks it
    ``WHY_DELETED`` (a bound one leaves at the delete's time; a pending
    one leaves no log row), and nothing takes it after; a pod gone before
    keeps how it left: a victim, ``WHY_EVICTED``, 0 (its duration over),
    or ``WHY_DELETED`` with its node, logged before the delete's time (a
    node deleted at that time comes after the delete).  A bound pod of
    the manifests is there unless preempted (``plan_events`` refuses a
    delete after its node left)."""
    why, victim = run.why, run.victim
    left_at: dict = {}          # a queued pod -> when it left (it leaves once)
    for t, k in zip(np.asarray(run.log_t).tolist(), np.asarray(run.log_pod).tolist()):
        if k < 0:
            left_at.setdefault(-1 - k, t)
    for e, kind in enumerate(plan.kind):
        if kind != EV_POD_DELETE:
            continue
        t, j = float(plan.t[e]), int(plan.bound[e])
        how = None
        if j < 0:
            key = plan.bound_deleted[e]
            if victim is not None and bound_rows is not None and victim[bound_rows[key]]:
                how = "was preempted"
        else:
            key = keys[j]
            if victim is not None and victim[j]:
                how = "was preempted"
            elif why[j] == WHY_EVICTED:
                how = "was evicted (a drain)"
            elif why[j] == 0:
                how = "left (its duration over)"
            elif left_at.get(j, t) < t:
                how = "was deleted with its node"
        if how is not None:
            err = pod_not_found(key, t)
            err.add_note(f"the pod {how} before its delete")
            return err
    return None


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


def _phase(st) -> int:
    """Where a step's events go among those of its time on the Simulation's
    agenda: pod deletes with the departures (first: pushed before any),
    node steps, then pod creates with the arrivals (before the trace's)."""
    if st.kind == "Pod":
        return 0 if st.action == "delete" else 2
    return 1


def pod_key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


class ScenarioTrace:
    """A trace with a scenario's created pods among its rows, what
    ``sweep_local.trace_setup`` reads of a trace: ``len``, ``arrival`` /
    ``departure`` / ``duration`` [P] seconds (NaN: none) and
    ``records(start, stop)``.  Rows in arrival order, at one time the
    created pods first (in the scenario's order: its ``pods`` events are
    on the agenda before the trace's), then the trace's rows; a created
    pod arrives at its step's time and leaves its step's ``duration``
    after its binding.  ``source[r]``: row r's trace row, or -1 - k for the
    k-th created pod."""

    def __init__(self, trace, scenario):
        self.trace = trace
        self.created = [(st.at, o, st.duration) for st in scenario.steps
                        if st.kind == "Pod" and st.action == "create" for o in st.objects]
        n = len(trace)
        arr = np.asarray(trace.arrival, np.float64)
        at = np.asarray([c[0] for c in self.created], np.float64)
        # created first at a time: the sort's second key
        order = np.lexsort((np.concatenate([np.ones(n), np.zeros(at.shape[0])]),
                            np.concatenate([arr, at])))
        self.source = np.where(order < n, order, -1 - (order - n)).astype(np.int64)
        self.arrival = np.concatenate([arr, at])[order]
        self.departure = np.concatenate([np.asarray(trace.departure, np.float64),
                                         np.full(at.shape[0], np.nan)])[order]
        dur = [np.nan if c[2] is None else float(c[2]) for c in self.created]
        self.duration = np.concatenate([np.asarray(trace.duration, np.float64),
                                        np.asarray(dur, np.float64)])[order]
        self._records = None

    def __len__(self) -> int:
        return self.arrival.shape[0]

    def records(self, start: int, stop: int) -> list:
        if self._records is None:
            rows = list(self.trace.records(0, len(self.trace)))
            made = [pod_from(copy.deepcopy(c[1])) for c in self.created]
            self._records = [rows[r] if r >= 0 else made[-1 - r] for r in self.source.tolist()]
        return self._records[start:stop]


def scenario_trace(trace, scenario):
    """``trace`` with the pods ``scenario`` creates among its rows
    (``ScenarioTrace``), or ``trace`` itself when it creates none."""
    if scenario is None or not any(st.kind == "Pod" and st.action == "create"
                                   for st in scenario.steps):
        return trace
    return ScenarioTrace(trace, scenario)


def plan_events(objects: list, cl, scenario, trace_pods) -> NodeEvents:
    """The node events of ``scenario`` (a ``Scenario``) on the cluster
    ``cl`` built from ``objects`` (manifests; its state loses the bound
    pods the events remove); ``trace_pods`` the queued pods (records: the
    manifests' pending pods, then the rows of ``scenario_trace``).
    Raises ``BatchProfileError`` (module doc), or the Simulation's own
    ``ScenarioError`` for a step it refuses."""
    nodes = list(cl.objects.nodes)
    names = [n.name for n in nodes]
    objs = {n.name: [copy.deepcopy(n.obj)] for n in nodes}
    cur = {name: 0 for name in names}
    rows = {name: i for i, name in enumerate(names)}      # local rows (at their time)
    uids = dict(rows)                                    # universe indices
    present = set(names)
    alias = {name: name for name in names}    # a live node's universe name
    taken = set(names) | {(o.get("metadata") or {}).get("name") for st in scenario.steps
                          if st.kind == "Node" for o in st.objects}
    free: list = []
    state = cl.state
    ci, mi = state.resources.index["cpu"], state.resources.index["memory"]
    # the manifests' bound pods per node: (pods, exempt from a drain, cpu, memory)
    on_node: dict = {}
    for p in bound_pods(cl):
        on_node.setdefault(p.node_name, []).append(p)
    bound_keys = {p.key for ps in on_node.values() for p in ps}
    profiles = {p.scheduler_name for p in cl.config.profiles}
    pending_keys = {p.key for p in cl.objects.pods if not p.node_name}
    # the Simulation's own check (as ``Simulation.scenario``, before the
    # trace is submitted): the pods a step deletes are the manifests' (a
    # pending one from after 0 s: its arrival) or the scenario's own
    check_steps(scenario, names, 0.0,
                lambda key, t: key in bound_keys or (key in pending_keys and t > 0))
    index: dict = {}
    for j, p in enumerate(trace_pods):
        index.setdefault(p.key, []).append(j)
    for st in scenario.steps:
        for o in st.objects if st.kind == "Pod" else ():
            key = pod_key(o)
            if len(index.get(key, ())) > 1 or key in bound_keys:
                raise refuse(f"{st.field} (create Pod)", f"pod {key} named as another pod "
                             "(or created again)")
    index = {key: js[0] for key, js in index.items()}
    arrive: dict = {}           # a deletable queued pod -> (arrival, seconds bound or None)
    for p in trace_pods:
        if p.key in pending_keys:
            arrive[p.key] = (0.0, None)
    ipa_queued = any(p.pod_affinity or p.pod_anti_affinity for p in trace_pods)
    added: list = []
    plan = NodeEvents(names, len(names), [], list(range(len(names))))
    order = sorted(range(len(scenario.steps)), key=lambda k: (scenario.steps[k].at,
                                                              _phase(scenario.steps[k]), k))
    for st in (scenario.steps[k] for k in order):
        where = st.field
        if st.kind == "Pod" and st.action == "create":
            for o in st.objects:
                rec = pod_from(o)
                if rec.node_name:
                    raise refuse(f"{where} (create Pod)", "a pod created bound (spec.nodeName)")
                if rec.scheduler_name not in profiles:
                    raise refuse(f"{where} (create Pod)", f"no profile schedules pod {rec.key} "
                                 f"(schedulerName {rec.scheduler_name!r})")
                arrive[rec.key] = (st.at, st.duration)
            continue
        if st.kind == "Pod":            # a delete
            for key in st.names:
                if key in bound_keys:
                    home = next((n for n, ps in on_node.items() if any(
                        p.key == key for p in ps)), None)
                    if home is None:
                        raise refuse(f"{where} (delete Pod)", f"pod {key} left with its node "
                                     "before (the Simulation's NotFound)")
                    pod = next(p for p in on_node[home] if p.key == key)
                    if ipa_queued or pod.pod_affinity or pod.pod_anti_affinity:
                        raise refuse("InterPodAffinity", f"bound pod {key} deleted at "
                                     f"{st.at:g}s (its terms' answers change)")
                    r = state.node_rows[home]
                    before = state.requested[r].copy()
                    nz_before = state.nonzero_requested[r].copy()
                    state.remove_pod(key)
                    on_node[home] = [p for p in on_node[home] if p.key != key]
                    gone = {nm: int(before[k] - state.requested[r, k])
                            for k, nm in enumerate(state.resources.names)}
                    u = alias[home]
                    plan.add(st.at, EV_POD_DELETE, rows[u], uids[u], cur[u], len(present),
                             -1, gone["cpu"], gone["memory"], gone,
                             (int(nz_before[0] - state.nonzero_requested[r, 0]),
                              int(nz_before[1] - state.nonzero_requested[r, 1])))
                    plan.bound_deleted[len(plan.t) - 1] = key
                    continue
                if key not in arrive or key not in index:
                    raise refuse(f"{where} (delete Pod)", f"pod {key} is not queued (no "
                                 "profile schedules it: the Simulation's NotFound)")
                # gone before (its duration over, its node drained or
                # removed, preempted): read after the run (``missed_delete``)
                arrive.pop(key)
                plan.add(st.at, EV_POD_DELETE, 0, 0, 0, len(present), index[key])
            continue
        if st.action in ("create", "addNodes"):
            for o in st.objects:
                name = (o.get("metadata") or {}).get("name")
                if name in present:
                    raise refuse(f"{where} ({st.action})", f"node {name!r} exists")
                u = name
                o = copy.deepcopy(o)
                if name in rows:
                    # added again after its removal: the universe holds it
                    # under a name of its own (``<name>.<k>``; only a
                    # node's name tells them apart, and no queued pod reads it)
                    if any(_reads_node_names(p) for p in trace_pods):
                        raise refuse(f"{where} ({st.action})", f"node {name!r} added again "
                                     "while a queued pod's node affinity reads node names")
                    k = 1
                    while f"{name}.{k}" in taken:
                        k += 1
                    u = f"{name}.{k}"
                    taken.add(u)
                    o["metadata"]["name"] = u
                alias[name] = u
                uids[u] = len(names)
                if free:
                    rows[u] = free.pop()
                else:
                    rows[u] = len(plan.local_rows)
                    plan.local_rows.append(uids[u])
                names.append(u)
                objs[u] = [o]
                cur[u] = 0
                present.add(name)
                added.append(u)
                plan.add(st.at, EV_ADD, rows[u], uids[u], 0, len(present))
            continue
        for name in st.names:
            if name not in present:
                raise refuse(f"{where} ({st.action})", f"node {name!r} is not in the cluster "
                             f"at {st.at:g}s")
            u = alias[name]
            row = rows[u]
            if st.action in ("cordon", "uncordon", "drain"):
                obj = objs[u][cur[u]]
                if st.action != "drain" or not parse_node(obj).unschedulable:
                    new = set_unschedulable(obj, st.action != "uncordon")
                    if new not in objs[u]:
                        objs[u].append(new)
                    cur[u] = objs[u].index(new)
                    plan.add(st.at, EV_UPDATE, row, uids[u], cur[u], len(present))
                if st.action != "drain":
                    continue
            pods = on_node.pop(name, [])
            evict = st.action == "drain"
            if evict:
                # the queued pods a drain leaves (DaemonSet's, static), in
                # case they are bound there
                for j, p in enumerate(trace_pods):
                    if drain_exemption(p) is not None:
                        plan.add(st.at, EV_KEEP, row, uids[u], cur[u], len(present), j)
            left, left_nz = {}, (0, 0)
            cpu = mem = 0
            if pods:
                # what the pods leaving took: the cluster's own accounting
                # (``cl``'s state is this plan's: they leave it here)
                r = state.node_rows[name]
                before = state.requested[r].copy()
                if evict:
                    stay = [p for p in pods if drain_exemption(p) is not None]
                    if stay:
                        on_node[name] = stay
                    pods = [p for p in pods if drain_exemption(p) is None]
                for p in pods:
                    state.remove_pod(p.key)
                cpu = int(before[ci] - state.requested[r, ci])
                mem = int(before[mi] - state.requested[r, mi])
                left = {nm: int(state.requested[r, k])
                        for k, nm in enumerate(state.resources.names)}
                left_nz = (int(state.nonzero_requested[r, 0]),
                           int(state.nonzero_requested[r, 1]))
            if not evict:
                present.discard(name)
                free.append(row)
            plan.add(st.at, EV_EVICT if evict else EV_DELETE, row, uids[u], cur[u],
                     len(present), len(pods), cpu, mem, left, left_nz)
    if EV_POD_DELETE in plan.kind and not plan.local_rows:
        raise refuse("scenario (delete Pod)", "a cluster without nodes")
    n_var = max(len(v) for v in objs.values()) if objs else 1
    for v in range(n_var):
        out = []
        for o in objects:
            if isinstance(o, dict) and o.get("kind") == "Node":
                name = (o.get("metadata") or {}).get("name")
                if name in objs:
                    vs = objs[name]
                    o = vs[min(v, len(vs) - 1)]
            out.append(copy.deepcopy(o))
        for name in added:
            vs = objs[name]
            out.append(copy.deepcopy(vs[min(v, len(vs) - 1)]))
        plan.variants.append(out)
    return plan


def rejector_codes(prober) -> tuple[np.ndarray, int]:
    """Each class's rejector code per universe row of ``prober`` (the
    interest bits of its static status's plugin, ``REJ_FIRST`` when that
    filter runs before NodeResourcesFit; 0 where the static filters pass)
    and NodeResourcesFit's interest bits; refused where a rejecting plugin
    listens to a pending pod's arrival (the kernel's queue does not move
    the pool on arrivals)."""
    fw = prober.fw
    if fw is None:          # no pod to schedule: no failure either
        return np.zeros(prober.base["static_bits"].shape, np.int64), 0
    plugins = fw.plugins

    def bits_of(name: str) -> int:
        events = plugin_events(plugins.get(name))
        if UNSCHEDULED_POD_ADD in events:
            raise refuse(name or "filter", "it listens to pending pods' arrivals")
        return sum(b for ev, b in _BITS if ev in events)

    keys = prober.keys
    codes = np.array([bits_of(st.plugin) | (REJ_FIRST if first else 0)
                      for st, first in zip(keys.statuses, keys.key_first.tolist())] + [0],
                     np.int64)
    # s_key -1 (the static filters pass) reads the trailing 0
    return codes[keys.s_key], bits_of("NodeResourcesFit")


@dataclass
class RowSteps:
    """What a run's row needs of the node events besides the kernel's log:
    per event (time order) ``t``, the cluster's cpu / memory allocatable
    after it (millicores, bytes), the manifests' bound pods' cpu / memory
    still requested after it, and the bound pods it deleted or evicted."""

    t: np.ndarray
    cap_cpu: np.ndarray
    cap_mem: np.ndarray
    base_cpu: np.ndarray
    base_mem: np.ndarray
    deleted: int
    evicted: int


def row_steps(plan: NodeEvents, alloc: np.ndarray, ci: int, mi: int, base: tuple) -> RowSteps:
    """``RowSteps`` of ``plan``; ``alloc`` [n_all, R] the universe's
    nodes' allocatable, ``base`` the bound pods' cpu and memory at the start."""
    live = np.zeros(plan.n_all, np.bool_)
    live[:plan.n0] = True
    cap_c, cap_m, base_c, base_m = [], [], [], []
    bc, bm = int(base[0]), int(base[1])
    deleted = evicted = 0
    for kind, node, k, c, m in zip(plan.kind, plan.uid, plan.bound, plan.bound_cpu,
                                   plan.bound_mem):
        if kind == EV_ADD:
            live[node] = True
        elif kind == EV_DELETE:
            live[node] = False
        if kind in (EV_DELETE, EV_EVICT):
            bc -= c
            bm -= m
            if kind == EV_DELETE:
                deleted += k
            else:
                evicted += k
        elif kind == EV_POD_DELETE and k < 0:
            # a manifests' bound pod (the kernel's pods count by ``why``)
            bc -= c
            bm -= m
            deleted += 1
        cap_c.append(int(alloc[live, ci].sum()))
        cap_m.append(int(alloc[live, mi].sum()))
        base_c.append(bc)
        base_m.append(bm)
    as_int = lambda x: np.asarray(x, np.int64)   # noqa: E731
    return RowSteps(np.asarray(plan.t, np.float64), as_int(cap_c), as_int(cap_m),
                    as_int(base_c), as_int(base_m), deleted, evicted)


def event_row(res, why: np.ndarray, trace, steps: RowSteps, caps: tuple, base: tuple,
              bound: int, interval: float, horizon: float, last_event: float) -> dict:
    """``sweep_batch.simulate_row`` for a run with node events: ``why``
    [P] how each pod left with its node, ``steps`` the events' changes,
    ``caps`` / ``base`` the cluster's allocatable and bound pods' requests
    at the start (cpu millicores, memory bytes), ``bound`` the manifests'
    bound pods."""
    arrival = np.asarray(trace.arrival, np.float64)
    leaves = np.isfinite(np.asarray(trace.departure, np.float64))
    timed = np.isfinite(np.asarray(trace.duration, np.float64))
    on = res.node >= 0
    stayed = why == 0
    scheduled = int(on.sum())
    end = float(res.end)
    lat = (res.bind[on] - arrival[on]).tolist()
    row = {"sim_seconds": finite(end), "arrived": int(arrival.shape[0]),
           "scheduled": scheduled, "failed_attempts": int(res.tries.sum()) - scheduled,
           "preemptions": 0, "departed": int((on & (leaves | timed) & stayed).sum()),
           "deleted": int((~on & leaves & stayed).sum()) + int((why == WHY_DELETED).sum())
           + steps.deleted,
           "evicted": int((why == WHY_EVICTED).sum()) + steps.evicted,
           "pending": int((~on & ~leaves & stayed).sum()),
           "running": int((on & ~leaves & ~timed & stayed).sum()) + bound - steps.deleted
           - steps.evicted,
           "latency_p50": finite(percentile(lat, 50)),
           "latency_p99": finite(percentile(lat, 99))}
    times = sample_times(interval, horizon, end, last_event)
    j = np.where(res.log_pod >= 0, res.log_pod, -1 - res.log_pod)
    sign = np.where(res.log_pod >= 0, 1, -1)
    cpu = np.asarray(trace.table.column("cpu").to_numpy(), np.int64)
    mem = np.asarray(trace.table.column("memory").to_numpy(), np.int64)
    # the trace's pods' requests, then the bound pods' and the allocatable
    # as the node events left them, at each sample time
    cpu_req = _at(res.log_t, 0, np.cumsum(sign * cpu[j]), times)
    mem_req = _at(res.log_t, 0, np.cumsum(sign * mem[j]), times)
    cpu_req = cpu_req + _at(steps.t, base[0], steps.base_cpu, times)
    mem_req = mem_req + _at(steps.t, base[1], steps.base_mem, times)
    cpu_cap = _at(steps.t, caps[0], steps.cap_cpu, times)
    mem_cap = _at(steps.t, caps[1], steps.cap_mem, times)
    series = {
        "cpu_alloc_pct": [100.0 * int(r) / int(c) if c else np.nan
                          for r, c in zip(cpu_req, cpu_cap)],
        "memory_alloc_pct": [100.0 * int(r) / int(c) if c else np.nan
                             for r, c in zip(mem_req, mem_cap)],
        "gpu_alloc_pct": [np.nan] * len(times),
        "gpu_frag_pct": [np.nan] * len(times),
    }
    for col, values in series.items():
        row[f"mean_{col}"] = time_mean(times, np.array(values, np.float64))
    return row
