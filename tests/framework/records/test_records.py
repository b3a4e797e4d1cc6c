"""framework/records/records.py: a pod's identity is ``namespace/name``,
made once at construction; derived values (``memo``) are never part of
equality; a pod's class (``PodClass``) is its own object: records of one
template share it and its memo, a copy starts a class of its own, a variant
is made once per change; every value the library keeps in a pod's memo is
under a declared ``MemoKey``."""

from __future__ import annotations

import dataclasses

import pytest
from support.records import pod

from tensorsched.framework.parsing.manifests import parse_node, parse_pod
from tensorsched.framework.parsing.pod_templates import PodTemplates
from tensorsched.framework.records.pod_columns import PodColumns
from tensorsched.framework.records.records import MemoKey, PodClass, PodRecord, Taint, Toleration
from tensorsched.generators.clusters import node_dict, pod_dict

K = MemoKey("test.k", __name__, "anything")


def test_each_record_has_a_class_and_a_copy_starts_its_own():
    a = pod("a")
    assert isinstance(a.pod_class, PodClass) and a.memo is a.pod_class.memo
    a.memo[K] = 1
    b = dataclasses.replace(a, name="b")
    assert b.pod_class is not a.pod_class and b.memo == {}
    assert a == dataclasses.replace(a)              # the class is not compared


def test_variants_are_made_once_per_change():
    c = PodClass()
    v = c.variant((K, 1))
    assert c.variant((K, 1)) is v and c.variant((K, 2)) is not v
    assert isinstance(v, PodClass) and v is not c


def test_pods_of_one_template_share_a_class_and_columns_class_by_it():
    t = PodTemplates(parse_pod)
    recs = [t.parse(pod_dict(f"p{i}", cpu="100m")) for i in range(4)]
    recs.append(t.parse(pod_dict("other", cpu="200m")))
    assert len({id(r.pod_class) for r in recs[:4]}) == 1
    assert recs[4].pod_class is not recs[0].pod_class
    cols = PodColumns.from_records(recs)
    assert cols.class_id.tolist() == [0, 0, 0, 0, 1]
    assert cols[2].pod_class is recs[0].pod_class


def _keys(memo) -> list:
    out = []
    for k, v in memo.items():
        out.append(k)
        if isinstance(v, PodClass):
            out.extend(_keys(v.memo))
    return out


def test_what_scheduling_keeps_in_memos_is_under_declared_keys():
    """Pods with spread constraints and anti-affinity scheduled through the
    default profile: every memo entry (and every entry of a variant's memo)
    is keyed by a MemoKey or a tuple that starts with one."""
    from tensorsched.generators.clusters import node_dict
    from tensorsched.framework.scheduler.cluster import build_cluster
    from tensorsched.framework.scheduler.scheduler import Scheduler

    sel = {"matchLabels": {"app": "a"}}
    spec = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                           "whenUnsatisfiable": "ScheduleAnyway",
                                           "labelSelector": sel}],
            "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                  "labelSelector": sel}}]}}}
    sched = Scheduler(build_cluster([node_dict(f"n{i}", labels={"zone": f"z{i % 2}"})
                                     for i in range(3)]))
    for i in range(4):
        sched.add_pod(pod_dict(f"p{i}", labels={"app": "a"}, spec=spec))
    sched.run_until_idle()
    state = sched.cluster.state
    keys = [k for rec, _ in state.pods.bound() for k in _keys(rec.memo)]
    assert len(keys) >= 3
    for k in keys:
        head = k
        while isinstance(head, tuple):      # a key of several parts, maybe nested
            head = head[0]
        assert type(head) is MemoKey, k


def test_a_pod_key_is_namespace_slash_name():
    rec = parse_pod(pod_dict("web", namespace="shop"))
    assert rec.key == "shop/web"
    moved = dataclasses.replace(rec, name="api")
    assert moved.key == "shop/api"


def test_memo_is_per_record_and_outside_equality():
    rec = parse_pod(pod_dict("p"))
    twin = dataclasses.replace(rec)
    assert twin.memo == {} and twin.memo is not rec.memo
    rec.memo["signature"] = 1
    assert twin == rec                                # memo not compared
    with pytest.raises(TypeError):
        PodRecord(**{f.name: getattr(rec, f.name) for f in dataclasses.fields(rec)})


def test_small_records_are_frozen_values():
    t = Taint("k", "v", "NoSchedule")
    assert t == Taint("k", "v", "NoSchedule") and hash(t) == hash(Taint("k", "v", "NoSchedule"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.key = "j"
    assert len({Toleration("k", "Equal", "v", ""), Toleration("k", "Equal", "v", "")}) == 1


def test_the_node_object_is_not_in_the_repr():
    rec = parse_node(node_dict("n0"))
    assert "status" not in repr(rec) and "n0" in repr(rec)
