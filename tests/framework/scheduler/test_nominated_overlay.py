"""The nominated overlay equals adding the nominated pods to the state: its
requested and non-zero requested columns are those ``add_nominated`` makes
(the nominated pods of at least the pod's priority, not the pod itself, on
their nodes) after any sequence of nominations added, updated, moved and
deleted, preemptors bound and the state changing between cycles; it
refuses when a counted pod is not plain.  Through the queue, cycles reading
the overlay decide exactly as cycles adding the pods to the state (numpy
and numba, batch on and off)."""

import dataclasses

import numpy as np
from hypothesis import given, settings, strategies as hs

from tensorsched.bench.preemption import build as build_preemption
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.nominated_overlay import plain_nominee
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict

PRIOS = (100, 500, 1000)

_event = hs.one_of(
    hs.tuples(hs.just("nominate"), hs.integers(0, 5), hs.integers(0, 3)),
    hs.tuples(hs.just("update"), hs.integers(0, 5), hs.integers(1, 9)),
    hs.tuples(hs.just("delete"), hs.integers(0, 5), hs.just(0)),
    hs.tuples(hs.just("bind"), hs.integers(0, 5), hs.just(0)),
    hs.tuples(hs.just("state"), hs.integers(0, 3), hs.integers(1, 9)),
)


def _pod(i, cpu_tenths, prio, kind):
    spec = {}
    if kind == "ports":
        spec = {"containers": [{"name": "c", "image": "busybox",
                                "resources": {"requests": {"cpu": f"{cpu_tenths}00m"}},
                                "ports": [{"containerPort": 80, "hostPort": 8080 + i}]}]}
    d = pod_dict(f"p{i}", cpu=f"{cpu_tenths}00m", memory=f"{cpu_tenths}Mi", priority=prio,
                 spec=spec or None)
    if kind == "unknown":
        d["spec"]["containers"][0]["resources"]["requests"]["example.com/foo"] = "1"
    return parse_pod(d)


def _oracle(cycle, pod):
    keys = cycle.add_nominated(pod)
    state = cycle.state
    cols = state.columns()
    want = (cols.requested.copy(), cols.nonzero_requested.copy())
    cycle.remove_nominated(keys)
    return want


@settings(max_examples=40, deadline=None)
@given(events=hs.lists(_event, min_size=1, max_size=25),
       prios=hs.lists(hs.sampled_from(PRIOS), min_size=6, max_size=6),
       kinds=hs.lists(hs.sampled_from(["plain", "plain", "plain", "ports", "unknown"]),
                      min_size=6, max_size=6),
       asker=hs.lists(hs.tuples(hs.integers(0, 6), hs.sampled_from(PRIOS)),
                      min_size=25, max_size=25))
def test_overlay_equals_adding_the_nominated_pods_to_the_state(events, prios, kinds, asker):
    sched = Scheduler(build_cluster([node_dict(f"n{j}", cpu="8") for j in range(4)]))
    cycle, nom, state = sched.cycle, sched.nominator, sched.cycle.state
    pods = [_pod(i, 1 + i, prios[i], kinds[i]) for i in range(6)]
    extra = 0
    for step, (what, i, arg) in enumerate(events):
        p = pods[i]
        if what == "nominate" and p.key not in state.pods:
            nom.add(p, f"n{arg}")
        elif what == "update":
            pods[i] = p = dataclasses.replace(p, requests={**p.requests, "cpu": arg * 100})
            nom.update(p)
        elif what == "delete":
            nom.delete(p.key)
        elif what == "bind" and p.key in nom.node_of and p.key not in state.pods:
            state.add_pod(p, nom.node_of[p.key])          # the preemptor bound
            nom.delete(p.key)
        elif what == "state":
            key = f"default/x{extra - 1}"
            if extra and key in state.pods and arg % 2:
                state.remove_pod(key)
            else:
                state.add_pod(parse_pod(pod_dict(f"x{extra}", cpu=f"{arg}0m")), f"n{i}")
                extra += 1
        j, prio = asker[step]
        me = pods[j] if j < 6 else _pod(9, 1, prio, "plain")
        me = dataclasses.replace(me, priority=prio) if j == 6 else me
        # it answers when every nominated pod of at least the priority
        # (the asking pod's own nomination included) is plain and requests
        # only resources the state knows
        known = state.resources.index
        above = [nom.pods[k] for k in nom.node_of
                 if (nom.pods[k].priority or 0) >= (me.priority or 0)]
        ov = nom.overlay(me.priority or 0)
        ok = ov.refresh(state, me)
        assert ok == all(plain_nominee(c) and all(n in known or n == "pods" for n in c.requests)
                         for c in above)
        if ok:
            req, nz = _oracle(cycle, me)
            cols = ov.columns()
            assert np.array_equal(cols.requested, req)
            assert np.array_equal(cols.nonzero_requested, nz)


