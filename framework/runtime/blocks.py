"""Blocks of unlike pods: many pods, each with its own requests and GPU ask,
placed in one compiled call, exactly as their cycles one after another
would place them (same nodes, same tie rule, same FailedScheduling
statuses).  The compiled form of a profile such as openb's (NodeResourcesFit
and GpuShareFit as filters, GpuShareScore and node-only scores), where pods
rarely repeat a shape so runs of alike pods (``scheduler.runs``) do not form.

The framework's part (``place_block``): per distinct pod (records that share
a memo are alike) its plan (PreFilter, PreScore, compiled query) and the
fused filters' answers that read no pod on the node (taints, affinity,
unschedulable...: ``BlockInputs.static_reasons``); the node-only scores
summed (``StaticScorePlugin``); the row-local built-in scores
(NodeResourcesFit's, NodeResourcesBalancedAllocation) as the arguments the
placer evaluates per row (``RowScores``); the node-only built-in scores
(TaintToleration, NodeAffinity, ImageLocality) only when constant over
every node (then no normalization over the feasible nodes can tell two
rows apart).  The placer plugin's part
(``BlockPlacerPlugin.place_block``): the loop over the pods (fit, its own
filter and score, the tie rule, accounting) and its Reserve.  The
framework then records the placed pods in the state and builds each failed
pod's diagnosis from the rejections the block counted for it.

A block is refused (None: the pods take the usual path) when the profile has
a PostFilter (a failure would need it; but see below), a binding-cycle
plugin other than the placer that is not ``run_safe``, a host plugin the
placer does not cover, percentageOfNodesToScore below every node, or
deleted-node holes in the rows.  A pod whose plan differs (a PreFilter that
narrows or rejects, host ports, unknown resources, another score set but the
placer's per-class scores, a node-only built-in score that is not constant,
a host score plugin that scores it or does not promise its skip) ends the
block before it.

Through the queue (``stop_at_failure``: ``scheduler.runs``) a profile with
PostFilter plugins has a block form too: the block stops before the first
pod that fits nowhere, which then takes its own cycle (diagnosis,
PostFilter, preemption), as a run of alike pods does.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from tensorsched.framework.state.query import pod_signature
from tensorsched.kernels import layout as L
from tensorsched.kernels.fused import scores as fused_scores
from tensorsched.kernels.fused.ties import seed_mix

from .plugin import (
    BlockPlacerPlugin,
    CycleContext,
    FusedFilter,
    RunSafePlugin,
    RunSkipPlugin,
    StaticScorePlugin,
)
from .status import Code, Diagnosis, NodeStatuses, Status

MAX_BLOCK = 16384                # pods per compiled call
MAX_KEYS = 256                   # distinct (reason bits, placer code) per call
MAX_KINDS_KEPT = 4096            # kinds of pods kept from block to block
_FIT_BITS = int(L.R_TOO_MANY_PODS) | (((1 << L.MAX_RESOURCES) - 1) << L.INSUFFICIENT_SHIFT)
# the node-only built-in scores, by slot: a block takes them only constant
_NODE_ONLY = {L.S_TAINT: fused_scores.taint_count, L.S_NODE_AFFINITY: fused_scores.affinity_weight,
              L.S_IMAGE: fused_scores.image_score}
_ROW_LOCAL = (L.S_FIT, L.S_BALANCED)
_QUEUE_SETUPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class RowScores:
    """The row-local built-in scores of a block's pods (the fused stage's
    ``fit_score`` / ``balanced_score`` arguments, ``kernels.fused``):
    ``flags`` 1 NodeResourcesFit on, 2 NodeResourcesBalancedAllocation on;
    their weights; the profile's scoring resources, kinds, weights and
    shape (int64 arrays as the query holds them)."""

    flags: int
    strategy: int
    fit_weight: int
    balanced_weight: int
    fit_res: np.ndarray
    fit_kind: np.ndarray
    fit_weights: np.ndarray
    shape_util: np.ndarray
    shape_score: np.ndarray
    bal_res: np.ndarray
    bal_kind: np.ndarray

    @staticmethod
    def of(plan) -> RowScores:
        """The row scores a pod's plan turns on (flags 0: none)."""
        q = plan.query
        flags = int(bool(plan.active[L.S_FIT])) | (int(bool(plan.active[L.S_BALANCED])) << 1)

        def a(x):
            return np.ascontiguousarray(np.asarray(x, np.int64))
        return RowScores(flags, int(q.fit_strategy), int(plan.weights[L.S_FIT]),
                         int(plan.weights[L.S_BALANCED]), a(q.fit_res), a(q.fit_kind),
                         a(q.fit_weights), a(q.shape_util), a(q.shape_score), a(q.bal_res),
                         a(q.bal_kind))

    def same(self, other: RowScores) -> bool:
        """Whether two plans' row scores are one rule (a block has one)."""
        return (self.flags, self.strategy, self.fit_weight, self.balanced_weight) == (
            other.flags, other.strategy, other.fit_weight, other.balanced_weight) and all(
            np.array_equal(getattr(self, f), getattr(other, f))
            for f in ("fit_res", "fit_kind", "fit_weights", "shape_util", "shape_score",
                      "bal_res", "bal_kind"))


