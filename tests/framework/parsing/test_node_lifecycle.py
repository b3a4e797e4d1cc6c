"""Node lifecycle: cordon/uncordon keep spec.unschedulable and the
unschedulable taint in step; one drain rule (DaemonSet and static pods stay)."""
from __future__ import annotations

import pytest

from tensorsched.framework.parsing.manifests import parse_node, parse_pod
from tensorsched.framework.parsing.node_lifecycle import (
    UNSCHEDULABLE_TAINT,
    drain_exemption,
    set_unschedulable,
    uncordoned_record,
)
from tensorsched.generators.clusters import node_dict, pod_dict

TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
OTHER = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


@pytest.mark.parametrize("spec", [
    {}, {"unschedulable": True}, {"taints": [TAINT]}, {"taints": [OTHER, TAINT]},
    {"unschedulable": True, "taints": [OTHER, dict(TAINT, timeAdded="2024-01-01T00:00:00Z")]},
])
def test_cordon_and_uncordon_keep_field_and_taint_in_step(spec):
    node = node_dict("n")
    node["spec"] = dict(spec)
    before = repr(node)
    on = parse_node(set_unschedulable(node, True))
    assert on.unschedulable and on.taints.count(UNSCHEDULABLE_TAINT) == 1
    off = parse_node(set_unschedulable(node, False))
    assert not off.unschedulable and UNSCHEDULABLE_TAINT not in off.taints
    # other taints stay, in order; the given object is untouched
    others = [t for t in parse_node(node).taints if t.key != UNSCHEDULABLE_TAINT.key]
    assert [t for t in on.taints if t != UNSCHEDULABLE_TAINT] == others == off.taints
    assert repr(node) == before
    # back and forth ends where it started
    assert parse_node(set_unschedulable(set_unschedulable(node, True), False)) == off


def test_a_new_node_from_a_cordoned_template_joins_uncordoned():
    tmpl = parse_node(node_dict("t", unschedulable=True, taints=[TAINT, OTHER]))
    fresh = uncordoned_record(tmpl)
    assert not fresh.unschedulable and [t.key for t in fresh.taints] == ["dedicated"]
    assert parse_node(fresh.obj) == fresh
    assert tmpl.unschedulable                    # the template is not changed
    plain = parse_node(node_dict("p"))
    assert uncordoned_record(plain) is plain


def _pod(meta: dict):
    p = pod_dict("p")
    p["metadata"].update(meta)
    return parse_pod(p)


@pytest.mark.parametrize("meta, why", [
    ({}, None),
    ({"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r",
                           "uid": "u", "controller": True}]}, None),
    ({"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d",
                           "uid": "u", "controller": True}]}, "DaemonSet"),
    # a DaemonSet that is an owner but not the controller: kubectl drain evicts it
    ({"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d",
                           "uid": "u"}]}, None),
    ({"ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u",
                           "controller": True}]}, "static"),
    ({"annotations": {"kubernetes.io/config.mirror": "abc"}}, "static"),
])
def test_drain_exemption(meta, why):
    assert drain_exemption(_pod(meta)) == why
