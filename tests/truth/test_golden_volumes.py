"""The volume plugins' golden cases (../shared/golden/volume_binding.json,
volume_zone.json, node_volume_limits.json, volume_restrictions.json), run as
each file's ``how_test_runs`` says, on every backend.

Two witnesses per case:

* the plugin's own extension points, called as upstream's harness calls
  them (PreFilter, then Filter per node where the harness reaches it, then
  PreScore / Score for VolumeBinding; VolumeZone's Filter even after a
  PreFilter Skip or failure), compared on code and whole message;
* the project's ``explain()`` on the backend, with a profile of that one
  plugin: a node the harness finds feasible is feasible there, a rejected
  one is rejected by the plugin with the same code and reasons, and a
  failed PreFilter rejects every node with its status.

``find_pod_volumes`` cases (the binder's tables) compare the plugin
statuses the file derives for them and the volume choices the binder makes
on the node (``staticBindings`` in claim order, ``dynamicProvisions`` with
the CSIStorageCapacity that holds each).  Messages: upstream's fake listers
word not-found errors in the plural; the real wording
(``message_real_cluster``) is what the plugins print, either is accepted.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.backends import backend_params
from support.golden import golden_dir

from tensorsched.framework.config.kube_config import load_config
from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.plugins import default_registry
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod

FILES = {
    "volume_binding.json": names.VOLUME_BINDING,
    "volume_zone.json": names.VOLUME_ZONE,
    "node_volume_limits.json": names.NODE_VOLUME_LIMITS,
    "volume_restrictions.json": names.VOLUME_RESTRICTIONS,
}
COUNTS = {"volume_binding.json": 60, "volume_zone.json": 16, "node_volume_limits.json": 22,
          "volume_restrictions.json": 15}

# Cases that cannot pass yet, with the reason (none at present).
XFAIL: dict[str, str] = {}


def _load():
    d = golden_dir()
    out = []
    for f, plugin in FILES.items():
        path = d / f
        if not path.exists():
            return []
        for case in json.loads(path.read_text())["cases"]:
            out.append((f, plugin, case))
    return out


_CASES = _load()
needs_golden = pytest.mark.skipif(not _CASES, reason="golden data not found")


def _params():
    out = []
    for f, plugin, case in _CASES:
        marks = [pytest.mark.xfail(reason=XFAIL[case["id"]], strict=True)] \
            if case["id"] in XFAIL else []
        out.append(pytest.param(f, plugin, case, id=f"{f[:-5]}:{case['id']}", marks=marks))
    return out


def _config(plugin: str, case):
    """The case's one-plugin profile, loaded as a KubeSchedulerConfiguration;
    StorageCapacityScoring cases carry VolumeBinding's args (their shape) in
    pluginConfig and turn the gate on, as kube-scheduler is configured."""
    scoring = "StorageCapacityScoring" in case["features"]
    plugins = {
        "multiPoint": {"disabled": [{"name": "*"}]},
        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
        "bind": {"enabled": [{"name": "DefaultBinder"}]},
        "preFilter": {"enabled": [{"name": plugin}]},
        "filter": {"enabled": [{"name": plugin}]},
    }
    profile = {"schedulerName": "default-scheduler", "plugins": plugins}
    if scoring:
        plugins["preScore"] = {"enabled": [{"name": plugin}]}
        plugins["score"] = {"enabled": [{"name": plugin, "weight": 1}]}
        profile["pluginConfig"] = [{"name": names.VOLUME_BINDING,
                                    "args": case["input"].get("args", {})}]
    return load_config({"apiVersion": "kubescheduler.config.k8s.io/v1",
                        "kind": "KubeSchedulerConfiguration", "profiles": [profile]},
                       default_registry().plugin_points(),
                       feature_gates={"StorageCapacityScoring": scoring})


def _split(case):
    want = case["input"]["pod"]
    pod, objects = None, []
    for o in case["objects"]:
        meta = o.get("metadata", {})
        if o["kind"] == "Pod" and meta.get("name") == want["name"] and \
                meta.get("namespace", "default") == want["namespace"]:
            pod = o
        else:
            objects.append(o)
    assert pod is not None
    return objects, pod


def _same(got, want: dict) -> None:
    """A Status against a golden {code, message[, message_real_cluster]}."""
    assert got.code.wire_name == want["code"], (got, want)
    if "message" in want:
        msg = ", ".join(got.reasons)
        assert msg in (want["message"], want.get("message_real_cluster")), (msg, want)


def _nodes(case) -> list[str]:
    inp = case["input"]
    if "nodes" in inp:
        return list(inp["nodes"])
    return [inp["node"]] if "node" in inp else []


def _expected(case) -> dict:
    exp = case["expect"]
    return exp["plugin_derived"] if case["kind"] == "find_pod_volumes" else exp


def _run_points(f, plugin_name, case, cluster, pod, fw):
    exp = _expected(case)
    plugin = fw.plugins[plugin_name]
    state = cluster.state
    ctx = CycleContext(state, pod, fw)
    pre, _ = plugin.pre_filter(ctx)
    _same(pre, exp["preFilter"])
    filters = exp.get("filter", {})
    # VolumeZone's harness calls Filter whatever PreFilter said; the others
    # stop unless PreFilter succeeded (NodeVolumeLimits: unless it skipped)
    for node in _nodes(case):
        if node not in filters:
            continue
        row = state.node_rows[node]
        fits = bool(plugin.filter(ctx, np.array([row], np.int64))[0])
        if filters[node]["code"] == "Success":
            assert fits, plugin.explain_status(ctx, row)
        else:
            assert not fits
            _same(plugin.explain_status(ctx, row), filters[node])
    if "preScore" in exp:
        _same(plugin.pre_score(ctx), exp["preScore"])
    if "scores" in exp:
        rows = np.array([state.node_rows[n] for n in _nodes(case)], np.int64)
        got = plugin.score(ctx, rows)
        assert dict(zip(_nodes(case), got.tolist())) == exp["scores"]
    if case["kind"] == "find_pod_volumes":
        _check_binder(case, plugin, ctx, state)


def _check_binder(case, plugin, ctx, state):
    """staticBindings / dynamicProvisions the binder makes on input.node."""
    want = case["expect"]["findPodVolumes"]
    if want["error"]:
        return
    data = ctx.data.get(plugin.name) or {}
    plan = data.get("plan")
    node = case["input"]["node"]
    row = state.node_rows[node]
    static, dynamic = [], []
    if plan is not None:
        i = int(np.flatnonzero(plan.rows == row)[0])
        static = [{"pvc": c.key, "pv": plan.pvs[int(plan.chosen[k, i])].name}
                  for k, c in enumerate(plan.claims) if plan.chosen[k, i] >= 0]
        cat = data["catalog"]
        if bool(plugin.filter(ctx, np.array([row], np.int64))[0]):
            for c, need in plan.provision:
                if need[i]:
                    which = plan.capacity_of.get(c.key)
                    cap = None if which is None else cat.capacities[int(which[i])].name
                    dynamic.append({"pvc": c.key, "nodeCapacity": cap})
    if "staticBindings" in want:
        assert static == want["staticBindings"]
    if "dynamicProvisions" in want:
        assert dynamic == want["dynamicProvisions"]


def _run_explain(plugin_name, case, cluster, pod, backend):
    exp = _expected(case)
    pre = exp["preFilter"]
    out = explain_pod(cluster, pod, backend=backend)
    filters = exp.get("filter", {})
    for node in _nodes(case):
        if pre["code"] not in ("Success", "Skip"):
            got = out["filter"][node]
            assert (got["plugin"], got["code"]) == (plugin_name, pre["code"])
            assert ", ".join(got["reasons"]) in (pre.get("message"),
                                                 pre.get("message_real_cluster"))
            continue
        if pre["code"] == "Skip":
            assert node in out["feasible"]
            continue
        if node not in filters:
            continue
        want = filters[node]
        if want["code"] == "Success":
            assert node in out["feasible"], out["filter"].get(node)
        else:
            got = out["filter"][node]
            assert (got["plugin"], got["code"]) == (plugin_name, want["code"]), got
            assert ", ".join(got["reasons"]) in (want.get("message"),
                                                 want.get("message_real_cluster"))


@needs_golden
def test_every_case_is_run():
    by_file: dict = {}
    for f, _p, _c in _CASES:
        by_file[f] = by_file.get(f, 0) + 1
    assert by_file == COUNTS
    assert set(XFAIL) <= {c["id"] for _f, _p, c in _CASES}


@needs_golden
@pytest.mark.parametrize("backend", backend_params())
@pytest.mark.parametrize("f,plugin,case", _params())
def test_golden_volumes(f, plugin, case, backend):
    objects, pod_obj = _split(case)
    cluster = build_cluster(objects, _config(plugin, case))
    pod = cluster.resolve(pod_obj)
    fw = cluster.framework_for(pod, backend)
    _run_points(f, plugin, case, cluster, pod, fw)
    _run_explain(plugin, case, cluster, pod, backend)