@dataclass
class BlockInputs:
    """What the framework hands a ``BlockPlacerPlugin`` for pods ``pods``
    on rows 0..n-1 (every row a live node).

    ``cls`` [P] int64: each pod's class (alike pods); ``first`` [C]: the
    first pod of each class; ``c_req`` [C, R] int64 its request vector
    (pods = 1, R = the state's resource columns), ``c_nz`` [C, 2] its
    non-zero cpu/memory, ``c_res[c, :c_nres[c]]`` the resources
    NodeResourcesFit checks for it (asked for, not ignored; pod count
    aside); ``static_reasons`` [C, n] int64: the fused filters'
    reason bits that read no pod on the node;
    ``placer_bit``: the placer's own reason bit; ``static_total`` [n]
    int64: the weighted node-only scores; ``weights``: score plugin name
    -> weight of the placer's scores; ``seed_mix`` (``ties.seed_mix`` of
    the seed): among the top rows pod j takes the tie rule's (the highest
    ``tie_rank(seed_mix, row, pods on the row)``, the pods column as the
    block's pods land, then the lower row), ``attempt`` and ``start`` the
    cycles' attempt number and start row (they do not move the pick);
    ``max_failures``: how
    many failed pods' rejection counts the placer may keep (the block ends
    before one more; 0: the block stops before a pod that fits nowhere),
    ``max_keys``: distinct rejections likewise; ``class_scores`` [C]: the
    placer's per-class scores (``block_class_scores``) on for each class;
    ``row_scores``: the row-local built-in scores (``RowScores``), of the
    query request ``c_qreq`` [C, Rq] int64 and non-zero request ``c_qnz``
    [C, 2] of each class."""

    pods: list
    cls: np.ndarray
    first: list
    c_req: np.ndarray
    c_nz: np.ndarray
    c_res: np.ndarray
    c_nres: np.ndarray
    static_reasons: np.ndarray
    placer_bit: int
    static_total: np.ndarray
    weights: dict
    seed_mix: int
    attempt: int
    start: int
    n: int
    max_failures: int = 1
    max_keys: int = MAX_KEYS
    class_scores: list = field(default_factory=list)
    row_scores: RowScores | None = None
    c_qreq: np.ndarray | None = None
    c_qnz: np.ndarray | None = None


@dataclass
class BlockOutput:
    """A placer's answer: ``handled`` pods done (a prefix of the block);
    ``rows`` [handled] int64 the row each took, -1 when it fit nowhere;
    failed pod f (in order) was rejected by ``counts[f, k]`` nodes for
    ``keys[k]`` = (reason bits, placer code or -1, the first such row)."""

    handled: int
    rows: np.ndarray
    counts: np.ndarray
    keys: np.ndarray


@dataclass
class BlockResult:
    """``place_block``'s answer: ``rows`` [k] int64 (-1: fits nowhere) for
    the first k pods, and for each failed one by position its
    FailedScheduling message and rejecting plugins."""

    rows: np.ndarray
    diagnoses: dict


