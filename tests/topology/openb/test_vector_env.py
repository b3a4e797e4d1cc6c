"""``OpenbVectorEnv``: every environment stepped with its default action
places its pods exactly as the batched engine (``replay_batch``, equal to
``simulate_replay``) does, for all six policies; random valid and invalid
actions keep the state consistent (nothing negative, the mask equal to a
scalar check of the filters, the penalty charged and the default applied);
autoreset is Gymnasium 1.x's next-step mode."""
import numpy as np
import pytest
from support.openb import read_openb_slice

pytest.importorskip("gymnasium")

from tensorsched.kernels.gpu.share import POLICIES  # noqa: E402
from tensorsched.topology.gpu import MILLI  # noqa: E402
from tensorsched.topology.openb import batch as B  # noqa: E402
from tensorsched.topology.openb.vector_env import OpenbVectorEnv  # noqa: E402


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    return read_openb_slice(tmp_path_factory.mktemp("openb"), "gpuspec10", 14, 40)


def _jobs():
    return [(0, pol, seed) for pol in POLICIES for seed in (3, 4)]


def _run_defaults(env):
    """Every environment through one episode on its default actions: the
    number of steps and each one's placements when its episode ended (the
    finished ones restart meanwhile)."""
    obs, info = env.reset()
    done = np.zeros(env.num_envs, bool)
    placements = [None] * env.num_envs
    steps = 0
    while not done.all():
        obs, rew, term, trunc, info = env.step(info["default_action"])
        assert not info["invalid_action"][~done].any()
        for b in np.flatnonzero(term & ~done):
            placements[b] = env.placements(b)
        done |= term
        steps += 1
        assert steps < 10_000
    return steps, placements


def test_default_actions_reproduce_the_batched_engine(cluster):
    inv, pods = cluster
    jobs = _jobs()
    env = OpenbVectorEnv(inv, [pods], jobs)
    _, got = _run_defaults(env)
    want = B.replay_batch(inv, [pods], jobs, record_placements=True)
    for k, res in enumerate(want):
        assert got[k] == res.placements, (res.policy, res.seed)
        assert sum(p[1] >= 0 for p in got[k]) == res.scheduled
    placed = [p for k in range(len(jobs)) for p in got[k] if p[1] >= 0]
    assert len(placed) > 20 and len({p[1] for p in placed}) > 3


def _scalar_mask(env, b, inv):
    """The filters for env b's pending pod, one node at a time."""
    e = env.engine
    a = env.arrays
    j = int(e.ist[b, 0])
    c = int(a.cls[a.ev_off[b] + j])
    w = a.run_workload[b]
    cpu, mem, num = int(a.c_cpu[w, c]), int(a.c_mem[w, c]), int(a.c_num[w, c])
    milli, mmask = int(a.c_milli[w, c]), int(a.c_mask[w, c])
    out = []
    for i in range(inv.n_nodes):
        ok = e.pods_left[b, i] >= 1 and cpu <= e.cpu_left[b, i] and mem <= e.mem_left[b, i]
        if ok and num > 0 and milli > 0:
            cnt, model = int(inv.gpu_count[i]), int(inv.model[i])
            allowed = mmask == 0 or (model >= 0 and (mmask >> model) & 1)
            free = sum(1 for g in range(cnt) if e.gpu_left[b, i, g] >= milli)
            ok = cnt > 0 and allowed and free >= num
        out.append(int(ok))
    return np.array(out, np.int8)


def test_random_actions_keep_the_state_consistent(cluster):
    inv, pods = cluster
    jobs = [(0, pol, 7) for pol in POLICIES]
    env = OpenbVectorEnv(inv, [pods], jobs, invalid_action_penalty=0.5)
    rng = np.random.default_rng(0)
    obs, info = env.reset()
    total = env.total_milli
    e = env.engine
    n_invalid = 0
    for _ in range(60):
        mask = obs["action_mask"]
        live = e.ist[:, 2] == 0
        act = np.zeros(env.num_envs, np.int64)
        for b in range(env.num_envs):
            assert np.array_equal(mask[b], _scalar_mask(env, b, inv) if live[b]
                                  else np.zeros(inv.n_nodes, np.int8)), b
            rows = np.flatnonzero(mask[b])
            act[b] = rng.choice(rows) if rows.size and rng.random() < 0.8 else rng.integers(-2, 20)
        before = e.fst[:, 1].copy()
        bad = live & ((act < 0) | (act >= inv.n_nodes)
                      | (mask[np.arange(env.num_envs), np.clip(act, 0, inv.n_nodes - 1)] == 0))
        dflt = info["default_action"]
        obs, rew, term, trunc, info = env.step(act)
        n_invalid += int(bad.sum())
        np.testing.assert_array_equal(info["invalid_action"] & live, bad)
        applied = np.where(bad, dflt, act)
        np.testing.assert_array_equal(info["chosen_node"][live], applied[live])
        np.testing.assert_allclose(rew[live], (e.fst[live, 1] - before[live]) / total
                                   - 0.5 * bad[live])
        assert (e.cpu_left >= 0).all() and (e.mem_left >= 0).all()
        assert (e.pods_left >= 0).all() and (e.gpu_left >= 0).all()
        # the observation is the state: free GPU milli of every node
        free = e.gpu_left.sum(axis=2) / float(inv.gpu_count.max() * MILLI)
        np.testing.assert_allclose(obs["nodes"][:, :, 5], free, rtol=1e-6)
        assert env.observation_space.contains(obs)
        used = sum(int(inv.gpu_count.sum()) * MILLI - e.gpu_left[b].sum()
                   for b in range(env.num_envs))
        assert used == e.fst[:, 1].sum()
    assert n_invalid > 0


