"""Turn the golden JSON cases (../shared/golden) into runnable checks.

Each upstream unit-test case becomes a :class:`GoldenCase` holding plain
Kubernetes objects, the incoming pod, a one-plugin profile in the oracle's
form (``{"filters": [...], "scores": {name: weight}, "args": {name: v1 args}}``)
and what to compare:

``kind == "filter"``
    ``expected["filter"][node]`` is ``None`` when the node must be feasible,
    else ``{"code", "plugin", "reasons"}`` as a whole scheduling cycle (with
    PreFilter) reports it.  ``expected["raw_filter"]`` holds upstream's direct
    Filter assertion (``{"code", "reasons"}``, code "Success" for a pass) and
    ``expected["prefilter"]`` the NodeAffinity PreFilter assertion
    (``{"code", "reasons", "node_names": sorted list | None}``) when the test
    made one.
``kind == "score"``
    ``expected["scores"]``: {node: final plugin score} that explain must show
    (score cases run with no filters, as upstream calls Score on every node);
    ``None`` when PreScore returns Skip, in which case the plugin must be
    absent from explain's scores.  ``expected["prescore_skip"]`` says which.
    ``expected["raw_scores"]``: what upstream asserts from calling Score (and
    NormalizeScore) directly, ignoring Skip; ``None`` when nothing is asserted.
``kind == "config_error"``
    ``expected["field"]``: the args field path (relative to the plugin args)
    that must be rejected when the configuration is loaded.
``kind == "helper"``
    A helper function tested on its own upstream (``expected["helper"]`` is
    ``"broken_linear_function"`` or ``"normalized_image_name"``); there is
    nothing to run through explain.

Cases that cannot be expressed carry a precise ``skip_reason`` and are
listed, never dropped.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

# Golden cases that cannot run through a v1 configuration, with the reason.
LEFT_OUT = {
    "fit:27:not allow pod with restartable init containers if sidecar containers is disabled":
        "needs feature gate SidecarContainers=false; the gate is on by default in v1.29-v1.32 "
        "(GA in v1.33) and is not modelled",
    "least_allocated:02:Resources not set, pods scheduled with error":
        "nil scoringStrategy.resources only exists in internal args; v1 defaulting fills "
        "cpu:1, memory:1, so the Score Error status is unreachable through a config",
    "most_allocated:06:resource with zero weight":
        "weight 0 is invalid only in internal args; v1 defaulting turns it into 1, so the "
        "config loads without error",
}

GOLDEN_FILES = (
    "fit.json",
    "least_allocated.json",
    "most_allocated.json",
    "requested_to_capacity_ratio.json",
    "balanced_allocation.json",
    "taint_toleration.json",
    "node_affinity.json",
    "image_locality.json",
)

SPREAD_FILES = (
    "podtopologyspread_filtering.json",
    "podtopologyspread_scoring.json",
)
"""PodTopologySpread's files (run by test_golden_spread.py through explain)."""

EXPLAIN_KINDS = ("filter", "score", "config_error", "filter_codes")
"""Kinds that can run through the project's explain() / config loader."""

# Extension points each supported plugin implements (for the v1 config).
_HAS_PREFILTER = {"NodeAffinity", "NodePorts", "NodeResourcesFit", "PodTopologySpread",
                  "InterPodAffinity"}
_HAS_PRESCORE = {"TaintToleration", "NodeAffinity", "NodeResourcesFit",
                 "NodeResourcesBalancedAllocation", "PodTopologySpread", "InterPodAffinity"}
_ARGS_KIND = {
    "NodeResourcesFit": "NodeResourcesFitArgs",
    "NodeResourcesBalancedAllocation": "NodeResourcesBalancedAllocationArgs",
    "NodeAffinity": "NodeAffinityArgs",
}

NOT_SATISFIED_NODE_AFFINITY = "node(s) didn't satisfy plugin(s) [NodeAffinity]"


@dataclass
class GoldenCase:
    id: str
    file: str
    name: str
    objects: list = field(default_factory=list)
    pod: dict | None = None
    profile: dict = field(default_factory=dict)
    kind: str = ""
    expected: dict = field(default_factory=dict)
    skip_reason: str | None = None

    @property
    def plugin(self) -> str | None:
        """The single plugin under test."""
        names = list(self.profile.get("filters") or []) + list(self.profile.get("scores") or {})
        return names[0] if names else None


def golden_dir() -> Path:
    """$TENSORSCHED_GOLDEN, else <repo>/../shared/golden."""
    env = os.environ.get("TENSORSCHED_GOLDEN")
    if env:
        return Path(env)
    return REPO_ROOT.parent / "shared" / "golden"


