from __future__ import annotations

import json

import yaml

import tensorsched as ts
from capacity_helpers import bound, cluster_of, node_dict, pod_dict
from tensorsched.framework.capacity.report import API_VERSION, KIND
from tensorsched.framework.parsing.controllers import expand_workloads, template_hash


def test_documents_are_versioned_and_serializable():
    cl = cluster_of([node_dict("n0", cpu="1"), node_dict("n1", cpu="1")],
                    [bound("x", "n0", cpu="500m")])
    reports = [ts.how_many_fit(cl, [pod_dict("a", cpu="250m")], backend="numpy"),
               ts.how_many_fit(cl, [pod_dict("a", cpu="250m")], replicas=[9], backend="numpy"),
               ts.nodes_to_add(cl, [pod_dict("w", cpu="1")], [node_dict("t", cpu="1")],
                               backend="numpy"),
               ts.removable_nodes(cl, backend="numpy")]
    modes = []
    for r in reports:
        doc = r.to_dict()
        assert doc["apiVersion"] == API_VERSION == "tensorsched.io/v1alpha1"
        assert doc["kind"] == KIND == "CapacityReport"
        assert set(doc) == {"apiVersion", "kind", "spec", "status"}
        assert doc["spec"]["backend"] == "numpy" and doc["spec"]["seed"] == 0
        assert json.loads(json.dumps(doc)) == doc
        assert yaml.safe_load(yaml.safe_dump(doc)) == doc
        assert r.table()
        modes.append(doc["spec"]["mode"])
    assert modes == ["HowManyFit", "Replicas", "NodesToAdd", "Drain"]
    fit = reports[0].to_dict()["status"]
    assert fit["total"] == 6 and fit["templates"][0]["nodes"] == {"n0": 2, "n1": 4}
    assert reports[1].to_dict()["status"]["fits"] is False
    assert reports[2].to_dict()["status"]["nodesToAdd"] == 0


def test_deterministic_for_a_seed():
    cl = cluster_of([node_dict(f"n{i}", cpu="2") for i in range(4)])
    a = ts.how_many_fit(cl, [pod_dict("a", cpu="300m"), pod_dict("b", cpu="700m")],
                        backend="numpy", seed=7)
    b = ts.how_many_fit(cl, [pod_dict("a", cpu="300m"), pod_dict("b", cpu="700m")],
                        backend="numpy", seed=7)
    assert a.to_dict() == b.to_dict()


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
