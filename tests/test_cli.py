"""The command line: explain (json/table), schedule (built-in sample and
files), bench, and clear errors for bad input."""

import json

import pytest
import yaml

from tensorsched.cli import main
from tensorsched.generators.clusters import node_dict, pod_dict


def _write(tmp_path, name, objs):
    p = tmp_path / name
    p.write_text(yaml.safe_dump_all(objs))
    return str(p)


def _cluster(tmp_path):
    nodes = [node_dict("a", cpu="2"), node_dict("b", cpu="8"),
             node_dict("c", cpu="8", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])]
    return _write(tmp_path, "cluster.yaml", nodes)


def test_explain_json(tmp_path, capsys):
    pod = _write(tmp_path, "pod.yaml", [pod_dict("web", cpu="3")])
    assert main(["explain", "--cluster", _cluster(tmp_path), "--pod", pod, "--backend", "numba"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"pod", "profile", "backend", "nodes_evaluated", "feasible", "filter",
                        "scores", "total", "selected", "preemption", "weights"}
    # the default profile's weights of the plugins that scored (the others Skip)
    assert out["weights"] == {"TaintToleration": 3, "NodeResourcesFit": 1,
                              "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1}
    assert list(out["weights"]) == list(out["scores"]["b"])
    assert out["pod"] == "default/web" and out["backend"] == "numba"
    assert out["feasible"] == ["b"] and out["selected"] == "b"
    assert out["filter"]["a"] == {"code": "Unschedulable", "plugin": "NodeResourcesFit",
                                  "reasons": ["Insufficient cpu"]}
    assert out["filter"]["c"]["plugin"] == "TaintToleration"


def test_explain_table_groups_reasons_like_failed_scheduling(tmp_path, capsys):
    pod = _write(tmp_path, "pod.yaml", [pod_dict("big", cpu="9")])
    assert main(["explain", "--cluster", _cluster(tmp_path), "--pod", pod,
                 "--format", "table"]) == 0
    text = capsys.readouterr().out
    assert "0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, " \
           "2 Insufficient cpu." in text


def test_schedule_builtin_sample_writes_bindings(tmp_path, capsys):
    out = tmp_path / "bindings.json"
    assert main(["schedule", "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["summary"]["pods"] == len(data["bindings"]) > 0
    assert data["summary"]["scheduled"] == sum(1 for b in data["bindings"] if b["node"])
    assert all("message" in b for b in data["bindings"] if b["node"] is None)
    assert "scheduled" in capsys.readouterr().err


def test_schedule_files_yaml(tmp_path):
    pods = _write(tmp_path, "pods.yaml", [pod_dict(f"p{i}", cpu="1500m", created=i)
                                          for i in range(6)])
    out = tmp_path / "bindings.yaml"
    assert main(["schedule", "--cluster", _cluster(tmp_path), "--pods", pods,
                 "--output", str(out)]) == 0
    data = yaml.safe_load(out.read_text())
    nodes = [b["node"] for b in data["bindings"]]
    # a (2 cpu) takes one 1.5-cpu pod, b (8 cpu) five; c is tainted
    assert nodes.count("a") + nodes.count("b") == 6 and "c" not in nodes


def test_bench_writes_record(tmp_path):
    out = tmp_path / "r.json"
    assert main(["bench", "--workload", "basic", "--nodes", "50", "--pods", "40",
                 "--backend", "numpy", "--output", str(out)]) == 0
    rec = json.loads(out.read_text())
    for key in ("workload", "nodes", "pods", "backend", "pods_per_second", "p50_us", "p99_us",
                "stages", "placements_sha256"):
        assert key in rec
    assert rec["scheduled"] == 40


def test_bad_manifest_is_a_clear_error(tmp_path, capsys):
    bad = pod_dict("web")
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    pod = _write(tmp_path, "pod.yaml", [bad])
    assert main(["explain", "--cluster", _cluster(tmp_path), "--pod", pod]) == 2
    err = capsys.readouterr().err
    assert "Pod default/web" in err and "spec.containers[0].resources.requests.cpu" in err


def test_bad_config_is_a_clear_error(tmp_path, capsys):
    cfg = tmp_path / "sched.yaml"
    cfg.write_text(yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1",
                                   "kind": "KubeSchedulerConfiguration",
                                   "percentageOfNodesToScore": 101}))
    pod = _write(tmp_path, "pod.yaml", [pod_dict("web")])
    assert main(["explain", "--cluster", _cluster(tmp_path), "--pod", pod,
                 "--config", str(cfg)]) == 2
    assert "percentageOfNodesToScore" in capsys.readouterr().err


def test_unknown_scheduler_name(tmp_path, capsys):
    pod = _write(tmp_path, "pod.yaml", [pod_dict("web", spec={"schedulerName": "other"})])
    assert main(["explain", "--cluster", _cluster(tmp_path), "--pod", pod]) == 2
    assert "other" in capsys.readouterr().err


def test_explain_function_contract():
    """tensorsched.framework.explain(objects, pod, config=None, backend="numpy", seed=0,
    *, feature_gates=None)."""
    import inspect

    import tensorsched.framework as framework
    sig = inspect.signature(framework.explain)
    assert list(sig.parameters) == ["objects", "pod", "config", "backend", "seed",
                                    "feature_gates"]
    assert sig.parameters["feature_gates"].kind is inspect.Parameter.KEYWORD_ONLY
    assert sig.parameters["feature_gates"].default is None
    assert sig.parameters["config"].default is None
    assert sig.parameters["backend"].default == "numpy"
    assert sig.parameters["seed"].default == 0
    nodes = [node_dict("a"), node_dict("b", cpu="1")]
    out = framework.explain(nodes, pod_dict("p", cpu="2"), backend="numba", seed=4)
    assert out["feasible"] == ["a"] and out["selected"] == "a"


def _preemption_cluster(tmp_path):
    """n0 (2 cpu) full of priority-0 pods; n1 (1 cpu) empty.  Pending: vip
    (2 cpu, priority 1000) must preempt both pods of n0; huge fits nowhere;
    late (1 cpu) fits n1."""
    low = {"nodeName": "n0"}
    objs = [node_dict("n0", cpu="2"), node_dict("n1", cpu="1"),
            pod_dict("low-a", cpu="1", priority=0, spec=low),
            pod_dict("low-b", cpu="1", priority=0, created=1, spec=low),
            pod_dict("huge", cpu="64", priority=0, created=2),
            pod_dict("late", cpu="1", priority=0, created=3),
            pod_dict("vip", cpu="2", priority=1000, created=4)]
    return _write(tmp_path, "cluster.yaml", objs)


def test_schedule_queue_preemption_then_preemptor_bound(tmp_path, capsys):
    out = tmp_path / "bindings.json"
    assert main(["schedule", "--cluster", _preemption_cluster(tmp_path),
                 "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["preemptions"] == [{"preemptor": "default/vip", "nominated_node": "n0",
                                    "victims": ["default/low-a", "default/low-b"]}]
    assert data["evictions"] == [{"pod": f"default/low-{x}", "node": "n0",
                                  "preemptor": "default/vip"} for x in "ab"]
    # one final entry per pending pod, in the order of the final outcomes
    by_pod = {b["pod"]: b for b in data["bindings"]}
    assert [b["pod"] for b in data["bindings"]] == ["default/huge", "default/late", "default/vip"]
    assert by_pod["default/vip"] == {"pod": "default/vip", "node": "n0", "nominated_node": "n0",
                                     "preempted": ["default/low-a", "default/low-b"]}
    assert by_pod["default/late"]["node"] == "n1"
    assert by_pod["default/huge"]["node"] is None
    assert by_pod["default/huge"]["message"].startswith(
        "0/2 nodes are available: 2 Insufficient cpu.")
    assert data["summary"] == {"pods": 3, "scheduled": 2, "unschedulable": 1, "ignored": 0,
                               "nodes_used": 2, "preemptions": 1, "evictions": 2}
    assert "1 preemptions, 2 evictions" in capsys.readouterr().err


def test_schedule_queue_never_fits_prints_failed_scheduling(tmp_path, capsys):
    pods = _write(tmp_path, "pods.yaml", [pod_dict("huge", cpu="64")])
    assert main(["schedule", "--cluster", _cluster(tmp_path), "--pods", pods]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == (
        "default/huge                     !! 0/3 nodes are available: 1 node(s) had untolerated "
        "taint {k: v}, 2 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are "
        "available: 1 Preemption "
        "is not helpful for scheduling, 2 No preemption victims found for incoming pod.")
    assert "scheduled 0/1 pods" in captured.err and "0 preemptions, 0 evictions" in captured.err


def test_schedule_gang_from_config_and_pod_groups(tmp_path):
    """Coscheduling is enabled by a config file alone (no code): a group with
    its quorum binds together; a group short of minMember is rejected whole."""
    group = lambda name: {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                          "metadata": {"name": name, "namespace": "default"},
                          "spec": {"minMember": 3}}
    cluster = _write(tmp_path, "cluster.yaml", [node_dict("n1", cpu="4"), node_dict("n2", cpu="4"),
                                                group("train"), group("short")])
    pods = []
    for g, n, cpu in (("train", 3, "2"), ("short", 2, "1")):
        for i in range(n):
            p = pod_dict(f"{g}-{i}", cpu=cpu, created=i)
            p["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": g}
            pods.append(p)
    gang = {"enabled": [{"name": "Coscheduling"}]}
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "plugins": {
            "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
            "preFilter": gang, "postFilter": gang, "reserve": gang, "permit": gang}}]}))
    out = tmp_path / "b.json"
    assert main(["schedule", "--cluster", cluster, "--pods", _write(tmp_path, "p.yaml", pods),
                 "--config", str(cfg), "--output", str(out)]) == 0
    by_pod = {b["pod"]: b for b in json.loads(out.read_text())["bindings"]}
    assert len(by_pod) == 5
    assert all(by_pod[f"default/train-{i}"]["node"] in ("n1", "n2") for i in range(3))
    for i in range(2):
        b = by_pod[f"default/short-{i}"]
        assert b["node"] is None
        assert "cannot find enough sibling pods" in b["message"]
        assert "PodGroup default/short gets rejected" in b["message"]


