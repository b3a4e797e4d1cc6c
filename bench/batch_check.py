"""Device check of the batched engine: the openb experiment (every run of
traces x policies x seeds in one call) and many basic-ish clusters, on
``cuda`` and ``numba`` in one process, answers compared between the two.

python -m tensorsched.bench.batch_check [--out DIR] [--backends cuda,numba]
        [--traces paper] [--seeds 42-51] [--clusters 4096] [--nodes 1213]
        [--pods 1000] [--data DIR] [--tiny]

Writes ``batch-check.json`` to ``--out`` (default ``$OUT``, else
bench/results/).  Per backend: the experiment's wall seconds including
set-up, transfers and the curves (``replay.sweep``), and for the basic-ish
clusters the kernel call's wall seconds and placements per second.  The
basic-ish clusters: the openb profile (NodeResourcesFit, GpuShareFit,
GpuShareScore BestFit with a random tie rank) on the paper's first
``--nodes`` GPU nodes, each cluster its own seeded stream of ``--pods``
pods drawn from 16 cpu/memory shapes (one in eight a GPU share).
``equal``: the backends' placements, GPU indices and curves are identical
(cuda against numba).  ``departures``: the same traces with their own
creation and deletion times (``batch.trace_batch``: pods leave, the ones
that fit nowhere retry as the Simulation's queue lets them), traces x
policies x seeds on the paper's nodes in one call per backend, its wall
seconds with set-up and transfers, and whether the backends' bindings,
departures, attempts and curves are identical.  ``--tiny`` (or
``BATCH_CHECK_TINY=1``): a few clusters of a few nodes, one trace and seed
with a small tune (and its first pods for the departures, times scaled
down), for a dry run under ``NUMBA_ENABLE_CUDASIM=1``.

``vector_env``: the vector environment (``OpenbVectorEnv``) of ``--envs``
environments on the paper's nodes (the first trace; environment k runs
policy k mod 6 with one of 8 seeds; ``--env-tune`` its episodes' demand),
stepped with their default actions: ``--env-warmup`` steps, then
``--env-steps`` timed (cuda: observations kept on the device), steps per
second (one per environment) and CPU seconds; ``equal`` includes the
backends' state after those steps (pending pods, default rows, flags,
fragmentation and allocation, every decision so far).  Target on an H200:
>= 1M steps/s with 4,096 environments.
"""
import argparse
import json
import os
import time

import numpy as np

from tensorsched.kernels.batch import arrays as BA
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.gpu import read_openb_nodes
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb import trace as T

from .harness import git_commit, machine_info
from .openb_batch import DATA, PAPER
from .vector_env import jobs_of

SHAPES = 16


def _basic_arrays(inv, clusters: int, pods: int, seed: int = 0) -> BA.BatchArrays:
    """``clusters`` runs on ``inv`` (module doc), each ``pods`` pods long."""
    rng = np.random.default_rng(seed)
    cpu = rng.choice([500, 1000, 2000, 4000, 8000], SHAPES)
    share = (np.arange(SHAPES) % 8) == 0
    wl = B.Workload(None, np.zeros(0, np.int64), {
        "c_cpu": cpu.astype(np.int64), "c_mem": rng.choice([1024, 4096, 16384], SHAPES),
        "c_cpu_nz": cpu.astype(np.int64), "c_num": share.astype(np.int64),
        "c_milli": np.where(share, 500, 0).astype(np.int64),
        "c_mask": np.zeros(SHAPES, np.int64)},
        (np.array([1000], np.int64), np.array([1], np.int64), np.array([500], np.int64),
         np.zeros(1, np.int64), np.ones(1)))
    n = inv.n_nodes
    runs = [B.Run(0, "BestFit", b, np.zeros(pods, np.int64),
                  (n - 1) - rng.permutation(n).astype(np.int64)) for b in range(clusters)]
    sets = BA.node_sets([{"gpu_count": inv.gpu_count, "model": inv.model, "cpu_cap": inv.cpu_cap,
                          "mem_cap": inv.mem_cap, "pods_cap": np.full(n, 110, np.int64)}])
    cl = {k: v[None, :] for k, v in wl.classes.items()}
    tp = dict(zip(("tp_cpu", "tp_num", "tp_milli", "tp_mask", "tp_freq"),
                  (x[None, :] for x in wl.typical)))
    a = BA.BatchArrays(
        **sets, n_classes=np.array([SHAPES]), **cl, n_typical=np.array([1]), **tp,
        run_set=np.zeros(clusters, np.int64), run_workload=np.zeros(clusters, np.int64),
        policy=np.full(clusters, POLICIES.index("BestFit"), np.int64),
        sel=np.zeros(clusters, np.int64),
        seed_mix=np.array([(b * B.SEED_MIX) & B.MASK64 for b in range(clusters)], np.uint64),
        gpu_weight=np.full(clusters, n + 1, np.int64),
        static_total=np.stack([r.tie for r in runs]),
        ev_off=np.arange(clusters, dtype=np.int64) * pods,
        ev_len=np.full(clusters, pods, np.int64),
        cls=rng.integers(0, SHAPES, clusters * pods).astype(np.int64),
        u=np.zeros(clusters * pods))
    return a


