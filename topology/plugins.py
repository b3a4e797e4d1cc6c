"""GPU sharing and GPU topology plugins (out of the default profile; enable
them in a profile).  Array plugins over all nodes at once on the kernels of
``kernels/gpu/share.py`` and ``kernels/gpu/subsets.py``, with the per-node
GPU state in ``topology.gpu_table.GpuTable`` (kept in step with the
ClusterState through its listeners).

- ``GpuShareFit`` (filter, reserve): the pod's GPU ask (see
  ``topology/gpu.py``: ``nvidia.com/gpu`` or the openb annotations) fits on
  actual GPUs of the node: a share on one GPU with enough free milli-GPU,
  N whole GPUs on N free GPUs, of an allowed model; and, when the pod asks
  for it (``topology.tensorsched.io/gpu-placement``, or a Guaranteed pod
  on a node whose topology manager runs single-numa-node), within one
  NVLink island and/or on one NUMA node together with its CPU and memory
  (``topology/node_topology.py``).  Reserve picks the concrete GPU indices
  with the rule of the profile's policy and records them; Unreserve
  releases them.  ``explain`` gets a ``"gpus"`` field and ``tensorsched
  schedule`` bindings a ``gpus`` entry from it.
- ``GpuShareScore`` (score), args ``{policy: Random | DotProd |
  GpuClustering | GpuPacking | BestFit | FGD}`` (default FGD) and, for FGD,
  ``typicalPods``: the target workload's pod shapes, a non-empty list of
  ``{cpu (millicores), gpuCount, gpuMilli, models ("A|B"), weight}``
  (other policies read none and pass it over); without it,
  the shapes of the pods this plugin has scored so far (the most frequent
  covering 95%, as the openb simulator takes them from its trace).  One
  plugin with a policy arg rather than six plugins: a profile scores with
  one policy, and the policy also decides how Reserve picks GPUs.  Scores
  are the policies' own 0..100 (BestFit min-max normalized over the scored
  nodes), as in ``tensorsched replay``.
- ``GpuTopologyScore`` (preScore, score): for a pod asking for two or more
  whole GPUs, 100 when they can sit in one NVLink island, 50 on one NUMA
  node, 0 otherwise; other pods skip it.  With it enabled Reserve takes the
  tightest subset (fewest loose links) for whole GPUs.

Backends (the Framework's): ``numba`` runs the njit kernels, ``numpy`` the
array twins, ``cuda`` the same per-node rules (``kernels/gpu/_core.py``) as
Numba CUDA kernels, one thread per node (``kernels/gpu/_cuda.py``): the
GPU fit, the topology subset search and the GpuShareScore policies; the
answers are identical.  On every backend the GPU table stays on the host
(it changes per pod), and Reserve's pick for the one chosen node and
BestFit's raw score (array arithmetic) run on the host.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tensorsched.framework.config.plugin_args import register_args_decoder
from tensorsched.framework.errors import ConfigError
from tensorsched.framework.parsing.quantity import resource_value
from tensorsched.framework.runtime.blocks import BlockOutput
from tensorsched.framework.runtime.cluster_events import NODE_ADD, NODE_UPDATE, POD_DELETE
from tensorsched.framework.runtime.plugin import CYCLE_DRAW
from tensorsched.framework.runtime.registry import InputAsk
from tensorsched.framework.runtime.status import Code, Status
from tensorsched.framework.runtime.user_plugins import ArrayPlugin
from tensorsched.kernels.fused.ties import draw_index
from tensorsched.kernels.gpu import block as KB
from tensorsched.kernels.layout import MAX_NODE_SCORE
from tensorsched.kernels.gpu import share as K
from tensorsched.kernels.gpu import subsets as KT

from . import nrt
from .gpu import (
    ANNO_GPU_COUNT,
    ANNO_GPU_MILLI,
    ANNO_GPU_MODEL,
    MAX_CPU_MILLI,
    MAX_NODE_GPUS,
    MILLI,
)
from .gpu_pick import key_uniform
from .typical_terms import TypicalTerms
from .gpu_table import GpuTable
from .node_topology import C_ISLAND, C_NUMA
from .row_answers import RowAnswers

NAME_FIT = "GpuShareFit"
NAME_SCORE = "GpuShareScore"
NAME_TOPO = "GpuTopologyScore"
POINTS_FIT = frozenset({"filter", "reserve"})
POINTS_SCORE = frozenset({"score"})
POINTS_TOPO = frozenset({"preScore", "score"})
GPU_PLUGINS = (NAME_FIT, NAME_SCORE, NAME_TOPO)
POLICY_SEL = {"Random": K.SEL_RANDOM, "DotProd": K.SEL_BEST, "GpuClustering": K.SEL_BEST,
              "GpuPacking": K.SEL_BEST, "BestFit": K.SEL_BEST, "FGD": K.SEL_FGD}
TYPICAL_THRESHOLD = 95
# FGD's typical pods for a policy that reads none (the block kernel's arguments)
_NO_TYPICAL = (np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64),
               np.zeros(1, np.int64), np.zeros(1, np.float64))


MAX_TYPICAL_PODS = 10000
# place_block's top structure (``_block_trees``): a class gets a tree with
# this many pods in the block; one tree per this many rows at most
TREE_MIN_PODS = 4
TREE_ROWS_PER_CLASS = 256
MAX_TREES = 64
MAX_WEIGHT = 1e12
_TYPICAL_KEYS = ("cpu", "gpuCount", "gpuMilli", "models", "weight")


# --------------------------------------------------------------------- args


@dataclass(frozen=True)
class GpuShareScoreArgs:
    """Decoded GpuShareScore args: the policy and, when given, the typical
    pods as (cpu millicores, gpu count, gpu milli, models "A|B", weight)."""

    policy: str = "FGD"
    typical_pods: tuple[tuple[int, int, int, str, float], ...] | None = None


def _args_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _args_mapping(raw, path: str) -> dict:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(path, f"must be an object, got {type(raw).__name__} {raw!r}")
    for k in raw:
        if not isinstance(k, str):
            raise ConfigError(path, f"field name {k!r} is not a string")
    return raw


def _args_int(value, path: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, f"must be an integer {lo}..{hi}, got {value!r}")
    if not lo <= value <= hi:
        raise ConfigError(path, f"must be an integer {lo}..{hi}, got {value}")
    return value


def _args_cpu(value, path: str) -> int:
    """Millicores: an integer, or a CPU quantity string ("500m", "2")."""
    if isinstance(value, str):
        try:
            v = resource_value("cpu", value)
        except ValueError as exc:
            raise ConfigError(path, str(exc)) from None
        if not 0 <= v <= MAX_CPU_MILLI:
            raise ConfigError(path, f"must be 0..{MAX_CPU_MILLI} millicores, got {value!r}")
        return v
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, "must be millicores (an integer) or a CPU quantity string, "
                          f"got {value!r}")
    return _args_int(value, path, 0, MAX_CPU_MILLI)


def _typical_pod(raw, path: str) -> tuple[int, int, int, str, float]:
    m = _args_mapping(raw, path)
    if raw is None:
        raise ConfigError(path, "must be an object with cpu, gpuCount, gpuMilli, models, weight")
    for k in m:
        if k not in _TYPICAL_KEYS:
            raise ConfigError(_args_path(path, k), f"unknown field (known: {', '.join(_TYPICAL_KEYS)})")
    cpu = _args_cpu(m.get("cpu", 0), _args_path(path, "cpu"))
    num = _args_int(m.get("gpuCount", 0), _args_path(path, "gpuCount"), 0, MAX_NODE_GPUS)
    milli = _args_int(m.get("gpuMilli", 0), _args_path(path, "gpuMilli"), 0, MILLI)
    models = m.get("models", "")
    if models is None:
        models = ""
    if not isinstance(models, str):
        raise ConfigError(_args_path(path, "models"), f"must be a string of '|'-separated GPU "
                          f"models, got {models!r}")
    w = m.get("weight", 1.0)
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) \
            or not 0 < w <= MAX_WEIGHT:
        raise ConfigError(_args_path(path, "weight"), f"must be a number > 0 and <= {MAX_WEIGHT:g}, "
                          f"got {w!r}")
    return cpu, num, milli, models, float(w)


def decode_score_args(raw, path: str) -> GpuShareScoreArgs:
    """GpuShareScore's args, strictly: ``policy`` (one of the six),
    ``typicalPods`` (a list of {cpu, gpuCount, gpuMilli, models, weight});
    every problem a ConfigError at its field path."""
    if isinstance(raw, GpuShareScoreArgs):
        return raw
    m = _args_mapping(raw, path)
    for k in m:
        if k not in ("policy", "typicalPods"):
            raise ConfigError(_args_path(path, k), "unknown field (known: policy, typicalPods)")
    policy = m.get("policy", "FGD")
    if policy is None:
        policy = "FGD"
    if not isinstance(policy, str) or policy not in K.POLICIES:
        raise ConfigError(_args_path(path, "policy"),
                          f"must be one of {', '.join(K.POLICIES)}, got {policy!r}")
    typical = m.get("typicalPods")
    if typical is not None:
        tp = _args_path(path, "typicalPods")
        if not isinstance(typical, (list, tuple)):
            raise ConfigError(tp, f"must be a list of pod shapes, got {type(typical).__name__} "
                              f"{typical!r}")
        if not typical:
            raise ConfigError(tp, f"{NAME_SCORE}: an empty list scores every node alike; "
                              "leave typicalPods out to learn the shapes from the pods "
                              "scored")
        if len(typical) > MAX_TYPICAL_PODS:
            raise ConfigError(tp, f"{len(typical)} shapes; at most {MAX_TYPICAL_PODS}")
        typical = tuple(_typical_pod(p, f"{tp}[{i}]") for i, p in enumerate(typical))
    return GpuShareScoreArgs(policy, typical)


def _no_args(name: str):
    def decode(raw, path: str):
        m = _args_mapping(raw, path)
        if m:
            raise ConfigError(_args_path(path, next(iter(m))), f"unknown field ({name} takes no args)")
        return None
    return decode


def register_decoders() -> None:
    """The GPU plugins' args decoders (``register_args_decoder``)."""
    register_args_decoder(NAME_SCORE, decode_score_args)
    register_args_decoder(NAME_FIT, _no_args(NAME_FIT))
    register_args_decoder(NAME_TOPO, _no_args(NAME_TOPO))