# ----------------------------------------------------------- bad arguments


@pytest.mark.parametrize("argv, flag", [
    (["bench", "--nodes", "0"], "--nodes: must be 1..10000000, got 0"),
    (["bench", "--pods", "-3"], "--pods: must be 1..100000000, got -3"),
    (["bench", "--nodes", "ten"], "--nodes: not an integer: 'ten'"),
    (["bench", "--percentage-of-nodes-to-score", "101"],
     "--percentage-of-nodes-to-score: must be 0..100, got 101"),
    (["explain", "--cluster", "c", "--pod", "p", "--top", "0"], "--top: must be >= 1, got 0"),
    (["explain", "--cluster", "c", "--pod", "p", "--seed", "-1"], "--seed: must be 0.."),
    (["replay", "--nodes", "n", "--pods", "p", "--tune", "nan"],
     "--tune: must be a finite number > 0, got 'nan'"),
    (["replay", "--nodes", "n", "--pods", "p", "--tune", "-1"],
     "--tune: must be a finite number > 0, got '-1'"),
    (["schedule", "--output", "/no/such/dir/out.yaml"],
     "--output: directory '/no/such/dir' does not exist"),
])
def test_bad_arguments_are_one_line_and_status_2(argv, flag, capsys):
    """Checked before any work: one line naming the flag, exit status 2."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and flag in err


def test_help_shows_every_default(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    out = capsys.readouterr().out
    for text in ("(default: basic)", "(default: 1000)", "(default: numba)", "(default: 100)",
                 "(default: 0)"):
        assert text in out


def test_explain_table_shows_weights_and_preemption(tmp_path, capsys):
    # b (8 cpu) full of a low-priority pod; the high-priority pod must preempt it
    low = dict(pod_dict("low", cpu="7", priority=0), spec=dict(
        pod_dict("low", cpu="7")["spec"], nodeName="b"))
    cluster = _write(tmp_path, "cluster.yaml",
                     [node_dict("b", cpu="8"), node_dict("node-with-a-very-long-name", cpu="1"),
                      low])
    pod = _write(tmp_path, "pod.yaml", [pod_dict("vip", cpu="4", priority=100)])
    assert main(["explain", "--cluster", cluster, "--pod", pod, "--format", "table"]) == 0
    out = capsys.readouterr().out
    assert "preemption: nominated b, evicting default/low" in out
    pod2 = _write(tmp_path, "pod2.yaml", [pod_dict("small", cpu="100m")])
    assert main(["explain", "--cluster", cluster, "--pod", pod2, "--format", "table"]) == 0
    out = capsys.readouterr().out
    # whole plugin names with their weights; the long node name uncut
    assert "NodeResourcesBalancedAllocation x1" in out and "TaintToleration x3" in out
    assert "node-with-a-very-long-name" in out


def test_schedule_leaves_other_schedulers_pods_alone(tmp_path, capsys):
    other = pod_dict("batch", spec={"schedulerName": "volcano"})
    cluster = _write(tmp_path, "cluster.yaml", [node_dict("n0"), pod_dict("web"), other])
    out = tmp_path / "out.json"
    assert main(["schedule", "--cluster", cluster, "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    by_pod = {b["pod"]: b for b in data["bindings"]}
    assert by_pod["default/web"]["node"] == "n0"
    assert by_pod["default/batch"] == {
        "pod": "default/batch", "node": None, "ignored": True,
        "message": "not scheduled here: no profile has schedulerName 'volcano'"}
    assert data["summary"]["ignored"] == 1 and data["summary"]["unschedulable"] == 0
    assert "1 for other schedulers" in capsys.readouterr().err


def test_explain_of_a_running_pod_leaves_its_own_usage_out(tmp_path, capsys):
    # the pod as `kubectl get pod -o yaml` prints it: bound to n0, which it fills
    running = pod_dict("web", cpu="3")
    running["spec"]["nodeName"] = "n0"
    running["status"] = {"phase": "Running"}
    cluster = _write(tmp_path, "cluster.yaml", [node_dict("n0", cpu="4"), running])
    pod = _write(tmp_path, "pod.yaml", [running])
    assert main(["explain", "--cluster", cluster, "--pod", pod]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["bound_node"] == "n0"
    assert out["feasible"] == ["n0"] and out["filter"] == {}     # not "Insufficient cpu"


def test_explain_table_of_a_running_pod_ends_with_the_node_it_marks(tmp_path, capsys):
    """The table and its last line are one decision on one state (the pod
    without its own usage): the marked node is the one selected, not
    "0/1 nodes are available: 1 Insufficient cpu" from the pod counted twice."""
    running = pod_dict("web", cpu="3")
    running["spec"]["nodeName"] = "n0"
    running["status"] = {"phase": "Running"}
    cluster = _write(tmp_path, "cluster.yaml", [node_dict("n0", cpu="4"), running])
    pod = _write(tmp_path, "pod.yaml", [running])
    assert main(["explain", "--cluster", cluster, "--pod", pod, "--format", "table"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "bound to n0 (explained without its own usage)" in lines
    assert [x.split()[0] for x in lines if x.startswith("*")] == ["*n0"]
    assert lines[-1] == "selected: n0"
    # a second pod alike, not in the cluster, does not fit beside it: the
    # message is kube-scheduler's, the table marks nothing
    other = dict(running, metadata=dict(running["metadata"], name="web-2"))
    assert main(["explain", "--cluster", cluster, "--pod", _write(tmp_path, "p2.yaml", [other]),
                 "--format", "table"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert not any(x.startswith("*") for x in lines)
    assert lines[-1] == "0/1 nodes are available: 1 Insufficient cpu."


def test_ignored_kinds_are_named_in_one_warning(tmp_path, capsys):
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    cluster = _write(tmp_path, "cluster.yaml", [node_dict("n0"), pod_dict("web"),
                                                deployment, config_map, dict(config_map)])
    assert main(["schedule", "--cluster", cluster]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("warning: ignored 3 objects of kinds tensorsched does not read: "
                      "ConfigMap (2), Deployment (1)")


@pytest.mark.parametrize("workload", ["replicaset", "spread", "affinity"])
def test_bench_runs_place_as_one_by_one(tmp_path, workload):
    """The pod-to-pod workloads through the queue: the compiled runs (one
    run of all pods) place exactly as --no-batch."""
    recs = {}
    for flag in ([], ["--no-batch"]):
        out = tmp_path / f"r{len(flag)}.json"
        assert main(["bench", "--workload", workload, "--nodes", "60", "--pods", "50",
                     "--output", str(out), *flag]) == 0
        recs[bool(flag)] = json.loads(out.read_text())
    assert recs[False]["placements_sha256"] == recs[True]["placements_sha256"]
    assert recs[False]["mean_run_length"] == 50 and recs[True]["mean_run_length"] == 1
    assert recs[False]["scheduled"] == 50


def test_schedule_and_explain_warn_of_what_the_profile_cannot_see(tmp_path, capsys):
    gpu = pod_dict("g")
    gpu["metadata"]["annotations"] = {"alibabacloud.com/gpu-count": "1"}
    pods = _write(tmp_path, "pods.yaml", [gpu, pod_dict("x", extra={"example.com/foo": "1"})])
    cluster = _cluster(tmp_path)
    assert main(["schedule", "--cluster", cluster, "--pods", pods]) == 0
    err = capsys.readouterr().err
    assert "enable the GpuShareFit plugin" in err and "request example.com/foo" in err
    one = _write(tmp_path, "one.yaml", [gpu])
    assert main(["explain", "--cluster", cluster, "--pod", one]) == 0
    err = capsys.readouterr().err
    assert "1 pod(s) ask for GPUs in annotations" in err


def test_bench_unschedulable_remembers_failures(tmp_path):
    """``--workload unschedulable``: every pod fits nowhere; with the failure
    memory all but the first are answered from it, with the same outcomes
    as ``--no-failure-memory``, batch on and off."""
    recs = {}
    for flags in ([], ["--no-batch"], ["--no-failure-memory"]):
        out = tmp_path / f"r{len(recs)}.json"
        assert main(["bench", "--workload", "unschedulable", "--nodes", "30", "--pods", "25",
                     "--output", str(out), *flags]) == 0
        recs[tuple(flags)] = json.loads(out.read_text())
    assert {r["placements_sha256"] for r in recs.values()} == {
        recs[()]["placements_sha256"]}
    assert recs[()]["scheduled"] == 0
    assert recs[()]["failures_remembered"] == recs[("--no-batch",)]["failures_remembered"] == 24
    assert recs[("--no-failure-memory",)]["failures_remembered"] == 0
    for r in recs.values():
        assert r["first_failure_cycle_us"] > 0 and r["after_first_us_per_pod"] > 0
