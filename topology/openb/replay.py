"""openb trace replay: the experiment of Weng et al., "Beware of
Fragmentation" (USENIX ATC'23), on the GPU kernels.

The experiment, as the paper's simulator runs it (re-implemented here):

0. the cluster is the trace's 1,213 GPU nodes (``openb_node_list_gpu_node.csv``:
   the simulator's input preparation copies only that node list), 6,212 GPUs;
1. workload = every pod of the trace; cluster capacity C = GPUs x 1000 milli;
2. arrival order: all pods of the trace once, shuffled (seeded); then "tune":
   while the arrived GPU demand stays within ``tune`` x C, pods drawn
   uniformly with replacement are appended in draw order (the simulator stops
   when demand + the drawn pod's per-GPU milli would exceed tune x C; above
   tune x C it removes random pods instead);
3. pods are scheduled one by one in that order, no departures; a pod that
   fits nowhere fails and is counted as arrived.  Filters: CPU and memory
   (kube-scheduler's NodeResourcesFit stays on) and the GPU filter;
4. after each pod record arrived / allocated GPU milli and the cluster's
   fragmentation (FGD's measure under the typical pods: the pod shapes of the
   trace, most frequent first, that cover 95 % of its pods, CPU-only ones
   included);
5. report, for k = 0..130, the mean over the records whose arrived demand
   rounds to k % of C (else within k +- 1) of the allocation ratio (%), the
   fragmentation amount (% of C) and the fragmentation ratio (% of idle GPU).

Node choice: the policy's score (``tensorsched.kernels.gpu.share``), and only
it (the simulator's scheduler config disables every default score plugin).
Ties: the simulator prefixes node names with a seeded random permutation and
its kube-scheduler fork (selectHost) keeps the lexicographically smallest
name among the best, so ties go to a fixed, random node order drawn once per
run -- not to a fresh uniform draw per pod.  This matters: FGD scores most
nodes alike for CPU-only pods, and a fixed order packs them onto few nodes
instead of spreading them over all GPU nodes' CPU.  Random: one feasible node
uniformly at random (its PreScore).  GPU choice: Random picks a random GPU
that fits a share; DotProd, GpuClustering, GpuPacking and BestFit the fitting
GPU with the least free milli; FGD the GPU with the best FGD score; whole
GPUs are the first free ones.

The random streams differ from the Go simulator's (math/rand), so single
runs differ; means over seeds are what is compared.
"""

from __future__ import annotations

import csv
import math
import os
import time
from dataclasses import dataclass

import numpy as np

from tensorsched.kernels.gpu import share as K
from tensorsched.topology.gpu import (
    MAX_CPU_MILLI,
    MAX_MEMORY_MIB,
    MAX_NODE_GPUS,
    MILLI,
    CsvError,
    GpuInventory,
    csv_int,
    csv_name,
    read_csv_rows,
    read_openb_nodes,
)

from .limits import MAX_SEED, MAX_SEEDS, MAX_TUNE, parse_seeds

POLICY_SEL = {"Random": K.SEL_RANDOM, "DotProd": K.SEL_BEST, "GpuClustering": K.SEL_BEST,
              "GpuPacking": K.SEL_BEST, "BestFit": K.SEL_BEST, "FGD": K.SEL_FGD}
POLICY_DIR = {"Random": "01-Random", "DotProd": "02-DotProd", "GpuClustering": "03-GpuClustering",
              "GpuPacking": "04-GpuPacking", "BestFit": "05-BestFit", "FGD": "06-FGD"}
BACKENDS = ("numba", "numpy")
TYPICAL_POD_THRESHOLD = 95   # percent of pods covered by the typical shapes
N_COLS = 131                 # 0..130 % of capacity
MAX_DRAWS = 2_000_000        # pods drawn with replacement to reach tune x capacity
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")


@dataclass
class TracePods:
    names: list
    cpu: np.ndarray
    mem: np.ndarray
    num: np.ndarray
    milli: np.ndarray
    spec: list       # allowed models string ('' = any), '|'-separated
    source: str = ""  # the CSV it was read from, for error messages

    def __len__(self):
        return len(self.names)

    @property
    def cpu_nz(self):
        return np.where(self.cpu > 0, self.cpu, 100)

    @property
    def gpu_total(self):
        return np.where(self.milli > 0, self.num * self.milli, 0)