# Kernels per backend name; a handle without a backend (a bare test
# handle) gets numba.
_FIT = {"numpy": KT.gpu_fit_nodes_np, "numba": KT.gpu_fit_nodes, "cuda": KT.gpu_fit_nodes_cuda}
_SUBSETS = {"numpy": KT.subset_costs_np, "numba": KT.subset_costs, "cuda": KT.subset_costs_cuda}
_SCORE = {"numpy": K.score_nodes_np, "numba": K.score_nodes, "cuda": K.score_nodes_cuda}


def _backend(handle) -> str:
    name = getattr(handle, "backend_name", "numba")
    return name if name in _FIT else "numba"


def at_positions(answers: np.ndarray, rows: np.ndarray, state) -> np.ndarray:
    """``answers`` (by node row, [>= n]) at ``rows`` (the positions a cycle
    evaluates, [M]), as a new array: a plain copy when ``rows`` is every
    row in row order (the state's live rows without holes, every node
    scored from row 0: the usual cycle), a gather otherwise (4-10x
    dearer at 10,000 rows)."""
    m = rows.shape[0]
    if m == state.n_rows and rows is state.valid_rows():
        return answers[:m].copy()
    return answers[rows]


def _cons_per_node(t: GpuTable, info, n: int) -> np.ndarray:
    cons = np.full(n, info.cons, np.int64)
    if info.guaranteed:
        cons |= np.where(t.single_policy[:n], C_NUMA, 0)
    return cons


def _zone_free(t: GpuTable, n: int):
    return t.zcpu[:n] - t.zcpu_used[:n], t.zmem[:n] - t.zmem_used[:n]


def subset_costs(t: GpuTable, info, n: int, backend: str):
    """(cons [n], cost [n], idx [n]) of the cheapest allowed GPU subset per
    node for a GPU pod (cost -1: none), on ``backend``'s kernel."""
    cons, cost, idx, _score = subset_answers(t, info, n, backend)
    return cons, cost, idx


