"""Fuzzing every CLI command with mutated inputs: valid manifests, configs
and openb CSVs with wrong types, deleted fields, huge, negative and
non-finite numbers, bad UTF-8 and deep nesting.  Each run must end cleanly:
status 0 (a valid result) or status 2 with one line on stderr; never a
traceback, a hang (pytest-timeout) or a numpy warning."""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.openb import openb_slice

from tensorsched.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "data" / "examples"
CLUSTER = yaml.safe_load((EXAMPLES / "cluster.yaml").read_text())
CONFIG = yaml.safe_load((EXAMPLES / "scheduler-config.yaml").read_text())
POD = yaml.safe_load((EXAMPLES / "pod.yaml").read_text())
GPU_CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler", "plugins": {
                  "filter": {"enabled": [{"name": "GpuShareFit"}]},
                  "reserve": {"enabled": [{"name": "GpuShareFit"}]},
                  "score": {"enabled": [{"name": "GpuShareScore", "weight": 5}]}},
                  "pluginConfig": [{"name": "GpuShareScore", "args": {"policy": "FGD"}}]}]}
GPU_NODE = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "gpu-0", "labels": {"alibabacloud.com/gpu-card-model": "T4"},
                         "annotations": {"topology.tensorsched.io/gpu": '{"islands": [0, 0], '
                                                                         '"numa": [0, 0]}'}},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110",
                                       "nvidia.com/gpu": "2"}}}
