"""``OpenbVectorEnv`` on traces whose pods have unequal priorities (a
``TraceWorkload.rank``: activeQ in PrioritySort's order): stepped with its
default actions, every environment attempts and places its pods in the
order, on the nodes and GPUs, and with the fragmentation after each, of
the batched engine's run (``trace_batch``) and of that run's
``Simulation``, episode after episode (next-step autoreset) and after a
partial reset; with random actions the pending pod is still activeQ's
head (no pod waiting in activeQ ranks before it) and the mask is the
filters' answer."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.openb import openb_slice, simulate_trace

pytest.importorskip("gymnasium")

from tensorsched.kernels.batch import _queue  # noqa: E402
from tensorsched.kernels.gpu.share import POLICIES  # noqa: E402
from tensorsched.topology.gpu import build_inventory, read_openb_nodes  # noqa: E402
from tensorsched.topology.openb import batch as B  # noqa: E402
from tensorsched.topology.openb import replay as R  # noqa: E402
from tensorsched.topology.openb import trace as T  # noqa: E402
from tensorsched.topology.openb.vector_env import OpenbVectorEnv  # noqa: E402

MODELS = ("A10", "V100M16", "T4")


@st.composite
def ranked_traces(draw):
    """A small cluster and a trace of pods of two or three priorities,
    arriving together or apart, leaving at a time or a duration after
    their binding, some fitting nowhere until others leave."""
    n = draw(st.integers(1, 4))
    counts = draw(st.lists(st.sampled_from([0, 1, 2, 4]), min_size=n, max_size=n))
    if sum(counts) == 0:
        counts[0] = 2
    models = [draw(st.sampled_from(MODELS)) if c else "" for c in counts]
    cpu = draw(st.lists(st.sampled_from([4000, 16000]), min_size=n, max_size=n))
    mem = draw(st.lists(st.sampled_from([8192, 65536]), min_size=n, max_size=n))
    inv = build_inventory([f"node-{i}" for i in range(n)], cpu, mem, counts, models)
    p = draw(st.integers(2, 18))
    shapes = draw(st.lists(st.tuples(
        st.sampled_from([0, 500, 2000, 8000]), st.sampled_from([0, 1024, 30000]),
        st.sampled_from([(0, 0), (1, 250), (1, 500), (1, 1000), (2, 1000)]),
        st.sampled_from(["", "A10", "T4|V100M16"])), min_size=p, max_size=p))
    if not any(s[2][0] for s in shapes):      # the typical pods need GPU demand
        shapes[0] = (shapes[0][0], shapes[0][1], (1, 500), shapes[0][3])
    gaps = draw(st.lists(st.sampled_from([0, 0, 0, 1, 4, 60]), min_size=p, max_size=p))
    stays = draw(st.lists(st.sampled_from([None, 0, 2, 9, 40]), min_size=p, max_size=p))
    timed = draw(st.lists(st.booleans(), min_size=p, max_size=p))
    arrival = np.cumsum(np.array(gaps, np.float64))
    departure = np.array([np.inf if s is None or d else a + s
                          for a, s, d in zip(arrival, stays, timed)])
    duration = np.array([s if s is not None and d else np.inf for s, d in zip(stays, timed)],
                        np.float64)
    pods = R.TracePods([f"pod-{j:03d}" for j in range(p)],
                       np.array([s[0] for s in shapes], np.int64),
                       np.array([s[1] for s in shapes], np.int64),
                       np.array([s[2][0] for s in shapes], np.int64),
                       np.array([s[2][1] for s in shapes], np.int64),
                       [s[3] if s[2][0] else "" for s in shapes])
    rank = np.array(draw(st.lists(st.integers(0, 2), min_size=p, max_size=p)), np.int64)
    if len(set(rank.tolist())) < 2:
        rank[0] = 1 - min(rank[0], 1)
    return inv, B.TraceWorkload(pods, arrival, departure, duration=duration, rank=rank)


def _default_episodes(env, episodes=2, reset_at=None):
    """Every environment stepped with its default actions through
    ``episodes`` episodes (next-step autoreset between them; ``reset_at``
    (step, mask): the masked environments restarted by a partial reset at
    that step, their episode then begun again).  Per environment, its
    finished episodes, each (the pods in the order they were placed,
    node, GPU mask and fragmentation per event)."""
    e = env.engine
    off, ln = env.arrays.ev_off, env.arrays.ev_len
    _, info = env.reset()
    order = [[] for _ in range(env.num_envs)]
    done = [[] for _ in range(env.num_envs)]
    step = 0
    while min(len(d) for d in done) < episodes:
        if reset_at is not None and step == reset_at[0]:
            _, info = env.reset(options={"reset_mask": reset_at[1]})
            for b in np.flatnonzero(reset_at[1]):
                order[b] = []
        pending = info["pod_index"].copy()
        _, _, term, trunc, info = env.step(info["default_action"])
        assert not info["invalid_action"].any() and not trunc.any()
        for b in range(env.num_envs):
            if pending[b] < ln[b]:
                assert info["chosen_node"][b] >= 0
                order[b].append(int(pending[b]))
            if term[b]:
                sl = slice(off[b], off[b] + ln[b])
                done[b].append((order[b], e.out_node[sl].copy(), e.out_gmask[sl].copy(),
                                e.out_frag[sl].copy()))
                order[b] = []
        step += 1
        assert step < 5_000
    return done


def _assert_engine_run(got, res):
    """One episode ``got`` (``_default_episodes``) is the engine's run ``res``."""
    placed, node, gmask, frag = got
    binds = [(k, int(p)) for k, p in enumerate(res.log_pod.tolist()) if p >= 0]
    assert placed == [p for _k, p in binds], res.policy
    assert node.tolist() == res.node.tolist(), res.policy
    assert [tuple(g for g in range(16) if (int(m) >> g) & 1) if nd >= 0 else ()
            for m, nd in zip(gmask, node)] == [
        tuple(g) if nd >= 0 else () for g, nd in zip(res.gpus, res.node)], res.policy
    # the fragmentation right after each binding (GPU milli), as the engine logs it
    np.testing.assert_array_equal(frag[[p for _k, p in binds]],
                                  res.log_frag[[k for k, _p in binds]], err_msg=res.policy)