def read_openb_pods(path) -> TracePods:
    """Pods of an openb pod CSV (name, cpu_milli, memory_mib, num_gpu,
    gpu_milli, gpu_spec).  A malformed cell (gpu_milli outside 0..1000,
    num_gpu outside 0..16, ...), a missing column or a file without pods is
    a CsvError naming the file, line and column."""
    names, cpu, mem, num, milli, spec = [], [], [], [], [], []
    seen: dict[str, int] = {}
    for line, row in read_csv_rows(path, POD_COLUMNS):
        name = csv_name(path, line, "name", row["name"])
        if name in seen:
            # the simulator keeps pods by name: a second row would replace
            # the first (refused as the Simulation's reader refuses it)
            raise CsvError(path, line, "name", f"duplicate pod {name!r} (first on line "
                           f"{seen[name]})")
        seen[name] = line
        names.append(name)
        cpu.append(csv_int(path, line, "cpu_milli", row["cpu_milli"], 0, MAX_CPU_MILLI))
        mem.append(csv_int(path, line, "memory_mib", row["memory_mib"], 0, MAX_MEMORY_MIB))
        n = csv_int(path, line, "num_gpu", row["num_gpu"], 0, MAX_NODE_GPUS, default=0)
        m = csv_int(path, line, "gpu_milli", row["gpu_milli"], 0, MILLI, default=0)
        if n > 1 and 0 < m < MILLI:
            raise CsvError(path, line, "num_gpu", f"a GPU share ({m} milli) must ask for exactly "
                           f"one GPU, not {n}")
        if n == 0 or m == 0:
            n, m = 0, 0
        num.append(n)
        milli.append(m)
        spec.append((row.get("gpu_spec") or "").strip())
    if not names:
        raise CsvError(path, None, "", "no pods: the file has a header but no rows")
    order = np.argsort(np.array(names), kind="stable")   # the simulator keeps pods by name
    pick = lambda a: [a[i] for i in order]
    return TracePods(pick(names), np.array(pick(cpu), np.int64), np.array(pick(mem), np.int64),
                    np.array(pick(num), np.int64), np.array(pick(milli), np.int64), pick(spec),
                    str(path))


def _where(obj, what: str) -> str:
    src = getattr(obj, "source", "")
    return f"{src}: " if src else f"{what}: "


def check_tune(tune) -> float:
    """``tune``: a finite number in (0, MAX_TUNE] (the arrived GPU demand's
    target, as a multiple of the cluster's GPU capacity)."""
    if isinstance(tune, bool) or not isinstance(tune, (int, float, np.integer, np.floating)):
        raise ValueError(f"tune must be a number in (0, {MAX_TUNE:g}], got {tune!r}")
    t = float(tune)
    if not math.isfinite(t) or not 0 < t <= MAX_TUNE:
        raise ValueError(f"tune must be a finite number in (0, {MAX_TUNE:g}] (a multiple of the "
                         f"cluster's GPU capacity), got {tune!r}")
    return t


def check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) \
            or not 0 <= int(seed) <= MAX_SEED:
        raise ValueError(f"seed must be an integer 0..{MAX_SEED}, got {seed!r}")
    return int(seed)


def check_inputs(nodes: GpuInventory, pods: TracePods) -> None:
    """The replay's inputs make sense: some nodes with GPUs, some pods, and
    GPU demand (the experiment stops on arrived GPU demand)."""
    if nodes.n_nodes == 0:
        raise ValueError(f"{_where(nodes, 'nodes')}no nodes")
    if nodes.total_gpus <= 0:
        raise ValueError(f"{_where(nodes, 'nodes')}no node has a GPU: the replay measures GPU "
                         "allocation against the cluster's GPU capacity")
    if len(pods) == 0:
        raise ValueError(f"{_where(pods, 'pods')}no pods")
    if not (pods.gpu_total > 0).any():
        raise ValueError(f"{_where(pods, 'pods')}no pod asks for a GPU (num_gpu and gpu_milli "
                         "> 0): the workload is drawn until its GPU demand reaches tune x "
                         "capacity, which it never would")