GPU_POD = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "share", "namespace": "default",
                        "annotations": {"alibabacloud.com/gpu-milli": "500",
                                        "alibabacloud.com/gpu-count": "1"}},
           "spec": {"containers": [{"name": "c", "image": "x",
                                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}
NODE_CSV = (ROOT / "data/openb/csv/openb_node_list_gpu_node.csv").read_text().splitlines()[:41]
POD_CSV = (ROOT / "data/openb/csv/openb_pod_list_default.csv").read_text().splitlines()[:301]

pytestmark = [pytest.mark.filterwarnings("error::RuntimeWarning"), pytest.mark.timeout(600)]
SETTINGS = dict(max_examples=int(os.environ.get("FUZZ_N", 20)), deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))

NASTY = st.sampled_from([
    "lots", "", "-1", "1e400", "nan", "0x10", "{{.bad-value.}}", "∞", "a" * 300, -1, -(2**63),
    2**63, 10**30, 0, 1.5, float("nan"), float("inf"), True, None, [], {}, [1, "x"],
    {"k": "v"}])


def _paths(obj, prefix=()):
    """Every (path to a value) inside nested dicts and lists."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _set(obj, path, value, delete=False):
    parent = obj
    for p in path[:-1]:
        parent = parent[p]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value


@st.composite
def mutated(draw, doc):
    """``doc`` with one to three mutations: a value replaced by a nasty one,
    a field deleted, or a value wrapped in deep nesting."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(("replace", "replace", "delete", "nest")))
        if action == "delete":
            _set(doc, path, None, delete=True)
        elif action == "nest":
            # a placeholder that _dump turns into flow-style nesting: building
            # the nested lists in Python would hit the recursion limit here
            _set(doc, path, f"DEEP-{draw(st.sampled_from((50, 3000)))}")
        else:
            _set(doc, path, draw(NASTY))
    return doc


DEEP = re.compile(r"DEEP-(\d+)")


def _dump(tmp_path, name, doc, corrupt: bytes | None = None) -> str:
    p = tmp_path / name
    text = yaml.safe_dump(doc, sort_keys=False, width=1 << 30)
    text = DEEP.sub(lambda m: "[" * int(m.group(1)) + "x" + "]" * int(m.group(1)), text)
    data = text.encode()
    if corrupt:
        data = data[: len(data) // 2] + corrupt + data[len(data) // 2:]
    p.write_bytes(data)
    return str(p)


def _run_cleanly(argv, capsys) -> int:
    """The command's status; 0, or 2 with exactly one line on stderr."""
    try:
        code = main(argv)
    except SystemExit as exc:               # argparse refusals
        code = exc.code
    out = capsys.readouterr()
    assert code in (0, 2), (code, out.err[-2000:])
    if code == 2:
        lines = [x for x in out.err.splitlines() if x.strip()]
        assert len(lines) == 1, out.err[-2000:]
        assert "Traceback" not in out.err
    return code


CORRUPT = st.sampled_from([None, None, None, b"\xff\xfe\x80", b"\x00"])


@settings(**SETTINGS)
@given(cluster=mutated(CLUSTER), corrupt=CORRUPT)
def test_explain_and_schedule_with_mutated_cluster(tmp_path_factory, capsys, cluster, corrupt):
    tmp = tmp_path_factory.mktemp("fuzz")
    c = _dump(tmp, "cluster.yaml", cluster, corrupt)
    pod = _dump(tmp, "pod.yaml", POD)
    _run_cleanly(["explain", "--cluster", c, "--pod", pod], capsys)
    _run_cleanly(["schedule", "--cluster", c, "--output", str(tmp / "out.json")], capsys)


@settings(**SETTINGS)
@given(pod=mutated(POD), config=mutated(CONFIG), corrupt=CORRUPT)
def test_explain_with_mutated_pod_and_config(tmp_path_factory, capsys, pod, config, corrupt):
    tmp = tmp_path_factory.mktemp("fuzz")
    c = _dump(tmp, "cluster.yaml", CLUSTER)
    p = _dump(tmp, "pod.yaml", pod)
    cfg = _dump(tmp, "config.yaml", config, corrupt)
    _run_cleanly(["explain", "--cluster", c, "--pod", p], capsys)
    _run_cleanly(["explain", "--cluster", c, "--pod", _dump(tmp, "ok.yaml", POD),
                  "--config", cfg, "--format", "table"], capsys)


@settings(**SETTINGS)
@given(objs=mutated([GPU_NODE, GPU_POD]), config=mutated(GPU_CONFIG))
def test_gpu_paths_with_mutated_annotations_and_args(tmp_path_factory, capsys, objs, config):
    tmp = tmp_path_factory.mktemp("fuzz")
    if not isinstance(objs, list):
        objs = [objs]
    c = _dump(tmp, "cluster.yaml", {"apiVersion": "v1", "kind": "List", "items": objs})
    cfg = _dump(tmp, "config.yaml", config)
    _run_cleanly(["schedule", "--cluster", c, "--config", cfg, "--output",
                  str(tmp / "out.yaml")], capsys)


def _mutate_csv(draw, lines):
    rows = [r.split(",") for r in lines]
    for _ in range(draw(st.integers(1, 3))):
        action = draw(st.sampled_from(("cell", "cell", "drop_col", "drop_rows", "bytes")))
        if action in ("cell", "bytes") and len(rows) < 2:
            action = "drop_col"          # only the header is left: no cell to change
        if action == "cell":
            i = draw(st.integers(1, len(rows) - 1))
            j = draw(st.integers(0, len(rows[i]) - 1))
            rows[i][j] = str(draw(st.sampled_from(
                ["abc", "", "-1", "-500", "1e30", "nan", "inf", "99999999999999999999", "0",
                 "3.5", "2000"])))
        elif action == "drop_col":
            j = draw(st.integers(0, len(rows[0]) - 1))
            rows = [r[:j] + r[j + 1:] for r in rows]
        elif action == "drop_rows":
            rows = rows[:draw(st.integers(1, 3))]
        else:
            i = draw(st.integers(1, len(rows) - 1))
            rows[i][0] = rows[i][0] + "\udcff"
    return "\n".join(",".join(r) for r in rows) + "\n"


@settings(**SETTINGS)
@given(data=st.data())
def test_replay_with_mutated_csvs(tmp_path_factory, capsys, data):
    tmp = tmp_path_factory.mktemp("fuzz")
    nodes, pods = tmp / "nodes.csv", tmp / "pods.csv"
    nodes.write_bytes(_mutate_csv(data.draw, NODE_CSV).encode("utf-8", "surrogateescape")
                      if data.draw(st.booleans()) else "\n".join(NODE_CSV).encode())
    pods.write_bytes(_mutate_csv(data.draw, POD_CSV).encode("utf-8", "surrogateescape"))
    _run_cleanly(["replay", "--nodes", str(nodes), "--pods", str(pods), "--policy", "FGD",
                  "--backend", "numpy", "--output", str(tmp / "alloc.csv")], capsys)


@settings(**SETTINGS)
@given(args=st.lists(st.sampled_from(
    ["--nodes", "--pods", "--seed", "--percentage-of-nodes-to-score", "--workload", "--backend",
     "0", "-3", "1", "2", "nan", "x", "basic", "numpy", "1e9", "99999999999999999999"]),
    max_size=6))
def test_bench_with_random_arguments(capsys, args):
    code = _run_cleanly(["bench", "--nodes", "3", "--pods", "2", "--backend", "numpy"] + args,
                        capsys)
    assert code in (0, 2)


SWEEP_FLAGS = ["--policy", "--seeds", "--backend", "--workers", "--tie-rank", "--scenario",
               "--config", "--until", "--interval", "--metric", "--no-batch",
               "FGD", "Random", "Nope", "0", "-3", "1", "1,1", "5-1", "2-3", "nan", "inf", "x",
               "numba", "numpy", "cuda", "scheduled", "/no/such.yaml", "SCENARIO", "CONFIG",
               "99999999999999999999"]


def _openb_inputs(tmp):
    """A 4-node, 12-pod openb slice, a scenario on it and a config."""
    nodes, pods = openb_slice(tmp, "default", 4, 12, leave_every=2)
    scenario = _dump(tmp, "scenario.yaml", {"steps": [{"at": 5, "cordon": "openb-node-0000"},
                                                       {"at": 9, "drain": "openb-node-0001"}]})
    return nodes, pods, scenario, str(EXAMPLES / "scheduler-config.yaml")


@settings(**SETTINGS)
@given(args=st.lists(st.sampled_from(SWEEP_FLAGS), max_size=6))
def test_sweep_on_openb_nodes_with_random_flags(tmp_path_factory, capsys, args):
    """``sweep --nodes`` with random flags (--tie-rank, --policy, --config,
    --scenario, --seeds, --backend, --workers ...): status 0 or one line
    and status 2."""
    tmp = tmp_path_factory.mktemp("fuzz")
    nodes, pods, scenario, config = _openb_inputs(tmp)
    args = [scenario if a == "SCENARIO" else config if a == "CONFIG" else a for a in args]
    if "--workers" not in args:
        args += ["--workers", "1"]      # (in this process: no pool to start)
    _run_cleanly(["sweep", "--nodes", nodes, "--trace", pods, "--output",
                  str(tmp / "out.parquet")] + args, capsys)


@settings(**SETTINGS)
@given(args=st.lists(st.sampled_from(
    ["--policies", "--seeds", "--backend", "--workers", "--tune", "FGD", "FGD,FGD", "",
     ",", "Nope", "1", "1,1", "1-2", "-1", "0", "numba", "numpy", "cuda", "auto", "nan",
     "x"]), max_size=6))
def test_replay_sweep_with_random_flags(tmp_path_factory, capsys, args):
    tmp = tmp_path_factory.mktemp("fuzz")
    nodes, pods, _scenario, _config = _openb_inputs(tmp)
    if "--workers" not in args:
        args = args + ["--workers", "1"]
    _run_cleanly(["replay", "--sweep", "--nodes", nodes, "--pods", pods, "--output",
                  str(tmp / "sweep.csv")] + args, capsys)


def _run_refused(argv, capsys, match: str) -> str:
    """The one stderr line of a refused command, checked against ``match``."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    assert len([x for x in err.splitlines() if x.strip()]) == 1, err
    assert re.search(match, err), err
    return err


def test_sweep_refuses_a_comparison_path_that_is_a_directory(tmp_path, capsys):
    """``<stem>.csv`` a directory: refused before any run (it failed with a
    traceback after the runs, the Parquet written)."""
    nodes, pods, _s, _c = _openb_inputs(tmp_path)
    (tmp_path / "out.csv").mkdir()
    _run_refused(["sweep", "--nodes", nodes, "--trace", pods, "--policy", "FGD", "--output",
                  str(tmp_path / "out.parquet"), "--workers", "1"], capsys,
                 r"out\.csv'?, which is a directory")
    assert not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize("flags, match", [
    (["--policies", ""], r"--policies '': no policy"),
    (["--policies", " , "], r"no policy"),
    (["--policies", "FGD,BestFit,FGD"], r"--policies: policy FGD is given twice"),
    (["--seeds", "3,1-3"], r"--seeds: seed 3 is given twice"),
    (["--pods", "PODS"], r"--pods: pod CSV .* is given twice"),
])
def test_replay_sweep_refuses_empty_and_repeated_lists(tmp_path, capsys, flags, match):
    """Each policy, seed and pod CSV once (a run twice counts twice in the
    sweep's means); an empty --policies is refused, not read as all six."""
    nodes, pods, _s, _c = _openb_inputs(tmp_path)
    flags = [pods if f == "PODS" else f for f in flags]
    _run_refused(["replay", "--sweep", "--nodes", nodes, "--pods", pods, "--output",
                  str(tmp_path / "s.csv"), "--workers", "1"] + flags, capsys, match)
    assert not (tmp_path / "s.csv").exists()


@pytest.mark.parametrize("nodes, match", [
    ("", r"capacity --nodes '': no node name"),
    (" , ,", r"no node name"),
    ("worker-a1,worker-a2,worker-a1", r"node worker-a1 is given twice"),
])
def test_capacity_drain_refuses_empty_and_repeated_nodes(capsys, nodes, match):
    _run_refused(["capacity", "--cluster", str(EXAMPLES / "cluster.yaml"), "--drain",
                  "--nodes", nodes, "--backend", "numpy"], capsys, match)


def test_an_output_that_cannot_be_written_is_one_line(tmp_path, capsys, monkeypatch):
    """An OSError as the results are written (the disk full, the directory
    gone since the flags were checked): one line naming the file."""

    def full(table, where, *a, **k):
        raise OSError(28, "No space left on device", where)
    monkeypatch.setattr(pq, "write_table", full)
    nodes, pods, _s, _c = _openb_inputs(tmp_path)
    out = str(tmp_path / "out.parquet")
    _run_refused(["sweep", "--nodes", nodes, "--trace", pods, "--policy", "FGD", "--output",
                  out, "--workers", "1"], capsys, rf"{re.escape(out)}: No space left on device")


@pytest.mark.parametrize("tie_rank", [True, False])
def test_sweep_names_the_step_of_an_added_node_tie_label_that_is_no_rank(tmp_path, capsys,
                                                                          tie_rank):
    """``sweep --tie-rank --scenario``: an added node labelled with a rank
    that is not one is refused naming the scenario file, the step and the
    label before any run (it failed inside a run, naming neither); without
    --tie-rank the label is unread and the sweep runs."""
    nodes, pods, _s, _c = _openb_inputs(tmp_path)
    node = copy.deepcopy(GPU_NODE)
    node["metadata"]["labels"]["openb.tensorsched.io/tie"] = "abc"
    scenario = _dump(tmp_path, "tie.yaml", {"steps": [{"at": 10, "create": node}]})
    argv = ["sweep", "--nodes", nodes, "--trace", pods, "--policy", "FGD", "--scenario",
            scenario, "--output", str(tmp_path / "t.parquet"), "--workers", "1"]
    if not tie_rank:
        assert _run_cleanly(argv, capsys) == 0
        return
    _run_refused(argv + ["--tie-rank"], capsys,
                 r"tie\.yaml: steps\[0\]\.create: Node gpu-0: metadata\.labels\["
                 r"\"openb\.tensorsched\.io/tie\"\]: .*'abc'")
    assert not (tmp_path / "t.parquet").exists()


@pytest.mark.parametrize("command, flags, match", [
    ("simulate", ["--until", "1e300"], r"--until: must be at most 1e\+15 seconds"),
    ("simulate", ["--interval", "1e-300"],
     r"simulate: --interval: a time-series row every 1e-300 s up to 1\.2903e\+07 s makes "
     r"1\.29e\+307 rows; at most 2,000,000"),
    ("simulate", ["--until", "1e14"], r"simulate: --interval: .* up to 1e\+14 s"),
    ("sweep", ["--until", "1e308"], r"--until: must be at most 1e\+15 seconds"),
    ("sweep", ["--interval", "1e-300"],
     r"sweep: interval \(--interval\) on pods: a time-series row every 1e-300 s"),
    ("sweep", ["--until", "1e15"], r"sweep: interval \(--interval\) on pods: .* 1e\+15 s"),
])
def test_a_run_that_would_sample_for_ages_is_refused_before_it_starts(tmp_path, capsys, command,
                                                                     flags, match):
    """``--until 1e300`` or ``--interval 1e-300`` sampled the time series
    forever (``t + interval == t``); now one line, nothing written."""
    nodes, pods, _s, _c = _openb_inputs(tmp_path)
    out = tmp_path / ("out" if command == "simulate" else "out.parquet")
    argv = [command, "--nodes", nodes, "--trace", pods, "--backend", "numpy", "--output",
            str(out)] + (["--workers", "1"] if command == "sweep" else [])
    _run_refused(argv + flags, capsys, match)
    assert not out.exists()


@pytest.mark.parametrize("flags, match", [
    (["--policy", "FGD", "--policies", "BestFit"], r"replay: --policies goes with --sweep"),
    (["--policy", "FGD", "--seeds", "1-5"], r"replay: --seeds goes with --sweep"),
    (["--policy", "FGD", "--workers", "2"], r"replay: --workers goes with --sweep"),
    (["--sweep", "--policy", "FGD", "--policies", "BestFit"],
     r"--policy and --policies exclude each other"),
    (["--sweep", "--seed", "3", "--seeds", "1-2"], r"--seed and --seeds exclude each other"),
    (["--policy", "FGD", "--expected", "PODS"], r"replay: --expected goes with --plot"),
    (["--policy", "FGD", "--expected", "/no/such.csv", "--plot", "OUT.png"],
     r"argument --expected: '/no/such\.csv' does not exist"),
])
def test_replay_refuses_flags_it_would_drop(tmp_path, capsys, flags, match):
    """A flag the run would ignore without a word (the sweep's lists on a
    single replay, --policy beside --policies, a missing --expected file)
    is refused; nothing is written."""
    nodes, pods, _s, _c = _openb_inputs(tmp_path)
    out = tmp_path / "r.csv"
    flags = [pods if f == "PODS" else str(tmp_path / "p.png") if f == "OUT.png" else f
             for f in flags]
    _run_refused(["replay", "--nodes", nodes, "--pods", pods, "--backend", "numpy", "--output",
                  str(out)] + flags, capsys, match)
    assert not out.exists()


@pytest.mark.parametrize("size, ok", [(2**63 - 1, False), (2**70, False), (1 << 50, True)])
def test_an_image_size_past_a_petabyte_is_refused_by_node_and_field(tmp_path, capsys, size, ok):
    """``status.images[].sizeBytes`` near 2**63 was read, then ImageLocality's
    scaled sum raised a bare OverflowError at the first explain."""
    cluster = copy.deepcopy(CLUSTER)
    node = next(o for o in cluster["items"] if o["kind"] == "Node"
                and o["metadata"]["name"] == "worker-a1")
    node["status"]["images"] = [{"names": ["docker.io/library/nginx:1.27"], "sizeBytes": size}]
    argv = ["explain", "--cluster", _dump(tmp_path, "c.yaml", cluster), "--pod",
            _dump(tmp_path, "p.yaml", POD)]
    if ok:
        assert _run_cleanly(argv, capsys) == 0
        return
    _run_refused(argv, capsys, r"c\.yaml#0\.items\[\d+\]: Node worker-a1: "
                 r"status\.images\[0\]\.sizeBytes: must be in 0\.\.1125899906842624")


@pytest.mark.parametrize("command", ["schedule", "capacity"])
def test_a_failed_write_names_the_output(tmp_path, capsys, monkeypatch, command):
    """An OSError from a write or flush carries no file name: the line said
    only 'Input/output error' (``schedule --output /proc/version``)."""

    def broken(*a, **k):
        raise OSError(5, "Input/output error")
    monkeypatch.setattr(yaml, "safe_dump", broken)
    out = str(tmp_path / "out.yaml")
    argv = ({"schedule": ["schedule", "--cluster", str(EXAMPLES / "cluster.yaml")],
             "capacity": ["capacity", "--cluster", str(EXAMPLES / "cluster.yaml"), "--drain"]}
            [command] + ["--backend", "numpy", "--output", out])
    _run_refused(argv, capsys, rf"tensorsched: error: {re.escape(out)}: Input/output error")


@pytest.mark.parametrize("with_cluster", [True, False])
def test_schedule_pods_refuses_a_node(tmp_path, capsys, with_cluster):
    """A Node in a ``--pods`` file joined the cluster without a word (the
    pending pods then landed on it); now it is refused naming file and node,
    nothing written."""
    extra = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "extra"},
             "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}}}
    pods = tmp_path / "more.yaml"
    pods.write_text(yaml.safe_dump_all([SMALL_POD_FOR_PODS, extra]))
    out = tmp_path / "b.yaml"
    argv = ["schedule", "--pods", str(pods), "--backend", "numpy", "--output", str(out)]
    if with_cluster:
        argv += ["--cluster", str(EXAMPLES / "cluster.yaml")]
    _run_refused(argv, capsys, r"more\.yaml: Node extra: schedule --pods takes pending pods; "
                 r"nodes go in --cluster")
    assert not out.exists()
    pods.write_text(yaml.safe_dump(SMALL_POD_FOR_PODS))
    assert _run_cleanly(argv, capsys) == 0


SMALL_POD_FOR_PODS = {"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": "more", "namespace": "default"},
                      "spec": {"containers": [{"name": "c", "image": "i", "resources": {
                          "requests": {"cpu": "100m", "memory": "64Mi"}}}]}}


def test_csvs_with_a_byte_order_mark_read_as_without(tmp_path, capsys):
    """A spreadsheet's UTF-8 CSV starts with a byte-order mark: the first
    column was 'missing' from a header that showed it ('it has: sn, ...')."""
    nodes, pods, _s, _c = _openb_inputs(tmp_path)
    bom = []
    for path in (nodes, pods, str(EXAMPLES / "trace.csv")):
        p = tmp_path / ("bom-" + Path(path).name)
        p.write_bytes(b"\xef\xbb\xbf" + Path(path).read_bytes())
        bom.append(str(p))
    for n, p, out in ((nodes, pods, "a.csv"), (bom[0], bom[1], "b.csv")):
        assert _run_cleanly(["replay", "--nodes", n, "--pods", p, "--policy", "FGD", "--backend",
                             "numpy", "--output", str(tmp_path / out)], capsys) == 0
    assert (tmp_path / "a.csv").read_text() == \
        (tmp_path / "b.csv").read_text().replace("bom-pods,", "pods,")
    from tensorsched.framework.simulation.trace import read_trace
    assert read_trace(bom[2]).table.equals(read_trace(str(EXAMPLES / "trace.csv")).table)


@pytest.mark.parametrize("command", ["replay", "simulate"])
def test_a_pod_named_twice_in_an_openb_csv_is_refused_alike(tmp_path, capsys, command):
    """``replay`` took a pod CSV with a name twice (the simulator keeps pods
    by name) where ``simulate`` refused it; both refuse it now."""
    nodes, pods, _s, _c = _openb_inputs(tmp_path)
    lines = Path(pods).read_text().splitlines()
    Path(pods).write_text("\n".join(lines + [lines[1]]) + "\n")
    argv = {"replay": ["replay", "--policy", "FGD", "--output", str(tmp_path / "r.csv")],
            "simulate": ["simulate", "--output", str(tmp_path / "out")]}[command]
    trace = "--pods" if command == "replay" else "--trace"
    _run_refused(argv + ["--nodes", nodes, trace, pods, "--backend", "numpy"], capsys,
                 rf"pods\.csv:{len(lines) + 1}: name: duplicate pod 'openb-pod-0000' "
                 r"\(first on line 2\)")
