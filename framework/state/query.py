"""Compile a pod into a ``PodQuery``: the numbers the fused kernels read.

Everything that depends only on the pod and the state's dictionaries is done
here, once per pod shape: request vectors, the taints it fails to tolerate
(as bitsets), node-selector programs, host-port conflicts, image sizes.
Pods with the same scheduling signature share one compiled query until the
state's dictionaries or node set change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from tensorsched.framework.config.plugin_args import LABEL_VALUE, check_qualified_name
from tensorsched.framework.errors import ConfigError
from tensorsched.framework.records.records import PodRecord, Taint, Toleration
from tensorsched.framework.records.records import MemoKey, PodRecord, Taint, Toleration
from tensorsched.kernels import layout as L

from .cluster_state import ClusterState, parse_label_int

_EMPTY = np.zeros(0, np.int64)
_EMPTY_BOOL = np.zeros(0, np.bool_)
_NO_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


@dataclass(frozen=True)
class QueryOptions:
    """What the enabled plugins ask of the kernels (hashable, built once per
    profile).  Resource lists are (name, weight) pairs; ``shape`` is the
    RequestedToCapacityRatio shape as (utilization, score 0..10) pairs."""

    filter_flags: int = 0
    score_flags: int = 0
    fit_strategy: int = L.STRATEGY_LEAST
    fit_resources: tuple = (("cpu", 1), ("memory", 1))
    shape: tuple = ()
    ignored_resources: frozenset = frozenset()
    ignored_groups: frozenset = frozenset()
    balanced_resources: tuple = (("cpu", 1), ("memory", 1))
    added_required: tuple | None = None      # NodeSelectorTerms (dicts), or None
    added_preferred: tuple = ()              # PreferredSchedulingTerms (dicts)

    @cached_property
    def _hash(self) -> int:
        # The addedAffinity terms are dicts (unhashable): hash their JSON.
        return hash((self.filter_flags, self.score_flags, self.fit_strategy,
                     self.fit_resources, self.shape, self.ignored_resources,
                     self.ignored_groups, self.balanced_resources,
                     json.dumps(self.added_required, sort_keys=True),
                     json.dumps(self.added_preferred, sort_keys=True)))

    def __hash__(self) -> int:
        return self._hash


def tolerates(tol: Toleration, taint: Taint) -> bool:
    """Upstream Toleration.ToleratesTaint."""
    if tol.effect and tol.effect != taint.effect:
        return False
    if tol.key and tol.key != taint.key:
        return False
    if tol.operator in ("", "Equal"):
        return tol.value == taint.value
    return tol.operator == "Exists"


def normalized_image_name(name: str) -> str:
    """Append ':latest' when the image reference carries no tag."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def is_extended_resource(name: str) -> bool:
    """v1helper.IsExtendedResourceName: a domain-prefixed name outside
    kubernetes.io that is not a quota 'requests.' name."""
    if "/" not in name or name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


def _valid_label_key(key: str) -> bool:
    try:
        check_qualified_name(key, "")
    except ConfigError:
        return False
    return True


def _valid_label_value(value) -> bool:
    return isinstance(value, str) and len(value) <= 63 and bool(LABEL_VALUE.match(value))


def _resource_kind(state: ClusterState, name: str) -> tuple[int, int]:
    r = state.resources.get(name)
    if name in ("cpu", "memory"):
        return r, L.RK_NONZERO
    if name == "ephemeral-storage":
        return r, L.RK_NATIVE
    if name == "pods" or r < 0:
        return max(r, 0), L.RK_SKIP
    return r, L.RK_SCALAR