def typical_pods(pods: TracePods, threshold: int = TYPICAL_POD_THRESHOLD):
    """(cpu_nz, num, milli, spec, freq) of the most frequent shapes covering
    ``threshold`` % of pods, frequencies renormalized to sum 1."""
    counts: dict = {}
    cnz = pods.cpu_nz
    for i in range(len(pods)):
        key = (int(cnz[i]), int(pods.milli[i]), int(pods.num[i]), pods.spec[i])
        counts[key] = counts.get(key, 0) + 1
    # decreasing count; ties: decreasing (cpu, milli, num, spec) like the simulator's sort
    shapes = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    total = float(len(pods))
    need = threshold * total / 100.0
    chosen, cum = [], 0.0
    for key, c in shapes:
        if cum >= need:
            break
        chosen.append((key, c))
        cum += c
    return [(k[0], k[2], k[1], k[3], c / cum) for k, c in chosen]


def draw_workload(pods: TracePods, capacity_milli: int, tune: float, rng) -> np.ndarray:
    """Indices into ``pods`` of the arrival sequence, in the simulator's order:
    every pod of the trace once, shuffled (seeded); then, while the arrived GPU
    demand stays within ``tune`` x capacity, pods drawn uniformly with
    replacement are appended in draw order (the simulator stops at the first
    draw whose per-GPU milli would exceed the target).  Above the target,
    random pods are removed instead."""
    n = len(pods)
    gt = pods.gpu_total
    total = int(gt.sum())
    target = tune * capacity_milli
    if tune > 0 and total < target:
        # each draw adds the mean demand on average: refuse what would not end
        mean = float(gt.mean()) if n else 0.0
        if mean <= 0:
            raise ValueError(f"{_where(pods, 'pods')}no pod asks for a GPU: the draw up to "
                             f"tune x capacity ({target:g} milli-GPU) would never end")
        if (target - total) / mean > MAX_DRAWS:
            raise ValueError(f"{_where(pods, 'pods')}reaching tune x capacity ({target:g} "
                             f"milli-GPU) would take about {(target - total) / mean:.3g} pods "
                             f"drawn at {mean:.3g} milli-GPU each (at most {MAX_DRAWS})")
    seq = list(rng.permutation(n))
    if tune > 0 and total < target:
        for _ in range(4 * MAX_DRAWS):
            j = int(rng.integers(n))
            if total + int(pods.milli[j]) > target:
                break
            total += int(gt[j])
            seq.append(j)
        else:
            raise ValueError(f"{_where(pods, 'pods')}drew {4 * MAX_DRAWS} pods without reaching "
                             f"tune x capacity ({target:g} milli-GPU)")
    elif tune > 0 and total > target:
        while total > target and seq:
            k = int(rng.integers(len(seq)))
            total -= int(gt[seq[k]])
            seq.pop(k)
    return np.array(seq, dtype=np.int64)


def _discrete(arrive_pct, values):
    """Mean of ``values`` per k = round(arrive_pct) (k +- 1 when empty)."""
    key = np.round(arrive_pct)          # round half to even, as pandas/python round
    out = np.full(N_COLS, np.nan)
    values = np.ascontiguousarray(values, np.float64)
    if key.shape[0] and not (np.diff(key) < 0).any():
        # arrived demand only grows: each k's records are one slice, whose
        # mean is the masked selection's (same elements, same order)
        for k in range(N_COLS):
            lo, hi = np.searchsorted(key, k, "left"), np.searchsorted(key, k, "right")
            if lo == hi:
                lo, hi = np.searchsorted(key, k - 1, "left"), np.searchsorted(key, k + 1, "right")
                if lo == hi:
                    continue
            out[k] = values[lo:hi].mean()
        return out
    for k in range(N_COLS):
        sel = key == k
        if not sel.any():
            sel = (key >= k - 1) & (key <= k + 1)
            if not sel.any():
                continue
        out[k] = values[sel].mean()
    return out


@dataclass
class ReplayResult:
    policy: str
    seed: int
    tune: float
    total_gpus: int
    pods: int
    scheduled: int
    seconds: float
    alloc: np.ndarray          # [131] allocation ratio %, rounded to 2
    frag_amount: np.ndarray    # [131] fragmentation, % of capacity
    frag_ratio: np.ndarray     # [131] fragmentation, % of idle GPU milli
    placements: list           # (pod name, node index, gpu indices) per pod


