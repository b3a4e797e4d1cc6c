"""The facade other tools read: ``import tensorsched as ts`` and the names the
README promises, each doing what it says."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

import tensorsched as ts
from tensorsched.framework.parsing.manifests import parse_pod


def _write(tmp_path, objs):
    d = tmp_path / "cluster"
    d.mkdir()
    (d / "nodes.yaml").write_text(yaml.safe_dump_all([o for o in objs if o["kind"] == "Node"]))
    (d / "more").mkdir()
    (d / "more" / "pods.yaml").write_text(
        yaml.safe_dump_all([o for o in objs if o["kind"] == "Pod"]))
    return d


def test_the_contract_names_exist():
    for name in ("load_manifests", "build_cluster", "Scheduler", "explain", "synthetic"):
        assert hasattr(ts, name), name
    assert set(ts.synthetic.WORKLOADS) >= {"basic", "spread", "preemption", "gpu"}


def test_load_build_schedule_explain_round_trip(tmp_path):
    nodes, pods = ts.synthetic.workload("basic", 3, 5, seed=0)
    objects = ts.load_manifests(_write(tmp_path, nodes + pods))
    assert len(objects) == 8 and {o["kind"] for o in objects} == {"Node", "Pod"}
    cluster = ts.build_cluster(objects)
    assert cluster.state.num_nodes == 3 and len(cluster.pending) == 5
    outcomes, preemptions = ts.Scheduler(cluster, backend="numpy", seed=0).schedule_pending(
        cluster.pending)
    assert [b.pod for b in outcomes] == [f"default/pod-{i}" for i in range(5)]
    assert all(b.node is not None for b in outcomes) and preemptions == []
    rec = ts.explain(nodes, pods[0], config=None, backend="numpy", seed=0)
    assert rec["selected"] in {"node-0", "node-1", "node-2"}
    # tensorsched.framework.explain is the same function
    from tensorsched import framework
    assert framework.explain(nodes, pods[0]) == rec


def test_schedule_pending_takes_dicts_records_and_columns_alike():
    nodes, pods = ts.synthetic.workload("basic", 4, 6, seed=1)
    by_dict = ts.Scheduler(ts.build_cluster(nodes), "numpy", 0).schedule_pending(pods)[0]
    records = [parse_pod(p) for p in pods]
    by_rec = ts.Scheduler(ts.build_cluster(nodes), "numpy", 0).schedule_pending(records)[0]
    by_cols = ts.Scheduler(ts.build_cluster(nodes), "numpy", 0).schedule_pending(
        ts.PodColumns.from_records(records))[0]
    assert [(b.pod, b.node) for b in by_dict] == [(b.pod, b.node) for b in by_rec] == \
        [(b.pod, b.node) for b in by_cols]


@pytest.mark.parametrize("name", ["basic", "spread", "antiaffinity", "affinity",
                                  "preferred-affinity", "preemption", "preemption-spread",
                                  "preemption-antiaffinity", "gpu"])
def test_every_bench_workload_builds_as_manifests(name):
    nodes, pods = ts.synthetic.workload(name, 6, 4, seed=0)
    cluster = ts.build_cluster(nodes + pods, ts.synthetic.config(name))
    assert cluster.state.num_nodes == 6
    bound = sum(1 for p in pods if p["spec"].get("nodeName"))
    assert len(cluster.state.pods) == bound and len(cluster.pending) == len(pods) - bound
    if name.startswith("preemption"):
        # every node full of low-priority pods; each preemptor must evict
        assert bound == 6 * 30
        outcomes, preemptions = ts.Scheduler(cluster, "numpy", 0).schedule_pending(
            cluster.pending)
        assert preemptions and all(p["victims"] for p in preemptions)


def test_unknown_workload_is_refused():
    with pytest.raises(ValueError, match="unknown workload 'nope'"):
        ts.synthetic.workload("nope", 1, 1)
    with pytest.raises(AttributeError):
        ts.no_such_name   # noqa: B018


def test_importing_the_kernels_does_not_load_the_framework():
    code = ("import sys, tensorsched.kernels.layout; "
            "print(any(m.startswith('tensorsched.framework') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.timeout(30)
def test_an_endless_generator_of_objects_is_refused_not_listed(monkeypatch):
    # build_cluster(<endless generator>) listed objects until the machine ran
    # out of memory; now at most the bound plus one is read, then refused
    # naming the argument (its bound of ten million made a thousand here:
    # listing ten million takes a second)
    import itertools

    from tensorsched.framework.arguments import MAX_LISTED_PODS, MAX_OBJECTS
    from tensorsched.framework.parsing.controllers import MAX_EXPANDED_PODS
    from tensorsched.framework.scheduler import cluster as cluster_module
    from tensorsched.generators.clusters import node_dict, pod_dict
    assert MAX_OBJECTS == 10_000_000 and MAX_LISTED_PODS == MAX_EXPANDED_PODS
    monkeypatch.setattr(cluster_module, "MAX_OBJECTS", 1000)
    with pytest.raises(ts.ArgumentError, match="^build_cluster: objects: at most 1,000 object "
                       r"dicts \(load_manifests\), got more$"):
        ts.build_cluster(itertools.repeat(node_dict("n0")))
    with pytest.raises(ts.ArgumentError, match="^explain: objects: at most 1,000 "):
        ts.explain(itertools.repeat(node_dict("n0")), pod_dict("p"))
    assert len(ts.build_cluster([node_dict(f"n{i}") for i in range(1000)]).state.node_rows) \
        == 1000                                 # the bound itself passes
