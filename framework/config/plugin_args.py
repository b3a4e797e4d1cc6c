"""Plugin arguments of the built-in plugins: defaults, strict decoding, validation.

Each ``*Args`` class is a frozen dataclass whose default instance is what
kube-scheduler (config v1, 1.31/1.32) fills in when a profile has no
``pluginConfig`` entry for the plugin. ``decode_args`` turns the raw
``pluginConfig[i].args`` mapping into one of these, field by field:

- strict: a key the args type does not have is an error, as in the
  scheduler's strict decoding;
- defaulting as upstream (e.g. a resource weight of 0 or unset becomes 1);
- validation as upstream; every problem is a ``ConfigError`` whose field is the
  full path, ``<path>.scoringStrategy.resources[0].weight``.

Plugins without a decoder here (out-of-tree ones) keep their raw mapping unless
they register their own with ``register_args_decoder``.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from tensorsched.framework.errors import ArgumentError, ConfigError
from tensorsched.framework.parsing.meta import (
    LABEL_VALUE_FMT,
    invalid_value,
    label_value_errors,
    qualified_name_errors,
)

from . import plugin_names

API_VERSION = "kubescheduler.config.k8s.io/v1"

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SCORING_STRATEGY_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"

MAX_CUSTOM_PRIORITY_SCORE = 10  # y axis of a utilization shape
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


# --------------------------------------------------------------------------
# argument types


@dataclass(frozen=True)
class ResourceSpec:
    """A resource taken into account by a scoring strategy, and its weight."""

    name: str
    weight: int = 1


DEFAULT_RESOURCES: tuple[ResourceSpec, ...] = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


@dataclass(frozen=True)
class UtilizationShapePoint:
    """One point of a piecewise-linear score function: utilization 0..100 -> score 0..10."""

    utilization: int
    score: int


@dataclass(frozen=True)
class RequestedToCapacityRatioParam:
    shape: tuple[UtilizationShapePoint, ...]


@dataclass(frozen=True)
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    # set only (and then always) when type is RequestedToCapacityRatio
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None


@dataclass(frozen=True)
class NodeResourcesFitArgs:
    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)


@dataclass(frozen=True)
class NodeResourcesBalancedAllocationArgs:
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES


@dataclass(frozen=True)
class NodeAffinityArgs:
    # The NodeAffinity object as written in the config (camelCase keys, as in
    # a pod's spec.affinity.nodeAffinity), validated; None when absent.
    added_affinity: dict | None = None


@dataclass(frozen=True)
class DefaultPreemptionArgs:
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


@dataclass(frozen=True)
class TopologySpreadConstraint:
    """A default spread constraint (``PodTopologySpreadArgs.defaultConstraints[i]``).

    Never has a label selector: it is deduced per pod from its owners."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    min_domains: int | None = None
    node_affinity_policy: str | None = None  # Honor | Ignore; None = plugin default
    node_taints_policy: str | None = None  # Honor | Ignore; None = plugin default
    match_label_keys: tuple[str, ...] = ()


# The constraints the plugin applies when defaultingType is System
# (a plugin-side constant, listed here so that callers find it with the args).
SYSTEM_DEFAULT_CONSTRAINTS: tuple[TopologySpreadConstraint, ...] = (
    TopologySpreadConstraint(3, "kubernetes.io/hostname", "ScheduleAnyway"),
    TopologySpreadConstraint(5, "topology.kubernetes.io/zone", "ScheduleAnyway"),
)


