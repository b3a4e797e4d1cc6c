"""``simulate`` jobs of the openb profile with a scenario of node and Pod steps, run
as one batched call (``kernels.batch.openb_events``) per (node CSV,
scenario, backend, interval): each row equal to the row ``experiments.
sweep`` makes from the job's own Simulation, but ``wall_seconds``.

What the Simulation does for an openb cluster under each node step
(``framework/simulation/changes.py``), mirrored here as the kernel's node
events (``plan_openb``, in time order, file order among equal times):

- ``addNodes`` / a Node ``create``: the node joins (its GPUs and model as
  ``GpuTable`` reads them: ``nvidia.com/gpu`` and the GPU product label;
  its cpu, memory and pod slots from its allocatable; a GPU model new to
  the node list joins the models the pods' masks are over), in the row the
  cluster state gives it (a row freed by a removal, the last freed first,
  else the next one); the pool moves for Node/Add; a node added again
  under a removed node's name is another node of the universe, named
  ``<name>.<k>`` in ``OpenbPlan.names`` (as ``event_plan`` names it),
  the later steps naming it act on it;
- a node added with a NoSchedule or NoExecute taint (but the
  unschedulable one) rejects every trace pod (they tolerate nothing:
  TaintToleration; a PreferNoSchedule taint only scores, and the openb
  profile scores with GpuShareScore alone): the kernel keeps it blocked as
  a cordoned node, through its uncordons (TaintToleration listens to the
  events NodeUnschedulable does);
- ``cordon`` / ``uncordon``: the node's unschedulable field (and taint)
  set or cleared, the pool moved for Node/Update (also when it was
  already so); the openb profile keeps the default filters, so
  NodeUnschedulable (first in filter order) rejects every trace pod on a
  cordoned node;
- ``drain``: a cordon (unless the node is unschedulable already), then
  every pod bound there evicted (the trace's pods: no DaemonSet, no
  static pod), each a Pod/Delete;
- ``removeNodes`` / a Node ``delete``: its pods deleted (Pod/Delete),
  then the node (Node/Delete).

Pod steps, as the Simulation's agenda orders them at one time (deletes
before the departures, node steps, creates before the trace's arrivals):
a created pod is a row of the run's pods (``OpenbPlan.workload``: its
cpu, memory and GPU share read as the trace's pods' are, arriving at its
step's time, leaving its ``duration`` after its binding, in
PrioritySort's order by its own priority); a Pod delete is a kernel
event (``EV_POD_DELETE``) before its time's departures: a bound pod
frees its node (Pod/Delete moves the pods listening to it), a pending one
leaves the queue; either counts as deleted.  The created pod may be gone
before its delete: preempted by a pod of the run (DefaultPreemption),
evicted by a drain, deleted with its node, or left, its ``duration``
over (at equal times the agenda applies the delete first: pushed before
any departure; a node step after it); the Simulation then stops at the
step with NotFound (``changes.pod_not_found``).  The kernel's delete
then does nothing and its run goes on; ``missed_deletes`` finds the
first such delete afterwards (the pod's ``why``): the job's error, as
the per-job path reports it (``sweep._guarded``), the other runs' rows
as before.

OpenbTieRank (a config that scores with it: the experiment's profile):
the node list's ranks are ``batch.tie_of(n, seed)``, an added node's its
``openb.tensorsched.io/tie`` label (0 without), a row's rank its node's.
The ``sweep`` jobs' profile (``simulate_run.choose_config``): a policy's
scores with GpuShareScore alone (with ``--tie-rank`` the experiment's:
OpenbTieRank under it); a ``--config`` runs here when ``job_profile``
takes it (the two score weights, the policy and the backoff from it),
else per job; under FGD with its own ``typicalPods`` (``profile_typical``)
they are the run's table in the kernel, and the row's fragmentation is
replayed under the trace's through the run's change log and node events
(``sweep_batch.frag_under_events``), as the Simulation's GpuTracker
measures it.

A failed pod waits for the events its rejecting plugins listen to: each
live node's first failing filter, NodeUnschedulable on a cordoned node
(Node/Add, Node/Update), else NodeResourcesFit or GpuShareFit
(Pod/Delete, Node/Add, Node/Update); with no node left, no plugin
rejects it and it moves on any event, a pod's arrival too.  The time
series divide by the live nodes' allocatable cpu and memory and GPUs
(``GpuTracker``), the fragmentation summed over the live nodes in row
order.  Evicted and deleted pods leave the counts of the running pods;
their later departures do nothing.

Refused (``BatchProfileError`` naming the step's field and why; the job
then runs per job): a step the Simulation refuses (``check_steps``: a
node absent then or added while present, a pod delete finding no pod: a
trace pod is not submitted yet when the scenario is scheduled; the
per-job path reports it), a node added with GPUs but no GPU model label,
GPU topology or memory that is not a whole number of MiB, a drain when a
trace pod is one a drain leaves (a static pod's annotation); a created
pod outside the trace's kind (another namespace than default, bound,
another scheduler, a priorityClassName, tolerations, node selection or
affinity, spread constraints, host ports, gates, claims, volumes, a
request but cpu and memory, a container without a cpu or memory request,
memory not a whole number of MiB, an annotation but the GPU share's),
named as a trace pod or created twice; with OpenbTieRank scoring, an
added node's tie label that is not an integer 0 .. 2**24 - 1.
"""

from __future__ import annotations

import time
import copy
from dataclasses import dataclass, field, replace

import numpy as np

