"""Small builders shared by the per-plugin tests (tests/plugins/).

``one_plugin_config`` builds a KubeSchedulerConfiguration (v1) whose only
profile runs one plugin under test, as kube-scheduler's plugin unit tests
build a framework with ``tf.RegisterPluginAsExtensions`` for one plugin:
every default plugin is disabled (multiPoint ``"*"``) and the plugin is
enabled at its extension points, plus the queueSort (PrioritySort) and bind
(DefaultBinder) plugins every profile needs.

``profile_config`` does the same for a few plugins at once (a filter for
DefaultPreemption to act on).  ``case`` builds one row of a case table.

``node`` and ``pod`` are thin wrappers over ``generators.clusters.node_dict /
pod_dict``: a node gets only the allocatable it is given, a pod requests
nothing unless asked (as the pods of upstream's tests), and ``on=`` binds a
pod to a node (an existing pod).
"""

from __future__ import annotations

import copy

from tensorsched.framework.config.kube_config import DEFAULT_PLUGIN_POINTS
from tensorsched.framework.config.plugin_args import API_VERSION
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.explain import explain

QUEUE_SORT = "PrioritySort"
BINDER = "DefaultBinder"

def profile_config(plugins, args=None, points=None) -> dict:
    """A v1 configuration enabling exactly ``plugins`` (name -> score
    weight, or a list of names: weight 1) with ``args`` ({name: args}).

    ``points``: None enables every plugin at all the extension points it
    implements (multiPoint); else a list of extension points at which the
    plugins are enabled (each plugin only where it implements the point)."""
    if not isinstance(plugins, dict):
        plugins = dict.fromkeys(plugins, 1)
    weights = dict(plugins)
    for name in (QUEUE_SORT, BINDER):
        weights.setdefault(name, None)
    section: dict = {}
    if points is None:
        section["multiPoint"] = {
            "disabled": [{"name": "*"}],
            "enabled": [_entry(n, w if "score" in DEFAULT_PLUGIN_POINTS[n] else None)
                        for n, w in weights.items()],
        }
    else:
        section["multiPoint"] = {"disabled": [{"name": "*"}]}
        wanted = list(points) + ["queueSort", "bind"]
        for point in dict.fromkeys(wanted):
            entries = [_entry(n, w if point == "score" else None) for n, w in weights.items()
                       if point in DEFAULT_PLUGIN_POINTS[n]]
            if entries:
                section[point] = {"enabled": entries}
    profile: dict = {"schedulerName": "default-scheduler", "plugins": section}
    if args:
        profile["pluginConfig"] = [
            {"name": n, "args": {"apiVersion": API_VERSION, "kind": n + "Args",
                                 **copy.deepcopy(a)}}
            for n, a in args.items() if a is not None]
    return {"apiVersion": API_VERSION, "kind": "KubeSchedulerConfiguration",
            "profiles": [profile]}


def _entry(name: str, weight) -> dict:
    return {"name": name} if weight is None else {"name": name, "weight": weight}


def one_plugin_config(name: str, args: dict | None = None, weight: int = 1,
                      points=None) -> dict:
    """A configuration running only plugin ``name`` (score weight
    ``weight``), with its v1 ``args`` when given; ``points`` as in
    ``profile_config`` (e.g. ``("preScore", "score")`` for a score-only
    test of a plugin that also filters)."""
    return profile_config({name: weight}, {name: args} if args is not None else None, points)


def node(name: str, cpu: str = "4", memory: str = "32Gi", pods: str = "110", *,
         labels: dict | None = None, taints: list | None = None,
         extra: dict | None = None, unschedulable: bool = False,
         images: list | None = None) -> dict:
    """A Node dict (allocatable = capacity = cpu/memory/pods + ``extra``)."""
    return node_dict(name, cpu=cpu, memory=memory, pods=pods, labels=labels, taints=taints,
                     extra=extra, unschedulable=unschedulable, images=images)


def pod(name: str, cpu: str | None = None, memory: str | None = None, *,
        on: str | None = None, namespace: str = "default", priority: int | None = None,
        labels: dict | None = None, extra: dict | None = None, created: int = 0,
        image: str = "registry.k8s.io/pause:3.10", ports: list | None = None,
        spec: dict | None = None) -> dict:
    """A Pod dict with one container requesting ``cpu``/``memory``/``extra``
    (nothing by default), bound to node ``on`` when given; ``ports`` are
    that container's ports; ``spec`` fields are merged into the spec."""
    obj = pod_dict(name, namespace=namespace, cpu=cpu, memory=memory, priority=priority,
                   created=created, labels=labels, extra=extra, image=image)
    if ports:
        obj["spec"]["containers"][0]["ports"] = copy.deepcopy(ports)
    if spec:
        obj["spec"].update(copy.deepcopy(spec))
    if on is not None:
        obj["spec"]["nodeName"] = on
    return obj


def case(**fields) -> dict:
    """One row of a table of cases (``name=`` and the case's fields)."""
    return fields


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> dict:
    t = {"key": key, "effect": effect}
    if value:
        t["value"] = value
    return t


def toleration(key: str = "", value: str | None = None, effect: str = "",
               operator: str | None = None) -> dict:
    """A toleration; operator defaults to Equal with a value, Exists without."""
    t: dict = {"operator": operator or ("Equal" if value is not None else "Exists")}
    if key:
        t["key"] = key
    if value is not None:
        t["value"] = value
    if effect:
        t["effect"] = effect
    return t


def run(objects, incoming, config, backend: str) -> dict:
    """explain() of ``incoming`` on ``objects`` (nodes and bound pods)."""
    return explain(objects, incoming, config, backend=backend, seed=0)


def plugin_scores(record: dict, plugin: str) -> dict:
    """{node: ``plugin``'s normalized score} of an explain record."""
    return {n: s[plugin] for n, s in record["scores"].items() if plugin in s}