def block_setup(fw, queue: bool = False) -> tuple | None:
    """(placer, static scorers) when ``fw``'s profile has a block form, else
    None (see the module doc; ``queue``: for blocks through the queue,
    which stop before a pod that fits nowhere); once per framework."""
    placers = [p for p in fw.filters if isinstance(p, BlockPlacerPlugin)]
    if len(placers) != 1 or (fw.plugins_at("postFilter") and not queue):
        return None
    placer = placers[0]
    for point in ("reserve", "permit", "preBind", "bind", "postBind"):
        for p in fw.plugins_at(point):
            if p is not placer and not (isinstance(p, RunSafePlugin) and p.run_safe):
                return None
    static = []
    for p, _slot in fw.user_scores:
        if p.name in placer.block_scores:
            continue
        if isinstance(p, StaticScorePlugin) and getattr(p, "normalize", 0) == 0:
            static.append(p)
        elif not isinstance(p, RunSkipPlugin):
            return None         # (a RunSkipPlugin must skip each class: ``_class_plan``)
    return placer, static


def queue_block_setup(fw) -> tuple | None:
    """``block_setup(fw, queue=True)``, once per framework."""
    got = _QUEUE_SETUPS.get(fw, False)
    if got is False:
        got = _QUEUE_SETUPS[fw] = block_setup(fw, queue=True)
    return got


def _state_key(state) -> tuple:
    """What a kind of pod's plan may read of the state: the nodes, and the
    pods added (a pod leaving adds no term an alike pod's promised skip
    could depend on)."""
    return (id(state), state.pod_adds, state.epoch, state.layout_version, state.n_rows)


def _class_entry(fw, state, pod, placer, width: int, count: int,
                 known: dict) -> tuple | None:
    """(memo, plan, request [width], non-zero [2], asks anything, static
    reasons [n]) of a pod starting a class, or None when it cannot join a
    block (``count``: pods in the block, for the int64 room check;
    ``known``: the kept kinds, and static reasons by what they read)."""
    got = _class_plan(fw, state, pod, placer, known)
    if got is None:
        return None
    plan, reasons = got
    req = state.resource_vector(pod.requests, intern=False)
    req[L.RES_PODS] = 1
    nz = np.array([pod.nonzero_cpu, pod.nonzero_memory], np.int64)
    if req.shape[0] > width or not state.room_for(req, nz, count):
        return None
    row = np.zeros(width, np.int64)
    row[:req.shape[0]] = req
    return pod.pod_class, plan, row, nz, bool(plan.query.requests_anything), reasons


def _class_plan(fw, state, pod, placer, known: dict):
    """(plan, reasons) of a pod starting a class, or None when it cannot
    join a block."""
    if pod.host_ports or any(r != "pods" and r not in state.resources.index
                             for r in pod.requests):
        return None
    ctx = CycleContext(state, pod, fw)
    plan, skipped = fw.plan_cycle(ctx)
    if not hasattr(plan, "query") or plan.node_names is not None:
        return None
    for slot in _ROW_LOCAL:
        if plan.active[slot] and plan.norm[slot] != 0:
            return None
    if any(p is not placer for p, _b in plan.host_filters):
        return None
    # a host score other than the placer's and the static ones must have
    # skipped the pod, and promise the skip holds whatever the block places
    scoring = {id(p) for p in plan.active_plugins}
    for p, _slot in fw.user_scores:
        if p.name in placer.block_scores or (isinstance(p, StaticScorePlugin)
                                             and getattr(p, "normalize", 0) == 0):
            continue
        if id(p) in scoring or not (isinstance(p, RunSkipPlugin)
                                    and p.run_keeps_skip(ctx, "preScore")):
            return None
    # every other host filter skipped the pod: the skip must hold whatever
    # the block places before its alike pods (and the next block's)
    for p, _b in fw.user_filters:
        if p is not placer and not (isinstance(p, RunSkipPlugin)
                                    and p.run_keeps_skip(ctx, "preFilter")):
            return None
    # The static reasons read the pod's node name, tolerations, selector,
    # affinity and ports (its signature but the requests) and which fused
    # filters run for it: kinds of pods differing in their requests only,
    # as a trace's mostly do, share them.
    key = ("static", pod_signature(pod)[3:], frozenset(skipped))
    got = known.get(key)
    if got is None:
        n = state.n_rows
        res = fw.backend.evaluate(state, state.valid_rows(), 0, plan.query, n, plan.active,
                                  plan.norm, plan.weights, fw.n_slots, None, True)
        got = known[key] = (np.asarray(res.reasons[:n], np.int64) & ~_FIT_BITS,
                            _node_only_constant(state, plan))
    reasons, constant = got
    if not constant:
        return None
    return plan, reasons