@dataclass(frozen=True)
class PodTopologySpreadArgs:
    default_constraints: tuple[TopologySpreadConstraint, ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING


@dataclass(frozen=True)
class InterPodAffinityArgs:
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


@dataclass(frozen=True)
class VolumeBindingArgs:
    """VolumeBinding's args.  ``shape``: (utilization percent, score 0..10)
    points of the StorageCapacityScoring score, empty while that feature
    gate is off (``storage_capacity_scoring``)."""

    bind_timeout_seconds: int = 600
    shape: tuple[UtilizationShapePoint, ...] = ()
    storage_capacity_scoring: bool = False


# The DynamicResources plugin's gates at Kubernetes 1.35's defaults (admin
# access and prioritized lists beta and on, device status beta and on, the
# alpha ones off; DRAListTypeAttributes, alpha from 1.36, off).
DRA_FEATURE_GATES: dict[str, bool] = {
    "DRAAdminAccess": True,
    "DRAConsumableCapacity": False,
    "DRADeviceBindingConditions": False,
    "DRADeviceTaints": False,
    "DRAExtendedResource": False,
    "DRAListTypeAttributes": False,
    "DRAPartitionableDevices": False,
    "DRAPrioritizedList": True,
    "DRAResourceClaimDeviceStatus": True,
}
# feature gates a KubeSchedulerConfiguration's args depend on, at upstream's
# defaults (kube-scheduler's --feature-gates)
FEATURE_GATES: dict[str, bool] = {"StorageCapacityScoring": False, **DRA_FEATURE_GATES}
MAX_CUSTOM_PRIORITY_SCORE = 10
# StorageCapacityScoring on and no shape given: prefer the node with the
# most free storage (upstream's SetDefaults_VolumeBindingArgs)
DEFAULT_CAPACITY_SHAPE = (UtilizationShapePoint(0, MAX_CUSTOM_PRIORITY_SCORE),
                          UtilizationShapePoint(100, 0))


def feature_gates(gates: Mapping | None, path: str = "featureGates") -> dict[str, bool]:
    """The gates in force: ``FEATURE_GATES`` with ``gates`` (name -> bool)
    over them; an unknown name or a non-bool value is a ConfigError."""
    out = dict(FEATURE_GATES)
    if gates is None:
        return out
    if not isinstance(gates, Mapping):
        raise ConfigError(path, f"must be a mapping of gate name to bool, got {type(gates).__name__}")
    for k, v in gates.items():
        if k not in FEATURE_GATES:
            raise ConfigError(path, f"unrecognized feature gate: {k} (known: {', '.join(sorted(FEATURE_GATES))})")
        if not isinstance(v, bool):
            raise ConfigError(f"{path}.{k}", f"must be true or false, got {v!r}")
        out[k] = v
    return out


@dataclass(frozen=True)
class DynamicResourcesArgs:
    """``filterTimeout`` (seconds; 0 = no limit) and ``bindingTimeout``
    (seconds a PreBind waits for device binding conditions)."""

    filter_timeout_s: float = 10.0
    binding_timeout_s: float = 600.0
    # the DRA feature gates that are on (names of ``DRA_FEATURE_GATES``,
    # sorted), from the gates in force when the config was loaded
    feature_gates: tuple[str, ...] = tuple(sorted(g for g, on in DRA_FEATURE_GATES.items() if on))


# --------------------------------------------------------------------------
# small strict-decoding helpers


def _join(path: str, child: str) -> str:
    return f"{path}.{child}" if path else child


def _mapping(raw: Any, path: str) -> dict:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(path, f"must be an object, got {type(raw).__name__}")
    for k in raw:
        if not isinstance(k, str):
            raise ConfigError(path, f"field name {k!r} is not a string")
    return dict(raw)


def _only(raw: Mapping, allowed: tuple[str, ...], path: str) -> None:
    for k in raw:
        if k not in allowed:
            raise ConfigError(_join(path, k), f"unknown field (known: {', '.join(allowed)})")


def _int(value: Any, path: str, lo: int = _INT32_MIN, hi: int = _INT32_MAX) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, f"must be an integer, got {value!r}")
    if value < lo or value > hi:
        raise ConfigError(path, f"{value} does not fit the field's integer type")
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(path, f"must be a string, got {value!r}")
    return value


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(path, f"must be a boolean, got {value!r}")
    return value


def _list(value: Any, path: str) -> list:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise ConfigError(path, f"must be a list, got {type(value).__name__}")
    return list(value)


# Label keys and values are validated by the parsing layer's shared
# implementation (apimachinery's rules and messages); ``LABEL_VALUE`` is a
# ``.match``-anchored form of its regex for callers that test strings.
LABEL_VALUE = re.compile(LABEL_VALUE_FMT + r"\Z")
_GO_INT64 = re.compile(r"[+-]?[0-9]+")