def policy_kernels(policy: str, backend: str) -> tuple:
    """(score_nodes, select_gpus) of ``backend``, once the policy and backend names are known
    (``auto``: numba, the replay has no GPU kernels)."""
    if backend == "auto":
        backend = "numba"
    if policy not in POLICY_SEL:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(K.POLICIES)}")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "numba":
        return K.score_nodes, K.select_gpus
    return K.score_nodes_np, K.select_gpus_np


def _typical_arrays(pods: TracePods, inv: GpuInventory) -> tuple:
    """[T] arrays of the typical pods: cpu_nz (milli), num, milli, model mask (int64), freq."""
    tp = typical_pods(pods)
    return (np.array([t[0] for t in tp], np.int64),
            np.array([t[1] for t in tp], np.int64),
            np.array([t[2] for t in tp], np.int64),
            np.array([inv.model_mask(t[3].split("|")) for t in tp], np.int64),
            np.array([t[4] for t in tp], np.float64))


def pod_shapes(pods: TracePods, inv: GpuInventory) -> tuple[np.ndarray, np.ndarray, int]:
    """(model mask [P] int64, shape id [P] int64, number of shapes) of the trace's pods."""
    masks = np.array([inv.model_mask(s.split("|")) for s in pods.spec], np.int64)
    shape_of = {}
    shape_id = np.empty(len(pods), np.int64)
    for i in range(len(pods)):
        key = (int(pods.cpu[i]), int(pods.mem[i]), int(pods.num[i]), int(pods.milli[i]),
               int(masks[i]))
        shape_id[i] = shape_of.setdefault(key, len(shape_of))
    return masks, shape_id, len(shape_of)


def _frag_tracker(inv: GpuInventory, typical: tuple, backend: str) -> tuple:
    """(fragmentation per node [N] float64 in GPU milli, node index -> its current value)."""
    n = inv.n_nodes
    if backend == "numba":
        node_frag = K.cluster_frag(inv.gpu_count, inv.model, inv.gpu_left, inv.cpu_left,
                                   *typical, np.zeros(n))

        def frag_of(i):
            return K.node_frag(int(inv.gpu_count[i]), int(inv.model[i]), inv.gpu_left[i],
                               int(inv.cpu_left[i]), *typical)
    else:
        node_frag = K.frag_np(inv.gpu_count, inv.model, inv.gpu_left, inv.cpu_left, *typical)

        def frag_of(i):
            return float(K.frag_np(inv.gpu_count[i:i + 1], inv.model[i:i + 1],
                                   inv.gpu_left[i:i + 1], inv.cpu_left[i:i + 1], *typical)[0])
    return node_frag, frag_of


def _kernel_buffers(s_count: int, n: int) -> tuple:
    """int64 scratch: caches [S, N] x3, node_ver [N], aff [N, 18], out_gpu [N], gidx [16]."""
    return (np.zeros((s_count, n), np.int64), np.zeros((s_count, n), np.int64),
            np.full((s_count, n), -1, np.int64), np.zeros(n, np.int64),
            np.zeros((n, 18), np.int64), np.empty(n, np.int64), np.empty(16, np.int64))


