"""query's scalar rules: toleration matching, image-name normalization,
extended-resource names, NodeAffinity's PreFilter node names, and the pod
signature the compiled-query cache keys on."""

from __future__ import annotations

import pytest

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.records.records import Taint, Toleration
from tensorsched.framework.state.query import (
    is_extended_resource,
    normalized_image_name,
    pod_signature,
    prefilter_node_names,
    tolerates,
)
from tensorsched.generators.clusters import pod_dict

TAINT = Taint("gpu", "a100", "NoSchedule")


@pytest.mark.parametrize("tol,ok", [
    (Toleration("gpu", "Equal", "a100", "NoSchedule"), True),
    (Toleration("gpu", "Equal", "h100", "NoSchedule"), False),
    (Toleration("gpu", "Exists", "", ""), True),            # any value, any effect
    (Toleration("", "Exists", "", ""), True),               # every taint
    (Toleration("", "Exists", "", "NoExecute"), False),     # effect must match
    (Toleration("other", "Exists", "", "NoSchedule"), False),
    (Toleration("gpu", "", "a100", ""), True),              # "" is Equal
])
def test_tolerates(tol, ok):
    assert tolerates(tol, TAINT) is ok


@pytest.mark.parametrize("name,want", [
    ("nginx", "nginx:latest"),
    ("nginx:1.25", "nginx:1.25"),
    ("registry:5000/app", "registry:5000/app:latest"),     # the port is not a tag
    ("registry:5000/app:v2", "registry:5000/app:v2"),
])
def test_normalized_image_name(name, want):
    assert normalized_image_name(name) == want


@pytest.mark.parametrize("name,ext", [
    ("nvidia.com/gpu", True), ("cpu", False), ("kubernetes.io/x", False),
    ("foo.kubernetes.io/x", False), ("requests.nvidia.com/gpu", False),
    ("example.org/widget", True)])
def test_is_extended_resource(name, ext):
    assert is_extended_resource(name) is ext


def _pod_with_terms(terms):
    d = pod_dict("p", cpu="100m")
    d["spec"]["affinity"] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    return parse_pod(d)


def _names(*values):
    return {"key": "metadata.name", "operator": "In", "values": list(values)}


def test_prefilter_names_intersect_within_a_term_and_union_over_terms():
    assert prefilter_node_names(parse_pod(pod_dict("p", cpu="1"))) is None
    # (a matchFields requirement has one value, as the API server requires)
    pod = _pod_with_terms([{"matchFields": [_names("b"), _names("b")]},
                           {"matchFields": [_names("d")]}])
    assert prefilter_node_names(pod) == {"b", "d"}
    pod = _pod_with_terms([{"matchFields": [_names("a"), _names("b")]},
                           {"matchFields": [_names("d")]}])
    assert prefilter_node_names(pod) == {"d"}


def test_a_term_without_names_lifts_the_restriction():
    pod = _pod_with_terms([{"matchFields": [_names("a")]},
                           {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}])
    assert prefilter_node_names(pod) is None


def test_signature_separates_pods_the_query_tells_apart():
    a = parse_pod(pod_dict("a", cpu="100m"))
    b = parse_pod(pod_dict("b", cpu="100m"))
    c = parse_pod(pod_dict("c", cpu="200m"))
    assert pod_signature(a) == pod_signature(b)
    assert pod_signature(a) != pod_signature(c)