def check_qualified_name(value: str, path: str) -> None:
    """A label key / resource name (``IsQualifiedName``): ``[prefix/]name``,
    prefix a DNS subdomain (<= 253), name <= 63 alphanumerics, '-', '_',
    '.' starting and ending alphanumeric.  ConfigError at ``path`` with
    upstream's message otherwise."""
    errs = qualified_name_errors(value)
    if errs:
        raise ConfigError(path, invalid_value(value, errs))


def _check_label_value(value: str, path: str) -> None:
    errs = label_value_errors(value)
    if errs:
        raise ConfigError(path, invalid_value(value, errs))


def _type_meta(raw: dict, kind: str, path: str) -> None:
    """Args may carry apiVersion/kind; when they do they must name this args type."""
    if "apiVersion" in raw:
        v = _str(raw.pop("apiVersion"), _join(path, "apiVersion"))
        if v != API_VERSION:
            raise ConfigError(_join(path, "apiVersion"), f"must be {API_VERSION!r}, got {v!r}")
    if "kind" in raw:
        k = _str(raw.pop("kind"), _join(path, "kind"))
        if k != kind:
            raise ConfigError(_join(path, "kind"), f"args of this plugin are of kind {kind!r}, got {k!r}")


# --------------------------------------------------------------------------
# decoders (raw mapping or None -> args, defaulted and validated)


def _decode_resources(raw: Any, path: str) -> tuple[ResourceSpec, ...]:
    items = _list(raw, path)
    if not items:
        return DEFAULT_RESOURCES
    out = []
    for i, item in enumerate(items):
        p = f"{path}[{i}]"
        m = _mapping(item, p)
        _only(m, ("name", "weight"), p)
        if "name" not in m:
            raise ConfigError(_join(p, "name"), "required")
        name = _str(m["name"], _join(p, "name"))
        weight = _int(m.get("weight", 0), _join(p, "weight"), _INT64_MIN, _INT64_MAX)
        out.append(ResourceSpec(name, 1 if weight == 0 else weight))  # 0 or unset -> 1
    return tuple(out)


def _decode_shape(raw: Any, path: str) -> tuple[UtilizationShapePoint, ...]:
    items = _list(raw, path)
    if not items:
        raise ConfigError(path, "required: at least one point must be specified")
    pts = []
    for i, item in enumerate(items):
        p = f"{path}[{i}]"
        m = _mapping(item, p)
        _only(m, ("utilization", "score"), p)
        pts.append(
            UtilizationShapePoint(
                _int(m.get("utilization", 0), _join(p, "utilization")),
                _int(m.get("score", 0), _join(p, "score")),
            )
        )
    for i in range(1, len(pts)):
        if pts[i - 1].utilization >= pts[i].utilization:
            raise ConfigError(f"{path}[{i}].utilization", "values must be sorted in increasing order")
    for i, pt in enumerate(pts):
        if not 0 <= pt.utilization <= 100:
            raise ConfigError(f"{path}[{i}].utilization", f"{pt.utilization} not in valid range [0, 100]")
        if not 0 <= pt.score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ConfigError(
                f"{path}[{i}].score", f"{pt.score} not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"
            )
    return tuple(pts)