def _place_pods(inv, pods, seq, policy, kernels, rng, tie, typical, shapes, frag,
                check_memory, record_placements) -> tuple:
    """((arrived, used, frag, idle) [len(seq)] milli after each pod, scheduled, placements)."""
    score_nodes, select_gpus = kernels
    tp_cpu, tp_num, tp_milli, tp_mask, tp_freq = typical
    masks, shape_id, n_shapes = shapes
    node_frag, frag_of = frag
    cpu_nz = pods.cpu_nz
    n = inv.n_nodes
    pid = K.POLICIES.index(policy)
    sel = POLICY_SEL[policy]
    fgd = pid == K.P_FGD
    # the FGD cache is per (pod shape, node)
    cache_score, cache_gpu, cache_ver, node_ver, aff, out_gpu, gidx = _kernel_buffers(
        n_shapes if fgd else 1, n)
    frag_total = float(node_frag.sum())
    idle = int(inv.gpu_left.sum())
    used = 0
    arrived = 0
    rec_arr, rec_used, rec_frag, rec_idle = (np.empty(len(seq)) for _ in range(4))
    placements = []
    scheduled = 0
    for t, j in enumerate(seq):
        num, milli = int(pods.num[j]), int(pods.milli[j])
        s = int(shape_id[j]) if fgd else 0
        scores = score_nodes(pid, inv.gpu_count, inv.model, inv.gpu_left, inv.cpu_left,
                             inv.mem_left, aff, int(pods.cpu[j]), int(cpu_nz[j]),
                             int(pods.mem[j]) if check_memory else 0,
                             num, milli, int(masks[j]), tp_cpu, tp_num, tp_milli, tp_mask,
                             tp_freq, cache_score[s], cache_gpu[s], cache_ver[s], node_ver,
                             out_gpu)
        arrived += num * milli
        node = -1
        if pid == K.P_RANDOM:
            # RandomScore: one feasible node, uniformly at random, gets the max score
            cand = np.flatnonzero(scores >= 0)
            if len(cand):
                node = int(cand[rng.integers(len(cand))])
        else:
            k_best = int(np.argmax(scores * n + tie))
            if scores[k_best] >= 0:
                node = k_best
        if node >= 0:
            u = rng.random() if sel == K.SEL_RANDOM else 0.0
            if sel == K.SEL_FGD and num == 1 and 0 < milli < MILLI:
                gidx[0] = out_gpu[node]
                k = 1
            else:
                k = select_gpus(K.SEL_RANDOM if sel == K.SEL_RANDOM else K.SEL_BEST,
                                int(inv.gpu_count[node]), inv.gpu_left[node], num, milli, u,
                                gidx)
            for q in range(k):
                g = gidx[q]
                assert inv.gpu_left[node, g] >= milli
                inv.gpu_left[node, g] -= milli
            inv.cpu_left[node] -= pods.cpu[j]
            inv.mem_left[node] -= pods.mem[j]
            aff[node, K.affinity_tag(num, milli)] += 1
            node_ver[node] += 1
            used += k * milli
            idle -= k * milli
            old = node_frag[node]
            node_frag[node] = frag_of(node)
            frag_total += node_frag[node] - old
            scheduled += 1
            if record_placements:
                placements.append((pods.names[j], node, [int(x) for x in gidx[:k]]))
        elif record_placements:
            placements.append((pods.names[j], -1, []))
        rec_arr[t] = arrived
        rec_used[t] = used
        rec_frag[t] = frag_total
        rec_idle[t] = idle
    return (rec_arr, rec_used, rec_frag, rec_idle), scheduled, placements


def allocation_curves(records: tuple, total_gpus: int) -> tuple:
    """(allocation %, fragmentation % of capacity, fragmentation % of idle): [N_COLS] each."""
    rec_arr, rec_used, rec_frag, rec_idle = records
    tg = total_gpus
    arr_pct = rec_arr / tg / 10
    alloc = np.round(_discrete(arr_pct, np.round(rec_used / tg / 10, 2)), 2)
    famt = _discrete(arr_pct, rec_frag / tg / 10)
    fratio = _discrete(arr_pct, np.where(rec_idle > 0,
                                         100.0 * rec_frag / np.maximum(rec_idle, 1), 0.0))
    return alloc, famt, fratio


_curves = allocation_curves     # the name the curve tests were written against


def replay(nodes: GpuInventory, pods: TracePods, policy: str, seed: int = 42, tune: float = 1.3,
           record_placements: bool = False, check_memory: bool = True,
           backend: str = "numba") -> ReplayResult:
    """One experiment.  ``check_memory``: filter on memory too, as the
    simulator's kube-scheduler does (NodeResourcesFit stays enabled next to
    the GPU filter).  ``backend``: ``numba`` (njit kernels) or ``numpy``
    (array code); both give the same placements."""
    kernels = policy_kernels(policy, backend)
    tune = check_tune(tune)
    seed = check_seed(seed)
    check_inputs(nodes, pods)
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    inv = nodes.copy()
    cap = inv.total_gpus * MILLI
    seq = draw_workload(pods, cap, tune, rng)
    # The simulator prefixes node names with a seeded random permutation and
    # its kube-scheduler fork breaks score ties by the smallest node name: a
    # fixed random node priority for the whole run (not a fresh draw per pod).
    rank = rng.permutation(nodes.n_nodes).astype(np.int64)
    tie = (nodes.n_nodes - 1) - rank

    typical = _typical_arrays(pods, inv)
    shapes = pod_shapes(pods, inv)
    frag = _frag_tracker(inv, typical, backend)
    records, scheduled, placements = _place_pods(
        inv, pods, seq, policy, kernels, rng, tie, typical, shapes, frag,
        check_memory, record_placements)
    tg = inv.total_gpus
    return ReplayResult(policy, seed, tune, tg, len(seq), scheduled, time.perf_counter() - t0,
                        *allocation_curves(records, tg), placements)


