"""Scenarios: timed steps on the cluster, from a YAML file (or a dict).

Schema::

    steps:                      # in any order; run in time order (ties: file order)
    - at: 0                     # seconds on the simulated clock, >= 0
      create: {kind: Pod, ...}  # a Pod or Node manifest
      replicas: 3               # optional: <name>-0 .. <name>-2 (default: the one object)
      duration: 600             # optional, pods: leave that long after being bound
    - at: 60
      delete: {kind: Pod, name: web, namespace: default}   # or kind: Node
      replicas: 3               # optional: deletes <name>-0 .. <name>-2
    - {at: 120, cordon: node-1}            # a node name or a list of names
    - {at: 180, uncordon: [node-1]}
    - {at: 240, drain: node-2}             # cordon, then delete its pods
    - at: 300
      addNodes: {template: {kind: Node, ...}, count: 10}   # <template name>-<i>
        # optional: ResourceSlices local to the template node, a copy per node
        # slices: [{kind: ResourceSlice, spec: {nodeName: <template name>, ...}}]
    - {at: 360, removeNodes: [node-3, node-4]}

Every field is checked when the file is read, manifests by the same parser
as the cluster's (``parse_pod``/``parse_node``), and an error names the file
and the field: ``scenario.yaml: steps[2].cordon: must be a node name or a
list of node names, got 7``.  Node names a step refers to are checked
against the cluster when the scenario is scheduled (``Simulation.scenario``).
"""

from __future__ import annotations

import copy
import math
import os
from dataclasses import dataclass, field

from tensorsched.framework.errors import ManifestError, TensorschedError
from tensorsched.framework.parsing.dra import API_VERSION as DRA_API_VERSION
from tensorsched.framework.parsing.dra import is_resource_v1, load_resource_slice
from tensorsched.framework.parsing.manifests import (
    DocumentError,
    parse_node,
    parse_pod,
    parse_yaml_documents,
    read_text,
)

ACTIONS = ("create", "delete", "cordon", "uncordon", "drain", "addNodes", "removeNodes")
MAX_REPLICAS = 1_000_000
MAX_SECONDS = 1e15


class ScenarioError(TensorschedError, ValueError):
    """``source: field: problem``."""

    def __init__(self, source: str, field: str, problem: str):
        self.source = source
        self.field = field
        self.problem = problem
        super().__init__(f"{source}: {field}: {problem}" if field else f"{source}: {problem}")


@dataclass
class Step:
    """One timed action: ``action`` one of ``ACTIONS``; ``objects`` the
    manifests to create (replicas expanded), ``names`` the nodes or pod keys
    it acts on, ``kind`` for ``delete``; ``field`` its path for messages."""

    at: float
    action: str
    field: str
    objects: list = field(default_factory=list)
    names: list = field(default_factory=list)
    kind: str = ""
    duration: float | None = None
    # addNodes: the ResourceSlice dicts of each added node (``objects[i]``'s
    # at ``slices[i]``), empty without ``slices``
    slices: list = field(default_factory=list)


@dataclass
class Scenario:
    steps: list[Step]
    source: str = "scenario"


def load_scenario(source) -> Scenario:
    """A scenario from a YAML/JSON file path or a dict (``{"steps": [...]}``)."""
    if isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        if not isinstance(name, str) or not name or "\0" in name:
            raise ScenarioError("scenario", "", f"must be a path of a YAML / JSON file, a "
                                f"Scenario or a dict, got {name!r}")
        try:
            docs = [d for _, d in parse_yaml_documents(read_text(name)) if d is not None]
        except DocumentError as exc:
            where = ".".join(str(p) for p in exc.path)
            raise ScenarioError(name, where, exc.problem) from None
        if len(docs) != 1:
            raise ScenarioError(name, "", f"expected one YAML document, found {len(docs)}")
        return parse_scenario(docs[0], name)
    return parse_scenario(source, "scenario")


