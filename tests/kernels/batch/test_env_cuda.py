"""The vector environment's CUDA step (a block per environment, under
``NUMBA_ENABLE_CUDASIM``) equals the numba twin step by step: observations,
masks, rewards, flags and infos, with random valid and invalid actions, a
partial reset and next-step autoreset, all six policies, more nodes than
threads, departures, pods of unequal priorities; device actions and device
observations; and ``backend='cuda'`` refused cleanly where no device is."""
import numpy as np
import pytest
from support.backends import cuda_available, needs_cuda
from support.launch_guard import device_arrays_only  # noqa: F401 (autouse)
from support.openb import openb_slice, read_openb_slice, with_durations

pytest.importorskip("gymnasium")

from tensorsched.framework.errors import BackendError  # noqa: E402
from tensorsched.kernels.gpu.share import POLICIES  # noqa: E402
from tensorsched.topology.gpu import read_openb_nodes  # noqa: E402
from tensorsched.topology.openb import batch as B  # noqa: E402
from tensorsched.topology.openb import trace as T  # noqa: E402
from tensorsched.topology.openb.vector_env import OpenbVectorEnv  # noqa: E402


def _pair(tmp_path, **kw):
    """The twin and the cuda environment of the same six runs (``kw``: the
    cuda one's extra arguments)."""
    inv, pods = read_openb_slice(tmp_path, "gpuspec10", 20, 30)
    jobs = [(0, pol, 5 + k) for k, pol in enumerate(POLICIES)]
    return (OpenbVectorEnv(inv, [pods], jobs, max_steps=6),
            OpenbVectorEnv(inv, [pods], jobs, max_steps=6, backend="cuda", **kw))


def _same(a, b, what):
    for k in a:
        np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]), err_msg=f"{what} {k}")


@pytest.mark.cudasim
@needs_cuda
def test_cuda_step_equals_the_twin(tmp_path):
    twin, dev = _pair(tmp_path)
    rng = np.random.default_rng(0)
    o1, i1 = twin.reset()
    o2, i2 = dev.reset()
    _same(o1, o2, "reset obs")
    _same(i1, i2, "reset info")
    n = twin.single_action_space.n
    invalid = ended = 0
    # 12 steps: the partial reset at step 4; the other half truncated at
    # step 6 and autoreset at 7, the reset half truncated at 10, autoreset at 11
    for step in range(12):
        r = rng.random(twin.num_envs)
        act = np.where(r < 0.5, i1["default_action"],
                       np.where(r < 0.7, n, rng.integers(0, n, twin.num_envs)))
        if step == 4:
            mask = np.arange(twin.num_envs) % 2 == 0
            o1, i1 = twin.reset(options={"reset_mask": mask})
            o2, i2 = dev.reset(options={"reset_mask": mask})
        else:
            o1, r1, t1, u1, i1 = twin.step(act)
            o2, r2, t2, u2, i2 = dev.step(act)
            np.testing.assert_array_equal(r1, r2)
            np.testing.assert_array_equal(t1, t2)
            np.testing.assert_array_equal(u1, u2)
            ended += int((t1 | u1).sum())
        invalid += int(i1["invalid_action"].sum())
        _same(o1, o2, f"step {step} obs")
        _same(i1, i2, f"step {step} info")
    assert invalid > 0 and ended > 0
    for b in range(twin.num_envs):
        assert twin.placements(b) == dev.placements(b)


@pytest.mark.cudasim
@needs_cuda
def test_device_actions_and_observations(tmp_path):
    from numba import cuda

    from tensorsched.kernels.batch.env_cuda import on_device
    twin, dev2 = _pair(tmp_path, device_arrays=True)
    _, i1 = twin.reset()
    o2, i2 = dev2.reset()
    for _ in range(3):
        o1, r1, _, _, i1 = twin.step(i1["default_action"])
        act = cuda.to_device(np.ascontiguousarray(i2["default_action"], np.int64))
        o2, r2, _, _, i2 = dev2.step(act)
        assert all(on_device(v) for v in o2.values())
        _same(o1, {k: v.copy_to_host() if hasattr(v, "copy_to_host") else v.get()
                   for k, v in o2.items()}, "device obs")
        np.testing.assert_array_equal(r1, r2)


def test_backend_arguments_refused(tmp_path):
    inv, pods = read_openb_slice(tmp_path, "gpuspec10", 4, 6)
    with pytest.raises(ValueError, match="device_arrays"):
        OpenbVectorEnv(inv, [pods], [(0, "FGD", 1)], device_arrays=True)
    with pytest.raises(ValueError, match="backend"):
        OpenbVectorEnv(inv, [pods], [(0, "FGD", 1)], backend="numpy")
    if cuda_available():
        return                  # the cuda path runs here (the tests above)
    with pytest.raises(BackendError, match="backend 'cuda' cannot run"):
        OpenbVectorEnv(inv, [pods], [(0, "FGD", 1)], backend="cuda")