def _decode_node_resources_fit(raw: Any, path: str) -> NodeResourcesFitArgs:
    m = _mapping(raw, path)
    _type_meta(m, "NodeResourcesFitArgs", path)
    _only(m, ("ignoredResources", "ignoredResourceGroups", "scoringStrategy"), path)

    ignored = []
    p = _join(path, "ignoredResources")
    for i, v in enumerate(_list(m.get("ignoredResources"), p)):
        check_qualified_name(_str(v, f"{p}[{i}]"), f"{p}[{i}]")
        ignored.append(v)
    groups = []
    p = _join(path, "ignoredResourceGroups")
    for i, v in enumerate(_list(m.get("ignoredResourceGroups"), p)):
        _str(v, f"{p}[{i}]")
        if "/" in v:
            raise ConfigError(f"{p}[{i}]", f"{v!r}: resource group name can't contain '/'")
        check_qualified_name(v, f"{p}[{i}]")
        groups.append(v)

    sp = _join(path, "scoringStrategy")
    if m.get("scoringStrategy") is None:
        strategy = ScoringStrategy()
    else:
        s = _mapping(m["scoringStrategy"], sp)
        _only(s, ("type", "resources", "requestedToCapacityRatio"), sp)
        # no defaulting of the type once a strategy is given, as upstream
        stype = _str(s.get("type", ""), _join(sp, "type"))
        if stype not in SCORING_STRATEGY_TYPES:
            raise ConfigError(
                _join(sp, "type"), f"unsupported value {stype!r}: supported values: {', '.join(SCORING_STRATEGY_TYPES)}"
            )
        resources = _decode_resources(s.get("resources"), _join(sp, "resources"))
        for i, r in enumerate(resources):
            if not 0 < r.weight <= 100:
                raise ConfigError(
                    f"{sp}.resources[{i}].weight", f"resource weight of {r.name} not in valid range (0, 100]"
                )
        rp = _join(sp, "requestedToCapacityRatio")
        rtcr = None
        if stype == REQUESTED_TO_CAPACITY_RATIO:
            if s.get("requestedToCapacityRatio") is None:
                raise ConfigError(rp, "required: must be specified when type is RequestedToCapacityRatio")
            r = _mapping(s["requestedToCapacityRatio"], rp)
            _only(r, ("shape",), rp)
            rtcr = RequestedToCapacityRatioParam(_decode_shape(r.get("shape"), _join(rp, "shape")))
        elif s.get("requestedToCapacityRatio") is not None:
            raise ConfigError(rp, "forbidden: must be nil when type is not RequestedToCapacityRatio")
        strategy = ScoringStrategy(stype, resources, rtcr)
    return NodeResourcesFitArgs(tuple(ignored), tuple(groups), strategy)


def _decode_balanced_allocation(raw: Any, path: str) -> NodeResourcesBalancedAllocationArgs:
    m = _mapping(raw, path)
    _type_meta(m, "NodeResourcesBalancedAllocationArgs", path)
    _only(m, ("resources",), path)
    rp = _join(path, "resources")
    resources = _decode_resources(m.get("resources"), rp)
    seen = set()
    for i, r in enumerate(resources):
        if r.name in seen:
            raise ConfigError(f"{rp}[{i}].name", f"duplicate value {r.name!r}")
        seen.add(r.name)
        if r.weight != 1:
            raise ConfigError(f"{rp}[{i}].weight", f"{r.weight}: must be 1")
    return NodeResourcesBalancedAllocationArgs(resources)


_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def _check_requirement(raw: Any, path: str, for_fields: bool) -> dict:
    m = _mapping(raw, path)
    _only(m, ("key", "operator", "values"), path)
    key = _str(m.get("key", ""), _join(path, "key"))
    op = _str(m.get("operator", ""), _join(path, "operator"))
    vp = _join(path, "values")
    values = [_str(v, f"{vp}[{i}]") for i, v in enumerate(_list(m.get("values"), vp))]
    if for_fields:
        if key != "metadata.name":
            raise ConfigError(_join(path, "key"), f"unsupported value {key!r}: supported values: metadata.name")
        if op not in ("In", "NotIn"):
            raise ConfigError(_join(path, "operator"), f"unsupported value {op!r}: supported values: In, NotIn")
        if len(values) != 1:
            raise ConfigError(vp, "must have one element")
        return {"key": key, "operator": op, "values": values}
    if op not in _SELECTOR_OPS:
        raise ConfigError(_join(path, "operator"), f"unsupported value {op!r}: supported values: {', '.join(_SELECTOR_OPS)}")
    check_qualified_name(key, _join(path, "key"))
    if op in ("In", "NotIn") and not values:
        raise ConfigError(vp, "for 'In', 'NotIn' operators, values set can't be empty")
    if op in ("Exists", "DoesNotExist") and values:
        raise ConfigError(vp, "values set must be empty for Exists and DoesNotExist")
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise ConfigError(vp, "for 'Gt', 'Lt' operators, exactly one value is required")
        # strconv.ParseInt(v, 10, 64): digits with an optional sign, in int64
        if not _GO_INT64.fullmatch(values[0]) or not _INT64_MIN <= int(values[0]) <= _INT64_MAX:
            raise ConfigError(f"{vp}[0]", "for 'Gt', 'Lt' operators, the value must be an integer")
    for i, v in enumerate(values):
        _check_label_value(v, f"{vp}[{i}]")
    out = {"key": key, "operator": op}
    if values:
        out["values"] = values
    return out