def test_a_refresh_rewrites_only_the_rows_that_changed():
    sched = Scheduler(build_cluster([node_dict(f"n{j}", cpu="8") for j in range(50)]))
    nom, state = sched.nominator, sched.cycle.state
    a, b = _pod(0, 5, 1000, "plain"), _pod(1, 3, 1000, "plain")
    nom.add(a, "n3")
    ov = nom.overlay(1000)
    assert ov.refresh(state, b)
    v = ov.version
    assert ov.refresh(state, b) and (ov.row_version[: state.n_rows] > v).sum() == 0
    nom.add(b, "n7")
    assert ov.refresh(state, a)      # b counted on n7, a left out on n3
    assert sorted(np.flatnonzero(ov.row_version[: state.n_rows] > v)) == [3, 7]
    assert ov.columns().requested[3, 0] == state.requested[3, 0]
    assert ov.columns().requested[7, 0] == state.requested[7, 0] + 300


# ------------------------------------------------------- through the queue

def _run(prios, cpus, anti, nodes, grace, backend, batch, overlay):
    cluster, pending = build_preemption(nodes, len(prios), 100, "")
    pending = [dataclasses.replace(p, priority=pr, requests={**p.requests, "cpu": c},
                                   pod_anti_affinity=p.pod_anti_affinity)
               for p, pr, c in zip(pending, prios, cpus)]
    if anti:
        # a required anti-affinity pod among them: not plain while nominated
        rec = parse_pod(pod_dict("anti", cpu="400m", priority=max(prios), labels={"a": "b"},
                                 spec={"affinity": {"podAntiAffinity": {
                                     "requiredDuringSchedulingIgnoredDuringExecution": [{
                                         "labelSelector": {"matchLabels": {"a": "b"}},
                                         "topologyKey": "kubernetes.io/hostname"}]}}}))
        pending.append(cluster.resolve(rec))
    sched = Scheduler(cluster, backend, 0, batch=batch, termination_grace_seconds=grace)
    sched.cycle.use_overlay = overlay
    outcomes, preemptions = sched.schedule_pending(pending)
    state = cluster.state
    final = sorted((k, row) for row, on in enumerate(state.pods_on_node[: state.n_rows])
                   for k in on)
    return ([(b.pod, b.node, b.message, b.nominated_node, b.victims) for b in outcomes],
            preemptions, final, state.requested[: state.n_rows].tolist(),
            sched.counters.attempts, dict(sched.recorder.results))


@settings(max_examples=10, deadline=None)
@given(nodes=hs.integers(2, 6),
       prios=hs.lists(hs.sampled_from([500, 1000, 2000]), min_size=1, max_size=8),
       cpus=hs.lists(hs.sampled_from([250, 500, 700]), min_size=8, max_size=8),
       anti=hs.booleans(), grace=hs.sampled_from([0.0, 30.0]),
       backend=hs.sampled_from(["numpy", "numba"]), batch=hs.booleans())
def test_cycles_reading_the_overlay_decide_as_cycles_adding_the_pods(nodes, prios, cpus, anti,
                                                                     grace, backend, batch):
    got = _run(prios, cpus, anti, nodes, grace, backend, batch, True)
    assert got == _run(prios, cpus, anti, nodes, grace, backend, batch, False)