def golden_profile_to_config(profile: dict) -> dict:
    """The KubeSchedulerConfiguration v1 equivalent of an oracle profile.

    All default plugins are disabled (multiPoint "*"); the profile's filters
    and scores are enabled at their extension points together with the
    PreFilter / PreScore halves upstream needs for them, plus the mandatory
    queueSort and bind plugins."""
    filters = list(profile.get("filters") or [])
    scores = dict(profile.get("scores") or {})
    args = dict(profile.get("args") or {})
    plugins: dict = {
        "multiPoint": {"disabled": [{"name": "*"}]},
        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
        "bind": {"enabled": [{"name": "DefaultBinder"}]},
    }
    prefilter = [{"name": f} for f in filters if f in _HAS_PREFILTER]
    prescore = [{"name": s} for s in scores if s in _HAS_PRESCORE]
    if prefilter:
        plugins["preFilter"] = {"enabled": prefilter}
    if filters:
        plugins["filter"] = {"enabled": [{"name": f} for f in filters]}
    if prescore:
        plugins["preScore"] = {"enabled": prescore}
    if scores:
        plugins["score"] = {"enabled": [{"name": s, "weight": w} for s, w in scores.items()]}
    plugin_config = []
    for name in list(dict.fromkeys(filters + list(scores))):
        if name in args and args[name] is not None:
            body = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": _ARGS_KIND.get(name, name + "Args")}
            body.update(copy.deepcopy(args[name]))
            plugin_config.append({"name": name, "args": body})
    prof = {"schedulerName": "default-scheduler", "plugins": plugins}
    if plugin_config:
        prof["pluginConfig"] = plugin_config
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [prof],
    }


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def _objects(case: dict) -> list[dict]:
    objs = [copy.deepcopy(n) for n in case.get("nodes") or []]
    for n in objs:
        n.setdefault("apiVersion", "v1")
        n.setdefault("kind", "Node")
    for p in case.get("existing_pods") or []:
        p = copy.deepcopy(p)
        p.setdefault("apiVersion", "v1")
        p.setdefault("kind", "Pod")
        objs.append(p)
    return objs


def _pod(case: dict) -> dict | None:
    pod = case.get("pod")
    if pod is None:
        return None
    pod = copy.deepcopy(pod)
    pod.setdefault("apiVersion", "v1")
    pod.setdefault("kind", "Pod")
    return pod


def _clean_args(args) -> dict | None:
    if not args:
        return None
    return {k: v for k, v in args.items() if k != "note"}


def _score_profile(plugin: str, args) -> dict:
    prof = {"filters": [], "scores": {plugin: 1}, "args": {}}
    a = _clean_args(args)
    if a is not None:
        prof["args"][plugin] = a
    return prof


def _filter_profile(plugin: str, args) -> dict:
    prof = {"filters": [plugin], "scores": {}, "args": {}}
    a = _clean_args(args)
    if a is not None:
        prof["args"][plugin] = a
    return prof


def _filter_entry(plugin: str, status: dict):
    if status["code"] == "Success":
        return None
    return {"code": status["code"], "plugin": plugin, "reasons": list(status["reasons"])}


# ---------------------------------------------------------------------------
# per-file converters: (raw case) -> partially filled GoldenCase fields
# ---------------------------------------------------------------------------

def _convert_fit(c: dict) -> dict:
    exp = c["expected"]
    if c.get("test") == "TestFitScore":
        return {"kind": "score", "profile": _score_profile("NodeResourcesFit", c.get("args")),
                "expected": {"scores": exp["scores"], "prescore_skip": False,
                             "raw_scores": exp["scores"]}}
    if (c.get("feature_gates") or {}).get("SidecarContainers") is False:
        return {"kind": "filter", "profile": _filter_profile("NodeResourcesFit", c.get("args")),
                "expected": {"prefilter": exp.get("prefilter")},
                "skip_reason": ("needs feature gate SidecarContainers=false (PreFilter rejects "
                                "restartable init containers); the gate is on by default in v1.29-v1.32 "
                                "(GA in v1.33) and neither the oracle nor explain models it")}
    filt = {n: _filter_entry("NodeResourcesFit", s) for n, s in exp["filter"].items()}
    raw = {n: {"code": s["code"], "reasons": list(s["reasons"])} for n, s in exp["filter"].items()}
    return {"kind": "filter", "profile": _filter_profile("NodeResourcesFit", c.get("args")),
            "expected": {"filter": filt, "raw_filter": raw,
                         "insufficient_resources": exp.get("insufficient_resources")}}


