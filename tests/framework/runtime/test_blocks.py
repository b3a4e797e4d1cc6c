"""``runtime.blocks``: a block of unlike pods placed in one compiled call
lands every pod where its cycle one after another would, failed pods get
the FailedScheduling message of their own cycle, and a profile without a
block form (a PostFilter, no block placer) has none.  (Whole simulations,
blocks against one by one, are in tests/framework/simulation/
test_arrival_blocks.py.)"""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.runtime.blocks import block_setup, place_block
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.topology import plugins as P
from tensorsched.topology.gpu import build_inventory
from tensorsched.topology.gpu_table import binding_gpus
from tensorsched.topology.openb.trace import experiment_registry, openb_config, openb_node_objects

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


@pytest.mark.parametrize("policy, seed", [("FGD", 0), ("BestFit", 1), ("FGD", 3), ("Random", 0),
                                          ("Random", 3)])
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


@st.composite
def _random_cases(draw):
    n = draw(st.integers(1, 9))
    counts = [draw(st.sampled_from([0, 1, 2, 4])) for _ in range(n)]
    inv = build_inventory([f"n{i}" for i in range(n)],
                          [draw(st.sampled_from([2000, 4000, 8000])) for _ in range(n)],
                          [32768] * n, counts,
                          [draw(st.sampled_from(["A100", "T4"])) if c else "" for c in counts])
    return (inv, draw(st.integers(0, 2**31)), draw(st.integers(1, 30)),
            draw(st.integers(0, 10**6)), draw(st.integers(0, n - 1)), draw(st.booleans()),
            draw(st.booleans()), draw(st.booleans()))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_random_cases())
def test_random_block_draws_as_its_cycles(case):
    """Under Random every pod of a block draws its node as its own cycle
    would: the cycle's attempt number (the block's first plus its place in
    the block) and the feasible nodes counted from the cycle's start row;
    with a tree per kind of pod or none, with the experiment's tie rank and
    a row-local built-in score beside the policy or without them.  Rows
    and GPU indices equal one cycle after another started at the same
    attempt and start row, and the block takes every pod."""
    inv, seed, m, attempt, start, trees, tie, fit_score = case
    config = openb_config("Random", None, inv.n_nodes + 1 if tie else None)
    if fit_score:
        config["profiles"][0]["plugins"]["score"]["enabled"].append(
            {"name": "NodeResourcesFit", "weight": 2})
    ranks = np.arange(inv.n_nodes)[::-1].copy()
    pod_dicts = gpu_pods(seed, m)
    cluster = build_cluster(openb_node_objects(inv, ranks), config, experiment_registry())
    pods = [cluster.resolve(parse_pod(p)) for p in pod_dicts]
    fw = cluster.framework_for(pods[0], "numba")
    tree_args = ({"TREE_ROWS_PER_CLASS": 1, "TREE_MIN_PODS": 1} if trees
                 else {"MAX_TREES": 0})
    with patch.multiple(P, **tree_args):
        got = place_block(fw, cluster.state, pods, seed=seed, attempt=attempt,
                          start_index=start)
    assert got is not None and got.rows.shape[0] == m      # a block formed: every pod in it

    twin = build_cluster(openb_node_objects(inv, ranks), config, experiment_registry())
    alone = Scheduler(twin, "numba", seed, batch=False)
    alone.attempts, alone.next_start_index = attempt, start
    outcomes, _ = alone.schedule_pending(pod_dicts)
    state = cluster.state
    assert [state.node_name(int(r)) if r >= 0 else None for r in got.rows] == \
        [o.node for o in outcomes]
    assert binding_gpus(state) == binding_gpus(twin.state)


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