def subset_answers(t: GpuTable, info, n: int, backend: str):
    """``subset_costs`` and GpuTopologyScore's score from it, (cons, cost,
    idx, score) [n] int64 each: views of the answers the table keeps per
    pod shape, recomputed only for the nodes whose GPU row changed since
    (``RowAnswers``); read them before the next call."""
    ask = info.ask
    key = (ask.num, ask.milli, info.cons, info.guaranteed, info.cpu, info.mem)

    answers = t.answers("subsets", 4)

    def compute(rows):
        if rows is not None and backend == "numba":
            # a few changed rows: one compiled call on the full columns
            sub, cost, iok, nok = t.picker.tables(ask.num)
            cap, z = t.zcpu.shape
            cons, out_c, out_i = KT.subset_rows(
                rows, info.cons, info.guaranteed, t.single_policy, t.count, t.left, t.numa,
                t.zcpu, t.zcpu_used, t.zmem, t.zmem_used, t.topo, info.cpu, info.mem, ask.milli,
                sub, cost, iok, nok, answers.scratch("cons", (cap,), np.int64),
                answers.scratch("zone_cpu_free", (cap, z), np.int64),
                answers.scratch("zone_mem_free", (cap, z), np.int64),
                answers.scratch("cost", (cap,), np.int64),
                answers.scratch("idx", (cap,), np.int64))
            return cons, out_c, out_i, KT.topology_score(out_c)
        sl = slice(0, n) if rows is None else rows
        cons = np.full(n if rows is None else rows.shape[0], info.cons, np.int64)
        if info.guaranteed:
            cons |= np.where(t.single_policy[sl], C_NUMA, 0)
        zc = t.zcpu[sl] - t.zcpu_used[sl]
        zm = t.zmem[sl] - t.zmem_used[sl]
        sub, cost, iok, nok = t.picker.tables(ask.num)
        out_c = np.empty(cons.shape[0], np.int64)
        out_i = np.empty(cons.shape[0], np.int64)
        _SUBSETS[backend](t.count[sl], np.ascontiguousarray(t.left[sl]),
                          np.ascontiguousarray(t.numa[sl]), zc, zm, t.topo[sl], cons,
                          info.cpu, info.mem, ask.milli, sub, cost, iok, nok, out_c, out_i)
        return cons, out_c, out_i, KT.topology_score(out_c)

    # the subset tables are rebuilt when a new topology appears: a new token
    return answers.get(t, n, key, compute, token=len(t.topos))


def gpu_fit_answers(t: GpuTable, ask, mask: int, n: int, backend: str) -> np.ndarray:
    """[n] bool: the node has ``ask``'s GPUs free, of an allowed model (the
    fit kernel's answer, kept per ask like ``subset_answers``)."""
    answers = t.answers("fit", 1, (np.bool_,))

    def compute(rows):
        if rows is not None and backend == "numba":
            # a few changed rows: one compiled call on the full columns
            return (KT.gpu_fit_rows(rows, t.count, t.model, t.left, ask.num, ask.milli, mask,
                                    answers.scratch("fit", (t.cap,), np.bool_)),)
        sl = slice(0, n) if rows is None else rows
        return (_FIT[backend](t.count[sl], t.model[sl], np.ascontiguousarray(t.left[sl]),
                              ask.num, ask.milli, mask),)

    return answers.get(t, n, (ask.num, ask.milli, mask), compute)[0]