def _convert_node_resources_score(c: dict) -> dict:
    exp = c["expected"]
    args = c.get("args")
    if "config_error" in exp:
        out = {"kind": "config_error", "profile": _score_profile("NodeResourcesFit", args),
               "expected": {"field": exp["config_error"]["field"],
                            "type": exp["config_error"]["type"]}}
        ss = (args or {}).get("scoringStrategy") or {}
        fieldpath = exp["config_error"]["field"]
        for i, r in enumerate(ss.get("resources") or []):
            if fieldpath == f"scoringStrategy.resources[{i}].weight" and r.get("weight") == 0:
                out["skip_reason"] = (
                    "upstream builds the plugin from internal args where weight 0 is invalid; "
                    "through KubeSchedulerConfiguration v1 the defaulting "
                    "(SetDefaults_NodeResourcesFitArgs) turns weight 0 into 1, so loading "
                    "this config is not an error")
        return out
    if exp.get("score_status_code") == "Error":
        return {"kind": "score", "profile": _score_profile("NodeResourcesFit", args),
                "expected": {"scores": None, "prescore_skip": False,
                             "raw_scores": exp["scores"], "score_status_code": "Error"},
                "skip_reason": (
                    "scoringStrategy.resources is nil in internal args, so Score returns an "
                    "Error status; through KubeSchedulerConfiguration v1 the defaulting fills "
                    "resources with cpu:1, memory:1, so this Error cannot be reached")}
    if "function_values" in exp:
        return {"kind": "helper",
                "expected": {"helper": "broken_linear_function",
                             "points": c["function_shape_points"],
                             "values": exp["function_values"]}}
    return {"kind": "score", "profile": _score_profile("NodeResourcesFit", args),
            "expected": {"scores": exp["scores"], "prescore_skip": False,
                         "raw_scores": exp["scores"]}}


def _convert_balanced(c: dict) -> dict:
    exp = c["expected"]
    skip = exp.get("prescore_status_code") == "Skip"
    return {"kind": "score",
            "profile": _score_profile("NodeResourcesBalancedAllocation", c.get("args")),
            "expected": {"scores": None if skip else exp["scores"], "prescore_skip": skip,
                         "raw_scores": exp["scores"]}}


def _convert_taint(c: dict) -> dict:
    exp = c["expected"]
    if "scores" in exp:
        return {"kind": "score", "profile": _score_profile("TaintToleration", None),
                "expected": {"scores": exp["scores"], "prescore_skip": False,
                             "raw_scores": exp["scores"]}}
    filt = {n: _filter_entry("TaintToleration", s) for n, s in exp["filter"].items()}
    raw = {n: {"code": s["code"], "reasons": list(s["reasons"])} for n, s in exp["filter"].items()}
    return {"kind": "filter", "profile": _filter_profile("TaintToleration", None),
            "expected": {"filter": filt, "raw_filter": raw}}


def _convert_node_affinity(c: dict) -> dict:
    exp = c["expected"]
    args = c.get("args") or {}
    na_args = {"addedAffinity": args["addedAffinity"]} if args.get("addedAffinity") else None
    if c.get("test") == "TestNodeAffinityPriority":
        ps = (exp.get("prescore_status") or {}).get("code")
        pod = c["pod"]
        pod_pref = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity", {}) \
            .get("preferredDuringSchedulingIgnoredDuringExecution")
        added_pref = (args.get("addedAffinity") or {}).get(
            "preferredDuringSchedulingIgnoredDuringExecution")
        # A whole cycle always runs PreScore; when the test did not, derive
        # the outcome from the rule (Skip iff no preferred terms anywhere).
        skip = ps == "Skip" if ps else (pod_pref is None and not added_pref)
        return {"kind": "score", "profile": _score_profile("NodeAffinity", na_args),
                "expected": {"scores": None if skip else exp.get("scores"),
                             "prescore_skip": skip, "raw_scores": exp.get("scores")}}
    # Filter test: one node.  A whole cycle reports PreFilter's verdict first.
    (node_name, status), = exp["filter"].items()
    pre = exp.get("prefilter")
    prefilter = None
    entry = _filter_entry("NodeAffinity", status)
    if pre is not None:
        names = pre.get("result_node_names")
        names = None if names == "nil" else sorted(names)
        prefilter = {"code": pre["status"]["code"], "reasons": list(pre["status"]["reasons"]),
                     "node_names": names}
        if prefilter["code"] == "UnschedulableAndUnresolvable":
            entry = {"code": prefilter["code"], "plugin": "NodeAffinity",
                     "reasons": list(prefilter["reasons"])}
        elif names is not None and node_name not in names:
            entry = {"code": "UnschedulableAndUnresolvable", "plugin": "NodeAffinity",
                     "reasons": [NOT_SATISFIED_NODE_AFFINITY]}
    return {"kind": "filter", "profile": _filter_profile("NodeAffinity", na_args),
            "expected": {"filter": {node_name: entry},
                         "raw_filter": {node_name: {"code": status["code"],
                                                    "reasons": list(status["reasons"])}},
                         "prefilter": prefilter}}