def _fmt(v):
    return "" if np.isnan(v) else repr(round(float(v), 6))


def write_results(results, output: str, workload: str) -> list[str]:
    """Write the three CSVs in the expected_results layout: ``output`` (the
    allocation ratio), ``<output stem>_frag.csv`` (amount) and
    ``<output stem>_frag_ratio.csv``.  Returns the paths."""
    stem = output[:-4] if output.endswith(".csv") else output
    paths = [output, stem + "_frag.csv", stem + "_frag_ratio.csv"]
    cols = [str(k) for k in range(N_COLS)]
    d = os.path.dirname(os.path.abspath(output))
    os.makedirs(d, exist_ok=True)
    for path, attr, with_total in ((paths[0], "alloc", True), (paths[1], "frag_amount", False),
                                   (paths[2], "frag_ratio", False)):
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["workload", "sc_policy", "tune", "seed"] + (["total_gpus"] if with_total else []) + cols)
            for r in results:
                w.writerow([workload, POLICY_DIR[r.policy], r.tune, r.seed]
                           + ([r.total_gpus] if with_total else [])
                           + [_fmt(v) for v in getattr(r, attr)])
    return paths


def workload_name(pods_path: str) -> str:
    return os.path.splitext(os.path.basename(pods_path))[0]


def run_replay(nodes_path, pods_path, policy, seed=42, tune=1.3, output=None, backend="numba"):
    policy_kernels(policy, backend)           # names checked before reading anything
    check_tune(tune)
    check_seed(seed)
    nodes = read_openb_nodes(nodes_path)
    pods = read_openb_pods(pods_path)
    res = replay(nodes, pods, policy, seed=seed, tune=tune, backend=backend)
    paths = write_results([res], output, workload_name(pods_path)) if output else []
    return res, paths


# ---------------------------------------------------------------------------
# sweep: policies x traces x seeds on all cores, one CSV
# ---------------------------------------------------------------------------

SWEEP_METRICS = (("alloc", "alloc"), ("frag_amount", "frag_amount"), ("frag_ratio", "frag_ratio"))
_LOADED: dict = {}


def load_cached(kind, path):
    """The node inventory (``kind`` "nodes") or the trace pods ("pods") of an
    openb CSV, read once per process (sweep workers reuse them)."""
    key = (kind, os.path.abspath(path))
    if key not in _LOADED:
        _LOADED[key] = read_openb_nodes(path) if kind == "nodes" else read_openb_pods(path)
    return _LOADED[key]


def _sweep_job(job):
    i, nodes_path, pods_path, policy, seed, tune, backend = job
    res = replay(load_cached("nodes", nodes_path), load_cached("pods", pods_path), policy,
                 seed=seed, tune=tune, backend=backend)
    return i, workload_name(pods_path), res


