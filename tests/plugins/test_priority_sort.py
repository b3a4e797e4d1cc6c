"""PrioritySort (QueueSort), after upstream's priority_sort_test.go:
``Less(p1, p2)`` is true when p1 has the higher priority, or the same
priority and the earlier queue timestamp (here the pod's creation time,
the time it entered the queue).  Pods without a priority count as 0."""

from __future__ import annotations

import pytest
from support.builders import case, node, one_plugin_config, pod

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.errors import ConfigError
from tensorsched.framework.plugins import priority_sort
from tensorsched.framework.records.pod_columns import PodColumns
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler

PS = "PrioritySort"


def rec(name, priority=None, created=0):
    return parse_pod(pod(name, priority=priority, created=created))


LESS_CASES = [
    # 100 > 10 -> p1 first
    case(name="higher priority first", p1=rec("p1", 100), p2=rec("p2", 10), less=True),
    # 10 < 100 -> not less
    case(name="lower priority second", p1=rec("p1", 10), p2=rec("p2", 100), less=False),
    # equal priority 50, p1 created at t=1 < t=5 -> p1 first
    case(name="equal priority, earlier first", p1=rec("p1", 50, 1), p2=rec("p2", 50, 5),
         less=True),
    # equal priority 50, p1 created at t=5 > t=1 -> not less
    case(name="equal priority, later second", p1=rec("p1", 50, 5), p2=rec("p2", 50, 1),
         less=False),
    # a later but higher-priority pod still goes first: 1 > 0 beats the time
    case(name="priority beats creation time", p1=rec("p1", 1, 9), p2=rec("p2", 0, 0),
         less=True),
    # no priority counts as 0; 0 > -5
    case(name="missing priority is zero", p1=rec("p1", None), p2=rec("p2", -5), less=True),
    # identical priority and time: strict order, neither is less
    case(name="ties are not less", p1=rec("p1", 7, 3), p2=rec("p2", 7, 3), less=False),
]


@pytest.mark.parametrize("case", LESS_CASES, ids=[c["name"] for c in LESS_CASES])
def test_less(case):
    plugin = priority_sort.new(None, None)
    assert plugin.name == PS
    assert plugin.less(case["p1"], case["p2"]) is case["less"]
    # sort_key orders as less does
    key = plugin.sort_key
    assert (key(case["p1"]) < key(case["p2"])) is case["less"]


def _pods():
    # (name, priority, created): low(0, t0), high(1000, t5), mid(10, t1),
    # high2(1000, t2), none(no priority = 0, t3)
    return [pod("low", priority=0, created=0), pod("high", priority=1000, created=5),
            pod("mid", priority=10, created=1), pod("high2", priority=1000, created=2),
            pod("none", created=3)]


# 1000: high2 (t2) before high (t5); then mid (10); then 0: low (t0) before none (t3)
EXPECTED_ORDER = ["high2", "high", "mid", "low", "none"]


def test_queue_order():
    cluster = build_cluster([node("a")], one_plugin_config(PS))
    s = Scheduler(cluster)
    ordered = s.queue_order([cluster.resolve(p) for p in _pods()])
    assert [p.name for p in ordered] == EXPECTED_ORDER


def test_schedule_pending_binds_in_queue_order(backend):
    # PrioritySort alone (+ DefaultBinder): every pod fits the one node; the
    # outcomes come in activeQ order
    cluster = build_cluster([node("a")], one_plugin_config(PS))
    bindings, preemptions = Scheduler(cluster, backend=backend).schedule_pending(_pods())
    assert [b.pod for b in bindings] == [f"default/{n}" for n in EXPECTED_ORDER]
    assert all(b.node == "a" for b in bindings) and preemptions == []


def test_priority_class_is_resolved():
    # priorityClassName 'urgent' (value 500) resolves the priority: the pod
    # created last goes before mid (10) and low (0)
    urgent = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
              "metadata": {"name": "urgent"}, "value": 500}
    cluster = build_cluster([node("a"), urgent], one_plugin_config(PS))
    pods = [pod("low", priority=0, created=0), pod("mid", priority=10, created=1),
            pod("late", created=9, spec={"priorityClassName": "urgent"})]
    ordered = Scheduler(cluster).queue_order([cluster.resolve(p) for p in pods])
    assert [p.name for p in ordered] == ["late", "mid", "low"]
    assert ordered[0].priority == 500


def test_sort_columns_are_the_sort_keys():
    recs = [parse_pod(pod(f"p{i}", priority=p, created=c))
            for i, (p, c) in enumerate([(5, 3), (None, 1), (-2, 9), (5, 0)])]
    plugin = priority_sort.PrioritySort()
    cols = plugin.sort_columns(PodColumns.from_records(recs))
    assert list(zip(*(c.tolist() for c in cols))) == [plugin.sort_key(r) for r in recs]
    assert plugin.sort_columns(recs) is None


def test_queue_sort_is_required():
    # every profile needs exactly one queueSort plugin: disabling it is an error
    from tensorsched.framework.config.kube_config import load_config
    cfg = one_plugin_config("NodeName")
    cfg["profiles"][0]["plugins"]["queueSort"] = {"disabled": [{"name": "*"}]}
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert err.value.field == "profiles[0].plugins.queueSort"