from tensorsched.framework.capacity.batch_probe import BatchProfileError
from tensorsched.framework.errors import TensorschedError
from tensorsched.framework.parsing.manifests import parse_node, parse_pod
from tensorsched.framework.parsing.node_lifecycle import MIRROR_ANNOTATION
from tensorsched.framework.plugins.node_resources_fit import NodeResourcesFit
from tensorsched.framework.plugins.node_unschedulable import NodeUnschedulable
from tensorsched.framework.plugins.taint_toleration import TaintToleration
from tensorsched.framework.runtime.cluster_events import (
    NODE_ADD,
    NODE_DELETE,
    NODE_UPDATE,
    POD_DELETE,
    plugin_events,
)
from tensorsched.framework.plugins.priority_sort import PrioritySort
from tensorsched.framework.simulation.changes import pod_not_found
from tensorsched.framework.simulation.scenario import check_steps
from tensorsched.framework.simulation.series import KEEP_LATENCIES, percentile
from tensorsched.kernels.batch.openb_events import (
    EV_ADD,
    EV_DELETE,
    EV_EVICT,
    EV_POD_DELETE,
    EV_UPDATE,
    I_NODE_ADD,
    I_NODE_DELETE,
    I_NODE_UPDATE,
    I_POD_DELETE,
    WHY_DELETED,
    WHY_EVICTED,
    WHY_POD_DELETED,
    WHY_PREEMPTED,
    NodeEvents,
    delete_pods,
    deletes_missed,
    run_openb_events,
)
from tensorsched.topology.gpu import (
    ANNO_GPU_COUNT,
    ANNO_GPU_MILLI,
    ANNO_GPU_MODEL,
    GpuInventory,
    pod_gpu_ask,
    read_openb_nodes,
)
from tensorsched.topology.gpu_inputs import node_inputs
from tensorsched.topology.openb import trace as T
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb.batch_sim import batch_config
from tensorsched.topology.openb.batch import (
    DEFAULT_MAX_UNSCHED,
    TraceWorkload,
    default_weights,
    preempt_arrays,
    tie_of,
    trace_arrays,
    workload_of,
)
from tensorsched.topology.plugins import NAME_SCORE, GpuShareFit, decode_score_args

from . import simulate_run as run
from .event_plan import step_phase
from .sweep_batch import MIB, _at, finite, frag_under_events, sample_times, time_mean
from .sweep_local import agenda_spans, samples_follow

_BITS = ((POD_DELETE, I_POD_DELETE), (NODE_ADD, I_NODE_ADD), (NODE_UPDATE, I_NODE_UPDATE),
         (NODE_DELETE, I_NODE_DELETE))
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def refuse(what: str, why: str) -> BatchProfileError:
    return BatchProfileError(f"{what}: {why}; the batched openb engine does not cover it")


def interest_bits(plugin) -> int:
    """``_queue``'s bits of the cluster events ``plugin`` (a class) listens to."""
    events = plugin_events(plugin)
    return sum(b for ev, b in _BITS if ev in events)


@dataclass
class CreatedPod:
    """A pod a scenario creates, as the kernel's pods are: ``at`` its step's
    time (seconds), ``duration`` (seconds bound before it leaves; inf:
    stays), ``cpu`` millicores, ``mem`` MiB, the GPU share (``num`` GPUs
    of ``milli`` each, ``spec`` its models joined by ``|``), ``key`` its
    PrioritySort key (minus the priority, creation ns)."""

    name: str
    at: float
    duration: float
    cpu: int
    mem: int
    num: int
    milli: int
    spec: str
    key: tuple


@dataclass
class OpenbPlan:
    """A scenario's steps on an openb node list: ``events`` the kernel's
    (``NodeEvents``); per event ``live_cpu`` / ``live_mem`` /
    ``live_gpus`` the live nodes' allocatable cpu (millicores), memory
    (bytes) and GPUs after it; ``names`` each universe node's name,
    ``models`` the GPU models (the node list's, then those added nodes
    bring: the pods' and typical pods' model masks are over them);
    ``ranks`` each added node's OpenbTieRank label (``ranks[x - n0]`` of
    universe node x; the node list's come from the run's seed),
    ``rank_problem`` why an added node's label is one the kernel does not
    rank (None: none); ``created`` the pods the scenario creates, in the
    Simulation's order (an ``EV_POD_DELETE``'s ``ev_x`` is an index)."""

    events: NodeEvents
    names: list
    models: list
    live_cpu: np.ndarray
    live_mem: np.ndarray
    live_gpus: np.ndarray
    ranks: list = field(default_factory=list)
    rank_problem: str | None = None
    created: list = field(default_factory=list)

    def workload(self, tw: TraceWorkload, trace) -> tuple:
        """(``tw``, the workload of the ``Trace`` ``trace``, with the
        created pods among its rows, [K] each created pod's row:
        ``merged``); ``tw`` itself with none."""
        if not self.created:
            return tw, np.zeros(0, np.int64)
        return merged(tw, self.created, trace_keys(trace))


def trace_keys(trace) -> list | None:
    """PrioritySort's key of each row of ``trace`` (None: all equal, no
    ``priority`` column)."""
    if "priority" not in trace.table.column_names:
        return None
    return PrioritySort.sort_keys(trace.records(0, len(trace)))


def merged(tw: TraceWorkload, created: list, keys: list | None) -> tuple:
    """(the ``TraceWorkload`` of ``tw``'s rows and the ``created`` pods in
    arrival order, at one time the created ones first (the Simulation's
    agenda holds a step's pods before the trace's), [K] each created pod's
    row).  activeQ's ranks: PrioritySort's keys of both (``keys`` the
    trace rows', None: all (0, 0)), densely ranked."""
    p, k = len(tw.arrival), len(created)
    arr = np.concatenate([np.asarray(tw.arrival, np.float64),
                          np.array([c.at for c in created], np.float64)])
    order = np.lexsort((np.concatenate([np.ones(p), np.zeros(k)]), arr))
    made = np.empty(k, np.int64)
    made[order[order >= p] - p] = np.flatnonzero(order >= p)
    pods = tw.pods

    def col(a, b, dtype):
        return np.concatenate([np.asarray(a, dtype), np.asarray(b, dtype)])[order]
    names = list(pods.names) + [c.name for c in created]
    out_pods = R.TracePods([names[i] for i in order.tolist()],
                           col(pods.cpu, [c.cpu for c in created], np.int64),
                           col(pods.mem, [c.mem for c in created], np.int64),
                           col(pods.num, [c.num for c in created], np.int64),
                           col(pods.milli, [c.milli for c in created], np.int64),
                           [(list(pods.spec) + [c.spec for c in created])[i]
                            for i in order.tolist()], pods.source)
    keys = list(keys if keys is not None else [(0, 0)] * p) + [c.key for c in created]
    dense = {key: i for i, key in enumerate(sorted(set(keys)))}
    rank = None if len(dense) < 2 else np.array([dense[keys[i]] for i in order.tolist()],
                                                np.int64)
    out = TraceWorkload(out_pods, arr[order],
                        col(tw.departure, np.full(k, np.inf), np.float64),
                        typical=tw.typical if tw.typical is not None else T.typical_of(pods),
                        duration=col(tw.duration, [c.duration for c in created], np.float64),
                        rank=rank, priority=col(tw.priority, [-c.key[0] for c in created],
                                                np.int64))
    return out, made