def _assert_simulation(got, inv, tw, policy, seed, max_unsched):
    """One episode ``got`` binds the pods the Simulation binds, in its order,
    on its nodes and GPUs."""
    placed, node, gmask, _frag = got
    _sim, log, gpus = simulate_trace(inv, tw, policy, seed,
                                     pod_max_in_unschedulable_seconds=max_unsched)
    assert placed == [p for _t, p, _n in log if p >= 0], policy
    assert [(p, int(node[p])) for p in placed] == [(p, nd) for _t, p, nd in log if p >= 0]
    names = tw.pods.names
    for p in placed:
        assert gpus[f"default/{names[p]}"] == tuple(
            g for g in range(16) if (int(gmask[p]) >> g) & 1), (policy, p)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=ranked_traces(), seed=st.integers(0, 2**20),
       max_unsched=st.sampled_from([B.DEFAULT_MAX_UNSCHED, 20.0]))
def test_ranked_default_actions_equal_the_engine_and_the_simulation(case, seed, max_unsched):
    inv, tw = case
    jobs = [(0, pol, seed) for pol in POLICIES]
    env = OpenbVectorEnv(inv, [tw], jobs, max_unsched=max_unsched)
    # two episodes each; the even environments restarted at step 2
    got = _default_episodes(env, 2, (2, np.arange(len(jobs)) % 2 == 0))
    want = B.trace_batch([inv], [tw], [(0, 0, p, s) for _t, p, s in jobs], workers=1,
                         max_unsched=max_unsched)
    for k, res in enumerate(want):
        for ep in got[k]:
            _assert_engine_run(ep, res)
        _assert_simulation(got[k][0], inv, tw, res.policy, seed, max_unsched)


