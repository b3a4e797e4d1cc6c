"""``parsing.podgroups``: PodGroup objects of scheduling.x-k8s.io parse
into gangs; every malformed field is an error naming it."""

from __future__ import annotations

import pytest

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.podgroups import (
    API_GROUP, PodGroup, is_coscheduling_pod_group, parse_pod_group)


def group(spec=None, **meta):
    return {"apiVersion": f"{API_GROUP}/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ns", **meta},
            "spec": {"minMember": 3} if spec is None else spec}


def test_fields_and_defaults():
    g = parse_pod_group(group())
    assert isinstance(g, PodGroup) and g.full_name == "ns/g"
    assert (g.min_member, g.timeout, g.min_resources, g.creation_ns) == (3, None, None, None)


def test_timeout_resources_and_creation_time():
    g = parse_pod_group(group({"minMember": 2, "scheduleTimeoutSeconds": 30,
                               "minResources": {"cpu": "1500m", "memory": "1Ki"}},
                              creationTimestamp="1970-01-01T00:00:10Z"))
    assert g.timeout == 30.0 and isinstance(g.timeout, float)
    assert g.min_resources == {"cpu": 1500, "memory": 1024}
    assert g.creation_ns == 10 * 10 ** 9
    # 0 means the plugin's own wait
    assert parse_pod_group(group({"minMember": 1, "scheduleTimeoutSeconds": 0})).timeout is None


@pytest.mark.parametrize("spec, field, problem", [
    ({}, "spec.minMember", "must be a positive integer, got nothing"),
    ({"minMember": 0}, "spec.minMember", "must be a positive integer, got 0"),
    ({"minMember": True}, "spec.minMember", "must be a positive integer, got True"),
    ({"minMember": "3"}, "spec.minMember", "must be a positive integer, got '3'"),
    ({"minMember": 2 ** 31}, "spec.minMember", f"must be a positive integer, got {2 ** 31}"),
    ({"minMember": 1, "scheduleTimeoutSeconds": -1}, "spec.scheduleTimeoutSeconds",
     "must be a non-negative integer, got -1"),
    ({"minMember": 1, "minResources": {"cpu": "x"}}, "spec.minResources.cpu", None),
])
def test_bad_fields_are_named(spec, field, problem):
    with pytest.raises(ManifestError) as info:
        parse_pod_group(group(spec))
    assert (info.value.obj, info.value.field) == ("PodGroup ns/g", field)
    if problem:
        assert info.value.problem == problem


def test_only_the_coscheduling_api_group_is_this_object():
    assert is_coscheduling_pod_group(group())
    assert is_coscheduling_pod_group({"kind": "PodGroup"})
    assert not is_coscheduling_pod_group({"apiVersion": "scheduling.volcano.sh/v1beta1"})
    assert not is_coscheduling_pod_group({"apiVersion": 3})
