"""GpuShareFit's compiled block on the cuda backend (``gpu.block``'s
``place_block_cuda``: the block's source as device functions, one device
thread) under Numba's CUDA simulator at tiny sizes: the same rows, GPU
indices and FailedScheduling diagnoses as the numba block, Random's per-pod
draw included (any attempt and start row, with and without the per-kind
trees, with a row-local score beside the policy); and a Simulation on cuda
forms blocks under Random that equal one arrival at a time."""

from __future__ import annotations

import math
from unittest.mock import patch

import numpy as np
import pytest
from support.backends import needs_cuda
from support.openb import openb_slice

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.runtime.blocks import place_block
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.simulation import simulation as SM
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.generators.clusters import pod_dict
from tensorsched.topology import plugins as P
from tensorsched.topology.gpu import build_inventory
from tensorsched.topology.gpu_table import binding_gpus
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb.trace import (
    experiment_registry,
    openb_config,
    openb_node_objects,
    read_openb_trace,
)

pytestmark = [pytest.mark.cudasim, needs_cuda]

INVENTORY = build_inventory([f"n{i}" for i in range(5)], [8000, 8000, 4000, 8000, 2000],
                            [32768] * 5, [2, 2, 1, 0, 4], ["A100", "A100", "T4", "", "T4"])
TYPICAL = [{"cpu": 1000, "gpuCount": 1, "gpuMilli": 300, "models": "", "weight": 1.0}]


def _pods(seed, n):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        milli = int(rng.choice([0, 300, 500, 1000]))
        count = 1 if milli < 1000 else int(rng.integers(1, 3))
        p = pod_dict(f"p{i}", cpu=f"{int(rng.integers(1, 5)) * 500}m", memory="1Gi")
        if milli:
            p["metadata"]["annotations"] = {"alibabacloud.com/gpu-milli": str(milli),
                                            "alibabacloud.com/gpu-count": str(count)}
        out.append(p)
    return out


def _block(backend, policy, fit_score, trees, seed, attempt, start):
    config = openb_config(policy, TYPICAL, 6)
    if fit_score:
        config["profiles"][0]["plugins"]["score"]["enabled"].append(
            {"name": "NodeResourcesFit", "weight": 2})
    cluster = build_cluster(openb_node_objects(INVENTORY, np.arange(5)), config,
                            experiment_registry())
    pods = [cluster.resolve(parse_pod(p)) for p in _pods(seed, 14)]
    fw = cluster.framework_for(pods[0], backend)
    tree_args = ({"TREE_ROWS_PER_CLASS": 1, "TREE_MIN_PODS": 1} if trees
                 else {"MAX_TREES": 0})
    with patch.multiple(P, **tree_args):
        got = place_block(fw, cluster.state, pods, seed=seed, attempt=attempt,
                          start_index=start)
    assert got is not None and got.rows.shape[0] == len(pods)
    return got.rows.tolist(), binding_gpus(cluster.state), got.diagnoses


@pytest.mark.parametrize("policy, fit_score, trees, seed, attempt, start", [
    ("Random", False, False, 3, 17, 2),
    ("Random", True, True, 4, 5, 4),
    ("Random", False, True, 0, 0, 0),
    ("FGD", True, False, 3, 1, 1),
])
def test_cuda_block_equals_numba(policy, fit_score, trees, seed, attempt, start):
    args = (policy, fit_score, trees, seed, attempt, start)
    cuda_got = _block("cuda", *args)
    assert cuda_got == _block("numba", *args)
    assert any(r < 0 for r in cuda_got[0]) and any(r >= 0 for r in cuda_got[0])


def test_cuda_simulation_random_blocks_equal_one_by_one(tmp_path):
    nodes_csv, pods_csv = openb_slice(tmp_path, "default", 3, 16, leave_every=4)
    inv = R.read_openb_nodes(nodes_csv)
    cfg = openb_config("Random", None, inv.n_nodes + 1)
    out = []
    for batch in (True, False):
        with patch.object(SM, "MIN_BLOCK", 1):
            sim = Simulation(openb_node_objects(inv, np.arange(inv.n_nodes)), cfg, "cuda", 5,
                             registry=experiment_registry(), batch=batch, interval=None,
                             pod_max_in_unschedulable_seconds=math.inf)
        sim.submit(read_openb_trace(pods_csv))
        sim.run()
        state = sim.cluster.state
        out.append(({k: state.node_name(e.node_row) for k, e in state.pods.items()},
                    binding_gpus(state), sim.summary(), sim.scheduler.block_pods))
    assert out[0][:3] == out[1][:3]
    assert out[0][3] > 4 and out[1][3] == 0
