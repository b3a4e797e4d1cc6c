"""Runs with pod-to-pod scores and every node scored take the score-class
path (``_numba.build_place_run_classes``): classes keyed by domain and by a
row's own count (hostname), the scan taking over when the classes outgrow
their cap.  Across random clusters and event sequences between batches
(pods bound and deleted, nodes added, changed and deleted, pods that fit
nowhere, preemptions) the runs place exactly as one cycle after another
(numba), as the dense scan of runs without classes, and as numpy."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.kernels import domain_rules as DR
from tensorsched.kernels.fused import _numba, backends

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
ALL_NODES = {"apiVersion": "kubescheduler.config.k8s.io/v1",
             "kind": "KubeSchedulerConfiguration", "percentageOfNodesToScore": 100}
OWNER = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs-web", "uid": "uid-web",
          "controller": True}]
REPLICA_SET = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
               "metadata": {"name": "rs-web", "namespace": "default"},
               "spec": {"selector": {"matchLabels": {"app": "web"}}}}


def _term(key, app):
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


def _soft(key, skew, app, action="ScheduleAnyway"):
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": action,
            "labelSelector": {"matchLabels": {"app": app}}}


def _spec(kind, key, app, weight):
    """A template's pod-to-pod part: every kind scores or has a rule of
    few domains (the class path)."""
    if kind == "owned":                 # the System default constraints
        return {}
    if kind in ("hard", "hard-anti"):   # a zone rule answered per class
        spec = {"topologySpreadConstraints": [_soft(ZONE, weight % 2 + 1, app,
                                                    "DoNotSchedule")]}
        if kind == "hard-anti":         # and a host rule answered per row
            spec["affinity"] = {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [_term(HOST, app)]}}
        return spec
    if kind == "soft":
        return {"topologySpreadConstraints": [_soft(ZONE, weight % 3 + 1, app),
                                              _soft(HOST, 2, app)]}
    if kind == "soft-hard":
        return {"topologySpreadConstraints": [_soft(key, 1, app),
                                              _soft(ZONE, 3, app, "DoNotSchedule")]}
    if kind in ("prefer", "avoid"):
        return {"affinity": {"podAffinity" if kind == "prefer" else "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": weight, "podAffinityTerm": _term(key, app)}]}}}
    if kind == "required":              # scored by hardPodAffinityWeight once placed
        return {"affinity": {"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term(ZONE, app)]}}}
    return {"affinity": {"podAntiAffinity": {       # "anti": a rule per host, scores too
        "requiredDuringSchedulingIgnoredDuringExecution": [_term(HOST, "db")],
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": weight, "podAffinityTerm": _term(ZONE, app)}]}}}


PREFER = [{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]


def _node(name, cpu, zone, spot=False):
    """A node (spot: a PreferNoSchedule taint, TaintToleration's maximum
    over the feasible rows then moves as rows fill)."""
    labels = {ZONE: zone, "zone": zone} if zone else {}
    return node_dict(name, cpu=cpu, labels=labels, taints=PREFER if spot else None)


@st.composite
def histories(draw):
    """(nodes, [(events, pods)], seed, (by-domain limit, class cap)): 17-30
    nodes in up to four zones (some without one), batches of runs of alike
    pods (some of high priority: preemptions once nodes fill), a few events
    before each batch."""
    n = draw(st.integers(17, 30))
    zones = draw(st.integers(1, 4))
    nodes = [_node(f"n{i:02d}", draw(st.sampled_from(["1", "2", "3"])),
                   None if draw(st.integers(0, 7)) == 0 else f"z{draw(st.integers(0, zones - 1))}",
                   draw(st.integers(0, 5)) == 0)
             for i in range(n)]
    kinds = st.tuples(st.sampled_from(["owned", "soft", "soft-hard", "prefer", "avoid",
                                       "required", "anti", "hard", "hard-anti"]),
                      st.sampled_from([ZONE, HOST]), st.sampled_from(["web", "db"]),
                      st.integers(1, 60), st.sampled_from(["200m", "450m", "900m"]),
                      st.sampled_from([None, None, 100]))
    templates = draw(st.lists(kinds, min_size=1, max_size=3))
    batches, made = [], 0
    for b in range(draw(st.integers(1, 3))):
        events = []
        for _ in range(draw(st.integers(0, 3)) if b else 0):
            events.append((draw(st.sampled_from(["add", "update", "delete", "evict"])),
                           draw(st.integers(0, 60)), draw(st.sampled_from(["1", "2", "4"]))))
        pods = []
        t = 0
        for _ in range(draw(st.integers(1, 45))):
            if draw(st.integers(0, 6)) == 0:
                t = draw(st.integers(0, len(templates) - 1))
            kind, key, app, weight, cpu, prio = templates[t]
            pod = pod_dict(f"p{made}", cpu=cpu, labels={"app": app}, created=made,
                           priority=prio, spec=_spec(kind, key, app, weight))
            if kind == "owned":
                pod["metadata"]["labels"] = {"app": "web"}
                pod["metadata"]["ownerReferences"] = OWNER
            pods.append(pod)
            made += 1
        batches.append((events, pods))
    knobs = (draw(st.sampled_from([2, 16])), draw(st.sampled_from([4, 64, 64])))
    return nodes + [REPLICA_SET], batches, draw(st.integers(0, 2**32)), knobs


def _apply(sched, events, added):
    state = sched.cluster.state
    for kind, i, cpu in events:
        names = sorted(state.node_rows)
        zone = None if i % 5 == 0 else f"z{i % 3}"
        if kind == "add":
            added.append(f"x{len(added):02d}")
            sched.add_node(_node(added[-1], cpu, zone, i % 4 == 0))
        elif kind == "update" and names:
            sched.update_node(_node(names[i % len(names)], cpu, zone, i % 4 == 1))
        elif kind == "delete" and len(names) > 17:
            sched.delete_node(names[i % len(names)])
        elif kind == "evict" and state.pods:
            bound = sorted(state.pods)
            sched.delete_pod(bound[i % len(bound)])


def _play(nodes, batches, seed, backend, batch):
    sched = Scheduler(build_cluster(nodes, ALL_NODES), backend, seed, batch=batch)
    log, added = [], []
    for events, pods in batches:
        _apply(sched, events, added)
        outcomes, preemptions = sched.schedule_pending(pods)
        log += [(b.pod, b.node, b.message) for b in outcomes]
        log.append(preemptions)
    state = sched.cluster.state
    placed = sorted((k, state.node_name(r.node_row)) for k, r in state.pods.items())
    return log, placed


class _Knobs:
    """The class path's limits set for one example (restored after); runs
    of any length take it."""

    def __init__(self, by_domain_max, cap):
        self.values = (by_domain_max, cap, 1)

    def __enter__(self):
        self.saved = (DR.CLASS_BY_DOMAIN_MAX, backends.CLASS_CAP, backends.CLASS_MIN_RUN)
        DR.CLASS_BY_DOMAIN_MAX, backends.CLASS_CAP, backends.CLASS_MIN_RUN = self.values

    def __exit__(self, *exc):
        DR.CLASS_BY_DOMAIN_MAX, backends.CLASS_CAP, backends.CLASS_MIN_RUN = self.saved


SETTINGS = settings(max_examples=int(os.environ.get("RUNS_EXAMPLES", "30")), deadline=None,
                    suppress_health_check=list(HealthCheck))


@SETTINGS
@given(histories())
def test_class_runs_place_as_one_by_one_and_as_numpy(case):
    nodes, batches, seed, knobs = case
    with _Knobs(*knobs):
        runs = _play(nodes, batches, seed, "numba", batch=True)
        one_by_one = _play(nodes, batches, seed, "numba", batch=False)
    assert runs == one_by_one
    with _Knobs(knobs[0], 0):           # no classes: the dense scan places the runs
        assert _play(nodes, batches, seed, "numba", batch=True) == runs
    assert _play(nodes, batches, seed, "numpy", batch=False) == one_by_one


def _counting(monkeypatch):
    """Calls of the class run: [(pods asked, placed, overflow)]."""
    calls = []
    build = _numba.build_place_run_classes

    def counting(by_row):
        run = build(by_row)

        def counted(*a):
            got = run(*a)
            calls.append((a[0], int(got[0]), int(got[1])))
            return got
        return counted
    monkeypatch.setattr(_numba, "build_place_run_classes", counting)
    return calls


def _replicaset(n_nodes, n_pods, cpu="300m"):
    nodes = [_node(f"n{i:03d}", "2", f"z{i % 3}") for i in range(n_nodes)]
    pods = [pod_dict(f"p{i}", cpu=cpu, labels={"app": "web"}, created=i)
            for i in range(n_pods)]
    for p in pods:
        p["metadata"]["ownerReferences"] = OWNER
    return nodes + [REPLICA_SET], pods


def test_a_replicaset_run_is_one_class_call_keyed_by_host_counts(monkeypatch):
    """The System defaults (hostname and zone) over 60 nodes: one class
    call places the whole run, hostname keyed by count (60 domains, few
    counts), until the nodes are full; then as one by one."""
    nodes, pods = _replicaset(60, 420)
    calls = _counting(monkeypatch)
    runs = _play(nodes, [([], pods)], 5, "numba", batch=True)
    assert calls and calls[0][2] == 0 and calls[0][1] == 6 * 60
    monkeypatch.undo()
    assert runs == _play(nodes, [([], pods)], 5, "numba", batch=False)
    assert sum(1 for _, node, _ in runs[0][:-1] if node is None) == 420 - 360


def test_classes_outgrowing_the_cap_hand_the_run_to_the_scan(monkeypatch):
    """With room for two classes, the zone and host count classes overflow
    mid-run: the scan places the rest, the same placements."""
    nodes, pods = _replicaset(40, 150)
    calls = _counting(monkeypatch)
    monkeypatch.setattr(backends, "CLASS_CAP", 2)
    runs = _play(nodes, [([], pods)], 9, "numba", batch=True)
    assert calls and calls[0][2] == 1 and calls[0][1] < 150
    monkeypatch.undo()
    assert runs == _play(nodes, [([], pods)], 9, "numba", batch=False)
