"""``runtime.blocks``: a block of unlike pods placed in one compiled call
lands every pod where its cycle one after another would, failed pods get
the FailedScheduling message of their own cycle, and a profile without a
block form (a PostFilter, no block placer) has none.  (Whole simulations,
blocks against one by one, are in tests/framework/simulation/
test_arrival_blocks.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.runtime.blocks import block_setup, place_block
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.topology.gpu import build_inventory
from tensorsched.topology.openb.trace import openb_config, openb_node_objects

TYPICAL = [{"cpu": 1000, "gpuCount": 1, "gpuMilli": 1000, "models": "", "weight": 1.0}]
INVENTORY = build_inventory([f"n{i}" for i in range(5)], [8000, 8000, 4000, 8000, 2000],
                            [32768] * 5, [2, 2, 1, 0, 4], ["A100", "A100", "T4", "", "T4"])


def gpu_pods(seed, n=12):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        milli = int(rng.choice([0, 300, 500, 1000]))
        count = 1 if milli < 1000 else int(rng.integers(1, 4))
        p = pod_dict(f"p{i}", cpu=f"{int(rng.integers(1, 4)) * 500}m", memory="1Gi")
        if milli:
            p["metadata"]["annotations"] = {"alibabacloud.com/gpu-milli": str(milli),
                                            "alibabacloud.com/gpu-count": str(count)}
        out.append(p)
    return out


@pytest.mark.parametrize("policy, seed", [("FGD", 0), ("BestFit", 1), ("FGD", 3)])
def test_a_block_places_as_one_cycle_after_another(policy, seed):
    config = openb_config(policy, TYPICAL)
    cluster = build_cluster(openb_node_objects(INVENTORY), config)
    pods = [cluster.resolve(parse_pod(p)) for p in gpu_pods(seed)]
    fw = cluster.framework_for(pods[0], "numba")
    got = place_block(fw, cluster.state, pods, seed=seed, attempt=0, start_index=0)
    assert got is not None and got.rows.shape[0] == len(pods)

    twin = build_cluster(openb_node_objects(INVENTORY), config)
    outcomes, _ = Scheduler(twin, "numba", seed, batch=False).schedule_pending(gpu_pods(seed))
    state = cluster.state
    assert [state.node_name(int(r)) if r >= 0 else None for r in got.rows] == \
        [o.node for o in outcomes]
    # the placed pods are in the state, on their nodes
    for pod, r in zip(pods, got.rows.tolist()):
        if r >= 0:
            assert state.node_name(state.pods[pod.key].node_row) == state.node_name(r)
        else:
            assert pod.key not in state.pods
    failed = [i for i, o in enumerate(outcomes) if o.node is None]
    assert failed and len(failed) < len(pods)          # both paths taken
    assert sorted(got.diagnoses) == failed
    for i in failed:
        message, plugins = got.diagnoses[i]
        assert message == outcomes[i].message
        # the rejecting plugins: NodeResourcesFit's reasons say "Insufficient",
        # GpuShareFit's speak of GPUs
        assert ("NodeResourcesFit" in plugins) == ("Insufficient" in message)
        assert ("GpuShareFit" in plugins) == ("GPU" in message)


def test_profiles_without_a_block_form():
    cluster = build_cluster([node_dict("a")])                # DefaultPreemption: a PostFilter
    fw = cluster.framework_for(parse_pod(pod_dict("p")), "numpy")
    assert block_setup(fw) is None
    assert place_block(fw, cluster.state, [cluster.resolve(parse_pod(pod_dict("p")))],
                       seed=0, attempt=0, start_index=0) is None


def test_an_empty_block():
    cluster = build_cluster(openb_node_objects(INVENTORY), openb_config("FGD", TYPICAL))
    fw = cluster.framework_for(parse_pod(pod_dict("p")), "numba")
    placer, static = block_setup(fw)
    assert placer.name == "GpuShareFit" and static == []
    assert place_block(fw, cluster.state, [], seed=0, attempt=0, start_index=0) is None
