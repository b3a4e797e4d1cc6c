"""Device check of the batched engines, ``cuda`` against ``numba`` in one
process, part by part (most telling first), each part's answers compared
between the backends:

python -m tensorsched.bench.batch_check [--out DIR] [--backends cuda,numba]
        [--parts experiment,basic,...] [--seconds S] [--traces paper]
        [--seeds 42-51] [--clusters 4096] [--nodes 1213] [--pods 1000]
        [--data DIR] [--tiny] [--no-warmup] (sizes of each part: ``--help``)

1. ``experiment``: the openb experiment, every run of traces x policies x
   seeds (1,020 with the 17 traces) in one call (``replay.sweep``), wall
   seconds with set-up, transfers and the curves; target on an H200:
   <= 10 s.  Equal: each run's pods scheduled, allocation and
   fragmentation curves.
2. ``basic``: ``--clusters`` clusters of the paper's first ``--nodes`` GPU
   nodes, the openb profile (NodeResourcesFit, GpuShareFit, GpuShareScore
   BestFit with a random tie rank), each its own seeded stream of
   ``--pods`` pods of 16 cpu/memory shapes (one in eight a GPU share); the
   kernel call's wall seconds and placements per second; target >= 50M
   placements/s with 4,096 clusters of 1,213 nodes.  Equal: placements,
   GPU indices, attempts, logs.
3. ``vector_env``: the vector environment (``OpenbVectorEnv``) of
   ``--envs`` environments on the paper's nodes (the first trace;
   environment k runs policy k mod 6 with one of 8 seeds; ``--env-tune``
   its episodes' demand), stepped with their default actions:
   ``--env-warmup`` steps, then ``--env-steps`` timed (cuda: observations
   kept on the device); steps per second (one per environment); target >=
   1M steps/s with 4,096 environments.  Equal: the state after those steps
   (pending pods, default rows, flags, fragmentation, every decision).
4. ``local_probe``: the capacity probes' node-local kernel
   (``bench/batch_local.py``: ``--probes`` probes of ``--probe-nodes``
   nodes with affinity-carrying bound pods, ``--probe-pods`` pods each);
   attempts per second.  Equal: every pod's node, every probe's count.
5. ``local_trace``: the node-local kernel's trace form, a sweep of three
   default-profile configurations x ``--trace-seeds`` seeds on manifests
   (``--trace-nodes`` basic nodes, and the affinity cluster fed web pods
   its bound pods' terms select, leaving a duration after binding),
   ``--trace-pods`` pods a run.  Equal: every run's nodes, bind times,
   attempts and change log.
6. ``durations``: the openb engine with duration departures and priority
   ranks (``BatchArrays.duration`` / ``.rank``): the traces' first
   ``--dur-pods`` pods, times over 600, every other leaving pod leaving a
   duration after its binding, one in four of priority 1,000 (the others
   0), traces x policies x seeds on the paper's nodes in one call.
7. ``departures``: the same traces with their own creation and deletion
   times (``batch.trace_batch``: pods leave, the ones that fit nowhere
   retry as the Simulation's queue lets them), traces x policies x seeds.
   Equal (6, 7): bindings, departures, attempts and curves.
8. ``fit_multi``: ``how_many_fit`` with three templates on
   ``--fit-nodes`` basic nodes through the batched node-local kernel,
   filling, then as replicas.  Equal: the two reports.
9. ``preemption``: the openb engine with DefaultPreemption (defaults
   10 %, 100 nodes; ``_gpu_preempt``, on cuda the victim search a thread
   per node): the traces' first ``--pre-pods`` pods on the paper's first
   ``--pre-nodes`` nodes, times over 600, none leaving, priorities rising
   in four tiers along the trace, so that the filled cluster's later pods
   evict earlier ones; traces x (FGD, BestFit) x the first two seeds.
   Equal: bindings, evictions, attempts, curves and the victims.

Per part and backend: wall seconds (the first call of a backend's kernel,
on a tiny input, is its compile: ``warmup_seconds``, outside the timing;
``--no-warmup``: none, the timings include the compile);
``equal`` per part and overall (exit 1 when a compared part differs).
``--seconds``: a deadline for the whole check: a part (or a backend of
it) that would start with fewer than ``MIN_PART_SECONDS`` left is not run
and says so (``skipped``), and the record names the deadline and the
seconds left when each part and backend began.  ``batch-check.json`` is
written to ``--out`` (default ``$OUT``, else bench/results/) before and
after every part's backend, so what a ``timeout`` cuts keeps what ran:
the cut backend has ``started_with_seconds_left`` and no ``seconds``, and
``not_run`` lists every part not run to its end on every backend.
``--tiny`` (or ``BATCH_CHECK_TINY=1``): every part at a few nodes, pods
and runs, for a dry run under ``NUMBA_ENABLE_CUDASIM=1``.
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

from . import batch_local as BL
from .harness import git_commit, machine_info
from .openb_batch import DATA, PAPER
from .vector_env import jobs_of

SHAPES = 16
PARTS = ("experiment", "basic", "vector_env", "local_probe", "local_trace",
         "durations", "departures", "fit_multi", "preemption")


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
    """The traces with their own times (``--tiny``: the first 20 pods, times
    divided by 20,000 so that pods leave and retry within the run)."""
    out = []
    for p in paths:
        tw = B.trace_workload(T.read_openb_trace(p))
        if tiny:
            k = 20
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


def slice_nodes(inv, n: int):
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


def _duration_traces(paths: list, pods: int, scale: float = 600.0) -> list:
    """The traces' first ``pods`` pods, times over ``scale`` (whole
    seconds); of the pods that leave, every other one leaves its lifetime
    after its binding (a duration), the others at their time; one pod in
    four of priority 1,000, the others 0 (``rank``: PrioritySort's key,
    the higher priority first, then the earlier arrival, densely ranked)."""
    out = []
    for p in paths:
        tw = B.trace_workload(T.read_openb_trace(p))
        k = min(pods, len(tw.arrival))
        arrival = np.floor(tw.arrival[:k] / scale)
        life = np.floor((tw.departure[:k] - tw.arrival[:k]) / scale)
        leaves = np.flatnonzero(np.isfinite(life))
        timed = np.zeros(k, bool)
        timed[leaves[::2]] = True
        departure = np.where(np.isfinite(life) & ~timed, arrival + life, np.inf)
        duration = np.where(timed, life, np.inf)
        prio = np.where(np.arange(k) % 4 == 0, 1000, 0)
        key = np.stack([-prio, arrival], axis=1)
        _, rank = np.unique(key, axis=0, return_inverse=True)
        pods_k = R.TracePods(tw.pods.names[:k], tw.pods.cpu[:k], tw.pods.mem[:k],
                             tw.pods.num[:k], tw.pods.milli[:k], tw.pods.spec[:k])
        out.append(B.TraceWorkload(pods_k, arrival, departure, duration=duration,
                                   rank=rank.reshape(-1).astype(np.int64)))
    return out


def preempt_traces(paths: list, pods: int, scale: float = 600.0) -> list:
    """The traces' first ``pods`` pods, times over ``scale`` (whole
    seconds), none leaving, priority 100 x (4 j // pods) for the j-th
    (``rank``: PrioritySort's key densely ranked)."""
    out = []
    for p in paths:
        tw = B.trace_workload(T.read_openb_trace(p))
        k = min(pods, len(tw.arrival))
        arrival = np.floor(tw.arrival[:k] / scale)
        prio = 100 * (4 * np.arange(k) // k)
        _, rank = np.unique(np.stack([-prio, arrival], axis=1), axis=0, return_inverse=True)
        pods_k = R.TracePods(tw.pods.names[:k], tw.pods.cpu[:k], tw.pods.mem[:k],
                             tw.pods.num[:k], tw.pods.milli[:k], tw.pods.spec[:k])
        out.append(B.TraceWorkload(pods_k, arrival, np.full(k, np.inf),
                                   rank=rank.reshape(-1).astype(np.int64),
                                   priority=prio.astype(np.int64)))
    return out


def _same_preempted(xs: list, ys: list) -> bool:
    return _same_traced(xs, ys) and all(np.array_equal(x.preempted, y.preempted)
                                        for x, y in zip(xs, ys))


def _same_replay(xs: list, ys: list) -> bool:
    return all(x.scheduled == y.scheduled and all(
        np.array_equal(getattr(x, m), getattr(y, m), equal_nan=True)
        for m in ("alloc", "frag_amount", "frag_ratio")) for x, y in zip(xs, ys))


def _same_state(x: tuple, y: tuple) -> bool:
    return all(np.array_equal(u, v) for u, v in zip(x, y))


#: a part (or one backend of it) starts only with this many seconds left
MIN_PART_SECONDS = 10.0


class _Part:
    """One part: ``build()`` its inputs and sizes (once); ``run(backend,
    inputs)`` its (answers, metrics); ``warm(backend)`` a tiny call (the
    compile); ``same(x, y)`` whether two backends' answers are identical."""

    def __init__(self, build, run, same, warm=None, rate=None):
        self.build, self.run, self.same, self.warm, self.rate = build, run, same, warm, rate


def _parts(a, inv, exp_inv, traces, seeds, paths, pods) -> dict:
    """The parts by name, in their order (module doc)."""
    jobs = [(t, p, s) for t in range(len(traces)) for p in POLICIES for s in seeds]
    dep_jobs = [(0, t, p, s) for t in range(len(traces)) for p in POLICIES for s in seeds]
    tiny_inv = slice_nodes(exp_inv, 8)

    def exp_build():
        return None, {"runs": len(jobs), "traces": traces, "seeds": a.seeds,
                      "nodes": exp_inv.n_nodes, "tune": a.tune}

    def exp_run(backend, _):
        res = B.replay_batch(exp_inv, pods, jobs, tune=a.tune, backend=backend)
        return res, {"pods": int(sum(r.pods for r in res)),
                     "scheduled": int(sum(r.scheduled for r in res))}

    def basic_build():
        arr = _basic_arrays(slice_nodes(inv, a.nodes), a.clusters, a.pods)
        return arr, {"clusters": a.clusters, "nodes": min(a.nodes, inv.n_nodes),
                     "pods_per_cluster": a.pods, "placements": a.clusters * a.pods}

    def basic_run(backend, arr):
        got = B.run_kernel(arr, backend, None)
        return (arr, got), {"scheduled": int((got.node >= 0).sum())}

    def env_build():
        return None, {"envs": a.envs, "steps": a.env_steps, "warmup": a.env_warmup,
                      "tune": a.env_tune, "trace": traces[0], "nodes": exp_inv.n_nodes}

    def env_run(backend, _):
        rec, state = _vector_env(exp_inv, pods[0], backend, a.envs, a.env_warmup,
                                 a.env_steps, a.env_tune)
        return state, rec

    def dep_build():
        tws = _departure_traces(paths, a.tiny)
        return tws, {"runs": len(dep_jobs), "nodes": exp_inv.n_nodes,
                     "pods": int(sum(len(tw.arrival) for tw in tws)) * len(POLICIES)
                     * len(seeds)}

    def dur_build():
        tws = _duration_traces(paths, a.dur_pods, 20000.0 if a.tiny else 600.0)
        return tws, {"runs": len(dep_jobs), "nodes": exp_inv.n_nodes,
                     "pods_per_trace": a.dur_pods,
                     "with_duration": int(sum(np.isfinite(tw.duration).sum() for tw in tws)),
                     "priority_ranks": int(max(int(tw.rank.max()) for tw in tws) + 1),
                     "pods": int(sum(len(tw.arrival) for tw in tws)) * len(POLICIES)
                     * len(seeds)}

    def traced_run(backend, tws):
        dep = B.trace_batch([exp_inv], tws, dep_jobs, backend=backend)
        return dep, {"scheduled": int(sum(r.scheduled for r in dep)),
                     "attempts": int(sum(int(r.tries.sum()) for r in dep))}

    pre_inv = slice_nodes(exp_inv, a.pre_nodes)
    pre_jobs = [(0, t, p, s) for t in range(len(traces)) for p in ("FGD", "BestFit")
                for s in seeds[:2]]

    def pre_build():
        tws = preempt_traces(paths, a.pre_pods, 20000.0 if a.tiny else 600.0)
        return tws, {"runs": len(pre_jobs), "nodes": pre_inv.n_nodes,
                     "pods_per_trace": a.pre_pods, "preempt": [10, 100]}

    def pre_run(backend, tws):
        got = B.trace_batch([pre_inv], tws, pre_jobs, backend=backend,
                            preempt=[(10, 100)] * len(pre_jobs))
        return got, {"scheduled": int(sum(r.scheduled for r in got)),
                     "attempts": int(sum(int(r.tries.sum()) for r in got)),
                     "victims": int(sum(int(r.preempted.sum()) for r in got))}

    def probe_build():
        return BL.probe_inputs(a.probe_nodes, a.probes, a.probe_pods)

    def trace_build():
        return BL.trace_inputs(a.trace_nodes, a.trace_pods, a.trace_seeds)

    def fit_build():
        return BL.fit_inputs(a.fit_nodes)

    small = {}

    def small_of(key, make):
        if key not in small:
            small[key] = make()
        return small[key]

    return {
        "experiment": _Part(exp_build, exp_run, _same_replay,
                            lambda b: B.replay_batch(tiny_inv, pods[:1], [(0, "FGD", 1)],
                                                     tune=0.02, backend=b),
                            lambda m, s: {"runs_per_second": round(len(jobs) / s, 1)}),
        "basic": _Part(basic_build, basic_run, lambda x, y: _same_outputs(x[0], x[1], y[1]),
                       lambda b: B.run_kernel(small_of("basic", lambda: _basic_arrays(
                           slice_nodes(inv, 8), 2, 4)), b, None),
                       lambda m, s: {"placements_per_second": round(a.clusters * a.pods / s)}),
        "vector_env": _Part(env_build, env_run, _same_state,
                            lambda b: _vector_env(tiny_inv, pods[0], b, 2, 1, 1, 0.05)),
        "local_probe": _Part(probe_build, BL.run_probe, BL.same_probe,
                             lambda b: BL.run_probe(b, small_of("probe", lambda: BL.probe_inputs(
                                 6, 2, 2)[0])),
                             lambda m, s: {"attempts_per_second": round(
                                 a.probes * a.probe_pods / s)}),
        "local_trace": _Part(trace_build, BL.run_trace, BL.same_trace,
                             lambda b: BL.run_trace(b, small_of("trace", lambda: BL.trace_inputs(
                                 4, 4, 1)[0])),
                             lambda m, s: {"pods_per_second": round(m["attempts"] / s)}),
        "durations": _Part(dur_build, traced_run, _same_traced,
                           lambda b: B.trace_batch([tiny_inv], _duration_traces(
                               paths[:1], 8, 20000.0), [(0, 0, "FGD", 1)], backend=b),
                           lambda m, s: {"attempts_per_second": round(m["attempts"] / s)}),
        "departures": _Part(dep_build, traced_run, _same_traced,
                            lambda b: B.trace_batch([tiny_inv], _departure_traces(
                                paths[:1], True), [(0, 0, "FGD", 1)], backend=b),
                            lambda m, s: {"attempts_per_second": round(m["attempts"] / s)}),
        "fit_multi": _Part(fit_build, BL.run_fit, BL.same_fit,
                           lambda b: BL.run_fit(b, small_of("fit", lambda: BL.fit_inputs(3)[0]))),
        "preemption": _Part(pre_build, pre_run, _same_preempted,
                            lambda b: B.trace_batch([tiny_inv], preempt_traces(
                                paths[:1], 12, 20000.0), [(0, 0, "FGD", 1)], backend=b,
                                preempt=[(10, 100)]),
                            lambda m, s: {"attempts_per_second": round(m["attempts"] / s),
                                          "victims_per_second": round(m["victims"] / s, 1)}),
    }


def _finite(seconds: float):
    """Seconds as the record keeps them: None without a deadline (JSON has
    no infinity)."""
    return None if seconds == float("inf") else seconds


def _check_part(name: str, part: _Part, backends: list, record: dict, left, out: str) -> None:
    """Run ``part`` on each backend (while the deadline allows), compare,
    record (module doc); the JSON written after each step."""
    rec = record["parts"][name] = {"seconds_left_at_start": _finite(left())}
    if left() < MIN_PART_SECONDS:
        rec["skipped"] = f"deadline: {left():.0f} s left of {record['deadline_seconds']}"
        print(f"{name}: skipped ({rec['skipped']})", flush=True)
        _write(record, out)
        return
    t0 = time.perf_counter()
    inputs, sizes = part.build()
    rec.update(sizes)
    rec["setup_seconds"] = round(time.perf_counter() - t0, 3)
    answers = {}
    for backend in backends:
        if left() < MIN_PART_SECONDS:
            rec[backend] = {"skipped": f"deadline: {left():.0f} s left"}
            continue
        # a part cut by a kill says where: started, no seconds
        rec[backend] = {"started_with_seconds_left": _finite(left())}
        _write(record, out)
        warm = 0.0
        if part.warm is not None:
            t0 = time.perf_counter()
            part.warm(backend)
            warm = time.perf_counter() - t0
        c0, t0 = time.process_time(), time.perf_counter()
        got, metrics = part.run(backend, inputs)
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
        answers[backend] = got
        rec[backend] = {**rec[backend], "seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
                        "warmup_seconds": round(warm, 3), **metrics,
                        **(part.rate(metrics, max(wall, 1e-9)) if part.rate else {})}
        print(name, backend, json.dumps(rec[backend]), flush=True)
        _write(record, out)
    if len(answers) > 1:
        first, *rest = answers.values()
        rec["equal"] = bool(all(part.same(first, other) for other in rest))
    elif len(backends) > 1:
        rec["equal"] = None         # not compared: a backend did not run
    _write(record, out)


def _summarize(record: dict, backends: list) -> None:
    """``equal`` over the parts compared so far; ``not_run``: the parts not
    (yet) run to their end on every backend."""
    compared = [p["equal"] for p in record["parts"].values() if p.get("equal") is not None]
    record["equal"] = bool(all(compared)) if compared else None
    record["not_run"] = [n for n in PARTS if n not in record["parts"]
                         or "skipped" in record["parts"][n]
                         or any("seconds" not in record["parts"][n].get(b, {})
                                for b in backends)]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tensorsched.bench.batch_check",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(
        os.path.dirname(os.path.realpath(__file__)), "results"))
    ap.add_argument("--backends", default="cuda,numba")
    ap.add_argument("--parts", default=",".join(PARTS),
                    help="the parts to run, in this order: " + ", ".join(PARTS))
    ap.add_argument("--seconds", type=float, default=None,
                    help="the deadline of the whole check (default: none)")
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
    ap.add_argument("--probe-nodes", type=int, default=1000)
    ap.add_argument("--probes", type=int, default=2048)
    ap.add_argument("--probe-pods", type=int, default=200)
    ap.add_argument("--trace-nodes", type=int, default=200)
    ap.add_argument("--trace-pods", type=int, default=2000)
    ap.add_argument("--trace-seeds", type=int, default=128)
    ap.add_argument("--dur-pods", type=int, default=2000)
    ap.add_argument("--fit-nodes", type=int, default=5000)
    ap.add_argument("--pre-nodes", type=int, default=300)
    ap.add_argument("--pre-pods", type=int, default=3000)
    ap.add_argument("--no-warmup", action="store_true",
                    help="no untimed first call (the timings then include the compile)")
    ap.add_argument("--tiny", action="store_true", default=os.environ.get("BATCH_CHECK_TINY") == "1")
    a = ap.parse_args(argv)
    a.tune = 1.3
    traces, seeds = a.traces.split(","), R.parse_seeds(a.seeds)
    names = [n for n in a.parts.split(",") if n]
    unknown = [n for n in names if n not in PARTS]
    if unknown:
        raise SystemExit(f"batch_check: unknown part {unknown[0]!r} (the parts: "
                         f"{', '.join(PARTS)})")
    nodes_csv = os.path.join(a.data, "csv", "openb_node_list_gpu_node.csv")
    inv = read_openb_nodes(nodes_csv)
    if a.tiny:
        traces, seeds, a.tune, a.seeds = ["default"], [42], 0.1, "42"
        a.clusters, a.nodes, a.pods = 3, 12, 6
        a.envs, a.env_steps, a.env_warmup = 4, 2, 1
        a.probe_nodes, a.probes, a.probe_pods = 12, 2, 4
        a.trace_nodes, a.trace_pods, a.trace_seeds, a.dur_pods, a.fit_nodes = 4, 6, 1, 20, 3
        a.pre_nodes, a.pre_pods = 3, 12
    paths = [os.path.join(a.data, "csv", f"openb_pod_list_{t}.csv") for t in traces]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise SystemExit(f"batch_check: {len(missing)} trace(s) not in {a.data}/csv (e.g. "
                         f"{missing[0]}): pass --data with the public trace's directory (all "
                         "17 traces), or --traces with the ones there")
    pods = [R.read_openb_pods(p) for p in paths]
    exp_inv = slice_nodes(inv, a.nodes) if a.tiny else inv
    backends = a.backends.split(",")
    start = time.perf_counter()

    def left():
        if a.seconds is None:
            return float("inf")
        return round(a.seconds - (time.perf_counter() - start), 1)

    record = {"commit": git_commit(), "machine": machine_info(), "tiny": a.tiny,
              "warmup": not a.no_warmup,
              "backends": backends, "deadline_seconds": a.seconds, "parts": {}}
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        record["cuda_simulator"] = True
    parts = _parts(a, inv, exp_inv, traces, seeds, paths, pods)
    for name in names:
        _summarize(record, backends)    # what a kill during this part leaves
        part = parts[name]
        if a.no_warmup:
            part.warm = None
        _check_part(name, part, backends, record, left, a.out)
    _summarize(record, backends)
    record["seconds"] = round(time.perf_counter() - start, 1)
    _write(record, a.out)
    for name, p in record["parts"].items():
        print(f"{name}: equal {p.get('equal')}", *(
            f"{b} {p[b].get('seconds', p[b].get('skipped'))} s" for b in backends if b in p),
            p.get("skipped", ""))
    print(f"equal {record['equal']}; not run: {', '.join(record['not_run']) or 'none'}; "
          f"{record['seconds']} s; wrote {os.path.join(a.out, 'batch-check.json')}")
    return 0 if record["equal"] is not False else 1


if __name__ == "__main__":
    raise SystemExit(main())