def _node_only_constant(state, plan) -> bool:
    """Whether every node-only built-in score the plan turns on has one raw
    value on every node (so one normalized value on any feasible set)."""
    cols = state.columns()
    rows = state.valid_rows()
    q = plan.query
    width = cols.taint_bits.shape[1]
    if q.taint_prefer.shape[0] != width:
        prefer = np.zeros(width, np.int64)
        prefer[:min(width, q.taint_prefer.shape[0])] = q.taint_prefer[:width]
        q = q._replace(taint_prefer=prefer)
    for slot, fn in _NODE_ONLY.items():
        if plan.active[slot] and rows.shape[0]:
            raw = np.asarray(fn(cols, rows, q, xp=np))
            if (raw != raw[0]).any():
                return False
    return True


def place_block(fw, state, pods: list, *, seed: int, attempt: int,
                start_index: int, stop_at_failure: bool = False) -> BlockResult | None:
    """Place ``pods`` (in order, each at its own attempt number) in one
    compiled call: a ``BlockResult`` for a prefix of them (empty when the
    first cannot join a block), or None when the profile or the state has
    no block form (module doc; the caller has checked that every node is
    scored).  The placed pods are recorded in the state.
    ``stop_at_failure`` (through the queue): the prefix ends before the
    first pod that fits nowhere (every row handled is placed), and a
    profile with PostFilter plugins has a block form."""
    setup = queue_block_setup(fw) if stop_at_failure else fw.block_setup
    if setup is None or not pods:
        return None
    placer, static = setup
    n = state.n_rows
    if n == 0 or state.valid_rows().shape[0] != n:
        return None
    width = state.requested.shape[1]
    # the records once (a queue's stretch may build one per access)
    pods = list(pods[:MAX_BLOCK])
    # A block after the previous one with no node changed and no pod added
    # in between (pods may have left) keeps its kinds of pods: their plans
    # read nothing a block's pods change (the skips are promised, the
    # static reasons read nodes only).
    held = fw.block_classes
    known = held[1] if held is not None and held[0] == _state_key(state) else {}
    if len(known) > MAX_KINDS_KEPT:
        known = {}
    classes: dict = {}          # PodClass -> class index in the block
    first, reqs, nzs, anything, static_rows = [], [], [], [], []
    cls = np.empty(min(len(pods), MAX_BLOCK), np.int64)
    scoring = None
    row_scores = None
    class_scores, qreqs, qnzs = [], [], []
    # the placer's scores that may be on for some classes and off for others
    per_class = getattr(placer, "block_class_scores", frozenset())
    fit_ignored = np.zeros(width, np.bool_)
    count = 0
    for pod in pods[:MAX_BLOCK]:
        pod_class = pod.pod_class
        c = classes.get(pod_class)
        if c is None:
            entry = known.get(pod_class)
            if entry is None:
                entry = _class_entry(fw, state, pod, placer, width, len(pods), known)
                if entry is None:
                    break
                known[pod_class] = entry
            plan = entry[1]
            active = tuple(p for p in plan.active_plugins if p.name not in per_class)
            rs = RowScores.of(plan)
            if scoring is None:
                scoring = active
                row_scores = rs
                ign = np.asarray(plan.query.fit_ignored, np.bool_)
                fit_ignored[:ign.shape[0]] = ign[:width]
            elif active != scoring or not rs.same(row_scores):
                break
            class_scores.append(frozenset(p.name for p in plan.active_plugins
                                          if p.name in per_class))
            qreqs.append(np.asarray(plan.query.request, np.int64))
            qnzs.append(np.asarray(plan.query.nonzero_request, np.int64)[:2])
            c = classes[pod_class] = len(first)
            first.append(pod)
            reqs.append(entry[2])
            nzs.append(entry[3])
            anything.append(entry[4])
            static_rows.append(entry[5])
        cls[count] = c
        count += 1
    if count == 0:
        return BlockResult(np.zeros(0, np.int64), {})
    weight_of = {p.name: int(w) for p, w in fw.score_refs}
    on = {p.name for p in scoring}.union(*class_scores)
    c_qreq = np.zeros((len(qreqs), max(q.shape[0] for q in qreqs)), np.int64)
    for c, q in enumerate(qreqs):
        c_qreq[c, :q.shape[0]] = q
    static_total = np.zeros(n, np.int64)
    for p in static:
        if p in scoring:
            static_total += weight_of[p.name] * np.asarray(p.static_scores(state), np.int64)[:n]
    c_req = np.array(reqs, np.int64)
    # the resources NodeResourcesFit checks per class: asked for, not ignored
    checked = (c_req > 0) & ~fit_ignored[None, :] & np.array(anything, np.bool_)[:, None]
    checked[:, L.RES_PODS] = False
    c_nres = checked.sum(axis=1).astype(np.int64)
    c_res = np.zeros_like(c_req)
    for c in range(c_req.shape[0]):
        idx = np.flatnonzero(checked[c])
        c_res[c, :idx.shape[0]] = idx
    inputs = BlockInputs(
        pods[:count], cls[:count], first, c_req, np.array(nzs, np.int64), c_res, c_nres,
        np.array(static_rows, np.int64),
        int(placer.reason_bits), static_total,
        {name: w for name, w in weight_of.items() if name in placer.block_scores and name in on},
        seed_mix(seed), attempt, start_index % n, n,
        0 if stop_at_failure else MAX_BLOCK, MAX_KEYS, class_scores, row_scores, c_qreq,
        np.array(qnzs, np.int64).reshape(len(qnzs), 2))
    out = placer.place_block(CycleContext(state, pods[0], fw), inputs)
    if out is None:
        return None
    k = out.handled
    rows = out.rows[:k]
    placed = np.flatnonzero(rows >= 0)
    if placed.shape[0]:
        state.register_block([inputs.pods[j] for j in placed.tolist()], rows[placed],
                             inputs.cls[placed], inputs.c_req, inputs.c_nz)
    fw.block_classes = (_state_key(state), known)
    diagnoses = {}
    memo: dict = {}
    for f, j in enumerate(np.flatnonzero(rows < 0).tolist()):
        diagnoses[j] = _diagnosis(fw, state, inputs.pods[j], int(inputs.cls[j]), placer,
                                  out.counts[f], out.keys, memo)
    return BlockResult(rows, diagnoses)