def _seconds(v, src: str, path: str, lo: float = 0.0) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ScenarioError(src, path, f"must be a number of seconds, got {v!r}")
    f = float(v)
    if not math.isfinite(f) or not lo <= f <= MAX_SECONDS:
        raise ScenarioError(src, path, f"must be a number of seconds {lo:g}..{MAX_SECONDS:g}, "
                            f"got {v!r}")
    return f


def _count(v, src: str, path: str, lo: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= MAX_REPLICAS:
        raise ScenarioError(src, path, f"must be an integer {lo}..{MAX_REPLICAS}, got {v!r}")
    return v


def _names(v, src: str, path: str) -> list[str]:
    items = v if isinstance(v, list) else [v]
    if not items:
        raise ScenarioError(src, path, "must name at least one node")
    for i, n in enumerate(items):
        if not isinstance(n, str) or not n:
            p = f"{path}[{i}]" if isinstance(v, list) else path
            raise ScenarioError(src, p, f"must be a node name or a list of node names, got {n!r}")
    return list(items)


def _manifest(obj, src: str, path: str, kinds=("Pod", "Node")) -> dict:
    if not isinstance(obj, dict):
        raise ScenarioError(src, path, f"must be a {' or '.join(kinds)} manifest (a mapping), "
                            f"got {type(obj).__name__}")
    kind = obj.get("kind")
    if kind not in kinds:
        raise ScenarioError(src, f"{path}.kind", f"must be {' or '.join(kinds)}, got {kind!r}")
    try:
        (parse_pod if kind == "Pod" else parse_node)(obj)
    except ManifestError as exc:
        raise ScenarioError(src, f"{path}: {exc.obj}: {exc.field}" if exc.field
                            else f"{path}: {exc.obj}", exc.problem) from None
    return obj


def _replicas(obj: dict, n: int | None, suffix_start: int = 0) -> list[dict]:
    if n is None:
        return [obj]
    out = []
    base = obj["metadata"]["name"]
    for i in range(suffix_start, suffix_start + n):
        o = copy.deepcopy(obj)
        o["metadata"]["name"] = f"{base}-{i}"
        if o.get("kind") == "Node":
            labels = o["metadata"].get("labels")
            if isinstance(labels, dict) and labels.get("kubernetes.io/hostname") == base:
                labels["kubernetes.io/hostname"] = f"{base}-{i}"
        out.append(o)
    return out


def _slice_templates(raw, node: str, src: str, path: str) -> list[dict]:
    """An addNodes step's ``slices``: ResourceSlice manifests (checked by
    the cluster's parser), each local to the template node ``node``, their
    names distinct."""
    if not isinstance(raw, list):
        raise ScenarioError(src, path, f"must be a list of ResourceSlice manifests, got "
                            f"{type(raw).__name__}")
    names = set()
    for i, obj in enumerate(raw):
        p = f"{path}[{i}]"
        if not isinstance(obj, dict):
            raise ScenarioError(src, p, f"must be a ResourceSlice manifest (a mapping), got "
                                f"{type(obj).__name__}")
        if obj.get("kind") != "ResourceSlice":
            raise ScenarioError(src, f"{p}.kind", f"must be ResourceSlice, got "
                                f"{obj.get('kind')!r}")
        if not is_resource_v1(obj):
            raise ScenarioError(src, f"{p}.apiVersion", f"must be {DRA_API_VERSION}, got "
                                f"{obj.get('apiVersion')!r}")
        try:
            rec = load_resource_slice(obj)
        except ManifestError as exc:
            raise ScenarioError(src, f"{p}: {exc.obj}: {exc.field}" if exc.field
                                else f"{p}: {exc.obj}", exc.problem) from None
        if rec.node_name != node:
            raise ScenarioError(src, f"{p}.spec.nodeName", f"must be the template node's "
                                f"name {node!r} (each added node gets a copy), got "
                                f"{rec.node_name!r}")
        if rec.name in names:
            raise ScenarioError(src, f"{p}.metadata.name", f"ResourceSlice {rec.name!r} is "
                                "given twice")
        names.add(rec.name)
    return raw


def slice_dicts(slices: list[dict], template: str, node: str) -> list[dict]:
    """The ResourceSlices of added node ``node``: copies of ``slices``
    (local to node ``template``) on ``node``, the first ``template`` in the
    slice and pool names replaced by ``node`` (else ``-<node>`` appended),
    as capacity's node templates copy theirs."""
    out = []
    for obj in slices:
        o = copy.deepcopy(obj)
        spec, meta = o["spec"], o["metadata"]
        pool = spec["pool"]
        name = pool["name"]
        pool["name"] = (node if name == template else name.replace(template, node, 1)
                        if template in name else f"{name}-{node}")
        meta["name"] = (meta["name"].replace(template, node, 1) if template in meta["name"]
                        else f"{meta['name']}-{node}")
        spec["nodeName"] = node
        out.append(o)
    return out


def parse_scenario(doc, src: str = "scenario") -> Scenario:
    if not isinstance(doc, dict):
        raise ScenarioError(src, "", f"must be a mapping with 'steps', got {type(doc).__name__}")
    for k in doc:
        if k not in ("apiVersion", "kind", "steps"):
            raise ScenarioError(src, str(k), "unknown field (known: apiVersion, kind, steps)")
    if doc.get("kind") not in (None, "Scenario"):
        raise ScenarioError(src, "kind", f"must be Scenario, got {doc.get('kind')!r}")
    raw = doc.get("steps")
    if not isinstance(raw, list):
        raise ScenarioError(src, "steps", f"must be a list of steps, got {raw!r}")
    steps = []
    added: dict[str, int] = {}
    for i, s in enumerate(raw):
        p = f"steps[{i}]"
        if not isinstance(s, dict):
            raise ScenarioError(src, p, f"must be a mapping, got {type(s).__name__}")
        actions = [k for k in s if k in ACTIONS]
        for k in s:
            if k not in ACTIONS and k not in ("at", "replicas", "duration"):
                raise ScenarioError(src, f"{p}.{k}", "unknown field (known: at, replicas, "
                                    "duration, " + ", ".join(ACTIONS) + ")")
        if len(actions) != 1:
            raise ScenarioError(src, p, "needs exactly one action of " + ", ".join(ACTIONS)
                                + (f" (has {', '.join(actions)})" if actions else ""))
        if "at" not in s:
            raise ScenarioError(src, f"{p}.at", "required (seconds on the simulated clock)")
        at = _seconds(s["at"], src, f"{p}.at")
        act = actions[0]
        ap = f"{p}.{act}"
        v = s[act]
        if "replicas" in s and act not in ("create", "delete"):
            raise ScenarioError(src, f"{p}.replicas", f"only with create or delete, not {act}")
        if "duration" in s and act != "create":
            raise ScenarioError(src, f"{p}.duration", f"only with create, not {act}")
        reps = _count(s["replicas"], src, f"{p}.replicas") if "replicas" in s else None
        step = Step(at, act, ap)
        if act == "create":
            obj = _manifest(v, src, ap)
            if "duration" in s:
                if obj["kind"] != "Pod":
                    raise ScenarioError(src, f"{p}.duration", "only for pods")
                step.duration = _seconds(s["duration"], src, f"{p}.duration")
            step.objects = _replicas(obj, reps)
            step.kind = obj["kind"]
        elif act == "delete":
            if not isinstance(v, dict):
                raise ScenarioError(src, ap, "must be a mapping {kind, name, namespace}")
            for k in v:
                if k not in ("kind", "name", "namespace"):
                    raise ScenarioError(src, f"{ap}.{k}", "unknown field (known: kind, name, "
                                        "namespace)")
            kind = v.get("kind")
            if kind not in ("Pod", "Node"):
                raise ScenarioError(src, f"{ap}.kind", f"must be Pod or Node, got {kind!r}")
            name = v.get("name")
            if not isinstance(name, str) or not name:
                raise ScenarioError(src, f"{ap}.name", f"must be a non-empty string, got {name!r}")
            ns = v.get("namespace", "default")
            if kind == "Node" and "namespace" in v:
                raise ScenarioError(src, f"{ap}.namespace", "nodes have no namespace")
            if not isinstance(ns, str) or not ns:
                raise ScenarioError(src, f"{ap}.namespace", f"must be a non-empty string, "
                                    f"got {ns!r}")
            names = [name] if reps is None else [f"{name}-{j}" for j in range(reps)]
            step.kind = kind
            step.names = names if kind == "Node" else [f"{ns}/{n}" for n in names]
        elif act in ("cordon", "uncordon", "drain", "removeNodes"):
            step.names = _names(v, src, ap)
            step.kind = "Node"
        else:   # addNodes
            if not isinstance(v, dict):
                raise ScenarioError(src, ap, "must be a mapping {template, count, slices}")
            for k in v:
                if k not in ("template", "count", "slices"):
                    raise ScenarioError(src, f"{ap}.{k}", "unknown field (known: template, "
                                        "count, slices)")
            tmpl = _manifest(v.get("template"), src, f"{ap}.template", ("Node",))
            n = _count(v.get("count", 1), src, f"{ap}.count")
            base = tmpl["metadata"]["name"]
            step.objects = _replicas(tmpl, n, added.get(base, 0))
            if v.get("slices") is not None:
                slices = _slice_templates(v["slices"], base, src, f"{ap}.slices")
                step.slices = [slice_dicts(slices, base, o["metadata"]["name"])
                               for o in step.objects]
            added[base] = added.get(base, 0) + n
            step.kind = "Node"
        steps.append(step)
    order = sorted(range(len(steps)), key=lambda j: (steps[j].at, j))
    return Scenario([steps[j] for j in order], src)


def check_steps(sc: Scenario, nodes, now: float, pod_known) -> None:
    """Refuse the first step of ``sc`` that cannot apply: a step before
    ``now``, a node not in ``nodes`` (the cluster's) nor added by an earlier
    step (or one already there), a pod deleted that neither an earlier step
    creates nor ``pod_known(key, t)`` (in the simulation, or arriving,
    before ``t``) finds.  Node names are followed through the steps in time
    order; arrivals at a time come after deletions at that time."""
    nodes = set(nodes)
    created: dict[str, float] = {}      # pods of earlier steps -> when they arrive
    gone: set[str] = set()              # pods deleted by earlier steps
    for st in sc.steps:
        if st.at < now:
            raise ScenarioError(sc.source, st.field, f"at {st.at:g} is before the "
                                f"simulation's time {now:g}")
        if st.kind == "Pod":
            if st.action == "create":
                for o in st.objects:
                    meta = o["metadata"]
                    key = f"{meta.get('namespace') or 'default'}/{meta['name']}"
                    created[key] = st.at
                    gone.discard(key)
                continue
            for key in st.names:
                when = created.pop(key, None)
                ok = when < st.at if when is not None else \
                    key not in gone and pod_known(key, st.at)
                if not ok:
                    raise ScenarioError(sc.source, st.field, f"pod {key} not found "
                                        f"(NotFound): not in the simulation before "
                                        f"{st.at:g}s")
                gone.add(key)
        elif st.action in ("create", "addNodes"):
            for o in st.objects:
                name = o["metadata"]["name"]
                if name in nodes:
                    raise ScenarioError(sc.source, st.field, f"node {name!r} already exists")
                nodes.add(name)
        elif st.kind == "Node":
            for name in st.names:
                if name not in nodes:
                    raise ScenarioError(sc.source, st.field, f"node {name!r} is not in the "
                                        f"cluster at {st.at:g}s")
                if st.action in ("delete", "removeNodes"):
                    nodes.discard(name)