class _ProgramBuilder:
    """Accumulates selector terms into flat SelectorProgram arrays."""

    def __init__(self, state: ClusterState):
        self.state = state
        self.term_offsets = [0]
        self.term_weights: list[int] = []
        self.req_key: list[int] = []
        self.req_op: list[int] = []
        self.req_num: list[int] = []
        self.val_offsets = [0]
        self.vals: list[int] = []

    @property
    def n_terms(self) -> int:
        return len(self.term_weights)

    def _requirement(self, key: str, op: int, values: list[int], num: int = 0) -> None:
        self.req_key.append(key)
        self.req_op.append(op)
        self.req_num.append(num)
        self.vals.extend(values)
        self.val_offsets.append(len(self.vals))

    def _value_ids(self, k: int, values) -> list[int]:
        if k < 0:
            return []
        d = self.state.label_values[k]
        return [i for i in (d.get(v) for v in values) if i >= 0]

    def add_expression(self, expr: dict, is_field: bool) -> None:
        key = expr.get("key", "")
        op_name = expr.get("operator", "")
        values = list(expr.get("values") or [])
        if is_field:
            ok = key == "metadata.name" and op_name in ("In", "NotIn") and len(values) == 1
            k = L.LABEL_KEY_NAME
        else:
            # labels.NewRequirement: a bad key or label value is a parse
            # error, and a term that fails to parse matches no node.
            ok = _valid_label_key(key) and all(_valid_label_value(v) for v in values)
            k = self.state.label_keys.get(key)
        op = {"In": L.OP_IN, "NotIn": L.OP_NOT_IN, "Exists": L.OP_EXISTS,
              "DoesNotExist": L.OP_DOES_NOT_EXIST, "Gt": L.OP_GT, "Lt": L.OP_LT
              }.get(op_name, L.OP_INVALID)
        num = 0
        if op in (L.OP_IN, L.OP_NOT_IN) and not values:
            ok = False
        elif op in (L.OP_EXISTS, L.OP_DOES_NOT_EXIST) and values:
            ok = False
        elif op in (L.OP_GT, L.OP_LT):
            parsed = parse_label_int(values[0]) if len(values) == 1 else None
            ok = ok and parsed is not None
            num = parsed or 0
        if not ok:
            op = L.OP_INVALID
        self._requirement(k, op, self._value_ids(k, values), num)

    def add_term(self, term: dict | None, weight: int = 1) -> None:
        term = term or {}
        for expr in term.get("matchExpressions") or []:
            self.add_expression(expr, is_field=False)
        for expr in term.get("matchFields") or []:
            self.add_expression(expr, is_field=True)
        self.term_offsets.append(len(self.req_key))
        self.term_weights.append(weight)

    def add_selector(self, selector: dict[str, str]) -> None:
        """spec.nodeSelector as one AND term of In requirements."""
        for key, value in selector.items():
            k = self.state.label_keys.get(key)
            self._requirement(k, L.OP_IN, self._value_ids(k, [value]))
        self.term_offsets.append(len(self.req_key))
        self.term_weights.append(1)

    def build(self) -> L.SelectorProgram:
        a = lambda x: np.asarray(x, np.int64)  # noqa: E731
        return L.SelectorProgram(a(self.term_offsets), a(self.term_weights),
                                 a(self.req_key), a(self.req_op), a(self.req_num),
                                 a(self.val_offsets), a(self.vals))


def compile_node_selector_terms(state: ClusterState, terms) -> L.SelectorProgram:
    """NodeSelectorTerms (ORed, as NodeAffinity's required terms; a PV's
    node affinity; a StorageClass's allowed topologies written as In
    expressions) compiled against the state's label dictionaries."""
    b = _ProgramBuilder(state)
    for t in terms or ():
        b.add_term(t)
    return b.build()