def _same_outputs(a: BA.BatchArrays, x: BA.BatchOutputs, y: BA.BatchOutputs) -> bool:
    same = all(np.array_equal(getattr(x, k), getattr(y, k), equal_nan=True)
               for k in ("node", "gmask", "bind", "tries", "n_log", "frag0", "end"))
    return same and all(np.array_equal(u, v) for b in range(a.n_runs)
                        for u, v in zip(x.log(a, b), y.log(a, b)))


def _same_traced(xs: list, ys: list) -> bool:
    return all(np.array_equal(getattr(x, k), getattr(y, k), equal_nan=True)
               for x, y in zip(xs, ys)
               for k in ("node", "bind", "tries", "log_t", "log_pod", "log_frag"))


def _departure_traces(paths: list, tiny: bool) -> list:
    """The traces with their own times (``--tiny``: the first 40 pods, times
    divided by 20,000 so that pods leave and retry within the run)."""
    out = []
    for p in paths:
        tw = B.trace_workload(T.read_openb_trace(p))
        if tiny:
            k = 40
            arrival = np.floor(tw.arrival[:k] / 20000.0)
            life = np.floor((tw.departure[:k] - tw.arrival[:k]) / 20000.0)
            pods = R.TracePods(tw.pods.names[:k], tw.pods.cpu[:k], tw.pods.mem[:k],
                               tw.pods.num[:k], tw.pods.milli[:k], tw.pods.spec[:k])
            tw = B.TraceWorkload(pods, arrival, arrival + life)
        out.append(tw)
    return out


def _vector_env(inv, pods, backend: str, envs: int, warmup: int, steps: int,
                tune: float) -> tuple:
    """(record, final state) of the vector environment's timing (module doc)."""
    # the environment needs the ``gym`` extra: the other parts run without it
    from tensorsched.topology.openb.vector_env import OpenbVectorEnv
    t0 = time.perf_counter()
    env = OpenbVectorEnv(inv, [pods], jobs_of(envs, 8), tune=tune, backend=backend,
                         device_arrays=backend == "cuda")
    _, info = env.reset()
    setup = time.perf_counter() - t0
    for _ in range(warmup):
        _, _, _, _, info = env.step(info["default_action"])
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(steps):
        _, _, _, _, info = env.step(info["default_action"])
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    e = env.engine
    state = (e.ist.copy(), e.fst.copy(), np.asarray(e.out_node), np.asarray(e.out_gmask))
    return {"vector_env_setup_seconds": round(setup, 3),
            "vector_env_seconds": round(wall, 3), "vector_env_cpu_seconds": round(cpu, 3),
            "vector_env_steps_per_second": round(envs * steps / wall)}, state


def _slice_nodes(inv, n: int):
    keep = np.arange(min(n, inv.n_nodes))
    return type(inv)([inv.names[i] for i in keep], list(inv.models), inv.gpu_count[keep],
                     inv.model[keep], inv.gpu_left[keep], inv.gpu_mem[keep], inv.cpu_left[keep],
                     inv.mem_left[keep], inv.cpu_cap[keep], inv.mem_cap[keep])