def _convert_image_locality(c: dict) -> dict:
    exp = c["expected"]
    if c.get("test") == "TestNormalizedImageName":
        return {"kind": "helper",
                "expected": {"helper": "normalized_image_name", "input": c["input"],
                             "output": exp["normalized"]}}
    return {"kind": "score", "profile": _score_profile("ImageLocality", None),
            "expected": {"scores": exp["scores"], "prescore_skip": False,
                         "raw_scores": exp["scores"]}}


def _convert_spread_filtering(c: dict) -> dict:
    """``filter_codes``: only the status code per node is asserted upstream."""
    return {"kind": "filter_codes", "profile": _filter_profile("PodTopologySpread", c.get("args")),
            "expected": {"filter_codes": dict(c["expected"]["filter_codes"])}}


def _convert_spread_scoring(c: dict) -> dict:
    """Score cases; ``failed_nodes`` are in the snapshot but not candidates.
    Through a whole cycle they are made unschedulable (spec.unschedulable)
    and NodeUnschedulable filters them out, which leaves PodTopologySpread's
    counting untouched (it reads labels, taints and affinity, not that field)."""
    objects = _objects(c)
    failed = []
    for n in c.get("failed_nodes") or []:
        n = copy.deepcopy(n)
        n.setdefault("apiVersion", "v1")
        n.setdefault("kind", "Node")
        n.setdefault("spec", {})["unschedulable"] = True
        failed.append(n["metadata"]["name"])
        objects.insert(0, n)
    prof = _score_profile("PodTopologySpread", c.get("args"))
    if failed:
        prof["filters"] = ["NodeUnschedulable"]
    out = {"kind": "score", "profile": prof, "objects": objects,
           "expected": {"scores": dict(c["expected"]["scores"]), "prescore_skip": False,
                        "raw_scores": None, "failed_nodes": failed}}
    gates = c.get("feature_gates") or {}
    if gates.get("MatchLabelKeysInPodTopologySpread") is False and any(
            t.get("matchLabelKeys") for t in c["pod"]["spec"].get("topologySpreadConstraints") or ()):
        out["skip_reason"] = ("needs feature gate MatchLabelKeysInPodTopologySpread=false "
                              "(matchLabelKeys ignored); the gate is on by default since v1.27 "
                              "and is not modelled")
    return out


_CONVERTERS = {
    "podtopologyspread_filtering.json": _convert_spread_filtering,
    "podtopologyspread_scoring.json": _convert_spread_scoring,
    "fit.json": _convert_fit,
    "least_allocated.json": _convert_node_resources_score,
    "most_allocated.json": _convert_node_resources_score,
    "requested_to_capacity_ratio.json": _convert_node_resources_score,
    "balanced_allocation.json": _convert_balanced,
    "taint_toleration.json": _convert_taint,
    "node_affinity.json": _convert_node_affinity,
    "image_locality.json": _convert_image_locality,
}


def load_file(file: str, directory: Path | None = None) -> list[GoldenCase]:
    directory = directory or golden_dir()
    data = json.loads((directory / file).read_text())
    stem = file[:-5]
    out = []
    for i, c in enumerate(data["cases"]):
        conv = _CONVERTERS[file](c)
        out.append(GoldenCase(
            id=f"{stem}:{i:02d}:{c['name'].strip()}",
            file=file,
            name=c["name"],
            objects=conv.get("objects") or _objects(c),
            pod=_pod(c),
            profile=conv.get("profile", {}),
            kind=conv["kind"],
            expected=conv["expected"],
            skip_reason=conv.get("skip_reason"),
        ))
    return out


def load_cases(files=GOLDEN_FILES, directory: Path | None = None) -> list[GoldenCase]:
    """Every case of ``files`` (default: the node-level plugins' files)."""
    cases = []
    for f in files:
        cases.extend(load_file(f, directory))
    return cases


