"""DynamicResources' PostFilter for a pod without claims (it runs ahead of
DefaultPreemption for every failed pod): one shared frozen status in a
fresh result per call; a schedule with preemptors that find victims and
some that find none (the PostFilter outcomes joined) has the outcomes,
messages, events, metrics, queue and explain records of building the
status afresh (``share_no_claims_status`` False)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched.framework.plugins import dynamic_resources as dr
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.runtime.status import Code, Status
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict


def _play(nodes: int, low: list, high: list, seed: int, shared: bool) -> dict:
    """A cluster of ``nodes`` 2-CPU nodes full of priority-0 pods (``low``:
    their CPUs), then preemptors of (CPU, priority) ``high``."""
    objs = [node_dict(f"n{i}", cpu="2") for i in range(nodes)]
    sched = Scheduler(build_cluster(objs), "numba", seed, batch=False)
    state = sched.cluster.state
    for i, cpu in enumerate(low):
        rec = sched.cluster.resolve(pod_dict(f"low{i}", cpu=f"{cpu}m", memory="64Mi",
                                             priority=0, created=i))
        state.add_pod(rec, f"n{i % nodes}")
    events: list = []
    sched.subscribe("*", lambda e: events.append(tuple(sorted(
        (k, tuple(v) if isinstance(v, list) else v) for k, v in e.items()))))
    pods = [pod_dict(f"hi{k}", cpu=f"{cpu}m", memory="64Mi", priority=prio, created=100 + k)
            for k, (cpu, prio) in enumerate(high)]
    for p in pods:
        fw = sched.cluster.framework_for(sched.cluster.resolve(p), "numba")
        fw.plugins[dr.NAME].share_no_claims_status = shared
    out, preemptions = sched.schedule_pending(pods)
    metrics = sched.metrics()
    metrics.pop("stage_seconds")
    metrics["plugin_seconds"] = sorted(metrics["plugin_seconds"])
    pending = [p for p, b in zip(pods, out) if b.node is None]
    return {
        "outcomes": [(b.pod, b.node, b.message, b.nominated_node, b.victims) for b in out],
        "preemptions": preemptions, "events": events, "metrics": metrics,
        "records": [(r.key, row) for r, row in state.pods.bound()],
        "explained": [explain_pod(sched.cluster, p, "numba", seed) for p in pending[:2]],
        "queue": sorted((k, pi.where, pi.attempts, tuple(sorted(pi.unschedulable_plugins)))
                        for k, pi in sched.queue.infos.items()),
    }


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(st.integers(1, 4), st.lists(st.sampled_from([500, 1000, 1500]), min_size=2, max_size=8),
       st.lists(st.tuples(st.sampled_from([1000, 2000, 3000]), st.sampled_from([0, 10, 100])),
                min_size=1, max_size=4),
       st.integers(0, 2**31))
def test_a_schedule_equals_building_the_status_afresh(nodes, low, high, seed):
    assert _play(nodes, low, high, seed, True) == _play(nodes, low, high, seed, False)


def test_the_no_claims_status_is_shared_and_the_result_fresh():
    cluster = build_cluster([node_dict("n0", cpu="1")])
    rec = cluster.resolve(pod_dict("p", cpu="2", priority=10))
    fw = cluster.framework_for(rec, "numba")
    plugin = fw.plugins[dr.NAME]
    ctx = CycleContext(cluster.state, rec, fw)
    result = fw.run_cycle(cluster.state, rec)
    a = plugin.post_filter(ctx, result, None)
    b = plugin.post_filter(ctx, result, None)
    assert a.status is dr._NO_CLAIMS and b.status is dr._NO_CLAIMS
    assert a is not b and a.victims is not b.victims
    assert a.nominated_node is None
    assert a.status == Status(Code.UNSCHEDULABLE, ("no new claims to deallocate",), dr.NAME)
    plugin.share_no_claims_status = False
    c = plugin.post_filter(ctx, result, None)
    assert c.status == a.status and c.status is not dr._NO_CLAIMS