def _check_term(raw: Any, path: str) -> dict:
    m = _mapping(raw, path)
    _only(m, ("matchExpressions", "matchFields"), path)
    out = {}
    for name, for_fields in (("matchExpressions", False), ("matchFields", True)):
        p = _join(path, name)
        reqs = [_check_requirement(r, f"{p}[{i}]", for_fields) for i, r in enumerate(_list(m.get(name), p))]
        if reqs:
            out[name] = reqs
    return out


def _decode_node_affinity(raw: Any, path: str) -> NodeAffinityArgs:
    m = _mapping(raw, path)
    _type_meta(m, "NodeAffinityArgs", path)
    _only(m, ("addedAffinity",), path)
    if m.get("addedAffinity") is None:
        return NodeAffinityArgs(None)
    ap = _join(path, "addedAffinity")
    a = _mapping(m["addedAffinity"], ap)
    req_key, pref_key = "requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"
    _only(a, (req_key, pref_key), ap)
    out: dict = {}
    if a.get(req_key) is not None:
        rp = _join(ap, req_key)
        sel = _mapping(a[req_key], rp)
        _only(sel, ("nodeSelectorTerms",), rp)
        tp = _join(rp, "nodeSelectorTerms")
        terms = _list(sel.get("nodeSelectorTerms"), tp)
        if not terms:
            raise ConfigError(tp, "required: must have at least one node selector term")
        out[req_key] = {"nodeSelectorTerms": [_check_term(t, f"{tp}[{i}]") for i, t in enumerate(terms)]}
    if a.get(pref_key) is not None:
        pp = _join(ap, pref_key)
        prefs = []
        for i, item in enumerate(_list(a[pref_key], pp)):
            ip = f"{pp}[{i}]"
            t = _mapping(item, ip)
            _only(t, ("weight", "preference"), ip)
            if "weight" not in t:
                raise ConfigError(_join(ip, "weight"), "required")
            w = _int(t["weight"], _join(ip, "weight"))
            if not 1 <= w <= 100:
                raise ConfigError(_join(ip, "weight"), f"{w} must be in the range 1-100")
            prefs.append({"weight": w, "preference": _check_term(t.get("preference"), _join(ip, "preference"))})
        if prefs:
            out[pref_key] = prefs
    return NodeAffinityArgs(copy.deepcopy(out))


def _decode_default_preemption(raw: Any, path: str) -> DefaultPreemptionArgs:
    m = _mapping(raw, path)
    _type_meta(m, "DefaultPreemptionArgs", path)
    pk, ak = "minCandidateNodesPercentage", "minCandidateNodesAbsolute"
    _only(m, (pk, ak), path)
    pct = 10 if m.get(pk) is None else _int(m[pk], _join(path, pk))
    ab = 100 if m.get(ak) is None else _int(m[ak], _join(path, ak))
    if not 0 <= pct <= 100:
        raise ConfigError(_join(path, pk), f"{pct} not in valid range [0, 100]")
    if ab < 0:
        raise ConfigError(_join(path, ak), f"{ab} not in valid range [0, inf)")
    if pct == 0 and ab == 0:
        raise ConfigError(_join(path, pk), f"cannot be zero at the same time as {ak}")
    return DefaultPreemptionArgs(pct, ab)


_CONSTRAINT_FIELDS = (
    "maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector",
    "minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys",
)


