"""``records.records``: a pod's identity is ``namespace/name``, made once
at construction; derived values (``memo``) are never part of equality."""

from __future__ import annotations

import dataclasses

import pytest

from tensorsched.framework.parsing.manifests import parse_node, parse_pod
from tensorsched.framework.records.records import PodRecord, Taint, Toleration
from tensorsched.generators.clusters import node_dict, pod_dict


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