def sweep_inputs(nodes_path, pods_paths, policies, seeds, tune, workers, backend,
                 backends) -> tuple:
    """(nodes, pods paths, policies, seeds, tune) of a sweep, every argument
    and input file checked (``backends``: the names ``backend`` may be)."""
    policies = list(policies)
    if not policies:
        raise ValueError("no policies to sweep")
    for pol in policies:
        if pol not in POLICY_SEL:
            raise ValueError(f"unknown policy {pol!r}; choose one of {', '.join(K.POLICIES)}")
    if backend not in backends:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(backends)}")
    pods_paths = list(pods_paths)
    if not pods_paths:
        raise ValueError("no pod CSV to sweep")
    seeds = list(seeds)
    if not seeds:
        raise ValueError("no seeds to sweep")
    if len(seeds) > MAX_SEEDS:
        raise ValueError(f"{len(seeds)} seeds; at most {MAX_SEEDS}")
    seeds = [check_seed(sd) for sd in seeds]
    tune = check_tune(tune)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 0):
        raise ValueError(f"workers must be a non-negative integer, got {workers!r}")
    for path in [nodes_path, *pods_paths]:
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: no such file")
    # read (and check) every input here: a bad file fails before any run, and
    # the forked workers find them loaded
    nodes = load_cached("nodes", nodes_path)
    for pp in pods_paths:
        check_inputs(nodes, load_cached("pods", pp))
    return nodes, pods_paths, policies, seeds, tune


def sweep(nodes_path, pods_paths, policies=K.POLICIES, seeds=(42,), tune=1.3, workers=None,
          backend="numba", output=None, progress=None):
    """Run ``replay`` for every (trace, policy, seed), ``workers`` processes
    at a time (default: all cores), and write one CSV to ``output`` (see
    ``write_sweep``).  Returns [(workload, ReplayResult)] in job order.
    Every argument and input file is checked before the first run.
    ``openb.batch.sweep`` runs the same sweep as one batched call (what
    ``tensorsched replay --sweep`` runs), each run equal to its
    Simulation; ``replay``'s Random draws its own streams and its sums
    differ in the last bits (the Simulation is the reference)."""
    nodes, pods_paths, policies, seeds, tune = sweep_inputs(
        nodes_path, pods_paths, policies, seeds, tune, workers, backend, BACKENDS)
    jobs = [(0, nodes_path, pp, pol, int(sd), tune, backend)
            for pp in pods_paths for pol in policies for sd in seeds]
    jobs = [(i,) + j[1:] for i, j in enumerate(jobs)]
    workers = max(1, min(workers or os.cpu_count() or 1, len(jobs)))
    out = [None] * len(jobs)
    if workers == 1:
        it = map(_sweep_job, jobs)
        for i, wl, res in it:
            out[i] = (wl, res)
            if progress:
                progress(wl, res)
    else:
        import multiprocessing as mp
        methods = mp.get_all_start_methods()
        ctx = mp.get_context("fork" if "fork" in methods else None)
        with ctx.Pool(workers) as pool:
            for i, wl, res in pool.imap_unordered(_sweep_job, jobs, chunksize=1):
                out[i] = (wl, res)
                if progress:
                    progress(wl, res)
    if output:
        write_sweep(out, output)
    return out


def write_sweep(results, output: str) -> str:
    """One CSV, one row per (workload, policy, seed, metric):
    workload, sc_policy, tune, seed, metric (alloc | frag_amount |
    frag_ratio, as in the three expected_results files), total_gpus, pods,
    scheduled, seconds, then the values at 0..130 % of arrived demand."""
    d = os.path.dirname(os.path.abspath(output))
    os.makedirs(d, exist_ok=True)
    cols = [str(k) for k in range(N_COLS)]
    with open(output, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "sc_policy", "tune", "seed", "metric", "total_gpus", "pods",
                    "scheduled", "seconds"] + cols)
        for wl, r in results:
            for metric, attr in SWEEP_METRICS:
                w.writerow([wl, POLICY_DIR[r.policy], r.tune, r.seed, metric, r.total_gpus, r.pods,
                            r.scheduled, round(r.seconds, 3)] + [_fmt(v) for v in getattr(r, attr)])
    return output


def read_sweep(path, metric="alloc"):
    """{(workload, policy): [values per seed as arrays of 131]} from a sweep CSV."""
    inv_dir = {v: k for k, v in POLICY_DIR.items()}
    out: dict = {}
    cols = ("workload", "sc_policy", "metric") + tuple(str(k) for k in range(N_COLS))
    for line, row in read_csv_rows(path, cols):
        if row["metric"] != metric:
            continue
        vals = _csv_values(path, line, row)
        out.setdefault((row["workload"], inv_dir.get(row["sc_policy"], row["sc_policy"])), []).append(vals)
    return out


