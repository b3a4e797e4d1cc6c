"""The oracle: a plain, slow, per-node restatement of kube-scheduler's rules.

This module is one of tensorsched's two "truth" witnesses (the other is the
golden data under ``../shared/golden``).  It works directly on Kubernetes
object dicts as kubectl prints them and never touches tensorsched's columnar
state, query compiler or kernels, so that it stays independent of the code it
checks.  It is written for clarity: one small function per upstream rule,
plain loops over nodes, Go's integer semantics spelled out.  Speed does not
matter here.

Behaviour follows kube-scheduler v1.31/v1.32 (feature gates at their v1.32
defaults: SidecarContainers on, pod-level resources off, in-place resize
irrelevant for pending pods).  Every rule names the upstream file it mirrors,
relative to ``kubernetes/kubernetes``.

Public entry points
-------------------
``oracle_explain(objects, pod, profile, seed=0)``
    One scheduling cycle for ``pod``: PreFilter, Filter (first rejecting
    plugin per node), PreScore (with Skip), Score, NormalizeScore, weighted
    total and the seeded tie-break.  Returns the project's explain contract.
``oracle_raw_score(objects, pod, plugin, args)``
    What upstream's plugin unit tests call: Score on every node (no filters,
    PreScore Skip ignored), then the plugin's NormalizeScore if it has one.
``oracle_raw_filter(objects, pod, plugin, args)``
    One plugin's Filter on every node without its PreFilter (the way the
    upstream NodeAffinity tests call Filter directly).
``oracle_prefilter(pod, plugin, args)``
    NodeAffinity's PreFilter outcome (status and node-name set).
``tie_rank(seed, row, pods)``, ``pick_tie``, ``splitmix64(z)``
    The project's seeded choice among equally scored nodes.
``broken_linear_function(points)``, ``normalized_image_name(name)``
    Two helpers that upstream tests on their own.

A profile is ``{"filters": [names], "scores": {name: weight},
"args": {name: args}}`` where args are in KubeSchedulerConfiguration v1
(camelCase) form.  v1 defaulting and validation are applied to the args; an
invalid value raises :class:`OracleConfigError` naming the field.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

# The project's quantity grammar (exact, returns a Fraction).  Only the text
# parser is shared; all rounding and aggregation below is the oracle's own.
from tensorsched.framework.parsing.quantity import parse_quantity as _parse_quantity

# ---------------------------------------------------------------------------
# Constants (pkg/scheduler/framework/interface.go, pkg/scheduler/util/pod_resources.go,
# pkg/scheduler/apis/config/types.go)
# ---------------------------------------------------------------------------

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_CUSTOM_PRIORITY_SCORE = 10
DEFAULT_MILLI_CPU_REQUEST = 100                 # 100m
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024      # 200Mi

MB = 1024 * 1024
IMAGE_MIN_THRESHOLD = 23 * MB
IMAGE_MAX_CONTAINER_THRESHOLD = 1000 * MB

SUCCESS = "Success"
UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"
SKIP = "Skip"

# Upstream reason strings, verbatim.
REASON_NODE_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_NAME = "node(s) didn't match the requested node name"
REASON_NODE_PORTS = "node(s) didn't have free ports for the requested pod ports"
REASON_AFFINITY_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_AFFINITY_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_AFFINITY_CONFLICT = "pod affinity terms conflict"
REASON_TOO_MANY_PODS = "Too many pods"
REASON_SIDECAR_DISABLED = (
    "Pod has a restartable init container and the SidecarContainers feature is disabled")

FILTER_PLUGINS = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
                  "NodePorts", "NodeResourcesFit")
SCORE_PLUGINS = ("NodeResourcesFit", "NodeResourcesBalancedAllocation", "TaintToleration",
                 "NodeAffinity", "ImageLocality")
SCORING_STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
DEFAULT_RESOURCE_SPEC = ({"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1})

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


class OracleConfigError(ValueError):
    """Invalid plugin args (what upstream's args validation rejects)."""

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


class OracleSchedulingError(RuntimeError):
    """A plugin returned an Error status (the scheduling cycle fails)."""


# ---------------------------------------------------------------------------
# Go arithmetic
# ---------------------------------------------------------------------------

def go_div(a: int, b: int) -> int:
    """Go's integer division: truncates toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def go_round(x: float) -> int:
    """Go's math.Round: half away from zero (Python's round is half-even)."""
    if x >= 0:
        return int(math.floor(x + 0.5))
    return -int(math.floor(-x + 0.5))


def go_int64(x: float) -> int:
    """Go's int64(float64): truncation toward zero."""
    return int(x)


# ---------------------------------------------------------------------------
# Seeded tie-break (the project's rule, shared with its kernels)
# ---------------------------------------------------------------------------

_M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def splitmix64(z: int) -> int:
    """One splitmix64 step on a 64-bit unsigned value."""
    z = (z + _GOLDEN) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def tie_rank(seed: int, row: int, pods: int) -> int:
    """The seeded tie rank, in [0, 2**31), of the node at position ``row``
    of the cluster's node list holding ``pods`` pods: among the top-scored
    nodes a cycle takes the highest rank (fewest pods first, then a seeded
    hash of row and pods), the lower row on an equal one.  (kube-scheduler
    draws uniformly among them; the project's rule is a seeded rank so that
    a run of alike pods can be placed by one sort.)"""
    z = (seed * _GOLDEN + row * 0xD1B54A32D192ED03 + pods * _GOLDEN) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    z ^= z >> 31
    return ((2047 - min(pods, 2047)) << 20) | (z >> 44)


def pick_tie(seed: int, ties: list, row_of: dict, pods_of: dict) -> str:
    """The node the tie rule takes among ``ties`` (names sharing the top
    total): the highest ``tie_rank``, then the lowest row."""
    return max(ties, key=lambda n: (tie_rank(seed, row_of[n], pods_of[n]), -row_of[n]))


# ---------------------------------------------------------------------------
# Object access
# ---------------------------------------------------------------------------

def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def _spec(obj: dict) -> dict:
    return obj.get("spec") or {}


def _name(obj: dict) -> str:
    return _meta(obj).get("name") or ""


def _labels(obj: dict) -> dict:
    return _meta(obj).get("labels") or {}


def pod_key(pod: dict) -> str:
    meta = _meta(pod)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def split_objects(objects: list[dict]) -> tuple[list[dict], dict[str, list[dict]]]:
    """Nodes in input order, and the pods bound to each node.

    A Pod counts on a node when ``spec.nodeName`` names it; pods without a
    nodeName are pending and ignored, and so are finished pods (phase
    Succeeded/Failed), which the scheduler's informer never sees.
    """
    nodes = [o for o in objects if o.get("kind") == "Node"]
    bound: dict[str, list[dict]] = {_name(n): [] for n in nodes}
    for o in objects:
        if o.get("kind") != "Pod":
            continue
        node_name = _spec(o).get("nodeName")
        if not node_name or node_name not in bound:
            continue
        if ((o.get("status") or {}).get("phase")) in ("Succeeded", "Failed"):
            continue
        bound[node_name].append(o)
    return nodes, bound


# ---------------------------------------------------------------------------
# Quantities and resource names
# (k8s.io/apimachinery/pkg/api/resource, pkg/apis/core/v1/helper/helpers.go)
# ---------------------------------------------------------------------------

def quantity(value) -> Fraction:
    """Exact value of a Kubernetes quantity (string or number)."""
    return Fraction(_parse_quantity(value))


def resource_list_value(value) -> Fraction:
    """A ResourceList entry after API defaulting (SetDefaults_ResourceList in
    pkg/apis/core/v1/defaults.go rounds every value up to a whole milli-unit,
    magnitude away from zero)."""
    q = quantity(value)
    steps = q * 1000
    if steps.denominator == 1:
        return q
    mag = math.ceil(abs(steps))
    return Fraction(mag if q > 0 else -mag, 1000)


def canonical(resource: str, q: Fraction) -> int:
    """Quantity.MilliValue() for cpu, Quantity.Value() otherwise (both round up)."""
    if resource == "cpu":
        return math.ceil(q * 1000)
    return math.ceil(q)


def is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def is_prefixed_native(name: str) -> bool:
    return "kubernetes.io/" in name


def is_native(name: str) -> bool:
    return "/" not in name or is_prefixed_native(name)


def is_extended(name: str) -> bool:
    """IsExtendedResourceName: has a domain, is not native, not "requests."-prefixed."""
    return not is_native(name) and not name.startswith("requests.")


def is_attachable_volume(name: str) -> bool:
    return name.startswith("attachable-volumes-")


def is_scalar(name: str) -> bool:
    """IsScalarResourceName (pkg/scheduler/util/utils.go): resources kept in
    framework.Resource.ScalarResources."""
    return is_extended(name) or is_hugepages(name) or is_prefixed_native(name) \
        or is_attachable_volume(name)


def _fit_tracked(name: str) -> bool:
    """Resource names framework.Resource keeps (others are dropped)."""
    return name in ("cpu", "memory", "ephemeral-storage") or is_scalar(name)


# ---------------------------------------------------------------------------
# Pod requests (k8s.io/component-helpers/resource/helpers.go PodRequests;
# API defaulting pkg/apis/core/v1/defaults.go SetDefaults_Pod)
# ---------------------------------------------------------------------------