@pytest.mark.cudasim
@needs_cuda
def test_cuda_step_with_departures_equals_the_twin(tmp_path):
    nodes, pods = openb_slice(tmp_path, "gpuspec10", 6, 24)
    tw = B.trace_workload(T.read_openb_trace(pods))
    arrival = np.floor(tw.arrival / 600.0)
    life = np.floor((tw.departure - tw.arrival) / 600.0)
    # half the pods that leave do so a duration after their binding
    tw = with_durations(B.TraceWorkload(tw.pods, arrival, arrival + life))
    inv = read_openb_nodes(nodes)
    # three policies (a block each; the simulator runs blocks one after
    # another): the departures and retries are the queue's, not a
    # policy's; test_cuda_step_equals_the_twin steps all six.  24 pods: the
    # first pods leave at step 15, the runs end at 18
    jobs = [(0, pol, 2) for pol in POLICIES[1::2]]
    twin = OpenbVectorEnv(inv, [tw], jobs)
    dev = OpenbVectorEnv(inv, [tw], jobs, backend="cuda")
    rng = np.random.default_rng(1)
    o1, i1 = twin.reset()
    o2, i2 = dev.reset()
    done = np.zeros(twin.num_envs, bool)
    left = False
    for step in range(60):
        act = np.where(rng.random(twin.num_envs) < 0.8, i1["default_action"],
                       rng.integers(0, inv.n_nodes, twin.num_envs))
        o1, r1, t1, u1, i1 = twin.step(act)
        o2, r2, t2, u2, i2 = dev.step(act)
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_array_equal(t1, t2)
        left |= bool(((r1 < 0) & ~i1["invalid_action"]).any())     # a departure freed GPUs
        _same(o1, o2, f"step {step} obs")
        _same(i1, i2, f"step {step} info")
        for b in np.flatnonzero(t1 & ~done):
            assert twin.placements(b) == dev.placements(b)
        done |= t1
        if done.all():
            break
    assert done.any() and left


@pytest.mark.cudasim
@needs_cuda
def test_cuda_step_with_ranks_equals_the_twin(tmp_path):
    """Pods of three priorities arriving in groups (activeQ a heap in
    PrioritySort's order): the device pops the same pending pods as the
    twin, not first in first out, under random actions, through the end
    of the episodes and an autoreset.  8 pods: a launch per step is
    slow in the simulator."""
    nodes, pods = openb_slice(tmp_path, "gpuspec10", 4, 8)
    tw = B.trace_workload(T.read_openb_trace(pods))
    arrival = np.floor(tw.arrival / 1e6)        # 0 0 1 2 2 2 3 3
    leave = arrival + np.floor((tw.departure - tw.arrival) / 1e6)
    rank = np.array([2, 0, 1, 2, 0, 1, 1, 0])
    tw = B.TraceWorkload(tw.pods, arrival, leave, rank=rank)
    inv = read_openb_nodes(nodes)
    jobs = [(0, "FGD", 1), (0, "Random", 2)]
    twin = OpenbVectorEnv(inv, [tw], jobs)
    dev = OpenbVectorEnv(inv, [tw], jobs, backend="cuda")
    rng = np.random.default_rng(4)
    o1, i1 = twin.reset()
    o2, i2 = dev.reset()
    _same(o1, o2, "reset obs")
    _same(i1, i2, "reset info")
    order = [int(i1["pod_index"][0])]
    ended = np.zeros(twin.num_envs, bool)
    while not ended.all():
        act = np.where(rng.random(twin.num_envs) < 0.7, i1["default_action"],
                       rng.integers(0, inv.n_nodes, twin.num_envs))
        o1, r1, t1, u1, i1 = twin.step(act)
        o2, r2, t2, u2, i2 = dev.step(act)
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_array_equal(t1, t2)
        _same(o1, o2, f"step {len(order)} obs")
        _same(i1, i2, f"step {len(order)} info")
        for b in np.flatnonzero(t1 & ~ended):
            assert twin.placements(b) == dev.placements(b)
        ended |= t1
        order.append(int(i1["pod_index"][0]))
        assert len(order) < 12
    assert order[:3] == [1, 0, 2]           # the higher priority first at time 0
    o1, r1, t1, _, i1 = twin.step(np.zeros(twin.num_envs, np.int64))     # autoreset
    o2, r2, t2, _, i2 = dev.step(np.zeros(twin.num_envs, np.int64))
    _same(o1, o2, "autoreset obs")
    _same(i1, i2, "autoreset info")
    assert i1["pod_index"][0] == 1
