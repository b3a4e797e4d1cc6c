"""FailedScheduling messages from the batched node-local kernel
(``framework/capacity/batch_messages.py``): on random clusters and probes
(taints, node affinity and selectors, unschedulable nodes, full nodes,
pods too big for any node, preemptionPolicy Never, profiles with and
without DefaultPreemption) the messages of the pods that fit nowhere, and
their order, are the Scheduler's."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched.framework.capacity.batch_probe import LocalProber
from tensorsched.framework.capacity.common import bound_pods as bound_of
from tensorsched.framework.parsing.manifests import parse_objects
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.generators.clusters import node_dict, pod_dict

from support.local_clusters import bound_pods, config, nodes, scheduler_bindings, workloads


def _pending(data):
    pending = data.draw(workloads(max_pods=10))
    for k in range(data.draw(st.integers(0, 3))):
        big = pod_dict(f"big{k}", cpu=data.draw(st.sampled_from(["3", "6"])),
                       memory=data.draw(st.sampled_from(["1Gi", "16Gi"])))
        if data.draw(st.booleans()):
            big["spec"]["preemptionPolicy"] = "Never"
        pending.insert(data.draw(st.integers(0, len(pending))), big)
    return pending


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_messages_equal_the_schedulers(data):
    ns = data.draw(nodes(min_size=1))
    bd = bound_pods(data.draw, ns)
    pending = _pending(data)
    cfg = config(data.draw(st.integers(0, 2)), pct=data.draw(st.sampled_from([100, 50])))
    if data.draw(st.booleans()):
        cfg["profiles"][0]["plugins"] = {"postFilter": {"disabled": [{"name": "*"}]}}
    seed = data.draw(st.integers(0, 5))
    cl = build_cluster(copy.deepcopy(ns + bd), cfg)
    pods = [cl.resolve(p) for p in parse_objects(copy.deepcopy(pending)).pods]
    prober = LocalProber(cl, list(cl.objects.nodes), bound_of(cl), pods, seed)
    names = [n["metadata"]["name"] for n in ns]
    subsets = [names] + [[n for n in names if data.draw(st.booleans())] for _ in range(2)]
    subsets = [s for s in subsets if s]
    everyone = list(range(len(pods)))
    got = prober.run_failures(subsets, [everyone] * len(subsets), len(pods))
    for subset, (placed, fails) in zip(subsets, got):
        objs = [n for n in ns if n["metadata"]["name"] in subset]
        objs += [p for p in bd if p["spec"]["nodeName"] in subset]
        want = scheduler_bindings(objs, cfg, pending, seed)
        assert [(pods[i].key, node) for i, node in placed] == [(k, n) for k, n, _ in want]
        assert [(pods[i].key, msg) for i, msg in fails] == [
            (k, m) for k, n, m in want if n is None]


def test_only_the_first_failures_are_counted_and_an_empty_probe_has_no_text():
    ns = [node_dict("n0", cpu="1"), node_dict("n1", cpu="1", unschedulable=True)]
    pending = [pod_dict(f"p{k}", cpu="2") for k in range(3)]
    cl = build_cluster(copy.deepcopy(ns), config(0))
    pods = [cl.resolve(p) for p in parse_objects(copy.deepcopy(pending)).pods]
    prober = LocalProber(cl, list(cl.objects.nodes), [], pods, 0)
    (placed, fails), (_, none) = prober.run_failures([["n0", "n1"], []], [[0, 1, 2]] * 2, 2)
    assert [i for i, _ in fails] == [0, 1] and fails[0][1] == fails[1][1]
    assert fails[0][1].startswith("0/2 nodes are available: 1 Insufficient cpu, 1 node(s) "
                                  "were unschedulable.")
    assert none == [(0, None), (1, None)]