def container_requests(container: dict) -> dict[str, Fraction]:
    """Effective requests of one container after API defaulting:
    a resource with a limit but no request gets request = limit."""
    res = container.get("resources") or {}
    out = {k: resource_list_value(v) for k, v in (res.get("requests") or {}).items()}
    for k, v in (res.get("limits") or {}).items():
        if k not in out:
            out[k] = resource_list_value(v)
    return out


def _apply_non_missing(reqs: dict[str, Fraction], non_missing: dict[str, Fraction] | None):
    if not non_missing:
        return reqs
    out = dict(reqs)
    for k, v in non_missing.items():
        if k not in out:
            out[k] = v
    return out


def _add_into(acc: dict, more: dict):
    for k, v in more.items():
        acc[k] = acc.get(k, Fraction(0)) + v


def _max_into(acc: dict, more: dict):
    for k, v in more.items():
        if k not in acc or v > acc[k]:
            acc[k] = v


def _is_restartable(container: dict) -> bool:
    return container.get("restartPolicy") == "Always"


def pod_requests(pod: dict, non_missing: dict[str, Fraction] | None = None) -> dict[str, int]:
    """PodRequests: per resource, the running sum of regular containers (plus
    restartable "sidecar" init containers, which keep running) against the
    peak of each ordinary init container (which runs on top of the sidecars
    started before it); the larger wins; pod overhead is added.

    ``non_missing`` gives values for a container that lacks a key entirely
    (the scheduler's 100m / 200Mi non-zero defaults for scoring).
    The sum is exact; each total is then rounded up to canonical units.
    """
    spec = _spec(pod)
    reqs: dict[str, Fraction] = {}
    for c in spec.get("containers") or []:
        _add_into(reqs, _apply_non_missing(container_requests(c), non_missing))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for c in spec.get("initContainers") or []:
        creqs = _apply_non_missing(container_requests(c), non_missing)
        if _is_restartable(c):
            _add_into(reqs, creqs)
            _add_into(sidecars, creqs)
            this = dict(sidecars)
        else:
            this = {}
            _add_into(this, creqs)
            _add_into(this, sidecars)
        _max_into(init_peak, this)
    _max_into(reqs, init_peak)
    overhead = spec.get("overhead")
    if overhead:
        _add_into(reqs, {k: resource_list_value(v) for k, v in overhead.items()})
    return {k: canonical(k, v) for k, v in reqs.items()}


_NON_ZERO_DEFAULTS = {"cpu": Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000),
                      "memory": Fraction(DEFAULT_MEMORY_REQUEST)}


def pod_nonzero_requests(pod: dict) -> dict[str, int]:
    """PodRequests with the non-zero defaults applied per container (and per
    init container) that lacks a cpu / memory key.  An explicit "0" stays 0."""
    return pod_requests(pod, _NON_ZERO_DEFAULTS)


def fit_request(pod: dict) -> dict[str, int]:
    """framework.Resource of the pod: cpu, memory, ephemeral-storage and the
    scalar resources (a listed scalar with value 0 is kept as 0)."""
    return {k: v for k, v in pod_requests(pod).items() if _fit_tracked(k)}


def node_allocatable(node: dict) -> dict[str, int]:
    """status.allocatable in canonical units (API defaulting copies capacity
    when allocatable is absent).  "pods" is the allowed pod number."""
    status = node.get("status") or {}
    alloc = status.get("allocatable")
    if alloc is None:
        alloc = status.get("capacity") or {}
    out = {}
    for k, v in alloc.items():
        if k == "pods" or _fit_tracked(k):
            out[k] = canonical(k, resource_list_value(v))
    return out


def node_requested(pods_on_node: list[dict]) -> dict[str, int]:
    """NodeInfo.Requested: sum of the bound pods' actual requests."""
    total: dict[str, int] = {}
    for p in pods_on_node:
        for k, v in pod_requests(p).items():
            if _fit_tracked(k):
                total[k] = total.get(k, 0) + v
    return total


def node_nonzero_requested(pods_on_node: list[dict]) -> dict[str, int]:
    """NodeInfo.NonZeroRequested: cpu and memory with the non-zero defaults."""
    total = {"cpu": 0, "memory": 0}
    for p in pods_on_node:
        r = pod_nonzero_requests(p)
        total["cpu"] += r.get("cpu", 0)
        total["memory"] += r.get("memory", 0)
    return total


# ---------------------------------------------------------------------------
# Args: v1 defaulting and validation
# (pkg/scheduler/apis/config/v1/defaults.go, pkg/scheduler/apis/config/validation/
#  validation_pluginargs.go)
# ---------------------------------------------------------------------------

def _resource_specs(resources, path: str) -> list[dict]:
    if not resources:
        return [dict(r) for r in DEFAULT_RESOURCE_SPEC]
    out = []
    for i, r in enumerate(resources):
        w = r.get("weight", 0) or 0
        if w == 0:
            w = 1                                   # v1 default for an unset / 0 weight
        if not (1 <= w <= MAX_NODE_SCORE):
            raise OracleConfigError(f"{path}[{i}].weight",
                                    f"invalid weight {w}: must be in the range [1, 100]")
        out.append({"name": r["name"], "weight": w})
    return out


def fit_args(args: dict | None) -> dict:
    """Defaulted, validated NodeResourcesFitArgs."""
    args = dict(args or {})
    ss = args.get("scoringStrategy")
    if ss is None:
        ss = {"type": "LeastAllocated", "resources": [dict(r) for r in DEFAULT_RESOURCE_SPEC]}
    ss = dict(ss)
    if ss.get("type") not in SCORING_STRATEGIES:
        raise OracleConfigError("scoringStrategy.type", f"unsupported value {ss.get('type')!r}")
    ss["resources"] = _resource_specs(ss.get("resources"), "scoringStrategy.resources")
    if ss["type"] == "RequestedToCapacityRatio":
        rtcr = ss.get("requestedToCapacityRatio") or {}
        shape = rtcr.get("shape") or []
        path = "scoringStrategy.requestedToCapacityRatio.shape"
        if not shape:
            raise OracleConfigError(path, "at least one point must be specified")
        for i, p in enumerate(shape):
            u, s = p.get("utilization", 0), p.get("score", 0)
            if not (0 <= u <= 100):
                raise OracleConfigError(f"{path}[{i}].utilization", "must be in [0, 100]")
            if i > 0 and u <= shape[i - 1].get("utilization", 0):
                raise OracleConfigError(f"{path}[{i}].utilization",
                                        "values must be sorted in increasing order")
            if not (0 <= s <= MAX_CUSTOM_PRIORITY_SCORE):
                raise OracleConfigError(f"{path}[{i}].score", "must be in [0, 10]")
    for i, g in enumerate(args.get("ignoredResourceGroups") or []):
        if "/" in g:
            raise OracleConfigError(f"ignoredResourceGroups[{i}]",
                                    "resource group name can't contain '/'")
    args["scoringStrategy"] = ss
    args.setdefault("ignoredResources", [])
    args.setdefault("ignoredResourceGroups", [])
    return args


def balanced_args(args: dict | None) -> dict:
    """Defaulted, validated NodeResourcesBalancedAllocationArgs."""
    args = dict(args or {})
    args["resources"] = _resource_specs(args.get("resources"), "resources")
    # ValidateNodeResourcesBalancedAllocationArgs: no duplicate names, and
    # every weight (after v1 defaulting) must be exactly 1.
    seen = set()
    for i, r in enumerate(args["resources"]):
        if r["name"] in seen:
            raise OracleConfigError(f"resources[{i}].name", f"duplicate value {r['name']!r}")
        seen.add(r["name"])
        if r["weight"] != 1:
            raise OracleConfigError(f"resources[{i}].weight", f"{r['weight']}: must be 1")
    return args