def _decode_topology_spread(raw: Any, path: str) -> PodTopologySpreadArgs:
    m = _mapping(raw, path)
    _type_meta(m, "PodTopologySpreadArgs", path)
    _only(m, ("defaultConstraints", "defaultingType"), path)
    cp = _join(path, "defaultConstraints")
    items = _list(m.get("defaultConstraints"), cp)
    # absent or "" is System (upstream's default); 0, false, [] are no strings
    dt = m.get("defaultingType")
    dt = _str(dt, _join(path, "defaultingType")) if dt is not None else ""
    dt = dt or SYSTEM_DEFAULTING
    if dt not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        raise ConfigError(_join(path, "defaultingType"), f"unsupported value {dt!r}: supported values: System, List")
    if dt == SYSTEM_DEFAULTING and items:
        raise ConfigError(_join(path, "defaultingType"), "must be List when defaultConstraints are not empty")
    out: list[TopologySpreadConstraint] = []
    for i, item in enumerate(items):
        p = f"{cp}[{i}]"
        c = _mapping(item, p)
        _only(c, _CONSTRAINT_FIELDS, p)
        skew = _int(c.get("maxSkew", 0), _join(p, "maxSkew"))
        if skew <= 0:
            raise ConfigError(_join(p, "maxSkew"), f"{skew} not in valid range (0, inf)")
        key = _str(c.get("topologyKey", ""), _join(p, "topologyKey"))
        if not key:
            raise ConfigError(_join(p, "topologyKey"), "required: can not be empty")
        check_qualified_name(key, _join(p, "topologyKey"))
        wu = _str(c.get("whenUnsatisfiable", ""), _join(p, "whenUnsatisfiable"))
        if not wu:
            raise ConfigError(_join(p, "whenUnsatisfiable"), "required: can not be empty")
        if wu not in ("DoNotSchedule", "ScheduleAnyway"):
            raise ConfigError(
                _join(p, "whenUnsatisfiable"), f"unsupported value {wu!r}: supported values: DoNotSchedule, ScheduleAnyway"
            )
        if c.get("labelSelector") is not None:
            raise ConfigError(
                _join(p, "labelSelector"), "forbidden: constraint must not define a selector, as they deduced for each pod"
            )
        min_domains = None
        if c.get("minDomains") is not None:
            min_domains = _int(c["minDomains"], _join(p, "minDomains"))
            if min_domains <= 0:
                raise ConfigError(_join(p, "minDomains"), f"{min_domains} must be greater than 0")
            if wu != "DoNotSchedule":
                raise ConfigError(
                    _join(p, "minDomains"), "can only use minDomains if whenUnsatisfiable=DoNotSchedule"
                )
        policies = []
        for k in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            v = c.get(k)
            if v is not None:
                _str(v, _join(p, k))
                if v not in ("Honor", "Ignore"):
                    raise ConfigError(_join(p, k), f"unsupported value {v!r}: supported values: Honor, Ignore")
            policies.append(v)
        mk = _join(p, "matchLabelKeys")
        keys = []
        for j, k in enumerate(_list(c.get("matchLabelKeys"), mk)):
            check_qualified_name(_str(k, f"{mk}[{j}]"), f"{mk}[{j}]")
            keys.append(k)
        for j in range(i):
            if out[j].topology_key == key and out[j].when_unsatisfiable == wu:
                raise ConfigError(p, f"duplicate value {{{key}, {wu}}}")
        out.append(TopologySpreadConstraint(skew, key, wu, min_domains, policies[0], policies[1], tuple(keys)))
    return PodTopologySpreadArgs(tuple(out), dt)


def _decode_inter_pod_affinity(raw: Any, path: str) -> InterPodAffinityArgs:
    m = _mapping(raw, path)
    _type_meta(m, "InterPodAffinityArgs", path)
    wk, ik = "hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"
    _only(m, (wk, ik), path)
    w = 1 if m.get(wk) is None else _int(m[wk], _join(path, wk))
    if not 0 <= w <= 100:
        raise ConfigError(_join(path, wk), f"{w} not in valid range [0, 100]")
    ignore = False if m.get(ik) is None else _bool(m[ik], _join(path, ik))
    return InterPodAffinityArgs(w, ignore)