def _bitset(nbits: int, ids) -> np.ndarray:
    out = np.zeros(max(1, (nbits + 63) // 64), np.int64)
    for b in ids:
        out[b >> 6] |= np.int64(1) << np.int64(b & 63)
    return out


def prefilter_node_names(pod: PodRecord) -> set[str] | None:
    """NodeAffinity PreFilter: the node names every required term pins by
    matchFields metadata.name In, unioned over terms; None = no restriction."""
    req = (pod.node_affinity or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not req:
        return None
    names: set[str] | None = None
    for term in req.get("nodeSelectorTerms") or []:
        term_names = None
        for expr in (term or {}).get("matchFields") or []:
            if expr.get("key") == "metadata.name" and expr.get("operator") == "In":
                s = set(expr.get("values") or [])
                term_names = s if term_names is None else term_names & s
        if term_names is None:
            return None
        names = term_names | (names or set())
    return names


SIGNATURE = MemoKey("signature", __name__,
                    "the pod's query signature (``pod_signature``)")


def pod_signature(pod: PodRecord) -> tuple:
    """Everything about a pod the compiled query depends on (computed once
    per record: records are not mutated after parsing)."""
    sig = pod.memo.get(SIGNATURE)
    if sig is None:
        sig = (
            tuple(sorted(pod.requests.items())), pod.nonzero_cpu, pod.nonzero_memory,
            pod.node_name, tuple(pod.tolerations), tuple(sorted(pod.node_selector.items())),
            json.dumps(pod.node_affinity, sort_keys=True) if pod.node_affinity else "",
            tuple(pod.host_ports), tuple(pod.images),
        )
        pod.memo[SIGNATURE] = sig
    return sig


@dataclass
class QueryCache:
    """Compiled queries by (pod signature, options), valid for one state epoch."""

    epoch: tuple = ()
    entries: dict = field(default_factory=dict)

    def get(self, state: ClusterState, pod: PodRecord, options: QueryOptions,
            node_name_row: int | None = None) -> L.PodQuery:
        epoch = state_epoch(state)
        if epoch != self.epoch:
            self.entries.clear()
            self.epoch = epoch
        key = (pod_signature(pod), options, node_name_row)
        q = self.entries.get(key)
        if q is None:
            q = compile_query(state, pod, options)
            self.entries[key] = q
        return q


def state_epoch(state: ClusterState) -> tuple:
    """Changes whenever a compiled query could become stale: a dictionary or
    table grew, or nodes came or went (image spread, name rows)."""
    return (state.epoch, state.layout_version)


def _ignored_by_fit(name: str, options: QueryOptions) -> bool:
    """NodeResourcesFit's ignoredResources / ignoredResourceGroups (extended
    resources only)."""
    return is_extended_resource(name) and (
        name in options.ignored_resources or name.split("/", 1)[0] in options.ignored_groups)


def _taint_ids(state: ClusterState, pod: PodRecord) -> tuple[list[int], list[int], bool]:
    """(taint ids the pod does not tolerate with NoSchedule/NoExecute, ids of
    untolerated PreferNoSchedule taints, whether it tolerates the
    unschedulable taint)."""
    reject_ids, prefer_ids = [], []
    prefer_tols = [t for t in pod.tolerations if t.effect in ("", "PreferNoSchedule")]
    for b, (key, value, effect) in enumerate(state.taints.items):
        taint = Taint(key, value, effect)
        if effect in _NO_SCHEDULE_EFFECTS:
            if not any(tolerates(t, taint) for t in pod.tolerations):
                reject_ids.append(b)
        elif effect == "PreferNoSchedule":
            if not any(tolerates(t, taint) for t in prefer_tols):
                prefer_ids.append(b)
    return reject_ids, prefer_ids, any(tolerates(t, UNSCHEDULABLE_TAINT) for t in pod.tolerations)


def _node_affinity_programs(state: ClusterState, pod: PodRecord, options: QueryOptions):
    """(programs, [5] term offsets, required terms or None): nodeSelector,
    required terms, the plugin's addedAffinity, then the weighted preferred
    terms (the pod's and the added ones), as label programs."""
    progs = _ProgramBuilder(state)
    terms = [0]
    progs.add_selector(pod.node_selector)
    terms.append(progs.n_terms)
    required = (pod.node_affinity or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    for term in (required or {}).get("nodeSelectorTerms") or []:
        progs.add_term(term)
    terms.append(progs.n_terms)
    for term in options.added_required or ():
        progs.add_term(term)
    terms.append(progs.n_terms)
    preferred = list((pod.node_affinity or {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution") or [])
    for pref in preferred + list(options.added_preferred):
        progs.add_term(pref.get("preference"), int(pref.get("weight", 0)))
    terms.append(progs.n_terms)
    return progs.build(), terms, required


def _port_conflicts(state: ClusterState, pod: PodRecord) -> list[int]:
    """Ids of the host ports in use that conflict with the pod's (same
    protocol and port, and the same IP or either one 0.0.0.0)."""
    conflicts = []
    for hp in pod.host_ports:
        for b, (proto, ip, port) in enumerate(state.ports.items):
            if proto == hp.protocol and port == hp.port and (
                    hp.host_ip == "0.0.0.0" or ip == "0.0.0.0" or ip == hp.host_ip):
                conflicts.append(b)
    return conflicts


def _image_entries(state: ClusterState, pod: PodRecord) -> tuple[list[int], list[int]]:
    """(image table entries of the pod's images, their sizes scaled by the
    fraction of nodes that have them): ImageLocality's sum terms."""
    entries, scaled = [], []
    total_nodes = state.num_nodes
    by_name: dict[str, list[int]] = {}
    for e, (name, _size) in enumerate(state.images.items):
        by_name.setdefault(name, []).append(e)
    for image in pod.images:
        name = normalized_image_name(image)
        for e in by_name.get(name, ()):
            size = state.images.items[e][1]
            spread = state.image_name_nodes.get(name, 0) / total_nodes
            entries.append(e)
            scaled.append(int(float(size) * spread))
    return entries, scaled


def compile_query(state: ClusterState, pod: PodRecord, options: QueryOptions) -> L.PodQuery:
    """Build the kernels' view of ``pod`` under ``options`` (see PodQuery)."""
    # A requested resource no node has: every node lacks it ("Insufficient x").
    # Give it a column first so the kernels can say so.
    if options.filter_flags & L.F_FIT:
        for n, v in pod.requests.items():
            if n != "pods" and v > 0 and state.resources.get(n) < 0 \
                    and not _ignored_by_fit(n, options):
                state.intern_resource(n)
    request = state.resource_vector(pod.requests, intern=False)
    requests_anything = bool(
        request[L.RES_CPU] or request[L.RES_MEMORY] or request[L.RES_EPHEMERAL_STORAGE]
        or any(v > 0 for n, v in pod.requests.items()
               if n not in ("cpu", "memory", "ephemeral-storage", "pods")))
    fit_ignored = np.zeros(len(state.resources), np.bool_)
    for name, r in state.resources.index.items():
        fit_ignored[r] = _ignored_by_fit(name, options)
    node_name_row = state.node_rows.get(pod.node_name, -2) if pod.node_name else -1
    reject_ids, prefer_ids, tolerates_unschedulable = _taint_ids(state, pod)
    programs, terms, required = _node_affinity_programs(state, pod, options)
    fit_res, fit_kind = zip(*(_resource_kind(state, n) for n, _ in options.fit_resources)) \
        if options.fit_resources else ((), ())
    bal_res, bal_kind = zip(*(_resource_kind(state, n) for n, _ in options.balanced_resources)) \
        if options.balanced_resources else ((), ())
    image_entries, image_scaled = _image_entries(state, pod)
    n_taints = len(state.taints)
    a = lambda x: np.asarray(x, np.int64)  # noqa: E731
    return L.PodQuery(
        filter_flags=options.filter_flags, score_flags=options.score_flags,
        request=request, nonzero_request=a([pod.nonzero_cpu, pod.nonzero_memory]),
        requests_anything=requests_anything, fit_ignored=fit_ignored,
        node_name_row=node_name_row,
        # NodeAffinity's PreFilter node set is applied by the runtime when
        # that plugin is enabled (here: 'all rows').
        prefilter_rows=_EMPTY_BOOL, tolerates_unschedulable=tolerates_unschedulable,
        taint_reject=_bitset(n_taints, reject_ids), taint_prefer=_bitset(n_taints, prefer_ids),
        has_node_selector=bool(pod.node_selector), has_required=required is not None,
        has_added_required=options.added_required is not None,
        programs=programs, program_terms=a(terms),
        port_conflicts=_bitset(len(state.ports), _port_conflicts(state, pod)),
        fit_strategy=options.fit_strategy, fit_res=a(fit_res), fit_kind=a(fit_kind),
        fit_weights=a([w for _, w in options.fit_resources]),
        shape_util=a([u for u, _ in options.shape]),
        shape_score=a([s * (L.MAX_NODE_SCORE // 10) for _, s in options.shape]),
        bal_res=a(bal_res), bal_kind=a(bal_kind),
        image_entries=a(image_entries), image_scaled=a(image_scaled),
        image_max=L.IMAGE_MAX_PER_CONTAINER * len(pod.images),
    )
