"""DefaultBinder (Bind): the scheduled pod is bound to the node chosen in
the scheduling cycle, and from then on counts on that node (upstream posts
a Binding; the cache already holds the assumed pod).  Every profile needs
at least one bind plugin."""

from __future__ import annotations

import pytest
from support.builders import node, one_plugin_config, pod, profile_config

from tensorsched.framework.config.kube_config import load_config
from tensorsched.framework.errors import ConfigError
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod
from tensorsched.framework.scheduler.scheduler import Scheduler

DB = "DefaultBinder"


def test_profile_binds_with_default_binder():
    prof = load_config(one_plugin_config(DB)).profiles[0]
    assert prof.names("bind") == (DB,)
    assert prof.names("queueSort") == ("PrioritySort",)
    assert prof.names("filter") == () and prof.names("score") == ()


def test_binds_to_the_only_node(backend):
    cluster = build_cluster([node("a")], one_plugin_config(DB))
    bindings, preemptions = Scheduler(cluster, backend=backend).schedule_pending([pod("p")])
    assert [b.to_dict() for b in bindings] == [{"pod": "default/p", "node": "a"}]
    assert preemptions == []
    assert "default/p" in cluster.state.pods


def test_bound_pod_counts_on_its_node(backend):
    # NodeResourcesFit picks the node; DefaultBinder binds there; the state
    # then holds the pod's request on that node:
    # p1 (3 cpu) -> a (4 cpu) [b: 2 cpu does not fit 3]; p2 (2 cpu): a has
    # 4 - 3 = 1 cpu left -> only b fits
    cfg = profile_config(["NodeResourcesFit"])
    cluster = build_cluster([node("a", cpu="4"), node("b", cpu="2")], cfg)
    bindings, _ = Scheduler(cluster, backend=backend).schedule_pending(
        [pod("p1", cpu="3", created=0), pod("p2", cpu="2", created=1)])
    assert [(b.pod, b.node) for b in bindings] == [("default/p1", "a"), ("default/p2", "b")]
    # a third pod of 1500m fits nowhere now: a 4000 - 3000 = 1000, b 2000 - 2000 = 0
    rec = explain_pod(cluster, pod("p3", cpu="1500m"), backend=backend)
    assert rec["filter"] == {
        "a": {"code": "Unschedulable", "plugin": "NodeResourcesFit",
              "reasons": ["Insufficient cpu"]},
        "b": {"code": "Unschedulable", "plugin": "NodeResourcesFit",
              "reasons": ["Insufficient cpu"]}}


def test_failed_pod_is_not_bound(backend):
    # NodeResourcesFit: 8 cpu > 4 cpu allocatable -> fits nowhere, nothing bound
    cluster = build_cluster([node("a", cpu="4")], profile_config(["NodeResourcesFit"]))
    bindings, _ = Scheduler(cluster, backend=backend).schedule_pending([pod("p", cpu="8")])
    assert bindings[0].node is None
    assert "Insufficient cpu" in bindings[0].message
    assert "default/p" not in cluster.state.pods


def test_a_bind_plugin_is_required():
    cfg = one_plugin_config("NodeName")
    cfg["profiles"][0]["plugins"]["bind"] = {"disabled": [{"name": "*"}]}
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert err.value.field == "profiles[0].plugins.bind"