def _csv_float(path, line: int, column: str, text) -> float:
    """A finite number (or NaN for an empty cell) of a results CSV."""
    s = (text or "").strip()
    if s == "":
        return np.nan
    try:
        v = float(s)
    except ValueError:
        raise CsvError(path, line, column, f"must be a number, got {text!r}") from None
    if not math.isfinite(v):
        raise CsvError(path, line, column, f"must be a finite number, got {text!r}")
    return v


def _csv_values(path, line: int, row) -> np.ndarray:
    return np.array([_csv_float(path, line, str(k), row[str(k)]) for k in range(N_COLS)])


PLOT_NEEDS = ("drawing the allocation curves needs matplotlib, which the core install leaves out; "
              "install the extra: pip install 'tensorsched[plot]'")


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend; without the 'plot' extra an
    ImportError that says how to install it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(PLOT_NEEDS) from exc
    return plt


def _column_means(runs: np.ndarray) -> np.ndarray:
    """The mean of each column of ``runs`` [seeds, columns] over its
    numbers; NaN where it has none (a short trace's demand never reaches
    that column), without numpy's "Mean of empty slice" warning."""
    have = ~np.isnan(runs)
    count = have.sum(axis=0)
    total = np.where(have, runs, 0.0).sum(axis=0)
    out = np.full(runs.shape[1], np.nan)
    np.divide(total, count, out=out, where=count > 0)
    return out


def plot_allocation(curves, path, expected=None):
    """One PNG: per workload a panel with the GPU allocation ratio (mean over
    seeds) against arrived GPU demand, one line per policy, like Fig. 9(a)
    of the paper.  ``curves``: {(workload, policy): [arrays of 131]} (see
    ``read_sweep``) or [(workload, ReplayResult)].  ``expected``: an
    ``analysis_allo_discrete.csv`` whose published means are drawn dashed."""
    plt = pyplot()
    if not isinstance(curves, dict):
        acc: dict = {}
        for wl, r in curves:
            acc.setdefault((wl, r.policy), []).append(np.asarray(r.alloc, float))
        curves = acc
    workloads = sorted({wl for wl, _ in curves})
    pub = {}
    if expected and os.path.exists(expected):
        cols = ("workload", "sc_policy") + tuple(str(k) for k in range(N_COLS))
        for line, row in read_csv_rows(expected, cols):
            pub.setdefault((row["workload"], row["sc_policy"]), []).append(
                _csv_values(expected, line, row))
    ncol = min(3, len(workloads))
    nrow = (len(workloads) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.2 * ncol, 4.0 * nrow), squeeze=False)
    x = np.arange(N_COLS)
    colors = dict(zip(K.POLICIES, ("tab:gray", "tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:red")))
    for ax, wl in zip(axes.flat, workloads):
        for pol in K.POLICIES:
            if (wl, pol) not in curves:
                continue
            runs = np.vstack(curves[(wl, pol)])
            ax.plot(x, _column_means(runs), color=colors[pol], lw=1.6,
                    label=f"{pol} ({len(runs)} seed{'s' if len(runs) > 1 else ''})")
            if (wl, POLICY_DIR[pol]) in pub:
                ax.plot(x, _column_means(np.vstack(pub[(wl, POLICY_DIR[pol])])),
                        color=colors[pol], lw=1.0, ls="--")
        ax.plot(x, x, color="black", lw=0.6, ls=":")
        ax.set_xlim(0, 130)
        ax.set_ylim(0, 100)
        ax.set_title(wl.replace("openb_pod_list_", ""))
        ax.set_xlabel("arrived GPU demand (% of capacity)")
        ax.set_ylabel("GPU allocation ratio (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    for ax in list(axes.flat)[len(workloads):]:
        ax.set_visible(False)
    if pub:
        fig.suptitle("solid: tensorsched, dashed: published (paper simulator, seeds 42-51)", fontsize=9)
    fig.tight_layout()
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def read_expected(path, workload, policy, col):
    """Published values (one per seed) of column ``col`` for a workload/policy."""
    vals = []
    for line, row in read_csv_rows(path, ("workload", "sc_policy", str(col))):
        if row["workload"] == workload and row["sc_policy"] == POLICY_DIR[policy] and row[str(col)]:
            vals.append(_csv_float(path, line, str(col), row[str(col)]))
    return vals