def test_next_step_autoreset(cluster):
    inv, pods = cluster
    env = OpenbVectorEnv(inv, [pods], [(0, "FGD", 1), (0, "BestFit", 2)], max_steps=5)
    obs0, info0 = env.reset()
    for k in range(5):
        obs, rew, term, trunc, info = env.step(info0["default_action"] if k == 0
                                               else info["default_action"])
    assert trunc.all() and not term.any()
    # the step after the end ignores the action and starts the run again
    obs, rew, term, trunc, info = env.step(np.array([-1, -1]))
    assert (rew == 0).all() and not term.any() and not trunc.any()
    assert not info["invalid_action"].any() and (info["chosen_node"] == -1).all()
    for k in obs:
        np.testing.assert_array_equal(obs[k], obs0[k])
    np.testing.assert_array_equal(info["default_action"], info0["default_action"])
    # a run to its end: terminated, then restarted
    env = OpenbVectorEnv(inv, [pods], [(0, "DotProd", 5)])
    first, first_info = OpenbVectorEnv(inv, [pods], [(0, "DotProd", 5)]).reset()
    steps, _ = _run_defaults(env)
    obs, rew, term, trunc, info = env.step(np.array([0]))
    assert not term.any() and not trunc.any() and rew[0] == 0 and steps > 5
    assert info["pod_index"][0] == first_info["pod_index"][0]
    for k in obs:
        np.testing.assert_array_equal(obs[k], first[k])
    assert env.engine.fst[0, 1] == 0


def test_bad_arguments_are_refused(cluster):
    inv, pods = cluster
    with pytest.raises(ValueError, match="policy"):
        OpenbVectorEnv(inv, [pods], [(0, "Nope", 1)])
    with pytest.raises(ValueError, match="trace index"):
        OpenbVectorEnv(inv, [pods], [(3, "FGD", 1)])
    env = OpenbVectorEnv(inv, [pods], [(0, "FGD", 1)])
    with pytest.raises(RuntimeError, match="before reset"):
        env.step(np.array([0]))
    env.reset()
    with pytest.raises(ValueError, match="shape"):
        env.step(np.array([0, 1]))


def test_reset_mask_restarts_only_the_chosen_environments(cluster):
    inv, pods = cluster
    env = OpenbVectorEnv(inv, [pods], [(0, "GpuPacking", 1), (0, "GpuClustering", 2)])
    obs0, info0 = env.reset()
    with pytest.raises(ValueError, match="reset_mask"):
        OpenbVectorEnv(inv, [pods], [(0, "FGD", 1)] * 2).reset(
            options={"reset_mask": np.array([True, False])})
    info = info0
    for _ in range(4):
        obs, _, _, _, info = env.step(info["default_action"])
    kept = {k: v[1].copy() for k, v in obs.items()}
    obs, info = env.reset(options={"reset_mask": np.array([True, False])})
    for k in obs:
        np.testing.assert_array_equal(obs[k][0], obs0[k][0])
        np.testing.assert_array_equal(obs[k][1], kept[k])
    assert info["pod_index"][1] > info0["pod_index"][1]
    with pytest.raises(ValueError, match="shape"):
        env.reset(options={"reset_mask": np.array([True])})


def _compressed_trace(tmp_path, n_nodes, n_pods):
    """An openb slice with its own times, compressed so that pods wait,
    retry and leave: (GpuInventory, TraceWorkload)."""
    from support.openb import openb_slice

    from tensorsched.topology.gpu import read_openb_nodes
    from tensorsched.topology.openb import trace as T
    nodes, pods = openb_slice(tmp_path, "gpuspec10", n_nodes, n_pods)
    tw = B.trace_workload(T.read_openb_trace(pods))
    arrival = np.floor(tw.arrival / 600.0)
    life = np.floor((tw.departure - tw.arrival) / 600.0)
    return read_openb_nodes(nodes), B.TraceWorkload(tw.pods, arrival, arrival + life)


@pytest.mark.parametrize("durations", [False, True])
def test_departures_default_actions_reproduce_trace_batch(tmp_path, durations):
    from support.openb import with_durations
    inv, tw = _compressed_trace(tmp_path, 8, 120)
    if durations:           # half the pods that leave do so a duration after their binding
        tw = with_durations(tw)
        assert np.isfinite(tw.duration).any()
    jobs = [(0, pol, 5) for pol in POLICIES]
    env = OpenbVectorEnv(inv, [tw], jobs)
    _, got = _run_defaults(env)
    want = B.trace_batch([inv], [tw], [(0, 0, p, s) for _t, p, s in jobs])
    for k, res in enumerate(want):
        assert [(p[1], tuple(p[2])) for p in got[k]] == list(zip(res.node.tolist(), res.gpus))
    assert any((r.tries[r.node >= 0] > 1).any() for r in want)     # retries happened
    assert np.isfinite(tw.departure).any()
    with pytest.raises(ValueError, match="not a mix"):
        OpenbVectorEnv(inv, [tw, tw.pods], jobs)
    with pytest.raises(ValueError, match="max_unsched"):
        OpenbVectorEnv(inv, [tw], jobs, max_unsched=-1.0)