def node_affinity_args(args: dict | None) -> dict:
    """Validated NodeAffinityArgs: the scheduler-enforced terms must parse."""
    args = dict(args or {})
    added = args.get("addedAffinity")
    if added:
        if added.get("requiredDuringSchedulingRequiredDuringExecution"):
            raise OracleConfigError("addedAffinity.requiredDuringSchedulingRequiredDuringExecution",
                                    "not supported")
        req = added.get("requiredDuringSchedulingIgnoredDuringExecution")
        if req is not None:
            for i, term in enumerate(req.get("nodeSelectorTerms") or []):
                errs = parse_term(term)[1]
                if errs:
                    raise OracleConfigError(
                        f"addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                        f".nodeSelectorTerms[{i}]", "; ".join(errs))
        for i, pref in enumerate(added.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
            if pref.get("weight", 0) <= 0 or pref.get("weight", 0) > 100:
                raise OracleConfigError(
                    f"addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}].weight",
                    "must be in the range 1-100")
            errs = parse_term(pref.get("preference") or {})[1]
            if errs:
                raise OracleConfigError(
                    f"addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference",
                    "; ".join(errs))
    return args


def plugin_args(plugin: str, args: dict | None) -> dict:
    if plugin == "NodeResourcesFit":
        return fit_args(args)
    if plugin == "NodeResourcesBalancedAllocation":
        return balanced_args(args)
    if plugin == "NodeAffinity":
        return node_affinity_args(args)
    return dict(args or {})


# ---------------------------------------------------------------------------
# Filter: NodeUnschedulable (plugins/nodeunschedulable/node_unschedulable.go)
# ---------------------------------------------------------------------------

def toleration_tolerates(tol: dict, taint: dict) -> bool:
    """Toleration.ToleratesTaint (k8s.io/api/core/v1/toleration.go)."""
    t_effect = tol.get("effect") or ""
    if t_effect and t_effect != (taint.get("effect") or ""):
        return False
    t_key = tol.get("key") or ""
    if t_key and t_key != (taint.get("key") or ""):
        return False
    op = tol.get("operator") or ""
    if op in ("", "Equal"):
        return (tol.get("value") or "") == (taint.get("value") or "")
    if op == "Exists":
        return True
    return False


def tolerations_tolerate(tolerations: list[dict], taint: dict) -> bool:
    return any(toleration_tolerates(t, taint) for t in tolerations)


def filter_node_unschedulable(pod: dict, node: dict, ctx: dict):
    """A node with spec.unschedulable rejects pods that do not tolerate the
    node.kubernetes.io/unschedulable:NoSchedule taint."""
    if not _spec(node).get("unschedulable"):
        return None
    taint = {"key": TAINT_NODE_UNSCHEDULABLE, "effect": "NoSchedule"}
    if tolerations_tolerate(_spec(pod).get("tolerations") or [], taint):
        return None
    return (UNRESOLVABLE, [REASON_NODE_UNSCHEDULABLE])


# ---------------------------------------------------------------------------
# Filter: NodeName (plugins/nodename/node_name.go)
# ---------------------------------------------------------------------------

def filter_node_name(pod: dict, node: dict, ctx: dict):
    """spec.nodeName, when set, must equal the node's name."""
    want = _spec(pod).get("nodeName") or ""
    if not want or want == _name(node):
        return None
    return (UNRESOLVABLE, [REASON_NODE_NAME])


# ---------------------------------------------------------------------------
# TaintToleration (plugins/tainttoleration/taint_toleration.go)
# ---------------------------------------------------------------------------

def filter_taint_toleration(pod: dict, node: dict, ctx: dict):
    """The first NoSchedule/NoExecute taint (node order) that no toleration
    tolerates rejects the node."""
    tolerations = _spec(pod).get("tolerations") or []
    for taint in _spec(node).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not tolerations_tolerate(tolerations, taint):
            reason = f"node(s) had untolerated taint {{{taint.get('key') or ''}: {taint.get('value') or ''}}}"
            return (UNRESOLVABLE, [reason])
    return None


def score_taint_toleration(pod: dict, node: dict, ctx: dict) -> int:
    """Count of PreferNoSchedule taints not tolerated by the pod's tolerations
    whose effect is empty or PreferNoSchedule (raw; reverse-normalized)."""
    tols = [t for t in (_spec(pod).get("tolerations") or [])
            if (t.get("effect") or "") in ("", "PreferNoSchedule")]
    count = 0
    for taint in _spec(node).get("taints") or []:
        if taint.get("effect") != "PreferNoSchedule":
            continue
        if not tolerations_tolerate(tols, taint):
            count += 1
    return count


# ---------------------------------------------------------------------------
# Node selectors (k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go,
# k8s.io/apimachinery/pkg/labels/selector.go)
# ---------------------------------------------------------------------------

_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_INT64_RE = re.compile(r"^[+-]?[0-9]+$")


def _valid_label_value(v: str) -> bool:
    return len(v) <= 63 and bool(_LABEL_VALUE_RE.match(v))


def _valid_qualified_name(key: str) -> bool:
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.match(prefix):
            return False
    else:
        return False
    return 0 < len(name) <= 63 and bool(_NAME_RE.match(name))


def _parse_go_int64(s: str):
    """strconv.ParseInt(s, 10, 64), or None when it fails."""
    if not isinstance(s, str) or not _INT64_RE.match(s):
        return None
    v = int(s)
    if not (-(1 << 63) <= v < (1 << 63)):
        return None
    return v


def _parse_label_requirement(expr: dict):
    """labels.NewRequirement for one matchExpressions entry: (req, error)."""
    key = expr.get("key") or ""
    op = expr.get("operator") or ""
    values = list(expr.get("values") or [])
    if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
        return None, f"{op!r} is not a valid node selector operator"
    if not _valid_qualified_name(key):
        return None, f"invalid label key {key!r}"
    if op in ("In", "NotIn") and not values:
        return None, "for 'in', 'notin' operators, values set can't be empty"
    if op in ("Exists", "DoesNotExist") and values:
        return None, "values set must be empty for exists and does not exist"
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            return None, "for 'Gt', 'Lt' operators, exactly one value is required"
        if _parse_go_int64(values[0]) is None:
            return None, "for 'Gt', 'Lt' operators, the value must be an integer"
    for v in values:
        if not _valid_label_value(v):
            return None, f"invalid label value {v!r}"
    return (key, op, values), None


def _label_requirement_matches(req, labels: dict) -> bool:
    key, op, values = req
    has = key in labels
    if op == "In":
        return has and labels[key] in values
    if op == "NotIn":
        return (not has) or labels[key] not in values
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    # Gt / Lt: the label must exist and parse as an integer.
    if not has:
        return False
    lv = _parse_go_int64(labels[key])
    if lv is None:
        return False
    rv = _parse_go_int64(values[0])
    return lv > rv if op == "Gt" else lv < rv


def _parse_field_requirement(expr: dict):
    """nodeSelectorRequirementsAsFieldSelector for one matchFields entry."""
    op = expr.get("operator") or ""
    values = list(expr.get("values") or [])
    if op not in ("In", "NotIn"):
        return None, f"{op!r} is not a valid node field selector operator"
    if len(values) != 1:
        return None, "must have one element"
    return (expr.get("key") or "", op, values[0]), None


def parse_term(term: dict):
    """A NodeSelectorTerm parsed: ((label_reqs|None, field_reqs|None), errors).

    ``None`` means the term has no matchExpressions (matchFields)."""
    errors = []
    label_reqs = None
    field_reqs = None
    if term.get("matchExpressions"):
        label_reqs = []
        for e in term["matchExpressions"]:
            r, err = _parse_label_requirement(e)
            if err:
                errors.append(err)
            else:
                label_reqs.append(r)
    if term.get("matchFields"):
        field_reqs = []
        for e in term["matchFields"]:
            r, err = _parse_field_requirement(e)
            if err:
                errors.append(err)
            else:
                field_reqs.append(r)
    return (label_reqs, field_reqs), errors


def _node_fields(node: dict) -> dict:
    """extractNodeFields: only metadata.name, and only when non-empty."""
    name = _name(node)
    return {"metadata.name": name} if name else {}


def term_matches(term: dict, node: dict) -> bool:
    """nodeSelectorTerm.match: an empty term or one that failed to parse
    matches nothing; matchFields are ignored for a node without a name."""
    (label_reqs, field_reqs), errors = parse_term(term)
    if errors:
        return False
    if label_reqs is None and field_reqs is None:
        return False
    labels = _labels(node)
    if label_reqs is not None and not all(_label_requirement_matches(r, labels) for r in label_reqs):
        return False
    fields = _node_fields(node)
    if field_reqs is not None and fields:
        for key, op, value in field_reqs:
            actual = fields.get(key, "")
            if op == "In" and actual != value:
                return False
            if op == "NotIn" and actual == value:
                return False
    return True


def node_selector_matches(selector: dict, node: dict) -> bool:
    """NodeSelector.Match: terms are ORed; no terms matches nothing."""
    return any(term_matches(t, node) for t in (selector.get("nodeSelectorTerms") or []))


def _pod_required_node_affinity(pod: dict):
    aff = (_spec(pod).get("affinity") or {}).get("nodeAffinity") or {}
    return aff.get("requiredDuringSchedulingIgnoredDuringExecution")


def _pod_preferred_node_affinity(pod: dict):
    aff = (_spec(pod).get("affinity") or {}).get("nodeAffinity") or {}
    return aff.get("preferredDuringSchedulingIgnoredDuringExecution")


def pod_required_affinity_matches(pod: dict, node: dict) -> bool:
    """GetRequiredNodeAffinity(pod).Match: spec.nodeSelector (exact label
    equality) AND the required node selector terms."""
    labels = _labels(node)
    for k, v in (_spec(pod).get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    required = _pod_required_node_affinity(pod)
    if required is not None:
        return node_selector_matches(required, node)
    return True


# ---------------------------------------------------------------------------
# NodeAffinity (plugins/nodeaffinity/node_affinity.go)
# ---------------------------------------------------------------------------

def prefilter_node_affinity(pod: dict, args: dict):
    """PreFilter: returns (code, reasons, node_names|None).

    Skip when there is nothing to check.  When every required term names
    nodes through ``matchFields metadata.name In``, the result is the union
    over terms of the intersection within each term; an empty union is
    UnschedulableAndUnresolvable ("pod affinity terms conflict")."""
    required = _pod_required_node_affinity(pod)
    added = (args.get("addedAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None and added is None and _spec(pod).get("nodeSelector") is None:
        return (SKIP, [], None)
    if required is None or not (required.get("nodeSelectorTerms") or []):
        return (SUCCESS, [], None)
    union = None
    for term in required["nodeSelectorTerms"]:
        term_names = None
        for r in term.get("matchFields") or []:
            if r.get("key") == "metadata.name" and r.get("operator") == "In":
                values = set(r.get("values") or [])
                term_names = values if term_names is None else (term_names & values)
        if term_names is None:
            return (SUCCESS, [], None)          # this term allows every node
        union = term_names if union is None else (union | term_names)
    if union is not None and not union:
        return (UNRESOLVABLE, [REASON_AFFINITY_CONFLICT], None)
    return (SUCCESS, [], sorted(union))


def filter_node_affinity(pod: dict, node: dict, ctx: dict):
    """Scheduler-enforced addedAffinity first, then the pod's nodeSelector and
    required node affinity."""
    added = (ctx["args"].get("addedAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if added is not None and not node_selector_matches(added, node):
        return (UNRESOLVABLE, [REASON_AFFINITY_ENFORCED])
    if not pod_required_affinity_matches(pod, node):
        return (UNRESOLVABLE, [REASON_AFFINITY_POD])
    return None


def _parsed_preferred_terms(terms):
    """NewPreferredSchedulingTerms: terms with weight 0 or an empty preference
    are dropped; a parse error is an error."""
    out = []
    for i, t in enumerate(terms or []):
        pref = t.get("preference") or {}
        if not t.get("weight") or not (pref.get("matchExpressions") or pref.get("matchFields")):
            continue
        errors = parse_term(pref)[1]
        if errors:
            raise OracleSchedulingError(f"preferred term {i}: {'; '.join(errors)}")
        out.append((t["weight"], pref))
    return out


def prescore_node_affinity(pod: dict, args: dict) -> str:
    """Skip when neither the pod nor addedAffinity has preferred terms."""
    pod_pref = _pod_preferred_node_affinity(pod)
    if pod_pref is not None:
        _parsed_preferred_terms(pod_pref)       # a parse error fails the cycle
    added_pref = (args.get("addedAffinity") or {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution")
    if pod_pref is None and not added_pref:
        return SKIP
    return SUCCESS


def score_node_affinity(pod: dict, node: dict, ctx: dict) -> int:
    """Sum of the weights of matching preferred terms (addedAffinity's and
    the pod's); normalized without reversal."""
    total = 0
    added_pref = (ctx["args"].get("addedAffinity") or {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution")
    for weight, pref in _parsed_preferred_terms(added_pref):
        if term_matches(pref, node):
            total += weight
    for weight, pref in _parsed_preferred_terms(_pod_preferred_node_affinity(pod)):
        if term_matches(pref, node):
            total += weight
    return total


# ---------------------------------------------------------------------------
# NodePorts (plugins/nodeports/node_ports.go, framework/types.go HostPortInfo,
# pkg/scheduler/util/utils.go GetHostPorts)
# ---------------------------------------------------------------------------

def host_ports(pod: dict) -> list[tuple[str, str, int]]:
    """(hostIP, protocol, hostPort) of every port with hostPort > 0 in
    restartable init containers and regular containers; "" IP means 0.0.0.0,
    "" protocol means TCP."""
    spec = _spec(pod)
    out = []
    containers = [c for c in (spec.get("initContainers") or []) if _is_restartable(c)]
    containers += list(spec.get("containers") or [])
    for c in containers:
        for p in c.get("ports") or []:
            hp = int(p.get("hostPort") or 0)
            if hp <= 0:
                continue
            out.append((p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", hp))
    return out


def host_port_conflict(used: set, ip: str, protocol: str, port: int) -> bool:
    """HostPortInfo.CheckConflict: 0.0.0.0 conflicts with the same
    (protocol, port) on any IP; a specific IP conflicts with itself and 0.0.0.0."""
    if ip == "0.0.0.0":
        return any(pr == protocol and po == port for (_i, pr, po) in used)
    return ("0.0.0.0", protocol, port) in used or (ip, protocol, port) in used


def filter_node_ports(pod: dict, node: dict, ctx: dict):
    """Every wanted host port must be free on the node."""
    wanted = host_ports(pod)
    if not wanted:
        return None                              # PreFilter Skip
    used = set()
    for p in ctx["pods_on_node"]:
        used.update(host_ports(p))
    for ip, protocol, port in wanted:
        if host_port_conflict(used, ip, protocol, port):
            return (UNSCHEDULABLE, [REASON_NODE_PORTS])
    return None


# ---------------------------------------------------------------------------
# NodeResourcesFit filter (plugins/noderesources/fit.go fitsRequest)
# ---------------------------------------------------------------------------

def _ignored_extended(name: str, args: dict) -> bool:
    if not is_extended(name):
        return False
    if name in (args.get("ignoredResources") or []):
        return True
    groups = args.get("ignoredResourceGroups") or []
    return bool(groups) and name.split("/")[0] in groups


def filter_fit(pod: dict, node: dict, ctx: dict):
    """Collect every shortage, in upstream order: pod count; then (unless the
    pod requests nothing) cpu, memory, ephemeral-storage, then scalar
    resources in sorted name order (upstream iterates a Go map)."""
    args = ctx["args"]
    request = fit_request(pod)
    alloc = node_allocatable(node)
    used = node_requested(ctx["pods_on_node"])
    reasons = []
    if len(ctx["pods_on_node"]) + 1 > alloc.get("pods", 0):
        reasons.append(REASON_TOO_MANY_PODS)
    scalars = sorted(k for k in request if is_scalar(k))
    requests_nothing = (request.get("cpu", 0) == 0 and request.get("memory", 0) == 0
                        and request.get("ephemeral-storage", 0) == 0 and not scalars)
    if not requests_nothing:
        for name in ("cpu", "memory", "ephemeral-storage"):
            want = request.get(name, 0)
            if want > 0 and want > alloc.get(name, 0) - used.get(name, 0):
                reasons.append(f"Insufficient {name}")
        for name in scalars:
            want = request[name]
            if want == 0 or _ignored_extended(name, args):
                continue
            if want > alloc.get(name, 0) - used.get(name, 0):
                reasons.append(f"Insufficient {name}")
    if reasons:
        return (UNSCHEDULABLE, reasons)
    return None


# ---------------------------------------------------------------------------
# Fit / BalancedAllocation scoring (plugins/noderesources/resource_allocation.go,
# least_allocated.go, most_allocated.go, requested_to_capacity_ratio.go,
# balanced_allocation.go, plugins/helper/shape_score.go)
# ---------------------------------------------------------------------------

def _alloc_and_requested(resource: str, pod_request: int, node: dict, pods_on_node: list[dict],
                         use_requested: bool):
    """calculateResourceAllocatableRequest: (allocatable, node requested + pod
    request), or (0, 0) to skip the resource (a scalar the pod does not
    request, or one the node does not list).  cpu/memory use the non-zero
    node totals unless ``use_requested``."""
    if pod_request == 0 and is_scalar(resource):
        return 0, 0
    alloc = node_allocatable(node)
    actual = node_requested(pods_on_node)
    if resource in ("cpu", "memory"):
        base = actual if use_requested else node_nonzero_requested(pods_on_node)
        return alloc.get(resource, 0), base.get(resource, 0) + pod_request
    if resource == "ephemeral-storage":
        return alloc.get(resource, 0), actual.get(resource, 0) + pod_request
    if is_scalar(resource) and resource in alloc:
        return alloc[resource], actual.get(resource, 0) + pod_request
    return 0, 0


def _pod_request_for(pod: dict, resource: str, use_requested: bool) -> int:
    reqs = pod_requests(pod) if use_requested else pod_nonzero_requests(pod)
    return reqs.get(resource, 0)


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    if requested > capacity:
        requested = capacity
    return requested * MAX_NODE_SCORE // capacity


def broken_linear_function(points):
    """helper.BuildBrokenLinearFunction over (utilization, score) points:
    flat before the first and after the last point, linear in between with
    Go integer division."""
    pts = [(int(p["utilization"]), int(p["score"])) if isinstance(p, dict) else
           (int(p[0]), int(p[1])) for p in points]

    def f(p: int) -> int:
        for i, (u, s) in enumerate(pts):
            if p <= u:
                if i == 0:
                    return pts[0][1]
                u0, s0 = pts[i - 1]
                return s0 + go_div((s - s0) * (p - u0), (u - u0))
        return pts[-1][1]
    return f


def _weighted_resource_score(per_resource, resources, rtcr: bool) -> int:
    node_score = 0
    weight_sum = 0
    for (alloc, req, score), spec in zip(per_resource, resources):
        if alloc == 0:
            continue
        if rtcr and score <= 0:
            continue
        node_score += score * spec["weight"]
        weight_sum += spec["weight"]
    if weight_sum == 0:
        return 0
    if rtcr:
        return go_round(float(node_score) / float(weight_sum))
    return node_score // weight_sum


def score_fit(pod: dict, node: dict, ctx: dict) -> int:
    """NodeResourcesFit Score with the configured strategy (no NormalizeScore)."""
    ss = ctx["args"]["scoringStrategy"]
    resources = ss["resources"]
    kind = ss["type"]
    if kind == "RequestedToCapacityRatio":
        shape = [{"utilization": p.get("utilization", 0),
                  "score": p.get("score", 0) * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)}
                 for p in ss["requestedToCapacityRatio"]["shape"]]
        f = broken_linear_function(shape)
    per = []
    for spec in resources:
        name = spec["name"]
        alloc, req = _alloc_and_requested(name, _pod_request_for(pod, name, False), node,
                                          ctx["pods_on_node"], use_requested=False)
        if alloc == 0:
            per.append((0, 0, 0))
            continue
        if kind == "LeastAllocated":
            s = least_requested_score(req, alloc)
        elif kind == "MostAllocated":
            s = most_requested_score(req, alloc)
        else:
            s = f(100) if req > alloc else f(req * 100 // alloc)
        per.append((alloc, req, s))
    return _weighted_resource_score(per, resources, kind == "RequestedToCapacityRatio")


def _balanced_pod_requests(pod: dict, args: dict) -> list[int]:
    return [_pod_request_for(pod, spec["name"], True) for spec in args["resources"]]


def prescore_balanced(pod: dict, args: dict) -> str:
    """v1.32: Skip for a pod that requests none of the configured resources."""
    if all(r == 0 for r in _balanced_pod_requests(pod, args)):
        return SKIP
    return SUCCESS


def score_balanced(pod: dict, node: dict, ctx: dict) -> int:
    """(1 - std of the requested/allocatable fractions) * 100, float64,
    truncated; actual requests (no non-zero defaults)."""
    fractions = []
    total = 0.0
    for spec, pod_req in zip(ctx["args"]["resources"], _balanced_pod_requests(pod, ctx["args"])):
        alloc, req = _alloc_and_requested(spec["name"], pod_req, node, ctx["pods_on_node"],
                                          use_requested=True)
        if alloc == 0:
            continue
        fraction = float(req) / float(alloc)
        if fraction > 1:
            fraction = 1.0
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = math.fabs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / float(len(fractions))
        acc = 0.0
        for fr in fractions:
            acc = acc + (fr - mean) * (fr - mean)
        std = math.sqrt(acc / float(len(fractions)))
    return go_int64((1 - std) * float(MAX_NODE_SCORE))


# ---------------------------------------------------------------------------
# ImageLocality (plugins/imagelocality/image_locality.go; image states from
# backend/cache/snapshot.go)
# ---------------------------------------------------------------------------

def normalized_image_name(name: str) -> str:
    """Append ":latest" when the name has no tag (the last ':' is not after
    the last '/'); digests ("@sha256:...") are left alone."""
    if name.rfind(":") <= name.rfind("/"):
        name = name + ":latest"
    return name


def node_image_sizes(node: dict) -> dict[str, int]:
    """The node's image names (as reported, not normalized) -> size."""
    out = {}
    for img in (node.get("status") or {}).get("images") or []:
        for n in img.get("names") or []:
            out[n] = int(img.get("sizeBytes") or 0)
    return out


def score_image_locality(pod: dict, node: dict, ctx: dict) -> int:
    """Sum over init and regular containers of size * (nodes having the
    image / all nodes), clamped to [23MB, 1000MB * containers], mapped to
    0..100 with integer division."""
    all_nodes = ctx["all_nodes"]
    total_nodes = len(all_nodes)
    sizes = node_image_sizes(node)
    spec = _spec(pod)
    containers = list(spec.get("initContainers") or []) + list(spec.get("containers") or [])
    total = 0
    for c in containers:
        image = normalized_image_name(c.get("image") or "")
        if image not in sizes:
            continue
        having = sum(1 for n in all_nodes if image in node_image_sizes(n))
        spread = float(having) / float(total_nodes)
        total += go_int64(float(sizes[image]) * spread)
    max_threshold = IMAGE_MAX_CONTAINER_THRESHOLD * len(containers)
    if total < IMAGE_MIN_THRESHOLD:
        total = IMAGE_MIN_THRESHOLD
    elif total > max_threshold:
        total = max_threshold
    return go_div(MAX_NODE_SCORE * (total - IMAGE_MIN_THRESHOLD),
                  max_threshold - IMAGE_MIN_THRESHOLD)


# ---------------------------------------------------------------------------
# Pod label selectors (apimachinery metav1.LabelSelectorAsSelector)
# ---------------------------------------------------------------------------

HOSTNAME_KEY = "kubernetes.io/hostname"
NS_NAME_LABEL = "kubernetes.io/metadata.name"
REASON_SPREAD_MISSING = ("node(s) didn't match pod topology spread constraints "
                         "(missing required label)")
REASON_SPREAD_SKEW = "node(s) didn't match pod topology spread constraints"
REASON_POD_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_POD_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"


def label_selector_matches(selector, labels: dict, extra=()) -> bool:
    """A LabelSelector on a label map: null matches nothing, {} everything;
    ``extra`` are (key, value) equality requirements ANDed in."""
    if selector is None and not extra:
        return False
    selector = selector or {}
    for k, v in extra:
        if labels.get(k) != v:
            return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if k not in labels or labels[k] != v:
            return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), list(e.get("values") or [])
        if op == "In" and not (key in labels and labels[key] in values):
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def _pod_ns(pod: dict) -> str:
    return _meta(pod).get("namespace") or "default"


def _terminating(pod: dict) -> bool:
    return bool(_meta(pod).get("deletionTimestamp"))


# ---------------------------------------------------------------------------
# PodTopologySpread (plugins/podtopologyspread/{common,filtering,scoring}.go)
# Feature gates on (NodeInclusionPolicy, MatchLabelKeys).  A pod without
# constraints gets the default ones (System: hostname 3 / zone 5,
# ScheduleAnyway; List: args.defaultConstraints) with the selector
# helper.DefaultSelector deduces from the Services / ReplicationControllers /
# ReplicaSets / StatefulSets among the objects (``args["_objects"]``).
# ---------------------------------------------------------------------------

SYSTEM_SPREAD_DEFAULTS = [
    {"maxSkew": 3, "topologyKey": HOSTNAME_KEY, "whenUnsatisfiable": "ScheduleAnyway"},
    {"maxSkew": 5, "topologyKey": "topology.kubernetes.io/zone",
     "whenUnsatisfiable": "ScheduleAnyway"},
]
_OWNER_KINDS = {("v1", "ReplicationController"), ("apps/v1", "ReplicaSet"),
                ("apps/v1", "StatefulSet")}


def _with_spread_objects(args: dict, objects: list[dict]) -> dict:
    if "PodTopologySpread" in args:
        args = dict(args)
        args["PodTopologySpread"] = dict(args["PodTopologySpread"], _objects=objects)
    return args


def _selector_requirements_ok(sel: dict) -> bool:
    """metav1.LabelSelectorAsSelector succeeds (operators and value counts)."""
    for e in sel.get("matchExpressions") or []:
        op, values = e.get("operator"), e.get("values") or []
        if op in ("In", "NotIn") and not values:
            return False
        if op in ("Exists", "DoesNotExist") and values:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def default_spread_selector(pod: dict, objects: list[dict]):
    """helper.DefaultSelector as a LabelSelector dict; None when it has no
    requirement (then the pod gets no default constraints)."""
    ns = _pod_ns(pod)
    labels = _labels(pod)
    merged: dict = {}
    exprs: list = []
    for o in objects:
        if o.get("kind") != "Service" or _pod_ns(o) != ns:
            continue
        sel = _spec(o).get("selector")
        if sel is None:
            continue        # a Service without a selector selects nothing
        if all(labels.get(k) == v for k, v in sel.items()):
            merged.update(sel)
    owner = None
    for ref in _meta(pod).get("ownerReferences") or []:
        if ref.get("controller") is True:
            owner = ref
            break
    if owner is not None and (owner.get("apiVersion"), owner.get("kind")) in _OWNER_KINDS:
        for o in objects:
            if (o.get("kind") != owner.get("kind") or _pod_ns(o) != ns
                    or _name(o) != owner.get("name")):
                continue
            sel = _spec(o).get("selector")
            if o["kind"] == "ReplicationController":
                if not sel:
                    sel = ((_spec(o).get("template") or {}).get("metadata") or {}).get(
                        "labels") or {}
                merged.update(sel)
            elif sel is not None and _selector_requirements_ok(sel):
                exprs += [{"key": k, "operator": "In", "values": [v]}
                          for k, v in (sel.get("matchLabels") or {}).items()]
                exprs += list(sel.get("matchExpressions") or [])
            break
    if not merged and not exprs:
        return None
    return {"matchLabels": merged, "matchExpressions": exprs}


def spread_require_all(pod: dict, args: dict | None) -> bool:
    """scoring.go requireAllTopologies: False only for System defaults."""
    return bool(_spec(pod).get("topologySpreadConstraints")) or (
        (args or {}).get("defaultingType") or "System") != "System"


def spread_constraints(pod: dict, action: str, args: dict | None = None) -> list[dict]:
    own = _spec(pod).get("topologySpreadConstraints") or []
    if not own:
        args = args or {}
        system = (args.get("defaultingType") or "System") == "System"
        defaults = SYSTEM_SPREAD_DEFAULTS if system else (args.get("defaultConstraints") or [])
        defaults = [c for c in defaults if c.get("whenUnsatisfiable") == action]
        if not defaults:
            return []
        sel = default_spread_selector(pod, args.get("_objects") or [])
        if sel is None:
            return []
        # The selector replaces labelSelector and matchLabelKeys.
        return [{"maxSkew": c.get("maxSkew", 1), "key": c.get("topologyKey"),
                 "selector": sel, "extra": (), "minDomains": c.get("minDomains") or 1,
                 "affinityPolicy": c.get("nodeAffinityPolicy") or "Honor",
                 "taintsPolicy": c.get("nodeTaintsPolicy") or "Ignore"} for c in defaults]
    out = []
    for c in own:
        if c.get("whenUnsatisfiable") != action:
            continue
        labels = _labels(pod)
        extra = tuple((k, labels[k]) for k in c.get("matchLabelKeys") or [] if k in labels)
        out.append({"maxSkew": c.get("maxSkew", 1), "key": c.get("topologyKey"),
                    "selector": c.get("labelSelector"), "extra": extra,
                    "minDomains": c.get("minDomains") or 1,
                    "affinityPolicy": c.get("nodeAffinityPolicy") or "Honor",
                    "taintsPolicy": c.get("nodeTaintsPolicy") or "Ignore"})
    return out


def _untolerated_no_schedule(pod: dict, node: dict) -> bool:
    tols = _spec(pod).get("tolerations") or []
    for taint in (_spec(node).get("taints") or []):
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerations_tolerate(tols, taint):
            return True
    return False


def _spread_node_counts(pod, node, c, bound) -> bool:
    """matchNodeInclusionPolicies."""
    if c["affinityPolicy"] == "Honor" and not pod_required_affinity_matches(pod, node):
        return False
    if c["taintsPolicy"] == "Honor" and _untolerated_no_schedule(pod, node):
        return False
    return True


def _count_matching(pods: list[dict], c: dict, ns: str) -> int:
    n = 0
    for p in pods:
        if _terminating(p) or _pod_ns(p) != ns:
            continue
        if label_selector_matches(c["selector"], _labels(p), c["extra"]):
            n += 1
    return n


def filter_pod_topology_spread(pod: dict, node: dict, ctx: dict):
    constraints = spread_constraints(pod, "DoNotSchedule", ctx.get("args"))
    if not constraints:
        return None
    all_nodes, bound = ctx["all_nodes"], ctx["bound"]
    ns = _pod_ns(pod)
    for c in constraints:
        key = c["key"]
        if key not in _labels(node):
            return UNRESOLVABLE, [REASON_SPREAD_MISSING]
        domain_counts: dict[str, int] = {}
        for other in all_nodes:
            ol = _labels(other)
            if not all(x["key"] in ol for x in constraints):
                continue
            if not _spread_node_counts(pod, other, c, bound):
                continue
            v = ol[key]
            domain_counts[v] = domain_counts.get(v, 0) + _count_matching(bound[_name(other)], c, ns)
        if len(domain_counts) < c["minDomains"] or not domain_counts:
            global_min = 0
        else:
            global_min = min(domain_counts.values())
        self_match = 1 if label_selector_matches(c["selector"], _labels(pod), c["extra"]) else 0
        match_num = domain_counts.get(_labels(node)[key], 0)
        if match_num + self_match - global_min > c["maxSkew"]:
            return UNSCHEDULABLE, [REASON_SPREAD_SKEW]
    return None


def prescore_pod_topology_spread(pod: dict, args: dict) -> str:
    return SUCCESS if spread_constraints(pod, "ScheduleAnyway", args) else SKIP


def scores_pod_topology_spread(pod, candidates, all_nodes, bound, args) -> dict[str, int]:
    """Score + NormalizeScore over the candidate (feasible) nodes.  With
    System defaults (not requireAllTopologies) no node is ignored: a node
    lacking a key reads it as "" when counting domains and skips that
    constraint when scored."""
    constraints = spread_constraints(pod, "ScheduleAnyway", args)
    require_all = spread_require_all(pod, args)
    ns = _pod_ns(pod)
    ignored = {_name(n) for n in candidates
               if require_all and not all(c["key"] in _labels(n) for c in constraints)}
    kept = [n for n in candidates if _name(n) not in ignored]
    weights = []
    domain_counts = []
    for c in constraints:
        key = c["key"]
        if key == HOSTNAME_KEY:
            size = len(candidates) - len(ignored)
        else:
            size = len({_labels(n).get(key, "") for n in kept})
        weights.append(math.log(float(size + 2)))
        counts = {}
        if key != HOSTNAME_KEY:
            wanted = {_labels(n).get(key, "") for n in kept}
            for other in all_nodes:
                ol = _labels(other)
                if require_all and not all(x["key"] in ol for x in constraints):
                    continue
                if not _spread_node_counts(pod, other, c, bound):
                    continue
                ov = ol.get(key, "")
                if ov in wanted:
                    counts[ov] = counts.get(ov, 0) + _count_matching(bound[_name(other)], c, ns)
        domain_counts.append(counts)
    raw = {}
    for n in candidates:
        if _name(n) in ignored:
            continue
        score = 0.0
        for c, w, counts in zip(constraints, weights, domain_counts):
            if c["key"] not in _labels(n):
                continue        # only without requireAllTopologies
            v = _labels(n)[c["key"]]
            cnt = (_count_matching(bound[_name(n)], c, ns) if c["key"] == HOSTNAME_KEY
                   else counts.get(v, 0))
            score += float(cnt) * w + float(c["maxSkew"] - 1)
        raw[_name(n)] = go_round(score)
    lo = min(raw.values()) if raw else 0
    hi = max(raw.values()) if raw else 0
    out = {}
    for n in candidates:
        name = _name(n)
        if name in ignored:
            out[name] = 0
        elif hi == 0:
            out[name] = MAX_NODE_SCORE
        else:
            out[name] = go_div(MAX_NODE_SCORE * (hi + lo - raw[name]), hi)
    return out


# ---------------------------------------------------------------------------
# InterPodAffinity (plugins/interpodaffinity/{filtering,scoring}.go)
# Namespaces carry only the label kubernetes.io/metadata.name.
# ---------------------------------------------------------------------------

def _affinity_terms(pod: dict, which: str, kind: str) -> list[dict]:
    """Terms of spec.affinity.<which> (podAffinity / podAntiAffinity), kind
    required or preferred; each {"weight", "term"}."""
    aff = (_spec(pod).get("affinity") or {}).get(which) or {}
    if kind == "required":
        return [{"weight": 1, "term": t}
                for t in aff.get("requiredDuringSchedulingIgnoredDuringExecution") or []]
    return [{"weight": w.get("weight", 0), "term": w.get("podAffinityTerm") or {}}
            for w in aff.get("preferredDuringSchedulingIgnoredDuringExecution") or []]


def affinity_term_matches(owner: dict, term: dict, target: dict) -> bool:
    """Does ``target`` match ``term`` of pod ``owner`` (namespaces, then selector)?"""
    namespaces = term.get("namespaces") or []
    ns_sel = term.get("namespaceSelector")
    target_ns = _pod_ns(target)
    if not namespaces and ns_sel is None:
        in_ns = target_ns == _pod_ns(owner)
    else:
        in_ns = target_ns in namespaces or label_selector_matches(
            ns_sel, {NS_NAME_LABEL: target_ns})
    return in_ns and label_selector_matches(term.get("labelSelector"), _labels(target))


def _all_bound(all_nodes, bound):
    for n in all_nodes:
        for p in bound[_name(n)]:
            yield n, p


def filter_inter_pod_affinity(pod: dict, node: dict, ctx: dict):
    all_nodes, bound = ctx["all_nodes"], ctx["bound"]
    labels = _labels(node)
    req_aff = [t["term"] for t in _affinity_terms(pod, "podAffinity", "required")]
    req_anti = [t["term"] for t in _affinity_terms(pod, "podAntiAffinity", "required")]
    # 1. the pod's required affinity
    if req_aff:
        counts = {}
        for n, p in _all_bound(all_nodes, bound):
            if all(affinity_term_matches(pod, t, p) for t in req_aff):
                for t in req_aff:
                    k = t.get("topologyKey")
                    if k in _labels(n):
                        pair = (k, _labels(n)[k])
                        counts[pair] = counts.get(pair, 0) + 1
        exist = True
        for t in req_aff:
            k = t.get("topologyKey")
            if k not in labels:
                return UNRESOLVABLE, [REASON_POD_AFFINITY]
            if counts.get((k, labels[k]), 0) <= 0:
                exist = False
        if not exist and not (not counts and all(affinity_term_matches(pod, t, pod)
                                                  for t in req_aff)):
            return UNRESOLVABLE, [REASON_POD_AFFINITY]
    # 2. the pod's required anti-affinity
    for t in req_anti:
        k = t.get("topologyKey")
        if k not in labels:
            continue
        for n, p in _all_bound(all_nodes, bound):
            if _labels(n).get(k) == labels[k] and k in _labels(n) and affinity_term_matches(pod, t, p):
                return UNSCHEDULABLE, [REASON_POD_ANTI_AFFINITY]
    # 3. bound pods' required anti-affinity against the pod
    for n, p in _all_bound(all_nodes, bound):
        for t in _affinity_terms(p, "podAntiAffinity", "required"):
            k = t["term"].get("topologyKey")
            if k in _labels(n) and k in labels and _labels(n)[k] == labels[k] and \
                    affinity_term_matches(p, t["term"], pod):
                return UNSCHEDULABLE, [REASON_EXISTING_ANTI_AFFINITY]
    return None


def _ipa_topology_score(pod, all_nodes, bound, args):
    """{(key, value): score} and whether anything was recorded."""
    hard = args.get("hardPodAffinityWeight", 1)
    if hard is None:
        hard = 1
    topo: dict = {}
    recorded = False
    own_aff = _affinity_terms(pod, "podAffinity", "preferred")
    own_anti = _affinity_terms(pod, "podAntiAffinity", "preferred")

    def process(owner, wt, target, node, mult):
        nonlocal recorded
        nl = _labels(node)
        if not nl:
            return
        k = wt["term"].get("topologyKey")
        if k in nl and affinity_term_matches(owner, wt["term"], target):
            topo[(k, nl[k])] = topo.get((k, nl[k]), 0) + wt["weight"] * mult
            recorded = True

    for n, p in _all_bound(all_nodes, bound):
        for wt in own_aff:
            process(pod, wt, p, n, 1)
        for wt in own_anti:
            process(pod, wt, p, n, -1)
        if hard > 0:
            for wt in _affinity_terms(p, "podAffinity", "required"):
                process(p, {"weight": hard, "term": wt["term"]}, pod, n, 1)
        for wt in _affinity_terms(p, "podAffinity", "preferred"):
            process(p, wt, pod, n, 1)
        for wt in _affinity_terms(p, "podAntiAffinity", "preferred"):
            process(p, wt, pod, n, -1)
    return topo, recorded


def prescore_inter_pod_affinity_full(pod, all_nodes, bound, args) -> str:
    own = _affinity_terms(pod, "podAffinity", "preferred") + \
        _affinity_terms(pod, "podAntiAffinity", "preferred")
    if args.get("ignorePreferredTermsOfExistingPods") and not own:
        return SKIP
    _, recorded = _ipa_topology_score(pod, all_nodes, bound, args)
    return SUCCESS if recorded else SKIP


def scores_inter_pod_affinity(pod, candidates, all_nodes, bound, args) -> dict[str, int]:
    topo, _ = _ipa_topology_score(pod, all_nodes, bound, args)
    raw = {}
    for n in candidates:
        nl = _labels(n)
        raw[_name(n)] = sum(v for (k, val), v in topo.items() if nl.get(k) == val and k in nl)
    lo, hi = min(raw.values()), max(raw.values())
    out = {}
    for name, s in raw.items():
        f = 0.0
        if hi - lo > 0:
            f = float(MAX_NODE_SCORE) * (float(s - lo) / float(hi - lo))
        out[name] = int(f)
    return out


# ---------------------------------------------------------------------------
# Normalization (framework/plugins/helper/normalize_score.go)
# ---------------------------------------------------------------------------

def default_normalize_score(max_priority: int, reverse: bool, scores: dict[str, int]) -> dict[str, int]:
    """DefaultNormalizeScore over the scored nodes."""
    max_count = 0
    for v in scores.values():
        if v > max_count:
            max_count = v
    if max_count == 0:
        return {k: (max_priority if reverse else v) for k, v in scores.items()}
    out = {}
    for k, v in scores.items():
        s = go_div(max_priority * v, max_count)
        out[k] = max_priority - s if reverse else s
    return out


# ---------------------------------------------------------------------------
# Plugin tables
# ---------------------------------------------------------------------------

FILTERS = {
    "NodeUnschedulable": filter_node_unschedulable,
    "NodeName": filter_node_name,
    "TaintToleration": filter_taint_toleration,
    "NodeAffinity": filter_node_affinity,
    "NodePorts": filter_node_ports,
    "NodeResourcesFit": filter_fit,
    "PodTopologySpread": filter_pod_topology_spread,
    "InterPodAffinity": filter_inter_pod_affinity,
}

# Score plugins whose Score/NormalizeScore depend on the whole candidate set:
# fn(pod, candidates, all_nodes, bound, args) -> {node: final score}.
SET_SCORES = {
    "PodTopologySpread": scores_pod_topology_spread,
    "InterPodAffinity": scores_inter_pod_affinity,
}

SCORES = {
    "NodeResourcesFit": score_fit,
    "NodeResourcesBalancedAllocation": score_balanced,
    "TaintToleration": score_taint_toleration,
    "NodeAffinity": score_node_affinity,
    "ImageLocality": score_image_locality,
}

# NormalizeScore: None = the plugin has none; otherwise the reverse flag.
NORMALIZE_REVERSE = {"TaintToleration": True, "NodeAffinity": False}


def prescore_status(plugin: str, pod: dict, args: dict) -> str:
    """PreScore outcome of a score plugin (Success or Skip)."""
    if plugin == "NodeResourcesBalancedAllocation":
        return prescore_balanced(pod, args)
    if plugin == "NodeAffinity":
        return prescore_node_affinity(pod, args)
    return SUCCESS


def _check_profile(profile: dict) -> tuple[list[str], dict[str, int], dict[str, dict]]:
    filters = list(profile.get("filters") or [])
    scores = dict(profile.get("scores") or {})
    raw_args = dict(profile.get("args") or {})
    for f in filters:
        if f not in FILTERS:
            raise OracleConfigError("filters", f"unsupported filter plugin {f!r}")
    for s, w in scores.items():
        if s not in SCORES and s not in SET_SCORES:
            raise OracleConfigError("scores", f"unsupported score plugin {s!r}")
        if not isinstance(w, int) or w < 0:
            raise OracleConfigError(f"scores.{s}", f"invalid weight {w!r}")
    args = {}
    for name in set(filters) | set(scores):
        args[name] = plugin_args(name, raw_args.get(name))
    return filters, {k: (w or 1) for k, w in scores.items()}, args


# ---------------------------------------------------------------------------
# The scheduling cycle
# ---------------------------------------------------------------------------

def oracle_explain(objects: list[dict], pod: dict, profile: dict, seed: int = 0,
                   attempt: int = 0) -> dict:
    """Explain one scheduling decision for ``pod`` (see the module docstring).

    Differences from a literal kube-scheduler run, on purpose: every node is
    evaluated (percentageOfNodesToScore is not modelled), and scores are
    reported even when only one node is feasible (upstream then skips
    scoring; the selected node is the same)."""
    filters, weights, args = _check_profile(profile)
    args = _with_spread_objects(args, objects)
    nodes, bound = split_objects(objects)
    names = [_name(n) for n in nodes]

    rejected: dict[str, dict] = {}
    candidates = list(nodes)

    # PreFilter: only NodeAffinity can narrow or reject here.
    if "NodeAffinity" in filters:
        code, reasons, allowed = prefilter_node_affinity(pod, args["NodeAffinity"])
        if code == UNRESOLVABLE:
            for n in nodes:
                rejected[_name(n)] = {"code": UNRESOLVABLE, "plugin": "NodeAffinity",
                                      "reasons": list(reasons)}
            candidates = []
        elif allowed is not None:
            keep = []
            for n in candidates:
                if _name(n) in allowed:
                    keep.append(n)
                else:
                    rejected[_name(n)] = {
                        "code": UNRESOLVABLE, "plugin": "NodeAffinity",
                        "reasons": ["node(s) didn't satisfy plugin(s) [NodeAffinity]"]}
            candidates = keep
        skip_affinity_filter = code == SKIP
    else:
        skip_affinity_filter = False

    feasible = []
    for node in candidates:
        ctx_base = {"pods_on_node": bound[_name(node)], "all_nodes": nodes, "bound": bound}
        verdict = None
        for plugin in filters:
            if plugin == "NodeAffinity" and skip_affinity_filter:
                continue
            out = FILTERS[plugin](pod, node, dict(ctx_base, args=args[plugin]))
            if out is not None:
                verdict = {"code": out[0], "plugin": plugin, "reasons": list(out[1])}
                break
        if verdict is None:
            feasible.append(node)
        else:
            rejected[_name(node)] = verdict

    feasible_names = [_name(n) for n in feasible]
    scores: dict[str, dict[str, int]] = {n: {} for n in feasible_names}
    if feasible:
        for plugin, _w in weights.items():
            if plugin == "PodTopologySpread":
                if prescore_pod_topology_spread(pod, args[plugin]) == SKIP:
                    continue
            elif plugin == "InterPodAffinity":
                if prescore_inter_pod_affinity_full(pod, nodes, bound, args[plugin]) == SKIP:
                    continue
            elif prescore_status(plugin, pod, args[plugin]) == SKIP:
                continue
            if plugin in SET_SCORES:
                final = SET_SCORES[plugin](pod, feasible, nodes, bound, args[plugin])
                for n in feasible_names:
                    scores[n][plugin] = final[n]
                continue
            raw = {}
            for node in feasible:
                ctx = {"pods_on_node": bound[_name(node)], "all_nodes": nodes,
                       "args": args[plugin]}
                raw[_name(node)] = SCORES[plugin](pod, node, ctx)
            if plugin in NORMALIZE_REVERSE:
                raw = default_normalize_score(MAX_NODE_SCORE, NORMALIZE_REVERSE[plugin], raw)
            for n in feasible_names:
                scores[n][plugin] = raw[n]
    total = {n: sum(s * weights[p] for p, s in scores[n].items()) for n in feasible_names}

    selected = None
    if feasible_names:
        best = max(total.values())
        ties = [n for n in feasible_names if total[n] == best]
        row_of = {_name(node): r for r, node in enumerate(nodes)}
        selected = pick_tie(seed, ties, row_of, {n: len(bound[n]) for n in ties})

    return {
        "pod": pod_key(pod),
        "profile": _spec(pod).get("schedulerName") or "default-scheduler",
        "backend": "oracle",
        "nodes_evaluated": len(names),
        "feasible": feasible_names,
        "filter": {n: rejected[n] for n in names if n in rejected},
        "scores": scores,
        "total": total,
        "selected": selected,
    }


def oracle_raw_score(objects: list[dict], pod: dict, plugin: str, args: dict | None) -> dict[str, int]:
    """Score of ``plugin`` on every node, then its NormalizeScore if any.

    This is what upstream's plugin tests assert: no filters run, and a
    PreScore Skip is ignored (Score is still called)."""
    a = plugin_args(plugin, args)
    nodes, bound = split_objects(objects)
    raw = {}
    for node in nodes:
        ctx = {"pods_on_node": bound[_name(node)], "all_nodes": nodes, "args": a}
        raw[_name(node)] = SCORES[plugin](pod, node, ctx)
    if plugin in NORMALIZE_REVERSE:
        raw = default_normalize_score(MAX_NODE_SCORE, NORMALIZE_REVERSE[plugin], raw)
    return raw


def oracle_raw_filter(objects: list[dict], pod: dict, plugin: str, args: dict | None) -> dict:
    """Filter of ``plugin`` alone on every node, without its PreFilter:
    {node: {"code", "reasons"}} with code "Success" for a passing node."""
    a = plugin_args(plugin, args)
    nodes, bound = split_objects(objects)
    out = {}
    for node in nodes:
        ctx = {"pods_on_node": bound[_name(node)], "all_nodes": nodes, "args": a}
        verdict = FILTERS[plugin](pod, node, ctx)
        out[_name(node)] = ({"code": SUCCESS, "reasons": []} if verdict is None
                            else {"code": verdict[0], "reasons": list(verdict[1])})
    return out


def oracle_prefilter(pod: dict, plugin: str, args: dict | None) -> dict:
    """PreFilter outcome: {"code", "reasons", "node_names": sorted list | None}."""
    a = plugin_args(plugin, args)
    if plugin == "NodeAffinity":
        code, reasons, names = prefilter_node_affinity(pod, a)
        return {"code": code, "reasons": reasons, "node_names": names}
    if plugin == "NodePorts":
        return {"code": SKIP if not host_ports(pod) else SUCCESS, "reasons": [],
                "node_names": None}
    return {"code": SUCCESS, "reasons": [], "node_names": None}



# ---------------------------------------------------------------------------
# DefaultPreemption, per node (framework/preemption/preemption.go,
# plugins/defaultpreemption/default_preemption.go SelectVictimsOnNode,
# filterPodsWithPDBViolation; pickOneNodeForPreemption)
# ---------------------------------------------------------------------------

NOW = float("inf")          # a pod without status.startTime started "now"


def pod_priority_of(pod: dict) -> int:
    p = _spec(pod).get("priority")
    return int(p) if p is not None else 0


def pod_start_time(pod: dict):
    """status.startTime in nanoseconds since the epoch (or NOW)."""
    t = (pod.get("status") or {}).get("startTime")
    if not t:
        return NOW
    m = re.match(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z$", t)
    import calendar
    secs = calendar.timegm(tuple(int(x) for x in m.groups()[:6]))
    frac = (m.group(7) or "").ljust(9, "0")[:9]
    return secs * 1_000_000_000 + int(frac)


def _selector_matches(selector, labels: dict) -> bool:
    if not selector:
        return False
    ml = selector.get("matchLabels") or {}
    me = selector.get("matchExpressions") or []
    if not ml and not me:
        return False
    if any(labels.get(k) != v for k, v in ml.items()):
        return False
    for e in me:
        k, op, vals = e["key"], e["operator"], e.get("values") or []
        if op == "In" and not (k in labels and labels[k] in vals):
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def _more_important(a: dict, b: dict) -> bool:
    pa, pb = pod_priority_of(a), pod_priority_of(b)
    if pa != pb:
        return pa > pb
    sa, sb = pod_start_time(a), pod_start_time(b)
    if sa != sb:
        return sa < sb
    return pod_key(a) < pod_key(b)


def _sort_by_importance(pods: list[dict]) -> list[dict]:
    out = []
    for p in pods:                      # insertion sort, spelled out
        i = len(out)
        while i > 0 and _more_important(p, out[i - 1]):
            i -= 1
        out.insert(i, p)
    return out


def _pdb_violating(pods: list[dict], pdbs: list[dict]) -> list[bool]:
    """For pods in importance order: does evicting it break a PDB (running
    copies of disruptionsAllowed, disruptedPods ignored, same namespace)?"""
    allowed = [int((p.get("status") or {}).get("disruptionsAllowed") or 0) for p in pdbs]
    out = []
    for pod in pods:
        ns = _meta(pod).get("namespace") or "default"
        violating = False
        for i, pdb in enumerate(pdbs):
            if (_meta(pdb).get("namespace") or "default") != ns:
                continue
            if not _selector_matches((pdb.get("spec") or {}).get("selector"), _labels(pod)):
                continue
            if _name(pod) in ((pdb.get("status") or {}).get("disruptedPods") or {}):
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                violating = True
        out.append(violating)
    return out


def oracle_select_victims_on_node(preemptor: dict, node: dict, pods_on_node: list[dict],
                                  filters: list[str], args: dict, pdbs: list[dict],
                                  all_nodes: list[dict], bound: dict | None = None) -> dict:
    """{"status": "ok" | "no_victims" | "unfit" | "none_left", "victims":
    [keys, most important first], "num_pdb_violations", "filter_calls"}.

    ``bound`` ({node name: pods}) is every node's pods, which the pod-to-pod
    filters (PodTopologySpread, InterPodAffinity) count; each Filter call
    sees this node's pods as they stand at that step (upstream's RemovePod /
    AddPod PreFilter extensions keep the counts in step the same way; here
    they are recounted from scratch).  Without ``bound`` the other nodes
    hold no pods."""
    prio = pod_priority_of(preemptor)
    name = _name(node)
    others = dict(bound) if bound is not None else {_name(n): [] for n in all_nodes}
    lower = [p for p in pods_on_node if pod_priority_of(p) < prio]
    if not lower:
        return {"status": "no_victims", "victims": [], "num_pdb_violations": 0,
                "filter_calls": 0}
    remaining = [p for p in pods_on_node if pod_priority_of(p) >= prio]
    calls = 0

    def fits() -> bool:
        nonlocal calls
        calls += 1
        now = {**others, name: list(remaining)}
        for f in filters:
            ctx = {"pods_on_node": list(remaining), "all_nodes": all_nodes,
                   "bound": now, "args": args.get(f)}
            if FILTERS[f](preemptor, node, ctx) is not None:
                return False
        return True

    if not fits():
        return {"status": "unfit", "victims": [], "num_pdb_violations": 0,
                "filter_calls": calls}
    ordered = _sort_by_importance(lower)
    violating = _pdb_violating(ordered, pdbs)
    victims = []
    n_viol = 0
    for want in (True, False):
        for pod, v in zip(ordered, violating):
            if v != want:
                continue
            remaining.append(pod)
            if not fits():
                remaining.remove(pod)
                victims.append(pod)
                if v:
                    n_viol += 1
    victims = _sort_by_importance(victims)
    if not victims:
        return {"status": "none_left", "victims": [], "num_pdb_violations": 0,
                "filter_calls": calls}
    return {"status": "ok", "victims": [pod_key(p) for p in victims],
            "victim_pods": victims, "num_pdb_violations": n_viol, "filter_calls": calls}


def oracle_pick_one_node(candidates: list[tuple[str, dict]]) -> str | None:
    """pickOneNodeForPreemption over (node, victim result) in candidate order."""
    if not candidates:
        return None
    alive = list(candidates)

    def keep_best(score):
        nonlocal alive
        best = max(score(c) for c in alive)
        alive = [c for c in alive if score(c) == best]

    def earliest(c):
        vs = c[1]["victim_pods"]
        top = pod_priority_of(vs[0])
        return min(pod_start_time(p) for p in vs if pod_priority_of(p) == top)

    for score in (lambda c: -c[1]["num_pdb_violations"],
                  lambda c: -pod_priority_of(c[1]["victim_pods"][0]),
                  lambda c: -sum(pod_priority_of(p) + 2 ** 31 for p in c[1]["victim_pods"]),
                  lambda c: -len(c[1]["victim_pods"]),
                  earliest):
        if len(alive) == 1:
            break
        keep_best(score)
    return alive[0][0]

__all__ = [
    "OracleConfigError", "OracleSchedulingError",
    "oracle_explain", "oracle_raw_score", "oracle_raw_filter", "oracle_prefilter",
    "tie_rank", "pick_tie", "splitmix64", "broken_linear_function", "normalized_image_name",
    "pod_requests", "pod_nonzero_requests", "go_div", "go_round",
    "oracle_select_victims_on_node", "oracle_pick_one_node",
]
