from __future__ import annotations

import json

import yaml

import tensorsched as ts
from capacity_helpers import bound, cluster_of, node_dict, pod_dict
from tensorsched.framework.capacity.report import API_VERSION, KIND


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