def _block_trees(cls: np.ndarray, n_classes: int, n: int, policy: int) -> tuple:
    """(size, slot [C], tree_max, tree_cnt [T, 2 * size], built [C], stack,
    placed_log [P], seen [C], row_mark [n]) for ``place_block``'s top
    structure: a tree for each class with at
    least ``TREE_MIN_PODS`` pods in the block, the most numerous first, at
    most one per ``TREE_ROWS_PER_CLASS`` rows (each placement evaluates
    its row again for every tree, where a pod without one passes over all
    rows); none under BestFit (normalized over every feasible row)."""
    slot = np.full(n_classes, -1, np.int64)
    limit = min(MAX_TREES, n // TREE_ROWS_PER_CLASS)
    if policy != K.P_BESTFIT and limit > 0 and cls.shape[0]:
        pods = np.bincount(cls, minlength=n_classes)
        order = np.argsort(-pods, kind="stable")[:limit]
        order = order[pods[order] >= TREE_MIN_PODS]
        slot[order] = np.arange(order.shape[0])
    trees = int((slot >= 0).sum())
    size = 1 << max(n - 1, 1).bit_length() if trees else 0
    return (size, slot, np.empty((trees, 2 * size), np.int64),
            np.empty((trees, 2 * size), np.int64), np.zeros(n_classes, np.int64),
            np.empty(64, np.int64), np.empty(max(cls.shape[0], 1), np.int64),
            np.zeros(n_classes, np.int64), np.full(max(n, 1), -1, np.int64))


class GpuShareFit(ArrayPlugin):
    name = NAME_FIT
    # The cluster events that can make a pod it rejected fit (as
    # NodeResourcesFit's): GPUs freed or nodes added/changed.  Not pod adds:
    # a pending pod rejected for GPUs is not retried on every arrival.
    events = frozenset({POD_DELETE, NODE_ADD, NODE_UPDATE})

    def __init__(self, args, handle):
        self.handle = handle
        self.backend = _backend(handle)

    # ------------------------------------------------------------ filter
    def filter(self, ctx, rows):
        t = GpuTable.of(ctx.state)
        info = t.pod_info(ctx.pod)
        n = max(ctx.state.n_rows, 1)
        cons_any = info.cons or (info.guaranteed and bool(t.single_policy[:n].any()))
        if not info.has_gpu and not cons_any:
            return np.ones(rows.shape[0], np.bool_)
        ok = np.ones(n, np.bool_)
        if info.has_gpu:
            ask = info.ask
            ok = gpu_fit_answers(t, ask, t.model_mask(ask.models), n, self.backend)
        if cons_any:
            if info.has_gpu:
                cons, cost, _ = subset_costs(t, info, n, self.backend)
                ok = ok & ((cons == 0) | (cost >= 0))
            else:
                cons = _cons_per_node(t, info, n)
                zc, zm = _zone_free(t, n)
                zone_ok = ((zc >= info.cpu) & (zm >= info.mem)
                           & (np.arange(zc.shape[1])[None, :] < t.nzones[:n, None])).any(axis=1)
                ok = ok & (((cons & C_NUMA) == 0) | zone_ok)
        return at_positions(ok, rows, ctx.state)

    def ignores_pods(self, ctx) -> bool:
        """``PodIndependentWhen``: a pod that asks no GPU and no NUMA
        placement passes every node whatever pods run there."""
        t = GpuTable.of(ctx.state)
        info = t.pod_info(ctx.pod)
        n = max(ctx.state.n_rows, 1)
        return not (info.has_gpu or info.cons
                    or (info.guaranteed and bool(t.single_policy[:n].any())))

    def explain_many(self, ctx, rows: np.ndarray):
        """``explain_status`` of many rejected nodes at once: (ids [K] into
        the returned statuses) for a diagnosis; the NUMA/NVLink cases, rare
        and per node, still go through ``explain_status``."""
        t = GpuTable.of(ctx.state)
        info = t.pod_info(ctx.pod)
        if not info.has_gpu:
            return np.zeros(rows.shape[0], np.int64), [self.explain_status(ctx, int(rows[0]))]
        ask = info.ask
        mask = int(t.model_mask(ask.models))
        # code: 0 no GPUs, 1 no allowed model, 2 too few GPUs with the milli
        # free, 3 enough of them (a topology rejection).  The filter's own
        # fit kernel (GPUs, model, then enough free) tells 3 from the rest.
        n = max(ctx.state.n_rows, 1)
        fit = np.asarray(_FIT[self.backend](t.count[:n], t.model[:n], t.left[:n], ask.num,
                                            ask.milli, mask), np.bool_)[rows]
        code = np.where(fit, 3, 2)
        if mask != 0:
            model = t.model[rows].astype(np.int64)
            code[~((model >= 0) & (((mask >> np.maximum(model, 0)) & 1) == 1))] = 1
        code[t.count[rows] == 0] = 0
        table = [self._reject_status(ask, c) for c in range(3)]
        ids = code.astype(np.int64)
        for j in np.flatnonzero(code == 3).tolist():       # topology: per node
            st = self.explain_status(ctx, int(rows[j]))
            if st not in table:
                table.append(st)
            ids[j] = table.index(st)
        used = np.flatnonzero(np.bincount(ids, minlength=len(table)))   # np.unique(ids)
        remap = np.full(len(table), -1, np.int64)
        remap[used] = np.arange(used.shape[0])
        return remap[ids], [table[i] for i in used.tolist()]

    def _reject_status(self, ask, code: int) -> Status:
        """The rejection of a node by ``explain_many``'s code: 0 no GPUs, 1
        no GPU of an allowed model, 2 too few GPUs with the milli free."""
        text = ("node(s) had no GPUs", "node(s) had no GPU of an allowed model",
                f"node(s) didn't have a GPU with {ask.milli} free milli-GPU" if ask.is_share
                else f"node(s) didn't have {ask.num} free GPU(s)")[code]
        return Status(Code.UNSCHEDULABLE, (text,), self.name)

    def block_status(self, ctx, code: int) -> Status:
        """A node this plugin rejected in a block (``place_block``), by the
        code the block kernel gave it."""
        return self._reject_status(GpuTable.of(ctx.state).pod_info(ctx.pod).ask, code)

    # ------------------------------------------------------------- block
    block_scores = frozenset({NAME_SCORE, NAME_TOPO})
    # scores that may be on for some pods of a block and off for others
    block_class_scores = frozenset({NAME_TOPO})

    def _block_classes(self, t: GpuTable, inputs, n: int, stop_at_failure: bool,
                       topology_aware: bool):
        """Per class of the block: (asks [C, 4] num, milli, model mask,
        cpu_nz; ends [C] bool (the block ends before its first pod); xs
        [C, 6] the kernel's constraint / subset / topology-score columns;
        the subset sizes of the tables in ``xs[:, 2]`` order)."""
        first = inputs.first
        single_any = bool(t.single_policy[:n].any())
        asks = np.zeros((len(first), 4), np.int64)      # num, milli, model mask, cpu_nz
        ends = np.zeros(len(first), np.bool_)
        xs = np.zeros((len(first), 6), np.int64)
        xs[:, 2] = -1
        sizes: list = []
        for c, pod in enumerate(first):
            info = t.pod_info(pod)
            constrained = bool(info.cons) or (info.guaranteed and single_any)
            whole = info.has_gpu and not info.ask.is_share
            topo_score = bool(inputs.class_scores) and NAME_TOPO in inputs.class_scores[c]
            # NVLink / NUMA asks of whole GPUs are placed through the queue
            # only, where the block stops before a pod that fits nowhere (a
            # constraint's rejection explains per node)
            ends[c] = info.fixed is not None or (constrained and not (whole and stop_at_failure))
            if info.has_gpu:
                asks[c, :3] = info.ask.num, info.ask.milli, t.model_mask(info.ask.models)
            asks[c, 3] = info.cpu_nz
            xs[c, 0], xs[c, 1] = info.cons, int(info.guaranteed)
            xs[c, 3], xs[c, 4], xs[c, 5] = int(topo_score), info.cpu, info.mem
            if whole and (topology_aware or constrained or topo_score):
                if info.ask.num not in sizes:
                    sizes.append(info.ask.num)
                xs[c, 2] = sizes.index(info.ask.num)
        return asks, ends, xs, sizes

    def _block_extras(self, t: GpuTable, inputs, n: int, xs, sizes: list, count: int) -> tuple:
        """The kernel's ``ex`` tuple (``kernels.gpu._block.place_block``)."""
        tables = [t.picker.tables(k) for k in sizes] or [KT.stack_tables([])]
        tn = max(tb[0].shape[0] for tb in tables)
        sn = max(tb[0].shape[1] for tb in tables)
        sub3 = np.full((len(tables), tn, sn), KT.PAD, np.int64)
        cost3 = np.zeros((len(tables), tn, sn), np.int64)
        iok3 = np.zeros((len(tables), tn, sn), np.bool_)
        nok3 = np.zeros((len(tables), tn, sn), np.bool_)
        for k, (sub, cost, iok, nok) in enumerate(tables):
            sub3[k, :sub.shape[0], :sub.shape[1]] = sub
            cost3[k, :sub.shape[0], :sub.shape[1]] = cost
            iok3[k, :sub.shape[0], :sub.shape[1]] = iok
            nok3[k, :sub.shape[0], :sub.shape[1]] = nok
        rs = inputs.row_scores
        z = t.zcpu.shape[1]
        return (xs, inputs.c_qreq, inputs.c_qnz,
                np.array([rs.flags, rs.strategy, rs.fit_weight, rs.balanced_weight,
                          inputs.weights.get(NAME_TOPO, 0)], np.int64),
                rs.fit_res, rs.fit_kind, rs.fit_weights, rs.shape_util, rs.shape_score,
                rs.bal_res, rs.bal_kind, t.single_policy[:n], t.numa[:n], t.zcpu[:n],
                t.zcpu_used[:n], t.zmem[:n], t.zmem_used[:n], t.topo[:n], sub3, cost3, iok3,
                nok3, np.zeros(z, np.int64), np.zeros(z, np.int64), np.full(n, -1, np.int64),
                np.full(count, -1, np.int64))

    def place_block(self, ctx, inputs):
        """``BlockPlacerPlugin``: the block's pods placed by
        ``kernels.gpu.block.place_block`` on the numba backend (fit, this
        filter with its NVLink / NUMA constraints, GpuShareScore's policy,
        GpuTopologyScore, the row-local built-in scores, the node-only
        scores, the tie-break; Reserve's GPU pick by the profile's rule and
        its NUMA pin), recorded in the GPU table.  The block ends before the
        first pod asking for fixed GPU indices, or for an NVLink / NUMA
        placement of a GPU share or when the block counts failures
        (``inputs.max_failures`` > 0); None (no block) on another backend
        (cuda places its pods by their cycles),
        under BestFit with any score beside it, or when FGD learns its
        typical pods from the pods it scores.  Under Random each pod draws
        its node as its cycle would (``_random_pick``: attempt
        ``inputs.attempt + j`` for the block's pod j, the feasible nodes
        counted from ``inputs.start``)."""
        fw = ctx.framework
        if self.backend != "numba":
            return None
        state = ctx.state
        t = GpuTable.of(state)
        n = inputs.n
        sc = fw.plugins.get(NAME_SCORE)
        weight = inputs.weights.get(NAME_SCORE, 0)
        policy = K.P_RANDOM
        typ = _NO_TYPICAL
        if sc is not None and weight:
            if sc.policy == "FGD" and sc.learns_typical_pods:
                return None
            policy = K.POLICIES.index(sc.policy)
            if sc.policy == "FGD":
                typ = sc.typical(t)
        rule = self.rule(fw, t)
        sel = rule["sel"]
        if sel == K.SEL_FGD and policy != K.P_FGD:
            return None             # Reserve's FGD pick without FGD's scores to take it from
        first = inputs.first
        asks, ends, xs, sizes = self._block_classes(t, inputs, n, inputs.max_failures == 0,
                                                    rule["topology_aware"])
        if policy == K.P_BESTFIT and (inputs.row_scores.flags or sizes):
            return None             # its min-max normalization reads every feasible row
        count = inputs.cls.shape[0]
        stop = np.flatnonzero(ends[inputs.cls])
        if stop.shape[0]:
            count = int(stop[0])
        pods = inputs.pods[:count]
        u = np.zeros(count, np.float64)
        if sel == K.SEL_RANDOM:
            u[:] = [key_uniform(p.key) for p in pods]
        g = max(t.g, 1)
        out_rows = np.full(count, -1, np.int64)
        out_gpus = np.full((count, K.GPU_SLOTS), -1, np.int64)
        counts = np.empty((min(count, inputs.max_failures), inputs.max_keys), np.int32)
        keys = np.zeros((inputs.max_keys, 3), np.int64)
        version = np.array([t.version], np.int64)
        shapes = np.arange(len(first), dtype=np.int64)
        cache = (np.zeros((1, n), np.int64), np.zeros((1, n), np.int64),
                 np.full((1, n), -1, np.int64))
        if policy == K.P_FGD:
            shapes = np.array(sc.fgd_cache_rows(t, [(int(a[3]), int(a[0]), int(a[1]), int(a[2]))
                                                     for a in asks]), np.int64)
            cache = sc.fgd_cache()
        else:
            shapes[:] = 0
        ex = self._block_extras(t, inputs, n, xs, sizes, count)
        assert len(ex) == KB.EX_LEN
        handled, _failed = KB.place_block(
            count, np.uint64(inputs.seed_mix), inputs.attempt, inputs.start, n, inputs.cls,
            u, inputs.c_req, inputs.c_nz, inputs.c_res, inputs.c_nres, asks[:, 0], asks[:, 1],
            asks[:, 2], asks[:, 3], shapes, inputs.static_reasons,
            inputs.placer_bit, state.allocatable, state.requested,
            state.nonzero_requested, t.count[:n], t.model[:n], t.left[:n, :g], t.aff[:n],
            t.ver[:n], version, policy, sel, *typ, *cache, weight,
            inputs.static_total, np.empty(n, np.int64), np.empty(n, np.int64),
            np.zeros(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64),
            np.empty(n, np.int64), np.empty(K.GPU_SLOTS, np.int64), keys, np.zeros(1, np.int64), out_rows,
            out_gpus, counts, *_block_trees(inputs.cls[:count], len(first), n, policy), ex)
        t.version = int(version[0])
        rows = out_rows[:handled]
        placed = np.flatnonzero(rows >= 0)
        t.log_placed(rows[placed])
        c = inputs.cls[placed]
        zones = ex[-1][placed]
        pinned = zones >= 0
        pins = None
        if pinned.any():
            pins = list(zip(zones.tolist(), np.where(pinned, xs[c, 4], 0).tolist(),
                            np.where(pinned, xs[c, 5], 0).tolist()))
        t.adopt([pods[j].key for j in placed.tolist()], rows[placed].tolist(),
                [tuple(g for g in row if g >= 0) for row in out_gpus[placed].tolist()],
                asks[c, 1].tolist(), pins)
        return BlockOutput(handled, rows, counts, keys)

    def explain_status(self, ctx, row: int) -> Status:
        t = GpuTable.of(ctx.state)
        info = t.pod_info(ctx.pod)
        ask = info.ask
        c = int(t.count[row])
        reason = "node(s) didn't fit the pod's GPUs"
        if info.has_gpu:
            if c == 0:
                reason = "node(s) had no GPUs"
            elif not K.model_ok(int(t.model[row]), t.model_mask(ask.models)):
                reason = "node(s) had no GPU of an allowed model"
            elif sum(1 for g in range(c) if t.left[row, g] >= ask.milli) < ask.num:
                reason = (f"node(s) didn't have a GPU with {ask.milli} free milli-GPU"
                          if ask.is_share else f"node(s) didn't have {ask.num} free GPU(s)")
            else:
                cons = t.constraint_at(info, row)
                reason = ("node(s) couldn't align the pod's GPUs, CPU and memory on a single "
                          "NUMA node" if cons & C_NUMA else
                          "node(s) couldn't fit the pod's GPUs in one NVLink island")
                if cons == (C_ISLAND | C_NUMA):
                    reason = ("node(s) couldn't fit the pod's GPUs in one NVLink island on a "
                              "single NUMA node with its CPU and memory")
        else:
            reason = "node(s) couldn't align the pod's CPU and memory on a single NUMA node"
        return Status(Code.UNSCHEDULABLE, (reason,), self.name)

    # ----------------------------------------------------------- reserve
    def rule(self, fw, t: GpuTable) -> dict:
        """How GPUs are picked in this profile: the GpuShareScore policy's
        rule (FGD: its best GPU for a share; Random: uniform; others: best
        fit), and the tightest subset for whole GPUs with GpuTopologyScore."""
        plugins = getattr(fw, "plugins", {}) if fw is not None else {}
        sc = plugins.get(NAME_SCORE)
        kw = {"topology_aware": NAME_TOPO in plugins, "sel": K.SEL_BEST, "fgd": None}
        if sc is not None:
            kw["sel"] = POLICY_SEL[sc.policy]
            if sc.policy == "FGD":
                kw["fgd"] = sc.fgd_context(t)
        return kw

    def _cpu_left(self, state, row: int, extra: int = 0) -> int:
        return int(state.allocatable[row, 0] - state.requested[row, 0]) + extra

    def reserve(self, ctx, node_name: str) -> Status:
        state = ctx.state
        t = GpuTable.of(state)
        info = t.pod_info(ctx.pod)
        key = ctx.pod.key
        row = state.node_rows[node_name]
        if not info.has_gpu and not (t.constraint_at(info, row) & C_NUMA):
            return Status.OK
        a = t.repick(key, ctx.pod, cpu_left=self._cpu_left(state, row, info.cpu),
                     **self.rule(ctx.framework, t))
        if a is None:
            return Status(Code.UNSCHEDULABLE, (f"node {node_name} has no GPUs left for the pod",),
                          self.name)
        return Status.OK

    def unreserve(self, ctx, node_name: str) -> None:
        t = GpuTable.attached(ctx.state)
        if t is not None:
            t.release(ctx.pod.key)

    def explain_fields(self, ctx, selected: str | None) -> dict:
        """``{"gpus": {"node", "indices", "milli"}}`` of the pod on the
        selected node (what Reserve would pick now), or ``{"gpus": None}``."""
        if selected is None:
            return {"gpus": None}
        state = ctx.state
        t = GpuTable.of(state)
        info = t.pod_info(ctx.pod)
        if not info.has_gpu:
            return {"gpus": None}
        row = state.node_rows[selected]
        p = t.picker.pick(row, info, key=ctx.pod.key, cpu_left=self._cpu_left(state, row),
                   **self.rule(ctx.framework, t))
        if p is None:
            return {"gpus": None}
        return {"gpus": {"node": selected, "indices": [int(g) for g in p[0]],
                         "milli": info.ask.milli}}


class GpuShareScore(ArrayPlugin):
    name = NAME_SCORE

    def __init__(self, args, handle):
        # decoded by the config (decode_score_args) or, given raw, here
        args = decode_score_args(args, f"pluginConfig[{NAME_SCORE}].args")
        self.policy = args.policy
        self.backend = _backend(handle)
        self._fixed = args.typical_pods
        self._seen: dict = {}
        self._seen_keys: set = set()
        self._typical = None
        self._typical_sig = None
        self._cache: dict = {}          # pod shape -> its row of the FGD cache
        self._cache_owner = None
        self._cache_cap = -1
        self._cs = self._cg = self._cv = np.zeros((0, 0), np.int64)
        self._typical_spec: list = []
        self._lt_owner = None
        self._lt = np.zeros(0, np.int64)
        self._lt_ver = np.zeros(0, np.int64)
        self._answers = RowAnswers(1)   # the policy's scores per pod shape
        self._rows_buf = None           # ``_score_few_rows``'s full-size scratch
        # a learning FGD's per-node, per-typical-shape terms (numpy, numba)
        self._terms = (TypicalTerms(self.backend)
                       if self._fixed is None and self.backend in ("numpy", "numba") else None)
        if self._fixed is not None:
            self._typical_from(list(self._fixed), None)

    @staticmethod
    def _random_pick(ctx, raw, scored):
        """Random (the openb simulator's RandomScore): one of the scored
        nodes, uniformly at random per pod, takes the maximum score, the
        others 0.  The draw is the cycle's seeded one (``draw_index`` of its
        seed and attempt, the k-th scored node in evaluation order), not
        the tie rule: ties are broken by a rank a sort can express, which
        does not draw per pod."""
        out = np.zeros_like(raw)
        picked = np.flatnonzero(scored)
        if picked.shape[0]:
            seed, attempt = ctx.data.get(CYCLE_DRAW, (0, 0))
            out[picked[draw_index(seed, attempt, picked.shape[0])]] = MAX_NODE_SCORE
        return out

    def _typical_from(self, shapes, t):
        tot = sum(s[4] for s in shapes) or 1.0
        self._typical_spec = [(c, num, milli, models, w / tot) for c, num, milli, models, w in shapes]
        self._typical = None

    def _observe(self, ctx, info) -> None:
        key = ctx.pod.key
        if self._fixed is not None or key in self._seen_keys:
            return
        self._seen_keys.add(key)
        shape = (info.cpu_nz, info.ask.milli, info.ask.num, "|".join(info.ask.models))
        self._seen[shape] = self._seen.get(shape, 0) + 1
        shapes = sorted(self._seen.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        need = TYPICAL_THRESHOLD * len(self._seen_keys) / 100.0
        chosen, cum = [], 0
        for k, c in shapes:
            if cum >= need:
                break
            chosen.append((k[0], k[2], k[1], k[3], float(c)))
            cum += c
        self._typical_from(chosen, None)

    def typical(self, t: GpuTable):
        spec = self._typical_spec
        # ``_typical_spec`` is only ever replaced (``_typical_from``, which
        # also drops ``_typical``), never changed in place: its identity
        # stands for its value here.
        models = t.models
        if (self._typical is not None and self._typical_sig is not None
                and self._typical_sig[2] is spec and len(models) == self._typical_sig[3]
                and self._typical_sig[1] == tuple(models)):
            return self._typical
        sig = (tuple(spec), tuple(models), spec, len(models))
        if self._typical is None or self._typical_sig[:2] != sig[:2]:
            self._typical = (np.array([s[0] for s in spec], np.int64),
                             np.array([s[1] for s in spec], np.int64),
                             np.array([s[2] for s in spec], np.int64),
                             np.array([t.model_mask(s[3].split("|")) for s in spec], np.int64),
                             np.array([s[4] for s in spec], np.float64))
            self._cache_owner = None        # new typical pods: the FGD answers start afresh
        self._typical_sig = sig
        return self._typical

    def fgd_context(self, t: GpuTable):
        """(typical arrays, frag(count, model, left, cpu_left, typical)) for
        Reserve's FGD pick on one node: the NumPy twin on numpy, the njit
        rule otherwise (one node on the host; cuda launches nothing here)."""
        if self.backend == "numpy":
            def frag(c, model, left, cpu_left, typ):
                return float(K.frag_np(np.array([c], np.int64), np.array([model], np.int64),
                                       np.asarray(left, np.int64)[None, :],
                                       np.array([cpu_left], np.int64), *typ)[0])
        else:
            def frag(c, model, left, cpu_left, typ):
                return float(K.node_frag(c, model, np.asarray(left, np.int64), cpu_left, *typ))
        return self.typical(t), frag

    def score(self, ctx, rows):
        state = ctx.state
        t = GpuTable.of(state)
        info = t.pod_info(ctx.pod)
        n = max(state.n_rows, 1)
        ask = info.ask
        num, milli = (ask.num, ask.milli) if info.has_gpu else (0, 0)
        if self.policy == "Random":
            return np.zeros(rows.shape[0], np.int64)
        if self.policy == "BestFit":
            cpu_left = (state.allocatable[:n, 0] - state.requested[:n, 0]).astype(np.int64,
                                                                                 copy=False)
            raw = K.bestfit_raw_np(cpu_left, self._gpu_left_total(t, n), info.cpu_nz, num * milli)
            return raw[rows]
        self._observe(ctx, info)
        typ = self.typical(t)
        mask = t.model_mask(ask.models)
        skey = (info.cpu_nz, num, milli, mask)

        def compute(sub):
            return (self._score_rows(t, state, n, sub, info.cpu_nz, num, milli, mask, skey, typ),)

        # A node's score is a function of its own GPU row (and CPU left, which
        # the table's listener follows) and, for FGD, the typical pods: kept
        # per shape, recomputed for the nodes that changed.
        token = typ if self.policy == "FGD" else None
        return at_positions(self._answers.get(t, n, skey, compute, token=token)[0], rows, state)

    def _score_rows(self, t: GpuTable, state, n: int, sub, cpu_nz: int, num: int, milli: int,
                    mask: int, skey, typ) -> np.ndarray:
        """The policy's scores (>= 0) of rows ``sub`` (int64 [k]; None: rows
        0..n-1) on the backend's kernel, FGD through its answer cache
        (``fgd_cache_rows``); a learning FGD through its kept terms
        (``TypicalTerms``: a new pod's frequencies re-combine them)."""
        if self._terms is not None and self.policy == "FGD":
            rows = np.arange(n, dtype=np.int64) if sub is None else sub
            return np.maximum(self._terms.score(t, state, rows, skey, self._typical_spec,
                                                typ[4]), 0)
        if sub is not None and self.backend == "numba":
            return self._score_few_rows(t, state, sub, cpu_nz, num, milli, mask, skey, typ)
        sl = slice(0, n) if sub is None else sub
        k = n if sub is None else sub.shape[0]
        cpu_left = (state.allocatable[sl, 0] - state.requested[sl, 0]).astype(np.int64,
                                                                             copy=False)
        c = self._cache.get(skey) if self._cache_owner is t and self._cache_cap == t.cap else None
        if c is None:
            c = self.fgd_cache_rows(t, [skey])[0]
        cs, cg, cv = self._cs[c], self._cg[c], self._cv[c]
        cache = (cs[sl], cg[sl], cv[sl])       # views for a slice, copies for rows
        s = _SCORE[self.backend](K.POLICIES.index(self.policy), t.count[sl], t.model[sl],
                                 np.ascontiguousarray(t.left[sl]), cpu_left,
                                 np.zeros(k, np.int64), np.ascontiguousarray(t.aff[sl]), 0,
                                 cpu_nz, 0, num, milli, mask, *typ, *cache, t.ver[sl],
                                 np.empty(k, np.int64))
        if sub is not None:
            cs[sub], cg[sub], cv[sub] = cache
        return np.maximum(s, 0)

    def _score_few_rows(self, t: GpuTable, state, sub, cpu_nz: int, num: int, milli: int,
                        mask: int, skey, typ) -> np.ndarray:
        """``_score_rows`` of the rows ``sub`` on numba, in place on the
        table's full columns (``K.score_rows``): the rows a placement
        changed cost one compiled call, not a gather and a scatter of every
        column."""
        c = self._cache.get(skey) if self._cache_owner is t and self._cache_cap == t.cap else None
        if c is None:
            c = self.fgd_cache_rows(t, [skey])[0]
        cap = t.cap
        if self._rows_buf is None or self._rows_buf[0].shape[0] != cap:
            # cpu left, memory left (always 0: not scored), score, GPU [cap]
            self._rows_buf = (np.zeros(cap, np.int64), np.zeros(cap, np.int64),
                              np.zeros(cap, np.int64), np.zeros(cap, np.int64))
        cpu_left, mem_left, out, out_gpu = self._rows_buf
        s = K.score_rows(sub, K.POLICIES.index(self.policy), t.count, t.model, t.left,
                         state.allocatable, state.requested, cpu_left, mem_left, t.aff, 0,
                         cpu_nz, 0, num, milli, mask, *typ, self._cs[c], self._cg[c],
                         self._cv[c], t.ver, out, out_gpu)
        return np.maximum(s, 0)

    @property
    def learns_typical_pods(self) -> bool:
        """Whether the typical pods FGD scores against are learnt from the
        pods scored (no ``typicalPods`` in the args)."""
        return self._fixed is None

    def fgd_cache(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The FGD answer cache (score, GPU, node version computed at;
        [S, cap] int64 each, rows from ``fgd_cache_rows``), which a compiled
        block reads and fills in place."""
        return self._cs, self._cg, self._cv

    def fgd_cache_rows(self, t: GpuTable, shapes: list) -> list:
        """The rows of the FGD answer cache (``_cs`` score, ``_cg`` GPU,
        ``_cv`` the node version they were computed at; [S, cap] int64
        each, one row per pod shape (cpu_nz, num, milli, model mask)) of
        ``shapes``, added as needed; the cache starts afresh with a new
        table, a new capacity or new typical pods."""
        if self._cache_owner is not t or self._cache_cap != t.cap or self._cs.shape[1] != t.cap:
            self._cache.clear()
            self._cache_owner, self._cache_cap = t, t.cap
            self._cs = np.zeros((8, t.cap), np.int64)
            self._cg = np.zeros((8, t.cap), np.int64)
            self._cv = np.full((8, t.cap), -1, np.int64)
        out = []
        for skey in shapes:
            c = self._cache.get(skey)
            if c is None:
                c = self._cache[skey] = len(self._cache)
                if c >= self._cs.shape[0]:
                    grow = self._cs.shape[0]
                    self._cs = np.vstack([self._cs, np.zeros((grow, t.cap), np.int64)])
                    self._cg = np.vstack([self._cg, np.zeros((grow, t.cap), np.int64)])
                    self._cv = np.vstack([self._cv, np.full((grow, t.cap), -1, np.int64)])
            out.append(c)
        return out

    def _gpu_left_total(self, t: GpuTable, n: int) -> np.ndarray:
        """[n] free milli per node (its GPUs' ``left`` summed), recounted
        only for the rows whose table version moved."""
        if self._lt_owner is not t or self._lt.shape[0] != n:
            self._lt_owner = t
            self._lt = np.zeros(n, np.int64)
            self._lt_ver = np.full(n, -1, np.int64)
        tv = t.ver[:n]
        rows = np.flatnonzero(tv != self._lt_ver)
        if rows.size > 16:
            valid = np.arange(t.g)[None, :] < t.count[rows, None]
            self._lt[rows] = np.where(valid, t.left[rows], 0).sum(axis=1)
            self._lt_ver[rows] = tv[rows]
        elif rows.size:                 # a few rows (one pod placed): no 2-D temporaries
            lt, count, left = self._lt, t.count, t.left
            for r in rows.tolist():
                c = int(count[r])
                lt[r] = int(left[r, :c].sum()) if c > 0 else 0
            self._lt_ver[rows] = tv[rows]
        return self._lt

    def normalize_scores(self, ctx, rows, raw, scored):
        if self.policy == "Random":
            return self._random_pick(ctx, raw, scored)
        if self.policy != "BestFit":
            return raw
        if not scored.any():
            return raw
        picked = raw[scored]
        lo, hi = picked.min(), picked.max()
        rng = hi - lo
        if rng == 0:
            return np.zeros_like(raw)
        return (raw - lo) * 100 // rng


class GpuTopologyScore(ArrayPlugin):
    name = NAME_TOPO

    def __init__(self, args, handle):
        self.backend = _backend(handle)

    def pre_score(self, ctx) -> Status:
        t = GpuTable.of(ctx.state)
        info = t.pod_info(ctx.pod)
        if info.has_gpu and info.ask.num >= 2 and info.ask.milli >= MILLI:
            return Status.OK
        return Status(Code.SKIP)

    def score(self, ctx, rows):
        t = GpuTable.of(ctx.state)
        info = t.pod_info(ctx.pod)
        n = max(ctx.state.n_rows, 1)
        return at_positions(subset_answers(t, info, n, self.backend)[3], rows, ctx.state)


def new_fit(args, handle):
    return GpuShareFit(args, handle)


def new_score(args, handle):
    return GpuShareScore(args, handle)


def new_topology(args, handle):
    return GpuTopologyScore(args, handle)


def register(registry) -> None:
    """The GPU plugin set: GpuShareFit, GpuShareScore, GpuTopologyScore and
    the NodeResourceTopology kind they read (the ``tensorsched.plugins``
    entry point ``gpu``)."""
    register_decoders()
    registry.register_kind(nrt.OBJECT_KIND, nrt.attach)
    registry.register(NAME_FIT, new_fit, POINTS_FIT)
    registry.register(NAME_SCORE, new_score, POINTS_SCORE)
    registry.register(NAME_TOPO, new_topology, POINTS_TOPO)
    registry.register_ask(GPU_ANNOTATION_ASK)


#: openb-style GPU asks: only GpuShareFit reads them (NodeResourcesFit sees
#: no resource request), so a profile without it places such pods as if
#: they asked for no GPU.
GPU_ANNOTATION_ASK = InputAsk("GPUs in annotations", NAME_FIT, "filter",
                              (ANNO_GPU_MILLI, ANNO_GPU_COUNT, ANNO_GPU_MODEL))


register_decoders()        # a config loaded once this module is imported decodes the args