def _decode_volume_binding(raw: Any, path: str, gates: Mapping | None = None) -> VolumeBindingArgs:
    m = _mapping(raw, path)
    _type_meta(m, "VolumeBindingArgs", path)
    _only(m, ("bindTimeoutSeconds", "shape"), path)
    t = 600 if m.get("bindTimeoutSeconds") is None else _int(
        m["bindTimeoutSeconds"], _join(path, "bindTimeoutSeconds"), _INT64_MIN, _INT64_MAX
    )
    if t < 0:
        raise ConfigError(_join(path, "bindTimeoutSeconds"), f"{t}: invalid BindTimeoutSeconds, should not be a negative value")
    scoring = feature_gates(gates)["StorageCapacityScoring"]
    if not scoring:
        if m.get("shape"):
            raise ConfigError(_join(path, "shape"), "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring")
        return VolumeBindingArgs(t)
    if m.get("shape") is None:
        return VolumeBindingArgs(t, DEFAULT_CAPACITY_SHAPE, True)
    return VolumeBindingArgs(t, _capacity_shape(m["shape"], _join(path, "shape")), True)


def _capacity_shape(raw: Any, path: str) -> tuple[UtilizationShapePoint, ...]:
    """Upstream's validateFunctionShape: at least one point, utilization
    strictly increasing within [0, 100], score within [0, 10]."""
    points = _list(raw, path)
    if not points:
        raise ConfigError(path, "Required value: at least one point must be specified")
    out = []
    for i, item in enumerate(points):
        p = f"{path}[{i}]"
        pm = _mapping(item, p)
        _only(pm, ("utilization", "score"), p)
        u = _int(pm.get("utilization", 0), f"{p}.utilization", _INT32_MIN, _INT32_MAX)
        s = _int(pm.get("score", 0), f"{p}.score", _INT32_MIN, _INT32_MAX)
        if out and out[-1].utilization >= u:
            raise ConfigError(f"{p}.utilization", f"Invalid value: {u}: utilization values must be sorted in increasing order")
        if not 0 <= u <= 100:
            raise ConfigError(f"{p}.utilization", f"Invalid value: {u}: not in valid range [0, 100]")
        if not 0 <= s <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ConfigError(f"{p}.score", f"Invalid value: {s}: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
        out.append(UtilizationShapePoint(u, s))
    return tuple(out)


_DURATION_PART = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
                   "h": 3600.0}


def duration_seconds(value: Any, path: str) -> float:
    """A metav1.Duration (Go's time.ParseDuration text, e.g. "1m30s") in
    seconds: one optional sign, then numbers with units; as in Go, a
    duration past int64 nanoseconds (about 292 years) is invalid."""
    text = _str(value, path)
    sign = -1.0 if text.startswith("-") else 1.0
    body = text[1:] if text[:1] in ("+", "-") else text
    parts = _DURATION_PART.findall(body)
    if body == "0":
        return 0.0
    if not parts or "".join(n + u for n, u in parts) != body:
        raise ConfigError(path, f"invalid duration {text!r} (e.g. \"10s\", \"1m30s\")")
    seconds = sum(float(n) * _DURATION_UNITS[u] for n, u in parts)
    if seconds * 1e9 > _INT64_MAX:
        raise ConfigError(path, f"invalid duration {text!r}: out of range (at most "
                          "2562047h47m16.854775807s)")
    return sign * seconds


def _decode_dynamic_resources(raw: Any, path: str) -> DynamicResourcesArgs:
    m = _mapping(raw, path)
    _type_meta(m, "DynamicResourcesArgs", path)
    _only(m, ("filterTimeout", "bindingTimeout"), path)
    out = DynamicResourcesArgs()
    if m.get("filterTimeout") is not None:
        t = duration_seconds(m["filterTimeout"], _join(path, "filterTimeout"))
        if t < 0:
            raise ConfigError(_join(path, "filterTimeout"), "must be zero or positive")
        out = DynamicResourcesArgs(t, out.binding_timeout_s)
    if m.get("bindingTimeout") is not None:
        t = duration_seconds(m["bindingTimeout"], _join(path, "bindingTimeout"))
        if t <= 0:
            raise ConfigError(_join(path, "bindingTimeout"), "must be positive")
        out = DynamicResourcesArgs(out.filter_timeout_s, t)
    return out


def _with_dra_gates(args: DynamicResourcesArgs, gates: Mapping | None) -> DynamicResourcesArgs:
    """``args`` carrying the DRA gates on among ``gates`` in force."""
    on = feature_gates(gates)
    return dataclasses.replace(args, feature_gates=tuple(sorted(
        g for g in DRA_FEATURE_GATES if on[g])))


