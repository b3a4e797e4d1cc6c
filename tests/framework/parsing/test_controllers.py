"""``parsing.controllers``: workload controllers expanded into the pods
they would create, named, labelled and owned as their controllers do it,
the same on every run; a malformed field raises a ManifestError naming the
object and the field."""

from __future__ import annotations

import copy

import pytest

import tensorsched as ts
from tensorsched.framework.errors import ArgumentError, ManifestError
from tensorsched.framework.parsing.controllers import (
    SAFE_ALPHABET, _fnv32a, expand_workloads, replicas_of, template_hash)
from tensorsched.framework.parsing.meta import SourcedObject, source_of


def _controller(kind, api, spec_extra, name="x"):
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "ns"},
            "spec": {**spec_extra, "template": {"metadata": {"labels": {"app": name}},
                                                "spec": {"containers": [{"name": "c",
                                                                         "image": "i"}]}}}}


def test_controller_expansion():
    dep = _controller("Deployment", "apps/v1", {"replicas": 3}, "web")
    sts = _controller("StatefulSet", "apps/v1", {"replicas": 2}, "db")
    job = _controller("Job", "batch/v1", {"parallelism": 5, "completions": 2}, "batch")
    rs = _controller("ReplicaSet", "apps/v1", {}, "rs")
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    pods, ignored = expand_workloads([dep, sts, job, rs, other])
    names = [p["metadata"]["name"] for p in pods]
    h = template_hash(dep["spec"]["template"])
    assert all(n.startswith(f"web-{h}-") and len(n) == len(f"web-{h}-") + 5 for n in names[:3])
    assert names[3:5] == ["db-0", "db-1"]
    assert len(names) == 3 + 2 + 2 + 1 and ignored == {"ConfigMap": 1}
    assert pods[0]["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    assert pods[0]["metadata"]["labels"]["pod-template-hash"] == h
    assert pods[5]["metadata"]["labels"]["job-name"] == "batch"
    assert pods[3]["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "db-0"
    assert expand_workloads([dep])[0] == pods[:3]          # deterministic
    bad = _controller("Deployment", "apps/v1", {"replicas": -1}, "web")
    try:
        expand_workloads([bad])
    except ts.TensorschedError as exc:
        assert str(exc) == "Deployment ns/web: spec.replicas: must be in 0..2147483647, got -1"
    else:
        raise AssertionError("negative replicas accepted")


def test_fnv32a_matches_the_published_test_vectors():
    assert _fnv32a(b"") == 0x811C9DC5
    assert _fnv32a(b"a") == 0xE40C292C
    assert _fnv32a(b"foobar") == 0xBF9CF968


def test_template_hash_is_safe_encoded_and_follows_the_template():
    t = _controller("Deployment", "apps/v1", {})["spec"]["template"]
    h = template_hash(t)
    # one safe character per decimal digit of a 32-bit hash
    assert 1 <= len(h) <= 10 and set(h) <= set(SAFE_ALPHABET)
    assert template_hash(copy.deepcopy(t)) == h
    # key order does not matter, content does
    assert template_hash(dict(reversed(list(t.items())))) == h
    changed = copy.deepcopy(t)
    changed["metadata"]["labels"]["app"] = "other"
    assert template_hash(changed) != h


@pytest.mark.parametrize("kind, spec, count", [
    ("Deployment", {}, 1), ("ReplicaSet", {"replicas": 0}, 0),
    ("ReplicationController", {"replicas": 4}, 4),
    ("Job", {}, 1), ("Job", {"parallelism": 5}, 5),
    ("Job", {"parallelism": 5, "completions": 3}, 3),
    ("Job", {"parallelism": 2, "completions": 9}, 2),
    ("Job", {"parallelism": 5, "suspend": True}, 0),
])
def test_replicas_of_each_kind(kind, spec, count):
    obj = _controller(kind, "apps/v1", spec)
    assert replicas_of(obj) == count
    assert len(expand_workloads([obj])[0]) == count


@pytest.mark.parametrize("spec, field", [
    ({"replicas": "3"}, "spec.replicas"), ({"replicas": 2 ** 31}, "spec.replicas"),
])
def test_bad_replicas_name_the_field(spec, field):
    with pytest.raises(ManifestError) as info:
        replicas_of(_controller("ReplicaSet", "apps/v1", spec, "rs"))
    assert (info.value.obj, info.value.field) == ("ReplicaSet ns/rs", field)


def test_job_fields_are_checked():
    with pytest.raises(ManifestError) as info:
        replicas_of(_controller("Job", "batch/v1", {"suspend": "yes"}, "j"))
    assert info.value.field == "spec.suspend"
    with pytest.raises(ManifestError) as info:
        replicas_of(_controller("Job", "batch/v1", {"completions": -2}, "j"))
    assert info.value.field == "spec.completions"


def test_statefulset_ordinals_start_and_indexed_jobs():
    sts = _controller("StatefulSet", "apps/v1", {"replicas": 2, "ordinals": {"start": 5}}, "db")
    pods, _ = expand_workloads([sts])
    assert [p["metadata"]["name"] for p in pods] == ["db-5", "db-6"]
    assert pods[1]["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "6"
    job = _controller("Job", "batch/v1", {"parallelism": 3, "completionMode": "Indexed"}, "j")
    pods, _ = expand_workloads([job])
    for i, p in enumerate(pods):
        meta = p["metadata"]
        assert meta["name"].startswith(f"j-{i}-") and len(meta["name"]) == len(f"j-{i}-") + 5
        assert meta["labels"]["batch.kubernetes.io/job-completion-index"] == str(i)
        assert meta["annotations"]["batch.kubernetes.io/job-completion-index"] == str(i)
        assert meta["labels"]["controller-uid"] == meta["ownerReferences"][0]["uid"]


def test_suffixes_are_unique_safe_and_depend_on_the_controller():
    rs = _controller("ReplicaSet", "apps/v1", {"replicas": 50}, "rs")
    names = [p["metadata"]["name"] for p in expand_workloads([rs])[0]]
    assert len(set(names)) == 50
    assert all(set(n[len("rs-"):]) <= set(SAFE_ALPHABET) for n in names)
    other = _controller("ReplicaSet", "apps/v1", {"replicas": 50}, "rs")
    other["metadata"]["namespace"] = "elsewhere"
    assert [p["metadata"]["name"] for p in expand_workloads([other])[0]] != names


def test_pods_are_independent_copies_of_the_template():
    rs = _controller("ReplicaSet", "apps/v1", {"replicas": 2}, "rs")
    a, b = expand_workloads([rs])[0]
    a["spec"]["containers"].append({"name": "x"})
    assert len(b["spec"]["containers"]) == 1 == len(rs["spec"]["template"]["spec"]["containers"])
    assert a["metadata"]["ownerReferences"][0] == {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
        "uid": b["metadata"]["ownerReferences"][0]["uid"], "controller": True,
        "blockOwnerDeletion": True}


def test_generated_pods_remember_their_controllers_file():
    rs = SourcedObject(_controller("ReplicaSet", "apps/v1", {"replicas": 1}, "rs"), "w.yaml#1")
    (pod,), _ = expand_workloads([rs])
    assert source_of(pod) == "w.yaml#1 (ReplicaSet ns/rs spec.template)"
    (pod,), _ = expand_workloads([_controller("ReplicaSet", "apps/v1", {}, "rs")])
    assert source_of(pod) == "ReplicaSet ns/rs spec.template"


def test_templates_are_required():
    no_template = {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {}}
    with pytest.raises(ManifestError) as info:
        expand_workloads([no_template])
    assert (info.value.obj, info.value.field) == ("Deployment default/d", "spec.template")
    empty_spec = _controller("Deployment", "apps/v1", {}, "d")
    empty_spec["spec"]["template"]["spec"] = {}
    with pytest.raises(ManifestError) as info:
        expand_workloads([empty_spec])
    assert info.value.field == "spec.template.spec"
    bad_labels = _controller("Deployment", "apps/v1", {}, "d")
    bad_labels["spec"]["template"]["metadata"]["labels"] = {"app": 1}
    with pytest.raises(ManifestError) as info:
        expand_workloads([bad_labels])
    assert info.value.field == "spec.template.metadata.labels.app"


def test_pods_pass_through_and_bound_ones_are_refused():
    pod = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}
    assert expand_workloads([pod]) == ([pod], {})
    bound = copy.deepcopy(pod)
    bound["spec"]["nodeName"] = "n0"
    with pytest.raises(ManifestError) as info:
        expand_workloads([bound])
    assert (info.value.obj, info.value.field) == ("Pod default/p", "spec.nodeName")


def test_the_objects_argument():
    with pytest.raises(ManifestError) as info:
        expand_workloads([{"kind": "Pod"}, "x"])
    assert info.value.obj == "objects#1"
    with pytest.raises(ArgumentError) as info:
        expand_workloads({"kind": "Pod"})
    assert info.value.argument == "objects"
    assert expand_workloads([{"kind": "Service"}, {"kind": "Service"}, {}]) == \
        ([], {"Service": 2, "None": 1})
