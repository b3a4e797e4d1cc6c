"""Steps per second of the openb vector environment (``OpenbVectorEnv``):
``--envs`` environments on the paper's cluster (the openb node list), each
a (trace, policy, seed) run, stepped with their default actions (one
batched kernel call per step; next-step autoreset restarts finished runs).
A step counts once per environment; ``--warmup`` steps run before the
timing (the first decisions of a run fill its per-(pod class, node)
answer cache, so they are slower than the rest of an episode).

``--backend cuda``: the step kernel on the device (a block per environment;
``--device-arrays``: the observations stay on the device, as a training
loop on the GPU takes them).  ``--tune``: each run's arrived GPU demand
(shorter episodes below the trace's own); ``--seeds``: distinct seeds
(environment k runs policy k mod 6 with seed 42 + (k // 6) mod seeds).

python -m tensorsched.bench.vector_env [--envs 256] [--steps 200] [--trace default]
        [--warmup 200] [--threads N] [--backend numba|cuda] [--device-arrays]
        [--tune 1.3] [--seeds N] [--output bench/results/vector-env-<backend>-<envs>.json]
"""
import argparse
import json
import os
import time

from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb.vector_env import OpenbVectorEnv

from .harness import git_commit, machine_info

HERE = os.path.dirname(os.path.realpath(__file__))
DATA = os.path.join(HERE, "..", "data", "openb", "csv")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--envs", type=int, default=256)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--trace", default="default")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--backend", choices=("numba", "cuda"), default="numba")
    ap.add_argument("--device-arrays", action="store_true")
    ap.add_argument("--tune", type=float, default=1.3)
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    record = run(a)
    out = a.output or os.path.join(HERE, "results", f"vector-env-{a.backend}-{a.envs}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps(record, indent=1))


def jobs_of(envs: int, seeds: int | None) -> list:
    """Environment k: policy k mod 6, seed 42 + (k // 6) (mod ``seeds``)."""
    return [(0, POLICIES[k % len(POLICIES)],
             42 + (k // len(POLICIES)) % (seeds or envs)) for k in range(envs)]


def run(a) -> dict:
    """The record of one timing (``a``: the parsed flags)."""
    nodes = R.read_openb_nodes(os.path.join(a.data, "openb_node_list_gpu_node.csv"))
    pods = R.read_openb_pods(os.path.join(a.data, f"openb_pod_list_{a.trace}.csv"))
    jobs = jobs_of(a.envs, a.seeds)
    t0 = time.perf_counter()
    env = OpenbVectorEnv(nodes, [pods], jobs, tune=a.tune, threads=a.threads, backend=a.backend,
                         device_arrays=a.device_arrays)
    _, info = env.reset()
    env.step(info["default_action"])       # compiled (or loaded) outside the timing
    setup = time.perf_counter() - t0
    _, info = env.reset()
    for _ in range(a.warmup):
        _, _, _, _, info = env.step(info["default_action"])
    load0 = os.getloadavg()
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(a.steps):
        _, _, _, _, info = env.step(info["default_action"])
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    return {"bench": "openb vector env, default actions", "backend": a.backend,
            "device_arrays": a.device_arrays, "tune": a.tune, "seeds": a.seeds or a.envs,
            "envs": a.envs, "steps": a.steps, "warmup_steps": a.warmup,
            "nodes": nodes.n_nodes, "trace": a.trace,
            "threads": a.threads or os.cpu_count(), "setup_seconds": round(setup, 2),
            "wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
            "env_steps_per_second": round(a.envs * a.steps / wall),
            "load_before": [round(x, 2) for x in load0],
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "commit": git_commit(), "machine": machine_info(),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


if __name__ == "__main__":
    main()