def _added_node(obj: dict, models: list, where: str) -> tuple:
    """(GPUs, model index, cpu millicores, memory MiB, memory bytes, pod
    slots, cordoned, tainted) of a Node manifest a step adds (a GPU model
    new to ``models``, the models so far, appended to it; tainted: a
    NoSchedule or NoExecute taint but the unschedulable one, which no
    trace pod tolerates); refused (module doc)."""
    try:
        rec = parse_node(obj)
        count, model, _mem, topo = node_inputs(rec, list(models), {})
    except (TensorschedError, ValueError) as exc:
        raise refuse(where, f"its node: {exc}") from None
    if topo is not None:
        raise refuse(where, f"node {rec.name!r} has a GPU topology")
    if count and not model:
        raise refuse(where, f"node {rec.name!r}: GPUs without a GPU model label")
    if count and model not in models:
        models.append(model)        # (``node_inputs`` refused one past the masks' bits)
    if count > 16:
        raise refuse(where, f"node {rec.name!r}: {count} GPUs (at most 16)")
    alloc = rec.allocatable
    mem = int(alloc.get("memory", 0))
    if mem % MIB:
        raise refuse(where, f"node {rec.name!r}: memory {mem} bytes is not a whole number of "
                     "MiB")
    cordoned = bool(rec.unschedulable) or any(t.key == UNSCHEDULABLE_TAINT for t in rec.taints)
    # PreferNoSchedule taints only score (TaintToleration is not among the profile's scores)
    tainted = any(t.key != UNSCHEDULABLE_TAINT and t.effect in ("NoSchedule", "NoExecute")
                  for t in rec.taints)
    return (int(count), models.index(model) if count else -1, int(alloc.get("cpu", 0)),
            mem // MIB, mem, int(alloc.get("pods", 0)), cordoned, tainted)


MAX_RANK = 1 << 24     # an added node's OpenbTieRank label the kernel ranks: 0 .. this - 1
GPU_ANNOTATIONS = frozenset({ANNO_GPU_MILLI, ANNO_GPU_COUNT, ANNO_GPU_MODEL})
POD_SPEC_UNCOVERED = ("tolerations", "node_selector", "node_affinity", "pod_affinity",
                      "pod_anti_affinity", "topology_spread", "host_ports", "scheduling_gates",
                      "resource_claims")


def _tie_rank(obj: dict, where: str) -> tuple:
    """(OpenbTieRank's rank of an added Node manifest: its label read as
    the plugin reads it, 0 without; why the kernel does not rank it, or
    None)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if T.TIE_LABEL not in labels:
        return 0, None
    try:
        v = int(labels[T.TIE_LABEL])
    except (TypeError, ValueError):
        v = None
    if v is None or not 0 <= v < MAX_RANK:
        return 0, (f"{where}: label {T.TIE_LABEL}={labels[T.TIE_LABEL]!r} (OpenbTieRank's "
                   f"rank: an integer 0..{MAX_RANK - 1})")
    return v, None


def _created_pod(obj: dict, st, where: str) -> CreatedPod:
    """The ``CreatedPod`` of a Pod manifest step ``st`` creates: a pod of
    the default namespace asking for cpu, memory and a GPU share alone (as
    the trace's pods); refused otherwise (module doc)."""
    try:
        rec = parse_pod(copy.deepcopy(obj))
        ask = pod_gpu_ask(obj)
    except (TensorschedError, ValueError) as exc:
        raise refuse(where, f"its pod: {exc}") from None
    key = rec.key

    def no(why):
        return refuse(where, f"pod {key}: {why}")
    if rec.namespace != "default":
        raise no("a namespace other than default (the engine's pods are default's)")
    if rec.node_name:
        raise no("created bound (spec.nodeName)")
    if rec.scheduler_name != "default-scheduler":
        raise no(f"schedulerName {rec.scheduler_name!r} (the openb profile is "
                 "default-scheduler)")
    if rec.priority_class_name:
        raise no("a priorityClassName")
    for name in POD_SPEC_UNCOVERED:
        if getattr(rec, name, None):
            raise no(f"{name} (the trace's pods have none)")
    if (obj.get("spec") or {}).get("volumes"):
        raise no("volumes")
    extra = sorted(set(rec.requests) - {"cpu", "memory"})
    if extra:
        raise no(f"requests {extra[0]} (the engine's pods ask for cpu, memory and a GPU "
                 "share)")
    cpu, mem = int(rec.requests.get("cpu", 0)), int(rec.requests.get("memory", 0))
    if rec.nonzero_cpu != cpu or rec.nonzero_memory != mem:
        raise no("a container without a cpu or memory request (its non-zero default "
                 "scores)")
    if mem % MIB:
        raise no(f"memory {mem} bytes is not a whole number of MiB")
    annos = (obj.get("metadata") or {}).get("annotations") or {}
    odd = sorted(set(annos) - GPU_ANNOTATIONS)
    if odd:
        raise no(f"annotation {odd[0]} (the engine reads the GPU share's alone)")
    num, milli = (int(ask.num), int(ask.milli)) if ask.num and ask.milli else (0, 0)
    return CreatedPod(rec.name, float(st.at), np.inf if st.duration is None
                      else float(st.duration), cpu, mem // MIB, num, milli,
                      str(annos.get(ANNO_GPU_MODEL, "")) if num else "",
                      PrioritySort.sort_keys([rec])[0])


class _OpenbPlanner:
    """What ``plan_openb`` keeps while it walks a scenario's steps in the
    Simulation's order: the universe's columns (``u``: GPUs, model, cpu,
    memory MiB and bytes, pod slots per universe node) and names
    (``names``; ``same[x]``: the first universe node of x's name), each
    live name's row (``rows``; a removed node's row is ``free`` for the
    next added) and universe node (``uid``), the nodes present, cordoned
    and blocked by a taint, the pods the scenario creates (``created``;
    ``made``: key -> index) and the events written so far (``ev``, with
    the live nodes' capacity after each in ``caps``)."""

    def __init__(self, inv: GpuInventory, scenario, trace):
        self.n0 = n0 = inv.n_nodes
        col = lambda v: np.asarray(v, np.int64).tolist()
        self.u = {"gc": col(inv.gpu_count), "md": col(inv.model), "cpu": col(inv.cpu_cap),
                  "mem": col(inv.mem_cap),
                  "bytes": col(np.asarray(inv.mem_cap, np.int64) * MIB),
                  "pods": [int(T.NODE_PODS)] * n0}
        self.names = names = list(inv.names)
        self.first = {name: i for i, name in enumerate(names)}
        self.same = list(range(len(names)))   # each universe node's first node of its name
        self.models = list(inv.models)
        self.rows = {name: i for i, name in enumerate(names)}
        self.uid = dict(self.rows)  # a node name -> its universe node now (the latest added)
        self.taken = set(names)
        self.present = set(names)
        self.cordoned = {name: False for name in names}
        # a taint no trace pod tolerates: always blocked
        self.tainted = {name: False for name in names}
        self.free: list = []
        self.n_rows = n0
        self.ev = {k: [] for k in ("t", "kind", "row", "x", "flag")}
        self.live = set(range(n0))
        self.caps = {"cpu": [], "mem": [], "gpus": []}
        self.exempt = False
        if "annotations" in trace.table.column_names:
            self.exempt = any(pairs and MIRROR_ANNOTATION in dict(pairs)
                              for pairs in trace.table.column("annotations").to_pylist())
        try:
            # the Simulation's own check (``Simulation.scenario``, before the
            # trace is submitted: a step deleting a trace pod finds none)
            check_steps(scenario, names, 0.0, lambda key, t: False)
        except TensorschedError as exc:
            raise refuse(getattr(exc, "field", "") or "scenario",
                         getattr(exc, "problem", str(exc)))
        self.ranks: list = []
        self.rank_problem = None
        self.created: list = []
        self.made: dict = {}        # a created pod's key -> its index in ``created``
        self.trace_keys = {f"default/{nm}" for nm in trace.table.column("name").to_pylist()}

    def add(self, t, kind, row, x, flag) -> None:
        """One event, and the live nodes' capacity after it."""
        for k, v in zip(self.ev, (t, kind, row, x, flag)):
            self.ev[k].append(v)
        u, live = self.u, self.live
        self.caps["cpu"].append(sum(u["cpu"][k] for k in live))
        self.caps["mem"].append(sum(u["bytes"][k] for k in live))
        self.caps["gpus"].append(sum(u["gc"][k] for k in live))

    def step(self, st) -> None:
        """Plan one scenario step (its events appended)."""
        if st.kind == "Pod":
            (self.create_pods if st.action == "create" else self.delete_pods)(st)
        elif st.action in ("create", "addNodes"):
            for o in st.objects:
                self.add_node(st, o)
        else:
            for name in st.names:
                self.node_step(st, name)

    def create_pods(self, st) -> None:
        where = f"{st.field} (create Pod)"
        for o in st.objects:
            c = _created_pod(o, st, where)
            key = f"default/{c.name}"
            if key in self.trace_keys or key in self.made:
                raise refuse(where, f"pod {key} named as another pod (or created again)")
            self.made[key] = len(self.created)
            self.created.append(c)

    def delete_pods(self, st) -> None:
        for key in st.names:
            k = self.made.get(key)
            if k is None:       # (check_steps found it: created before)
                raise refuse(f"{st.field} (delete Pod)", f"pod {key} is not one the "
                             "scenario created")
            # a pod gone before (preempted, drained, removed with its
            # node, its duration over) is read after the run: ``missed_deletes``
            self.add(st.at, EV_POD_DELETE, 0, k, 0)

    def add_node(self, st, o: dict) -> None:
        where = f"{st.field} ({st.action})"
        name = (o.get("metadata") or {}).get("name")
        if name in self.present:
            raise refuse(where, f"node {name!r} exists")
        gc, md, cpu, mem, nbytes, slots, cord, taint = _added_node(o, self.models, where)
        rank, problem = _tie_rank(o, where)
        self.ranks.append(rank)
        self.rank_problem = self.rank_problem or problem
        names, uid = self.names, self.uid
        x = len(names)
        # added again after its removal: another universe node, named
        # ``<name>.<k>`` (as ``event_plan``; no trace pod reads names)
        k = 1
        while name in uid and f"{name}.{k}" in self.taken:
            k += 1
        names.append(f"{name}.{k}" if name in uid else name)
        self.same.append(self.first.setdefault(name, x))
        self.taken.add(names[-1])
        for key, v in zip(("gc", "md", "cpu", "mem", "bytes", "pods"),
                          (gc, md, cpu, mem, nbytes, slots)):
            self.u[key].append(v)
        uid[name] = x
        if self.free:
            self.rows[name] = self.free.pop()
        else:
            self.rows[name] = self.n_rows
            self.n_rows += 1
        self.present.add(name)
        self.cordoned[name] = cord
        self.tainted[name] = taint
        self.live.add(x)
        self.add(st.at, EV_ADD, self.rows[name], x, int(cord or taint))

    def node_step(self, st, name: str) -> None:
        """A cordon, uncordon, drain or removal of node ``name``."""
        if name not in self.present:
            raise refuse(f"{st.field} ({st.action})", f"node {name!r} is not in the cluster "
                         f"at {st.at:g}s")
        row, cordoned = self.rows[name], self.cordoned
        if st.action in ("cordon", "uncordon"):
            cordoned[name] = st.action == "cordon"
            self.add(st.at, EV_UPDATE, row, -1, int(cordoned[name] or self.tainted[name]))
        elif st.action == "drain":
            if self.exempt:
                raise refuse(f"{st.field} (drain)", "a trace pod is one a drain leaves "
                             "(static)")
            if not cordoned[name]:
                cordoned[name] = True
                self.add(st.at, EV_UPDATE, row, -1, 1)
            self.add(st.at, EV_EVICT, row, -1, 1)
        else:           # delete Node / removeNodes
            self.present.discard(name)
            self.live.discard(self.uid[name])
            self.free.append(row)
            self.add(st.at, EV_DELETE, row, -1, 0)

    def plan(self) -> OpenbPlan:
        """The plan of the steps walked; refused where a plugin of the
        openb profile listens to other events than the kernel moves its
        pods on."""
        row0 = np.full(self.n_rows, -1, np.int64)
        row0[:self.n0] = np.arange(self.n0)
        fit = interest_bits(NodeResourcesFit)
        if interest_bits(GpuShareFit) != fit:
            raise refuse("GpuShareFit", "it listens to other events than NodeResourcesFit")
        if any(self.tainted.values()) and interest_bits(TaintToleration) != interest_bits(
                NodeUnschedulable):
            # a tainted node's rejections wait as a cordoned one's (``failure_bits``)
            raise refuse("TaintToleration", "it listens to other events than NodeUnschedulable")
        i64 = lambda v: np.asarray(v, np.int64)
        u, ev, caps = self.u, self.ev, self.caps
        events = NodeEvents(row0, np.zeros(self.n_rows, np.int8), i64(u["gc"]), i64(u["md"]),
                            i64(u["cpu"]), i64(u["mem"]), i64(u["pods"]),
                            np.asarray(ev["t"], np.float64), i64(ev["kind"]), i64(ev["row"]),
                            i64(ev["x"]), np.asarray(ev["flag"], np.int8), fit,
                            interest_bits(NodeUnschedulable), i64(self.same))
        return OpenbPlan(events, self.names, self.models, i64(caps["cpu"]), i64(caps["mem"]),
                         i64(caps["gpus"]), self.ranks, self.rank_problem, self.created)


def plan_openb(inv: GpuInventory, scenario, trace) -> OpenbPlan:
    """The node events of ``scenario`` (a ``Scenario``) on the node list
    ``inv``; ``trace`` the pods (a ``Trace``).  Raises ``BatchProfileError``
    (module doc)."""
    planner = _OpenbPlanner(inv, scenario, trace)
    steps = scenario.steps
    for k in sorted(range(len(steps)), key=lambda k: (steps[k].at, step_phase(steps[k]), k)):
        planner.step(steps[k])
    return planner.plan()


def openb_event_runs(inv: GpuInventory, plan: OpenbPlan, workloads: list, jobs: list,
                     backend: str = "numba", workers: int | None = None,
                     max_unsched: float = DEFAULT_MAX_UNSCHED,
                     backoff: tuple = (1.0, 10.0), weights: list | None = None,
                     made: list | None = None, preempt: list | None = None,
                     grace: float = 0.0) -> tuple:
    """(``BatchArrays``, ``EventOutputs``) of ``jobs`` ((trace, policy,
    seed): an index into ``workloads``, ``TraceWorkload``s, with the pods
    the scenario creates among their rows: ``OpenbPlan.workload``) on
    ``inv`` under ``plan``'s events, the openb profile scored by
    GpuShareScore and OpenbTieRank (``weights`` per job: their weights,
    default (1, 0): GpuShareScore alone; the node list's ranks
    ``batch.tie_of(n, seed)``, an added node's its label), ``made`` per
    workload the rows of the created pods (``OpenbPlan.workload``'s),
    ``backend`` numba or cuda; ``preempt`` per job DefaultPreemption's
    (minCandidateNodesPercentage, minCandidateNodesAbsolute) or None
    (default: no job preempts; the workloads' ``priority`` is what it
    compares), ``grace`` the preempting jobs' termination grace in seconds
    (the Scheduler's ``termination_grace_seconds``; 0: victims leave at
    once)."""
    weights = weights or [(1, 0)] * len(jobs)
    if len(weights) != len(jobs):
        raise ValueError(f"weights: {len(weights)} for {len(jobs)} jobs")
    if plan.rank_problem and any(tie for _w, tie in weights):
        raise BatchProfileError(f"{plan.rank_problem}; the batched openb engine does not "
                                "cover it")
    k = len(plan.created)
    if made is None and k:
        raise ValueError("made: the rows of the pods the scenario creates, per workload")
    if list(plan.models) != list(inv.models):
        inv = inv.copy()
        inv.models = list(plan.models)
    wls, key = [], {}
    for t, _p, _s in jobs:
        if (0, t) not in key:
            key[(0, t)] = len(wls)
            tw = workloads[t]
            wls.append((workload_of(inv, tw.pods, tw.typical), tw))
    a = trace_arrays([inv], wls, key, [(0, t, p, s) for t, p, s in jobs], max_unsched,
                     backoff, weights=weights)
    n0 = inv.n_nodes
    added = np.asarray(plan.ranks, np.int64)
    u_static = np.zeros((len(jobs), n0 + added.shape[0]), np.int64)
    for b, ((_t, _p, seed), (_w, tie)) in enumerate(zip(jobs, weights)):
        if tie:
            u_static[b] = tie * np.concatenate([tie_of(n0, seed), added])
    rows = np.zeros((len(jobs), k), np.int64)
    for b, (t, _p, _s) in enumerate(jobs):
        if k:
            rows[b] = made[t]
    pre = preempt_arrays(wls, key, [(0, t, p, s) for t, p, s in jobs], preempt, a,
                         key_ranks=True)
    g = np.full(len(jobs), float(grace), np.float64)
    if backend == "cuda":
        from tensorsched.kernels.batch import openb_events_cuda
        return a, openb_events_cuda.run_openb_events(a, plan.events, u_static, rows, pre, g)
    return a, run_openb_events(a, plan.events, threads=workers, u_static=u_static, made=rows,
                               preempt=pre, grace=g)


def missed_deletes(a, out, plan: OpenbPlan, jobs: list, made: list) -> list:
    """Per run of ``openb_event_runs``' ``jobs`` (its ``a`` and ``out``,
    ``made`` per workload the created pods' rows), the Simulation's error
    where a Pod delete of a created pod came after the pod was gone
    (``openb_events.deletes_missed``: preempted, evicted by a drain,
    deleted with its node, its ``duration`` over): the ``SimulationError``
    its run stops with at the step (NotFound, ``changes.pod_not_found``;
    a note says how the pod left), else None (its delete found the pod)."""
    k = len(plan.created)
    if not k:
        return [None] * len(jobs)
    rows = np.array([made[t] for t, _p, _s in jobs], np.int64).reshape(len(jobs), k)
    pods = delete_pods(a, plan.events, rows)
    errors = []
    for b, e in enumerate(deletes_missed(out, a, plan.events, rows).tolist()):
        if e < 0:
            errors.append(None)
            continue
        c = plan.created[int(plan.events.ev_x[e])]
        err = pod_not_found(f"default/{c.name}", float(plan.events.ev_t[e]))
        err.add_note(f"the pod {_LEFT.get(int(out.why[pods[b, e]]), 'left')} before its delete")
        errors.append(err)
    return errors


# how a created pod left before its delete (its ``why``)
_LEFT = {WHY_PREEMPTED: "was preempted", WHY_EVICTED: "was evicted (a drain)",
         WHY_DELETED: "was deleted with its node", 0: "left (its duration over)"}


def event_row(a, out, b: int, plan: OpenbPlan, tw: TraceWorkload, interval: float,
              horizon: float, last_event: float, frag_log: tuple | None = None) -> dict:
    """The row's values but its identifiers and ``wall_seconds`` (as
    ``sweep_batch.simulate_row``, the allocatable and GPUs the live nodes'
    after each node event): run ``b`` of ``out`` for the workload ``tw``
    (the trace's pods and the scenario's: ``OpenbPlan.workload``);
    ``frag_log`` (frag0, log_frag) the fragmentation to read instead of the
    run's own (``sweep_batch.frag_under_events``; None: the run's)."""
    o, p = int(a.ev_off[b]), int(a.ev_len[b])
    ne = plan.events.n_events
    node, gm, bind = out.node[o:o + p], out.gmask[o:o + p], out.bind[o:o + p]
    why = out.why[o:o + p]
    log_t, log_pod, log_frag = out.log(a, b, ne)
    frag0 = float(out.frag0[b])
    if frag_log is not None:
        frag0, log_frag = frag_log
    arrival = np.asarray(tw.arrival, np.float64)
    leaves = np.isfinite(np.asarray(tw.departure, np.float64))
    timed = np.isfinite(np.asarray(tw.duration, np.float64))
    on = node >= 0
    stayed = why == 0
    scheduled = int(on.sum())
    end = float(out.end[b])
    lat = (bind[on] - arrival[on]).tolist()
    row = {"sim_seconds": finite(end), "arrived": int(arrival.shape[0]),
           "scheduled": scheduled, "failed_attempts": int(out.tries[o:o + p].sum()) - scheduled,
           # every eviction (a terminating victim chosen again counts again);
           # one that departed, was drained or deleted while terminating
           # left that way (its ``why``)
           "preemptions": int(out.victim[o:o + p].sum()),
           "departed": int((on & (leaves | timed) & stayed).sum()),
           "deleted": int((~on & leaves & stayed).sum())
           + int(((why == WHY_DELETED) | (why == WHY_POD_DELETED)).sum()),
           "evicted": int((why == WHY_EVICTED).sum()),
           "pending": int((~on & ~leaves & stayed).sum()),
           "running": int((on & ~leaves & ~timed & stayed).sum()),
           "latency_p50": finite(percentile(lat, 50)),
           "latency_p99": finite(percentile(lat, 99))}
    times = sample_times(interval, horizon, end, last_event)
    pod = log_pod < p
    j = np.where(log_pod >= 0, log_pod, -1 - log_pod)
    j = np.where(pod, j, 0)
    sign = np.where(~pod, 0, np.where(log_pod >= 0, 1, -1))
    cpu = np.asarray(tw.pods.cpu, np.int64)
    mem = np.asarray(tw.pods.mem, np.int64) * MIB
    pods_milli = np.asarray(tw.pods.milli, np.int64)
    gpus = np.array([int(m).bit_count() for m in gm.tolist()], np.int64)
    cpu_req = _at(log_t, 0, np.cumsum(sign * cpu[j]), times)
    mem_req = _at(log_t, 0, np.cumsum(sign * mem[j]), times)
    used = _at(log_t, 0, np.cumsum(sign * gpus[j] * pods_milli[j]), times)
    frag = _at(log_t, frag0, log_frag, times)
    ev_t = np.asarray(plan.events.ev_t, np.float64)
    e0 = plan.events.row0 >= 0
    u = plan.events
    cpu_cap = _at(ev_t, int(u.u_cpu_cap[u.row0[e0]].sum()), plan.live_cpu, times)
    mem_cap = _at(ev_t, int(u.u_mem_cap[u.row0[e0]].sum()) * MIB, plan.live_mem, times)
    gcap = _at(ev_t, int(u.u_gpu_count[u.row0[e0]].sum()), plan.live_gpus, times) * 1000
    # the Simulation's arithmetic: Python ints over Python ints, times 100.0
    series = {
        "cpu_alloc_pct": [100.0 * int(r) / int(c) if c else np.nan
                          for r, c in zip(cpu_req, cpu_cap)],
        "memory_alloc_pct": [100.0 * int(r) / int(c) if c else np.nan
                             for r, c in zip(mem_req, mem_cap)],
        "gpu_alloc_pct": [100.0 * int(x) / int(g) if g else np.nan for x, g in zip(used, gcap)],
        "gpu_frag_pct": [100.0 * float(f) / int(g) if g else np.nan for f, g in zip(frag, gcap)],
    }
    for col, values in series.items():
        row[f"mean_{col}"] = time_mean(times, np.array(values, np.float64))
    return row


def batchable(job, inputs: dict, workload) -> bool:
    """A simulate job this path may take: the openb profile (a policy's,
    or a ``--config`` of it: ``job_profile``) on an openb node list, a
    scenario, no ``until``, numba or cuda, a trace the batched engine
    takes (``workload`` its ``TraceWorkload``, None: not)."""
    return (job.kind == "simulate" and job.batch and job.backend in ("numba", "cuda")
            and bool(job.nodes) and bool(job.scenario)
            and job.until is None and inputs.get(("typical", job.trace)) is not None
            and len(inputs[("trace", job.trace)]) <= KEEP_LATENCIES and workload is not None)


SWEEP_BACKOFF = (1.0, 10.0)     # ``openb_config``'s queue backoff (initial, max), seconds


def policy_weights(job, inputs: dict, default_policy: str) -> tuple:
    """(GpuShareScore's weight, OpenbTieRank's) of a policy job's openb
    profile (``simulate_run.choose_config``): (1, 0), GpuShareScore alone;
    with ``job.tie_rank`` the experiment's (``batch.default_weights`` on
    the node list's n nodes: n + 1 and 1; Random (1, 0))."""
    if not job.tie_rank:
        return 1, 0
    return default_weights(len(inputs[("nodes", job.nodes)]), job.policy or default_policy)


def job_profile(job, inputs: dict, default_policy: str) -> tuple | None:
    """(GpuShareScore's policy, (its weight, OpenbTieRank's), the backoff
    (initial, max seconds)) of the profile ``job``'s Simulation runs, or
    None when this engine does not run it (the job then runs per job):
    ``profile_typical``'s but the typical pods (under FGD with its own
    ``typicalPods`` they are the run's table in the kernel, and the row's
    fragmentation is replayed under the trace's as the Simulation's
    GpuTracker measures it: ``batched_openb_events``)."""
    prof = profile_typical(job, inputs, default_policy)
    return None if prof is None else prof[:3]


def profile_typical(job, inputs: dict, default_policy: str) -> tuple | None:
    """(GpuShareScore's policy, (its weight, OpenbTieRank's), the backoff
    (initial, max seconds), the typical pods it scores with) of the profile
    ``job``'s Simulation runs, or None when the kernel does not run it (the
    job then runs per job).  The typical pods: None for the trace's own
    (``simulate_run.typical_of``, what the Simulation's GpuTracker measures
    the fragmentation with) or for none read (a policy but FGD reads
    none), else the configuration's ``typicalPods`` as ``{cpu, gpuCount,
    gpuMilli, models, weight}`` dicts (decoded as GpuShareScore decodes
    them: ``sim_metrics.GpuTracker``'s and ``trace.tracker_typical``'s
    form).

    A policy: ``simulate_run.choose_config``'s ``openb_config(policy, the
    trace's typical pods)``, GpuShareScore alone, or with ``tie_rank``
    the experiment's (``policy_weights``).  A ``--config``: one
    ``batch_sim.batch_config`` takes (the openb profile up to the two
    score weights, OpenbTieRank's too, the policy and the backoff;
    DefaultPreemption taken, its arguments ``job_preempt``'s), its profile
    the default scheduler's, GpuShareScore's ``typicalPods`` (under FGD
    not an empty list).  Refused: FGD without ``typicalPods``: the plugin
    then learns them from the pods it scores, each new pod changing the
    shapes and their frequencies during the run
    (``GpuShareScore._observe``), where the kernel scores a run against
    one fixed table.  With OpenbTieRank
    scoring, the sweep's Simulation labels the node list's nodes
    ``batch.tie_of(n, seed)``, as the kernel ranks them."""
    if not job.config:
        policy = job.policy or default_policy
        return policy, policy_weights(job, inputs, default_policy), SWEEP_BACKOFF, None
    cfg = copy.deepcopy(inputs[("config", job.config)])
    profiles = cfg.get("profiles") if isinstance(cfg, dict) else None
    if not isinstance(profiles, list) or len(profiles) != 1 or not isinstance(profiles[0], dict) \
            or profiles[0].get("schedulerName", "default-scheduler") != "default-scheduler":
        return None
    given = []
    for entry in profiles[0].get("pluginConfig") or []:
        args = entry.get("args") if isinstance(entry, dict) else None
        if isinstance(args, dict) and entry.get("name") == NAME_SCORE and "typicalPods" in args:
            given.append(args.pop("typicalPods"))
    try:
        bc = batch_config(cfg, job.config, preemption=True)
        decoded = [decode_score_args({"typicalPods": g}, "").typical_pods for g in given]
        own = decode_score_args({"typicalPods": inputs[("typical", job.trace)]}, "").typical_pods
    except (TensorschedError, ValueError):
        return None
    decoded = [d for d in decoded if d is not None]     # (typicalPods: null: none given)
    if any(d != decoded[0] for d in decoded) or (bc.policy == "FGD" and not decoded):
        return None
    typical = None
    if bc.policy == "FGD" and decoded[0] != own:
        if not decoded[0]:
            return None             # no typical pod at all: a table the kernel has no row of
        typical = [{"cpu": c, "gpuCount": num, "gpuMilli": milli, "models": models,
                    "weight": w} for c, num, milli, models, w in decoded[0]]
    return bc.policy, (bc.gpu_weight, bc.tie_weight), tuple(bc.backoff), typical


def job_preempt(job, inputs: dict) -> tuple | None:
    """DefaultPreemption's (minCandidateNodesPercentage,
    minCandidateNodesAbsolute) of a job ``job_profile`` takes, None
    without it (GpuShareScore's ``typicalPods`` not read: ``job_profile``
    checked them)."""
    if not job.config:
        return None
    cfg = copy.deepcopy(inputs[("config", job.config)])
    for entry in cfg["profiles"][0].get("pluginConfig") or []:
        if isinstance(entry, dict) and entry.get("name") == NAME_SCORE:
            (entry.get("args") or {}).pop("typicalPods", None)
    return batch_config(cfg, job.config, preemption=True).preempt


def batched_openb_events(jobs, inputs: dict, workers: int | None, done, workload_of_trace,
                         default_policy: str) -> list:
    """The jobs ``batchable`` takes whose profile the kernel runs
    (``profile_typical``), one call per (node CSV, scenario, backend,
    interval, backoff, termination grace: the job's where it preempts, else
    0, and the job's ``pod_max_in_unschedulable_seconds``: the kernel's
    ``max_unsched``), a workload per (trace, the typical pods its
    GpuShareScore scores with: the trace's, or under FGD a configuration's
    own, the run's table in the kernel, the row's fragmentation then
    replayed under the trace's: ``sweep_batch.frag_under_events``); a
    refused group goes back (the per-job path runs it and reports what the
    Simulation says).  ``done(i, row, None)`` per row; returns the indices
    of the other jobs."""
    groups: dict = {}
    rest = []
    profiles: dict = {}
    preempts: dict = {}
    for i, job in enumerate(jobs):
        if batchable(job, inputs, workload_of_trace(job.trace) if job.kind == "simulate"
                     and job.nodes and job.scenario else None):
            key = (job.config, job.policy, job.tie_rank, job.trace)
            if key not in profiles:
                profiles[key] = profile_typical(job, inputs, default_policy)
            prof = profiles[key]
        else:
            prof = None
        if prof is None:
            rest.append(i)
            continue
        if job.config not in preempts:
            preempts[job.config] = job_preempt(job, inputs)
        pre = preempts[job.config]
        # the termination grace delays evictions only: one call for all where none
        grace = float(job.termination_grace_seconds) if pre is not None else 0.0
        groups.setdefault((job.nodes, job.scenario, job.backend, job.interval, prof[2], grace,
                           float(job.pod_max_in_unschedulable_seconds)), []).append(i)
    for (nodes, sc_path, backend, interval, backoff, grace, max_unsched), idx in groups.items():
        inv = read_openb_nodes(nodes)
        scenario = inputs[("scenario", sc_path)]
        traces = list(dict.fromkeys(jobs[i].trace for i in idx))
        if inv.total_gpus <= 0:
            rest.extend(idx)
            continue
        try:
            plans = [plan_openb(inv, scenario, inputs[("trace", t)]) for t in traces]
        except BatchProfileError:
            rest.extend(idx)
            continue
        plan = plans[0]
        t0 = time.perf_counter()
        # the trace's pods with the scenario's created ones among them
        own = {t: plan.workload(workload_of_trace(t), inputs[("trace", t)]) for t in traces}
        if any(len(tw.arrival) > KEEP_LATENCIES for tw, _m in own.values()):
            rest.extend(idx)                # (the per-job path's latency sample)
            continue
        mine = [profiles[(jobs[i].config, jobs[i].policy, jobs[i].tie_rank, jobs[i].trace)]
                for i in idx]
        # a workload per (trace, typical pods GpuShareScore scores with)
        kinds = list(dict.fromkeys((jobs[i].trace, typical_key(prof[3]))
                                   for i, prof in zip(idx, mine)))
        wide = [own[t] if key is None else (replace(own[t][0], typical=[dict(q) for q in key]),
                                            own[t][1]) for t, key in kinds]
        runs = [(kinds.index((jobs[i].trace, typical_key(prof[3]))), prof[0], jobs[i].seed)
                for i, prof in zip(idx, mine)]
        pre = [preempts[jobs[i].config] for i in idx]
        try:
            a, out = openb_event_runs(inv, plan, [tw for tw, _m in wide], runs, backend,
                                      workers, max_unsched=max_unsched, backoff=backoff,
                                      weights=[prof[1] for prof in mine],
                                      made=[m for _tw, m in wide], preempt=pre, grace=grace)
        except (ValueError, OSError, TensorschedError):
            rest.extend(idx)                # the per-job path says why
            continue
        each = (time.perf_counter() - t0) / len(idx)
        horizon_of = {t: run.horizon(inputs[("trace", t)], scenario, None) for t in traces}
        missed = missed_deletes(a, out, plan, runs, [m for _tw, m in wide])
        measured: dict = {}         # a trace's typical pods as GpuTracker measures with them
        for b, i in enumerate(idx):
            job = jobs[i]
            if missed[b] is not None:
                # its Simulation stops at the step: the per-job path's report
                done(i, None, f"{job.label}: {missed[b]}")
                continue
            tw = own[job.trace][0]
            horizon = horizon_of[job.trace]
            o, p = int(a.ev_off[b]), int(a.ev_len[b])
            res = _Spans(out.node[o:o + p], out.bind[o:o + p])
            spans = agenda_spans(tw, res, horizon)
            if not samples_follow(spans, interval, horizon):
                rest.append(i)              # the per-run path samples it
                continue
            frag = None
            if mine[b][3] is not None:
                # scored against the config's typical pods, measured
                # (GpuTracker) under the trace's
                if job.trace not in measured:
                    measured[job.trace] = trace_typical(inv, plan, tw)
                log_pod = out.log(a, b, plan.events.n_events)[1]
                frag = frag_under_events(plan.events, measured[job.trace], tw.pods, res.node,
                                         out.gmask[o:o + p], log_pod)
            row = {"trace": job.trace_name, "config": job.config_name, "seed": job.seed}
            row.update(event_row(a, out, b, plan, tw, interval, horizon,
                                 float(spans[:, 1].max()), frag))
            row["wall_seconds"] = each
            done(i, row, None)
    return sorted(rest)


def typical_key(typical: list | None):
    """A hashable stand-in of typical pods (``profile_typical``'s; None:
    the trace's)."""
    return None if typical is None else tuple(tuple(sorted(q.items())) for q in typical)


def trace_typical(inv: GpuInventory, plan: OpenbPlan, tw: TraceWorkload) -> tuple:
    """The typical pods of ``tw`` (a trace's workload, the scenario's
    created pods among its rows: ``OpenbPlan.workload``; the trace's
    typical pods, what the Simulation's GpuTracker measures with) as
    ``trace.tracker_typical`` gives them over the run's models (the node
    list's ``inv``, then those ``plan``'s added nodes bring), as the kernel
    takes a table (``openb_event_runs``)."""
    if list(plan.models) != list(inv.models):
        inv = inv.copy()
        inv.models = list(plan.models)
    typical = tw.typical if tw.typical is not None else T.typical_of(tw.pods)
    return T.tracker_typical(typical, inv)


@dataclass
class _Spans:
    """What ``sweep_local.agenda_spans`` reads of a run."""

    node: np.ndarray
    bind: np.ndarray