ArgsDecoder = Callable[[Any, str], object]

_BUILTIN_DECODERS: dict[str, ArgsDecoder] = {
    plugin_names.NODE_RESOURCES_FIT: _decode_node_resources_fit,
    plugin_names.NODE_RESOURCES_BALANCED_ALLOCATION: _decode_balanced_allocation,
    plugin_names.NODE_AFFINITY: _decode_node_affinity,
    plugin_names.DEFAULT_PREEMPTION: _decode_default_preemption,
    plugin_names.POD_TOPOLOGY_SPREAD: _decode_topology_spread,
    plugin_names.INTER_POD_AFFINITY: _decode_inter_pod_affinity,
    plugin_names.VOLUME_BINDING: _decode_volume_binding,
    plugin_names.DYNAMIC_RESOURCES: _decode_dynamic_resources,
}
_DECODERS: dict[str, ArgsDecoder] = dict(_BUILTIN_DECODERS)


def register_args_decoder(name: str, fn: ArgsDecoder) -> None:
    """Let an out-of-tree plugin decode its own args.

    ``fn(raw, path)`` gets the raw ``args`` mapping (or None: then it returns
    the plugin's default args) and the field path to name in a ``ConfigError``.
    Built-in decoders cannot be replaced."""
    if name in _BUILTIN_DECODERS:
        raise ArgumentError("register_args_decoder", "name",
                            f"plugin {name!r} is built in; its args decoder cannot be replaced")
    if not callable(fn):
        raise ArgumentError("register_args_decoder", "fn",
                            f"must be callable, got {type(fn).__name__}")
    _DECODERS[name] = fn


def has_args_decoder(plugin_name: str) -> bool:
    return plugin_name in _DECODERS


def decode_args(plugin_name: str, raw: dict | None, path: str,
                gates: Mapping | None = None) -> object:
    """Decode, default and validate the args of one plugin under the
    feature ``gates`` (None: ``FEATURE_GATES``' defaults).

    Plugins with a decoder get their args object; others keep ``raw``
    (a deep copy; None stays None)."""
    fn = _gated(plugin_name, gates)
    if fn is None:
        if raw is not None and not isinstance(raw, Mapping):
            raise ConfigError(path, f"must be an object, got {type(raw).__name__}")
        return copy.deepcopy(raw)
    return _run_decoder(plugin_name, fn, copy.deepcopy(raw), path)


def _gated(plugin_name: str, gates: Mapping | None) -> ArgsDecoder | None:
    if plugin_name == plugin_names.VOLUME_BINDING:
        return lambda raw, path: _decode_volume_binding(raw, path, gates)
    if plugin_name == plugin_names.DYNAMIC_RESOURCES:
        return lambda raw, path: _with_dra_gates(_decode_dynamic_resources(raw, path), gates)
    return _DECODERS.get(plugin_name)


def default_args(plugin_name: str, gates: Mapping | None = None) -> object:
    """The args a plugin gets when no pluginConfig names it; None if it has none."""
    fn = _gated(plugin_name, gates)
    return None if fn is None else _run_decoder(plugin_name, fn, None, "")


def _run_decoder(plugin_name: str, fn: ArgsDecoder, raw: Any, path: str) -> object:
    """``fn(raw, path)``; any exception but a ConfigError (an out-of-tree
    decoder reading a string as a mapping...) becomes a ConfigError at the
    args' path, without Python's internals in its text."""
    try:
        return fn(raw, path)
    except ConfigError:
        raise
    except RecursionError:
        raise ConfigError(path, f"invalid {plugin_name} args: nested too deeply") from None
    except Exception as exc:  # noqa: BLE001 -- a plugin's decoder may raise anything
        if isinstance(exc, ValueError) and not isinstance(exc, UnicodeError) and str(exc):
            problem = f"invalid {plugin_name} args: {exc}"
        else:
            problem = (f"invalid {plugin_name} args: not what the plugin expects "
                       f"(its decoder failed with {type(exc).__name__})")
        raise ConfigError(path, problem) from exc