def _ranked_openb(tmp_path, n_nodes, n_pods, durations=True):
    """An openb slice with its own times compressed (pods wait, retry and
    leave) and three priorities drawn per pod: (GpuInventory, TraceWorkload)."""
    nodes, pods = openb_slice(tmp_path, "gpuspec10", n_nodes, n_pods)
    tw = B.trace_workload(T.read_openb_trace(pods))
    arrival = np.floor(tw.arrival / 600.0)
    leave = arrival + np.floor((tw.departure - tw.arrival) / 600.0)
    dur = np.full(n_pods, np.inf)
    if durations:       # every other pod that leaves: a duration after its binding
        half = np.flatnonzero(np.isfinite(leave))[::2]
        dur[half] = leave[half] - arrival[half]
        leave[half] = np.inf
    rank = np.random.default_rng(7).integers(0, 3, n_pods)
    return read_openb_nodes(nodes), B.TraceWorkload(tw.pods, arrival, leave, duration=dur,
                                                    rank=rank)


def test_ranked_openb_slice_reorders_and_equals_the_engine(tmp_path):
    """On an openb slice the ranks change the runs (against first in first
    out), and the environments follow the ranked runs."""
    inv, tw = _ranked_openb(tmp_path, 8, 120)
    jobs = [(0, pol, 5) for pol in POLICIES]
    got = _default_episodes(OpenbVectorEnv(inv, [tw], jobs), 1)
    runs = [(0, 0, p, s) for _t, p, s in jobs]
    want = B.trace_batch([inv], [tw], runs, workers=1)
    for k, res in enumerate(want):
        _assert_engine_run(got[k][0], res)
    fifo = B.trace_batch([inv], [B.TraceWorkload(tw.pods, tw.arrival, tw.departure,
                                                 duration=tw.duration)], runs, workers=1)
    assert any(a.log_pod.tolist() != b.log_pod.tolist() for a, b in zip(want, fifo))
    assert any((r.tries[r.node >= 0] > 1).any() for r in want)     # retries happened


def _scalar_mask(env, b, inv):
    """The filters for env b's pending pod, one node at a time."""
    e = env.engine
    a = env.arrays
    c = int(a.cls[a.ev_off[b] + int(e.ist[b, 0])])
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


def test_ranked_random_actions_keep_the_queue_order_and_the_mask(tmp_path):
    inv, tw = _ranked_openb(tmp_path, 6, 60)
    jobs = [(0, pol, 3) for pol in POLICIES]
    env = OpenbVectorEnv(inv, [tw], jobs, invalid_action_penalty=0.5)
    e = env.engine
    pst = e._queue[2]                       # the queue's pod status per event
    off, ln = env.arrays.ev_off, env.arrays.ev_len
    rng = np.random.default_rng(2)
    obs, info = env.reset()
    n_invalid = waiting = ended = 0
    for _ in range(150):
        mask = obs["action_mask"]
        live = e.ist[:, 2] == 0
        act = np.zeros(env.num_envs, np.int64)
        for b in range(env.num_envs):
            assert np.array_equal(mask[b], _scalar_mask(env, b, inv) if live[b]
                                  else np.zeros(inv.n_nodes, np.int8)), b
            if live[b]:
                # the pending pod is activeQ's head: no pod still in activeQ ranks before it
                j = int(e.ist[b, 0])
                q = pst[off[b]:off[b] + ln[b]]
                assert q[j] == _queue.IN_FLIGHT
                active = np.flatnonzero(q == _queue.ACTIVE)
                assert (tw.rank[active] >= tw.rank[j]).all(), (b, j)
                waiting += active.shape[0]
            rows = np.flatnonzero(mask[b])
            act[b] = rng.choice(rows) if rows.size and rng.random() < 0.7 \
                else rng.integers(-2, inv.n_nodes + 3)
        bad = live & ((act < 0) | (act >= inv.n_nodes)
                      | (mask[np.arange(env.num_envs), np.clip(act, 0, inv.n_nodes - 1)] == 0))
        dflt = info["default_action"]
        obs, rew, term, trunc, info = env.step(act)
        ended += int(term.sum())
        n_invalid += int(bad.sum())
        np.testing.assert_array_equal(info["invalid_action"] & live, bad)
        np.testing.assert_array_equal(info["chosen_node"][live],
                                      np.where(bad, dflt, act)[live])
        assert (e.cpu_left >= 0).all() and (e.mem_left >= 0).all()
        assert (e.pods_left >= 0).all() and (e.gpu_left >= 0).all()
        assert env.observation_space.contains(obs)
    assert n_invalid > 0 and waiting > 0 and ended > 0