def _write(record: dict, out: str) -> None:
    """``record`` as ``out``/batch-check.json (stamped now)."""
    record["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "batch-check.json"), "w") as f:
        json.dump(record, f, indent=1)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(
        os.path.dirname(os.path.realpath(__file__)), "results"))
    ap.add_argument("--backends", default="cuda,numba")
    ap.add_argument("--traces", default=PAPER)
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--clusters", type=int, default=4096)
    ap.add_argument("--nodes", type=int, default=1213)
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--envs", type=int, default=4096)
    ap.add_argument("--env-steps", type=int, default=100)
    ap.add_argument("--env-warmup", type=int, default=50)
    ap.add_argument("--env-tune", type=float, default=0.3)
    ap.add_argument("--tiny", action="store_true", default=os.environ.get("BATCH_CHECK_TINY") == "1")
    a = ap.parse_args(argv)
    tune = 1.3
    traces, seeds = a.traces.split(","), R.parse_seeds(a.seeds)
    nodes_csv = os.path.join(a.data, "csv", "openb_node_list_gpu_node.csv")
    inv = read_openb_nodes(nodes_csv)
    if a.tiny:
        traces, seeds, tune, a.seeds = ["default"], [42], 0.1, "42"
        a.clusters, a.nodes, a.pods = 3, 12, 6
        a.envs, a.env_steps, a.env_warmup = 6, 4, 2
    paths = [os.path.join(a.data, "csv", f"openb_pod_list_{t}.csv") for t in traces]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise SystemExit(f"batch_check: {len(missing)} trace(s) not in {a.data}/csv (e.g. "
                         f"{missing[0]}): pass --data with the public trace's directory (all "
                         "17 traces), or --traces with the ones there")
    pods = [R.read_openb_pods(p) for p in paths]
    exp_inv = _slice_nodes(inv, a.nodes) if a.tiny else inv
    jobs = [(t, p, s) for t in range(len(traces)) for p in POLICIES for s in seeds]
    basic = _basic_arrays(_slice_nodes(inv, a.nodes), a.clusters, a.pods)
    dep_traces = _departure_traces(paths, a.tiny)
    dep_jobs = [(0, t, p, s) for t in range(len(traces)) for p in POLICIES for s in seeds]
    record = {"commit": git_commit(), "machine": machine_info(), "tiny": a.tiny,
              "experiment": {"runs": len(jobs), "traces": traces, "seeds": a.seeds,
                             "nodes": exp_inv.n_nodes, "tune": tune},
              "basic": {"clusters": a.clusters, "nodes": min(a.nodes, inv.n_nodes),
                        "pods_per_cluster": a.pods, "placements": a.clusters * a.pods},
              "vector_env": {"envs": a.envs, "steps": a.env_steps, "warmup": a.env_warmup,
                             "tune": a.env_tune, "trace": traces[0], "nodes": exp_inv.n_nodes},
              "departures": {"runs": len(dep_jobs), "nodes": exp_inv.n_nodes,
                             "pods": int(sum(len(tw.arrival) for tw in dep_traces)) * len(POLICIES)
                             * len(seeds)}}
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        record["cuda_simulator"] = True
    answers = {}
    for backend in a.backends.split(","):
        # compile (or load) first: a tiny call outside the timings
        B.replay_batch(_slice_nodes(exp_inv, 8), pods[:1], [(0, "FGD", 1)], tune=0.02,
                       backend=backend)
        venv, vstate = _vector_env(exp_inv, pods[0], backend, a.envs, a.env_warmup,
                                   a.env_steps, a.env_tune)
        record[backend] = venv
        _write(record, a.out)           # what a deadline leaves is kept
        t0 = time.perf_counter()
        res = B.replay_batch(exp_inv, pods, jobs, tune=tune, backend=backend)
        exp_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        got = B.run_kernel(basic, backend, None)
        basic_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        dep = B.trace_batch([exp_inv], dep_traces, dep_jobs, backend=backend)
        dep_s = time.perf_counter() - t0
        answers[backend] = (res, got, dep, vstate)
        record[backend] = {**venv,
            "experiment_seconds": round(exp_s, 3),
            "experiment_pods": int(sum(r.pods for r in res)),
            "basic_seconds": round(basic_s, 3),
            "basic_placements_per_second": round(a.clusters * a.pods / basic_s),
            "basic_scheduled": int((got.node >= 0).sum()),
            "departures_seconds": round(dep_s, 3),
            "departures_scheduled": int(sum(r.scheduled for r in dep)),
            "departures_attempts": int(sum(int(r.tries.sum()) for r in dep))}
        print(backend, json.dumps(record[backend]), flush=True)
        _write(record, a.out)
    if len(answers) > 1:
        (r0, g0, d0, v0), *rest = answers.values()
        same = True
        for r1, g1, d1, v1 in rest:
            same &= all(np.array_equal(x, y) for x, y in zip(v0, v1))
            same &= _same_outputs(basic, g0, g1)
            same &= _same_traced(d0, d1)
            for x, y in zip(r0, r1):
                same &= x.scheduled == y.scheduled and all(
                    np.array_equal(getattr(x, m), getattr(y, m), equal_nan=True)
                    for m in ("alloc", "frag_amount", "frag_ratio"))
        record["equal"] = bool(same)
    _write(record, a.out)
    print(json.dumps(record, indent=1))
    return 0 if record.get("equal", True) else 1


if __name__ == "__main__":
    raise SystemExit(main())