def golden_available(files=GOLDEN_FILES) -> bool:
    return all((golden_dir() / f).is_file() for f in files)


# ---------------------------------------------------------------------------
# DefaultPreemption (default_preemption.json, preemption_framework.json)
# ---------------------------------------------------------------------------

PREEMPTION_FILES = ("default_preemption.json", "preemption_framework.json")
_PREEMPTION_PREFILTER = {"NodeResourcesFit", "PodTopologySpread", "NodePorts", "NodeAffinity"}
_HARNESS_PLUGINS = {"PrioritySort", "DefaultBinder", "FakeFilter"}
PREEMPTION_SKIPS: dict[str, str] = {}


def preemption_config(plugins, args) -> dict:
    """A v1 KubeSchedulerConfiguration with the case's filters and DefaultPreemption."""
    filters = [p.split("(")[0] for p in plugins or []]
    filters = [f for f in filters if f not in _HARNESS_PLUGINS]
    plugins_cfg: dict = {
        "multiPoint": {"disabled": [{"name": "*"}]},
        "queueSort": {"enabled": [{"name": "PrioritySort"}]},
        "bind": {"enabled": [{"name": "DefaultBinder"}]},
        "postFilter": {"enabled": [{"name": "DefaultPreemption"}]},
    }
    pre = [{"name": f} for f in filters if f in _PREEMPTION_PREFILTER]
    if pre:
        plugins_cfg["preFilter"] = {"enabled": pre}
    if filters:
        plugins_cfg["filter"] = {"enabled": [{"name": f} for f in filters]}
    prof = {"schedulerName": "default-scheduler", "plugins": plugins_cfg}
    a = _clean_args(args)
    if a:
        prof["pluginConfig"] = [{"name": "DefaultPreemption", "args": {
            "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "DefaultPreemptionArgs", **a}}]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration", "profiles": [prof]}


def _pdb_objects(case: dict) -> list[dict]:
    out = []
    for i, p in enumerate(case.get("pdbs") or []):
        p = copy.deepcopy(p)
        p.setdefault("apiVersion", "policy/v1")
        p.setdefault("kind", "PodDisruptionBudget")
        meta = p.setdefault("metadata", {})
        meta.setdefault("name", f"pdb-{i}")
        meta.setdefault("namespace", "default")
        # Upstream builds these with intstr.FromString("0"), which the API
        # server's validation rejects (a string must be a percentage); the
        # value is the integer 0 and only status.disruptionsAllowed is read.
        spec = p.get("spec") or {}
        for k in ("minAvailable", "maxUnavailable"):
            if isinstance(spec.get(k), str) and spec[k].isdigit():
                spec[k] = int(spec[k])
        out.append(p)
    return out


def load_preemption_cases(directory: Path | None = None) -> list[dict]:
    """Every preemption case as {"id", "test", "raw", "objects", "config",
    "skip_reason"}; objects = nodes, existing pods and PDBs."""
    directory = directory or golden_dir()
    out = []
    for file in PREEMPTION_FILES:
        data = json.loads((directory / file).read_text())
        for i, c in enumerate(data["cases"]):
            out.append({
                "id": f"{file[:-5]}:{i:02d}:{c['name'].strip()}",
                "test": c["test"], "raw": c,
                "objects": _objects(c) + _pdb_objects(c),
                "config": preemption_config(c.get("plugins"), c.get("args")),
                "skip_reason": PREEMPTION_SKIPS.get(c["name"]),
            })
    return out


def preemption_golden_available() -> bool:
    return all((golden_dir() / f).is_file() for f in PREEMPTION_FILES)



UNNAMED_NODE = "unnamed-node"


def named(case):
    """(objects, pod, node-name map) with placeholder names for nameless
    objects; the map sends a golden node key to the name explain reports."""
    objects = copy.deepcopy(case.objects)
    pod = copy.deepcopy(case.pod)
    rename = {}
    k = 0
    for obj in objects + [pod]:
        meta = obj.setdefault("metadata", {})
        if meta.get("name"):
            continue
        if obj["kind"] == "Node":
            assert "" not in rename, "two nameless nodes"
            rename[""] = meta["name"] = UNNAMED_NODE
        else:
            meta["name"] = f"unnamed-pod-{k}"
            k += 1
    if rename:
        # A node's name only matters to matchFields; none may be in play.
        assert "matchFields" not in repr(pod) and "matchFields" not in repr(case.profile)
    return objects, pod, (lambda n: rename.get(n, n))
