"""Steps per second of the openb vector environment (``OpenbVectorEnv``):
``--envs`` environments on the paper's cluster (the openb node list), each
a (trace, policy, seed) run, stepped with their default actions (one
batched kernel call per step; next-step autoreset restarts finished runs).
A step counts once per environment; ``--warmup`` steps run before the
timing (the first decisions of a run fill its per-(pod class, node)
answer cache, so they are slower than the rest of an episode).

python -m tensorsched.bench.vector_env [--envs 256] [--steps 200] [--trace default]
        [--warmup 200] [--threads N] [--output bench/results/vector-env-numba-<envs>.json]
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
    ap.add_argument("--output")
    a = ap.parse_args(argv)
    nodes = R.read_openb_nodes(os.path.join(a.data, "openb_node_list_gpu_node.csv"))
    pods = R.read_openb_pods(os.path.join(a.data, f"openb_pod_list_{a.trace}.csv"))
    jobs = [(0, POLICIES[k % len(POLICIES)], 42 + k // len(POLICIES)) for k in range(a.envs)]
    t0 = time.perf_counter()
    env = OpenbVectorEnv(nodes, [pods], jobs, threads=a.threads)
    _, info = env.reset()
    env.step(info["default_action"])       # compiled (or loaded) outside the timing
    setup = time.perf_counter() - t0
    _, info = env.reset()
    for _ in range(a.warmup):
        _, _, _, _, info = env.step(info["default_action"])
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        _, _, _, _, info = env.step(info["default_action"])
    wall = time.perf_counter() - t0
    record = {"bench": "openb vector env, default actions", "backend": "numba",
              "envs": a.envs, "steps": a.steps, "warmup_steps": a.warmup,
              "nodes": nodes.n_nodes, "trace": a.trace,
              "threads": a.threads or os.cpu_count(), "setup_seconds": round(setup, 2),
              "wall_seconds": round(wall, 3),
              "env_steps_per_second": round(a.envs * a.steps / wall),
              "load_before": [round(x, 2) for x in load0],
              "load_after": [round(x, 2) for x in os.getloadavg()],
              "commit": git_commit(), "machine": machine_info(),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    out = a.output or os.path.join(HERE, "results", f"vector-env-numba-{a.envs}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
