"""The openb experiment's runs as one batched call (``kernels.batch``):
many (trace, policy, seed) runs on the paper's cluster, each equal bit for
bit to ``trace.simulate_replay`` for it -- the experiment through
``Simulation`` under ``openb_config`` with ``OpenbTieRank`` -- without
building a Simulation per run.

What each run is, from the definitions the Simulation's profile uses:

- the arrival sequence and the tie rank: ``replay.draw_workload`` then a
  permutation of the nodes from the same seeded generator (the tie
  score is ``n - 1 - rank``, GpuShareScore's weight ``n + 1`` above it:
  ``openb_config(policy, typical, n + 1)``); Random has neither (every
  feasible node ties);
- pod j of the sequence is the Simulation's attempt j (one pod per
  simulated second, each scheduled at its arrival or never), so its tie
  among the top nodes is ``tie_pick(seed * 0x9E3779B97F4A7C15, j)`` over
  them in node order, and Random's GPU pick is ``key_uniform`` of its key
  ``default/<name>-<j>``;
- pods are classes of equal (cpu, memory, GPU ask, model mask); the CPU
  the policies score with is kube-scheduler's non-zero request, which for
  an explicit request (the trace's, 0 included) is the request; FGD's
  typical pods are ``trace.typical_of`` with the
  frequencies renormalized as GpuShareScore and ``GpuTracker`` do;
- the curves: ``replay.allocation_curves`` of (arrived, used, fragmentation, idle)
  after each pod, the fragmentation summed over the nodes as
  ``trace.curves_from_outcomes`` sums it (``numpy.sum``'s order).

``replay.replay`` (the experiment's own loop) is not the reference: its
Random draws from the run's generator instead, and its FGD frequencies are
not renormalized, so its curves can differ in the last bits or more; where
the two disagree the Simulation is the truth.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tensorsched.framework.errors import BackendError
from tensorsched.kernels._errors import BackendUnavailable
from tensorsched.kernels.batch import arrays as BA
from tensorsched.kernels.gpu import share as K

from ..gpu import MILLI, GpuInventory
from ..gpu_table import key_uniform
from . import replay as R
from . import trace as T

SEED_MIX = 0x9E3779B97F4A7C15
MASK64 = (1 << 64) - 1
BACKENDS = ("numba", "cuda")
NUMBA_CHUNK = 256           # runs per call of the CPU twin


@dataclass
class Workload:
    """One trace as the batch sees it: ``shape_id`` [P] each pod's class,
    the class table and the typical pods (``kernels.batch.arrays``)."""

    pods: R.TracePods
    shape_id: np.ndarray
    classes: dict
    typical: tuple


def workload_of(inv: GpuInventory, pods: R.TracePods) -> Workload:
    masks, shape_id, n_shapes = R.pod_shapes(pods, inv)
    first = np.full(n_shapes, -1, np.int64)
    for j in range(len(pods) - 1, -1, -1):
        first[shape_id[j]] = j
    cpu = pods.cpu[first]
    classes = {"c_cpu": cpu, "c_mem": pods.mem[first],
               # the Simulation's pods request their cpu explicitly (0 included), so
               # the non-zero CPU the policies score with is the request itself
               "c_cpu_nz": cpu.copy(),
               "c_num": pods.num[first], "c_milli": pods.milli[first], "c_mask": masks[first]}
    return Workload(pods, shape_id, classes, T.tracker_typical(T.typical_of(pods), inv))


@dataclass
class Run:
    """One run's inputs: its workload index, policy, seed, the arrival
    sequence (indices into the trace's pods) and the tie score [n]."""

    workload: int
    policy: str
    seed: int
    seq: np.ndarray
    tie: np.ndarray


def arrival_and_ties(inv: GpuInventory, pods: R.TracePods, seed: int, tune: float) -> tuple:
    """(sequence, tie score [n]) of one (trace, seed), as ``simulate_replay``
    draws them."""
    rng = np.random.default_rng(seed)
    seq = R.draw_workload(pods, inv.total_gpus * MILLI, tune, rng)
    rank = rng.permutation(inv.n_nodes).astype(np.int64)
    return seq, (inv.n_nodes - 1) - rank


def batch_arrays(inv: GpuInventory, workloads: list[Workload], runs: list[Run]) -> BA.BatchArrays:
    """The kernel's inputs for ``runs`` on the node set ``inv`` (module doc)."""
    n = inv.n_nodes
    sets = BA.node_sets([{"gpu_count": inv.gpu_count, "model": inv.model, "cpu_cap": inv.cpu_cap,
                          "mem_cap": inv.mem_cap,
                          "pods_cap": np.full(n, int(T.NODE_PODS), np.int64)}])
    w = len(workloads)
    c = max(len(wl.classes["c_cpu"]) for wl in workloads)
    p = max(len(wl.typical[0]) for wl in workloads)
    cl = {k: np.zeros((w, c), np.int64) for k in workloads[0].classes}
    tp = {k: np.zeros((w, p), np.float64 if k == "tp_freq" else np.int64)
          for k in ("tp_cpu", "tp_num", "tp_milli", "tp_mask", "tp_freq")}
    for i, wl in enumerate(workloads):
        for k, v in wl.classes.items():
            cl[k][i, :len(v)] = v
        for k, v in zip(tp, wl.typical):
            tp[k][i, :len(v)] = v
    b = len(runs)
    lens = np.array([len(r.seq) for r in runs], np.int64)
    off = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    cls = np.empty(int(lens.sum()), np.int64)
    u = np.zeros(int(lens.sum()), np.float64)
    static = np.zeros((b, n), np.int64)
    pol = np.empty(b, np.int64)
    weight = np.empty(b, np.int64)
    for k, r in enumerate(runs):
        wl = workloads[r.workload]
        cls[off[k]:off[k] + lens[k]] = wl.shape_id[r.seq]
        pol[k] = K.POLICIES.index(r.policy)
        if r.policy == "Random":
            weight[k] = 1
            names = wl.pods.names
            u[off[k]:off[k] + lens[k]] = [key_uniform(f"default/{names[j]}-{i}")
                                          for i, j in enumerate(r.seq.tolist())]
        else:
            weight[k] = n + 1
            static[k] = r.tie
    return BA.BatchArrays(
        **sets, n_classes=np.array([len(wl.classes["c_cpu"]) for wl in workloads], np.int64),
        **cl, n_typical=np.array([len(wl.typical[0]) for wl in workloads], np.int64), **tp,
        run_set=np.zeros(b, np.int64),
        run_workload=np.array([r.workload for r in runs], np.int64), policy=pol,
        sel=np.array([R.POLICY_SEL[r.policy] for r in runs], np.int64),
        seed_mix=np.array([(r.seed * SEED_MIX) & MASK64 for r in runs], np.uint64),
        gpu_weight=weight, static_total=static, ev_off=off, ev_len=lens, cls=cls, u=u)


def run_kernel(a: BA.BatchArrays, backend: str, workers: int | None) -> tuple:
    """(out_node, out_gmask, out_frag) of every run of ``a``."""
    if backend == "numba":
        from tensorsched.kernels.batch import cpu
        return cpu.run_batch(a, threads=workers)
    if backend == "cuda":
        from tensorsched.kernels.batch import cuda
        return cuda.run_batch(a)
    raise ValueError(f"unknown backend {backend!r} for the batched experiment; choose one of "
                     f"{', '.join(BACKENDS)}")


def results_of(inv: GpuInventory, workloads: list[Workload], runs: list[Run], out: tuple,
               tune: float, seconds: float, record_placements: bool = False) -> list:
    """A ``ReplayResult`` per run from the kernel's outputs."""
    out_node, out_gmask, out_frag = out
    tg = inv.total_gpus
    free0 = float(int(inv.gpu_count.sum()) * MILLI)
    results = []
    off = 0
    popcount = np.array([bin(m).count("1") for m in range(1 << 16)], np.int64)
    for r in runs:
        k = len(r.seq)
        node = out_node[off:off + k]
        gm = out_gmask[off:off + k]
        pods = workloads[r.workload].pods
        milli = pods.milli[r.seq]
        used = np.cumsum(popcount[gm] * milli).astype(np.float64)
        arrived = np.cumsum(pods.gpu_total[r.seq]).astype(np.float64)
        records = (arrived, used, out_frag[off:off + k], free0 - used)
        placements = []
        if record_placements:
            placements = [(pods.names[j], int(node[i]),
                           [g for g in range(16) if (int(gm[i]) >> g) & 1])
                          for i, j in enumerate(r.seq.tolist())]
        results.append(R.ReplayResult(r.policy, r.seed, tune, tg, k, int((node >= 0).sum()),
                                      seconds, *R.allocation_curves(records, tg), placements))
        off += k
    return results


def replay_batch(nodes: GpuInventory, traces: list[R.TracePods], jobs: list[tuple],
                 tune: float = 1.3, backend: str = "numba", workers: int | None = None,
                 record_placements: bool = False, chunk: int | None = None) -> list:
    """``simulate_replay(nodes, traces[t], policy, seed, tune)`` for every
    ``(t, policy, seed)`` of ``jobs``, in one batched call per ``chunk``
    runs (default: ``NUMBA_CHUNK`` on numba, which bounds the host arrays
    of events and outputs; all on cuda, which chunks to device memory
    itself): [ReplayResult] in job order, ``seconds`` each its call's wall
    time over its runs.  Arguments checked before any run."""
    if not jobs:
        raise ValueError("no runs: jobs is empty")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r} for the batched experiment; choose one "
                         f"of {', '.join(BACKENDS)}")
    tune = R.check_tune(tune)
    if backend == "cuda":
        try:
            from tensorsched.kernels.batch import cuda  # noqa: F401
        except BackendUnavailable as exc:
            raise BackendError(str(exc)) from None
    for t, policy, seed in jobs:
        if policy not in R.POLICY_SEL:
            raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(K.POLICIES)}")
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 0 <= t < len(traces):
            raise ValueError(f"trace index {t!r} outside 0..{len(traces) - 1}")
        R.check_seed(seed)
    for pods in traces:
        R.check_inputs(nodes, pods)
    out = []
    if not chunk:
        chunk = NUMBA_CHUNK if backend == "numba" else len(jobs)
    chunk = max(1, int(chunk))
    workloads = {}
    draws = {}
    for lo in range(0, len(jobs), chunk):
        t0 = time.perf_counter()
        part = jobs[lo:lo + chunk]
        runs = []
        for t, policy, seed in part:
            if t not in workloads:
                workloads[t] = workload_of(nodes, traces[t])
            key = (t, int(seed))
            if key not in draws:
                draws = {key: arrival_and_ties(nodes, traces[t], int(seed), tune)} | (
                    draws if len(draws) < 64 else {})
            seq, tie = draws[key]
            runs.append(Run(t, policy, int(seed), seq, tie))
        order = sorted(workloads)
        index = {t: i for i, t in enumerate(order)}
        wls = [workloads[t] for t in order]
        runs = [Run(index[r.workload], r.policy, r.seed, r.seq, r.tie) for r in runs]
        a = batch_arrays(nodes, wls, runs)
        got = run_kernel(a, backend, workers)
        seconds = (time.perf_counter() - t0) / len(part)
        out.extend(results_of(nodes, wls, runs, got, tune, seconds, record_placements))
    return out