def _key_status(fw, ctx, placer, bits: int, code: int, row: int) -> Status:
    """A node's rejection from its (reason bits, placer code): the first
    rejecting filter in profile order, as ``Framework.node_status``."""
    for p in fw.filters:
        own = bits & getattr(p, "reason_bits", 0)
        if not own:
            continue
        if p is placer:
            return placer.block_status(ctx, code)
        if isinstance(p, FusedFilter):
            return p.explain_reasons(ctx, row, own)
        if hasattr(p, "explain_status"):
            return p.explain_status(ctx, row)
        return Status(Code.UNSCHEDULABLE, tuple(p.explain_reasons(ctx, row)), p.name)
    return Status(Code.ERROR, ("unexplained rejection",), "")


def _diagnosis(fw, state, pod, c: int, placer, counts, keys, memo) -> tuple[str, set]:
    """(FailedScheduling message, rejecting plugins) of a failed pod of
    class ``c`` from how many nodes rejected it for each key: the statuses
    ``Framework.diagnosis`` gives (the first rejecting filter per node, in
    profile order), counted; pods of one class with the same counts share
    the answer."""
    key = (c, counts.tobytes())
    got = memo.get(key)
    if got is not None:
        return got
    ctx = CycleContext(state, pod, fw)
    used = np.flatnonzero(counts)
    statuses = []
    for k in used.tolist():
        st = memo.get((c, k))
        if st is None:
            bits, code, row = (int(v) for v in keys[k])
            st = memo[(c, k)] = _key_status(fw, ctx, placer, bits, code, row)
        statuses.append(st)
    table = list(dict.fromkeys(statuses))
    ids = np.array([table.index(st) for st in statuses], np.int64)
    node_statuses = NodeStatuses(np.zeros(0, np.int64), np.repeat(ids, counts[used]), table)
    diag = Diagnosis(num_all_nodes=state.num_nodes, node_statuses=node_statuses)
    got = memo[key] = (diag.message(), node_statuses.plugins())
    return got