def sweep(nodes_path, pods_paths, policies=K.POLICIES, seeds=(42,), tune=1.3, workers=None,
          backend="numba", output=None, progress=None):
    """``replay.sweep``'s sweep (same arguments, checks, results and CSV)
    with every run in one batched call on numba (the CPU twin on
    ``workers`` threads, default all cores) or cuda (chunked to device
    memory): each run equals ``trace.simulate_replay`` for it; ``seconds``
    is its call's wall time over its runs.  On numpy: ``replay.sweep``,
    a process per run."""
    if backend == "numpy":
        return R.sweep(nodes_path, pods_paths, policies, seeds, tune, workers, backend, output,
                       progress)
    nodes, pods_paths, policies, seeds, tune = R.sweep_inputs(
        nodes_path, pods_paths, policies, seeds, tune, workers, backend, BACKENDS + ("numpy",))
    traces = [R.load_cached("pods", pp) for pp in pods_paths]
    runs = [(t, pol, int(sd)) for t in range(len(pods_paths)) for pol in policies
            for sd in seeds]
    got = replay_batch(nodes, traces, runs, tune=tune, backend=backend, workers=workers)
    out = [(R.workload_name(pods_paths[t]), res) for (t, _p, _s), res in zip(runs, got)]
    if progress:
        for wl, res in out:
            progress(wl, res)
    if output:
        R.write_sweep(out, output)
    return out
