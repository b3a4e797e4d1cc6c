"""SchedulingEnv: Gymnasium's checker, the default agent reproduces
Simulation.run() exactly, the action mask is explain's feasible set, invalid
actions, each reward kind, determinism under reset(seed), truncation."""
import subprocess
import sys
import threading
import warnings

import numpy as np
import pyarrow as pa
import pytest

gym = pytest.importorskip("gymnasium")
from gymnasium.utils.env_checker import check_env

import tensorsched as ts
from tensorsched.framework.errors import ArgumentError
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod
from tensorsched.framework.simulation.gym_env import ENV_ID, SchedulingEnv
from tensorsched.framework.simulation.simulation import Simulation, SimulationError


def nodes(n=6):
    return [node_dict(f"n{i}", cpu="4", memory="16Gi", pods="30",
                      labels={"topology.kubernetes.io/zone": f"z{i % 2}"}) for i in range(n)]


def churn(n=300, seed=1):
    """Arrivals with durations or departures and two priorities (as in
    test_simulation): pods leave, wait and get preempted."""
    rng = np.random.default_rng(seed)
    arrival = np.sort(rng.integers(0, 200, n)).astype(float)
    dur = rng.integers(5, 60, n).astype(float)
    dep = np.where(rng.random(n) < 0.3, arrival + rng.integers(0, 80, n), np.nan)
    dur = np.where(np.isnan(dep), dur, np.nan)
    cpu = rng.choice([250, 500, 1000], n)
    return pa.table({"name": [f"p{i}" for i in range(n)], "arrival": arrival,
                     "departure": pa.array(dep, mask=np.isnan(dep)),
                     "duration": pa.array(dur, mask=np.isnan(dur)),
                     "cpu": cpu, "memory": cpu * (1 << 21),
                     "priority": rng.choice([0, 10], n)})


def steady(n=40, seed=3):
    """Pods that arrive and stay (no departures), no priorities."""
    rng = np.random.default_rng(seed)
    cpu = rng.choice([250, 500, 1000], n)
    return pa.table({"name": [f"s{i}" for i in range(n)],
                     "arrival": np.sort(rng.integers(0, 50, n)).astype(float),
                     "cpu": cpu, "memory": cpu * (1 << 21)})


def play(env, policy, seed=None):
    """One episode; returns (observations, rewards, infos, terminated, truncated)."""
    obs, info = env.reset(seed=seed)
    seen, rewards, infos = [obs], [], [info]
    while True:
        obs, r, term, trunc, info = env.step(policy(obs, info))
        seen.append(obs)
        rewards.append(r)
        infos.append(info)
        if term or trunc:
            return seen, rewards, infos, term, trunc


def default_agent(obs, info):
    return info["default_action"]


def first_feasible(obs, info):
    return int(np.flatnonzero(obs["action_mask"])[0])


def test_check_env_and_registration():
    env = SchedulingEnv(nodes(4), churn(60, seed=2), backend="numpy", seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env)
    env.close()
    made = gym.make(ENV_ID, cluster=nodes(4), trace=churn(30, seed=2), backend="numpy")
    obs, info = made.reset(seed=1)
    assert obs in made.observation_space and info["pod"] is not None
    made.close()
    assert ts.SchedulingEnv is SchedulingEnv


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_default_agent_reproduces_simulation_run(backend):
    # churn has priorities: preemption and nominated pods happen on the way
    got = []
    env = SchedulingEnv(nodes(4), churn(200, seed=2), backend=backend, interval=20,
                        setup=lambda sim: sim.on("*", got.append))
    _, rewards, infos, term, trunc = play(env, default_agent, seed=5)
    assert term and not trunc and not any(i.get("invalid_action") for i in infos)
    assert all(i["chosen_node"] == i["chosen_default_node"] for i in infos[1:])
    assert env.simulation.summary()["preemptions"] > 0
    env.close()

    def plain(batch):
        sim = Simulation(nodes(4), backend=backend, seed=5, interval=20, batch=batch)
        sim.submit(churn(200, seed=2))
        events = []
        sim.on("*", events.append)
        sim.run()
        return events, sim

    events, _ = plain(False)
    assert got == events                     # every event, in order, at the same times
    assert len(rewards) == sum(e["event"] == "Bound" for e in events)
    bound = [(e["pod"], e["node"], e["time"]) for e in got if e["event"] == "Bound"]
    events, _ = plain(True)                  # compiled runs place the same way
    assert bound == [(e["pod"], e["node"], e["time"]) for e in events if e["event"] == "Bound"]


def test_action_mask_is_explains_feasible_set():
    objs = nodes(5) + [node_dict("tiny", cpu="500m", memory="1Gi")]
    env = SchedulingEnv(objs, steady(30), backend="numpy", max_nodes=8)
    obs, info = env.reset(seed=2)
    checked = 0
    while info["pod"] is not None:
        state = env.simulation.cluster.state
        rec = explain_pod(env.simulation.cluster, env.pending_pod, backend="numpy")
        want = np.zeros(8, np.int8)
        want[[state.node_rows[n] for n in rec["feasible"]]] = 1
        np.testing.assert_array_equal(obs["action_mask"], want)
        assert obs["action_mask"][info["default_action"]] == 1
        assert state.node_name(info["default_action"]) == info["default_node"]
        # scores: explain's totals over the best one
        best = max(rec["total"].values())
        for name, t in rec["total"].items():
            assert obs["scores"][state.node_rows[name]] == pytest.approx(t / best)
        assert not obs["nodes"][6:].any()                 # padded rows
        checked += 1
        obs, _, _, _, info = env.step(first_feasible(obs, info))
    assert checked == 30
    env.close()


def test_observation_features():
    objs = [node_dict("a", cpu="2", memory="4Gi"), node_dict("b", cpu="4", memory="8Gi")]
    pods = [pod_dict("p", cpu="1", memory="2Gi"), pod_dict("q", cpu="1", memory="1Gi")]
    env = SchedulingEnv(objs, pods, backend="numpy", max_nodes=3)
    obs, info = env.reset()
    assert obs["nodes"].dtype == np.float32 and obs["nodes"].shape == (3, 4)
    np.testing.assert_allclose(obs["nodes"][:2], [[0.5, 0.5, 0.5, 0.5], [1, 1, 1, 1]])
    np.testing.assert_allclose(obs["pod"], [0.25, 0.25])
    obs, _, _, _, info = env.step(0)                      # p on a
    assert info["chosen_node"] == "a" and info["pod"] == "default/q"
    np.testing.assert_allclose(obs["nodes"][0], [0.5, 0.5, 0.25, 0.25])
    np.testing.assert_allclose(obs["pod"], [0.25, 0.125])
    env.close()


def test_invalid_action_applies_the_default_with_a_penalty():
    objs = [node_dict("small", cpu="1", memory="4Gi"), node_dict("big", cpu="4", memory="8Gi")]
    pods = [pod_dict("p", cpu="2"), pod_dict("q", cpu="2")]
    env = SchedulingEnv(objs, pods, backend="numpy", max_nodes=4, invalid_action_penalty=2.5)
    obs, info = env.reset()
    np.testing.assert_array_equal(obs["action_mask"], [0, 1, 0, 0])
    obs, r, _, _, info = env.step(0)                      # does not fit on small
    assert info["invalid_action"] and info["chosen_node"] == "big" == info["chosen_default_node"]
    assert r == pytest.approx(env.allocation() - 2.5)      # allocation was 0 before
    before = env.allocation()
    obs, r2, term, _, info = env.step(3)                  # a padded row
    assert info["invalid_action"] and info["chosen_node"] == "big" and term
    assert r2 == pytest.approx(env.allocation() - before - 2.5)
    env.close()


def test_allocation_rewards_sum_to_the_final_allocation():
    env = SchedulingEnv(nodes(4), steady(40), backend="numpy")
    _, rewards, _, term, _ = play(env, first_feasible, seed=1)
    st = env.simulation.cluster.state
    rows = st.valid_rows()
    want = np.mean([st.requested[rows, c].sum() / st.allocatable[rows, c].sum()
                    for c in (st.resources.index["cpu"], st.resources.index["memory"])])
    assert term and want > 0.3
    assert sum(rewards) == pytest.approx(want) == pytest.approx(env.allocation())
    env.close()


def test_latency_rewards_are_pending_pod_seconds():
    trace = pa.table({"name": ["a", "b", "c", "d"], "arrival": [0.0, 0.0, 3.0, 4.0],
                      "duration": [10.0, 5.0, 2.0, 1.0], "cpu": [2000, 2000, 1000, 1000],
                      "memory": [1 << 30] * 4})
    events = []
    env = SchedulingEnv([node_dict("only", cpu="2", memory="8Gi")], trace, backend="numpy",
                        reward="latency", setup=lambda sim: sim.on("*", events.append))
    _, rewards, _, term, _ = play(env, default_agent)
    arrived = {e["pod"]: e["time"] for e in events if e["event"] == "Arrived"}
    waits = [e["time"] - arrived[e["pod"]] for e in events if e["event"] == "Bound"]
    assert term and len(waits) == 4 and sum(waits) > 0
    assert sum(rewards) == pytest.approx(-sum(waits))
    assert all(r <= 0 for r in rewards)
    env.close()
    # Simulation.run() goes on after its last drive bound pods that leave later
    sim = Simulation([node_dict("only", cpu="2", memory="8Gi")], backend="numpy")
    sim.submit(trace)
    s = sim.run()
    assert s["scheduled"] == s["departed"] == 4 and s["time"] == 17


def test_fragmentation_reward_from_a_metric():
    def partly_used(cluster):            # a user's fragmentation measure
        st = cluster.state
        rows = st.valid_rows()
        req, cap = st.requested[rows, 0], st.allocatable[rows, 0]
        return float(np.mean((req > 0) & (req < cap)))

    seen = []

    def spy(cluster):
        seen.append(partly_used(cluster))
        return seen[-1]

    env = SchedulingEnv(nodes(4), steady(40), backend="numpy", reward="fragmentation",
                        metrics={"frag": spy}, fragmentation="frag", interval=None)
    _, rewards, _, _, _ = play(env, first_feasible, seed=0)
    assert sum(rewards) == pytest.approx(seen[0] - partly_used(env.simulation.cluster))
    assert any(r != 0 for r in rewards)
    env.close()
    env = SchedulingEnv(nodes(2), steady(5), backend="numpy", reward="fragmentation",
                        fragmentation=partly_used)
    assert len(play(env, default_agent)[1]) == 5
    env.close()
    with pytest.raises(SimulationError, match="needs fragmentation="):
        SchedulingEnv(nodes(2), steady(5), backend="numpy", reward="fragmentation")
    with pytest.raises(SimulationError, match="not one of metrics"):
        SchedulingEnv(nodes(2), steady(5), reward="fragmentation", fragmentation="gpu_frag_pct")


def test_callable_reward():
    calls = []

    def running(sim, info):
        calls.append(info["chosen_pod"])
        return float(len(sim.cluster.state.pods))

    env = SchedulingEnv(nodes(2), steady(6), backend="numpy", reward=running)
    _, rewards, infos, _, _ = play(env, default_agent)
    assert rewards == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert calls == [i["chosen_pod"] for i in infos[1:]]
    env.close()


def test_reset_seed_determinism_and_no_thread_left():
    env = SchedulingEnv(nodes(4), churn(120, seed=4), backend="numpy", interval=None)
    a = play(env, first_feasible, seed=7)
    b = play(env, first_feasible, seed=7)
    for x, y in zip(a[0], b[0]):
        for k in x:
            np.testing.assert_array_equal(x[k], y[k])
    assert a[1:] == b[1:]
    # a reset() without a seed draws the next one from the seeded generator
    env.reset(seed=7)
    c = play(env, default_agent)
    env.reset(seed=7)
    d = play(env, default_agent)
    assert c[1:] == d[1:]
    before = threading.active_count()
    for _ in range(3):                       # abandon episodes mid-way
        env.reset()
        env.step(0)
    assert threading.active_count() == before + 1
    env.close()
    assert threading.active_count() == before


def test_truncation_and_ends():
    env = SchedulingEnv(nodes(4), churn(120, seed=4), backend="numpy", max_steps=3)
    _, rewards, _, term, trunc = play(env, default_agent)
    assert len(rewards) == 3 and trunc and not term
    env.close()
    env = SchedulingEnv(nodes(4), churn(120, seed=4), backend="numpy", max_time=50)
    _, _, infos, term, trunc = play(env, default_agent)
    assert trunc and not term and env.simulation.now == 50 and infos[-1]["time"] == 50
    env.close()
    # nothing fits: the episode ends before its first decision
    env = SchedulingEnv(nodes(2), [pod_dict("huge", cpu="64")], backend="numpy")
    obs, info = env.reset()
    assert info["pod"] is None and not obs["action_mask"].any()
    _, r, term, trunc, _ = env.step(0)
    assert term and r == 0.0 and env.simulation.summary()["failed_attempts"] >= 1
    env.close()


def test_inputs_checked():
    with pytest.raises(SimulationError, match="factory"):
        SchedulingEnv(build_cluster(nodes(2)), steady(3))
    with pytest.raises(SimulationError, match="features"):
        SchedulingEnv(nodes(2), steady(3), features=("cpu", "nvidia.com/gpu"))
    with pytest.raises(SimulationError, match="reward must be"):
        SchedulingEnv(nodes(2), steady(3), reward="throughput")
    # a factory and a trace callable are called per episode
    made = []
    env = SchedulingEnv(lambda: build_cluster(nodes(3)), lambda rng: made.append(rng) or
                        steady(5), backend="numpy")
    play(env, default_agent)
    play(env, default_agent)
    assert len(made) == 2
    env.close()


def test_missing_gymnasium_is_one_line():
    code = ("import sys; sys.modules['gymnasium'] = None\n"
            "import tensorsched as ts\n"
            "try:\n    ts.SchedulingEnv\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("tensorsched.SchedulingEnv needs gymnasium: "
                                  "pip install 'tensorsched[gym]'")


def test_simulation_errors_surface_in_step():
    # a scenario step that fails at 20 s (the node it deletes is gone by
    # then): the error comes out of the step that ran into it, and the
    # episode is over (no hang on a dead thread)
    env = SchedulingEnv(nodes(2), steady(20), backend="numpy",
                        setup=lambda sim: (sim.delete_node("n1", at=10),
                                           sim.delete_node("n1", at=20)))
    obs, info = env.reset()
    with pytest.raises(SimulationError, match="n1"):
        while True:
            obs, *_, info = env.step(info["default_action"])
    _, r, term, _, _ = env.step(0)
    assert term and r == 0.0
    env.reset()                                  # a fresh episode runs into it again
    env.close()
    _, _, term, _, _ = env.step(0)
    assert term


@pytest.mark.timeout(30)
def test_endless_generators_are_refused_not_listed(monkeypatch):
    # each was listed until the machine ran out of memory; now at most the
    # bound plus one item is read, then refused naming the argument (the
    # objects' bound of ten million made a thousand here: listing ten
    # million takes a second)
    import itertools

    from tensorsched.framework.arguments import MAX_LISTED_PODS
    from tensorsched.framework.simulation import gym_env
    monkeypatch.setattr(gym_env, "MAX_OBJECTS", 1000)
    with pytest.raises(ArgumentError, match="^SchedulingEnv: cluster: at most 1,000 "
                       "object dicts"):
        SchedulingEnv(itertools.repeat(node_dict("n0")), steady(3), backend="numpy")
    with pytest.raises(ArgumentError, match=f"^SchedulingEnv: trace: at most "
                       f"{MAX_LISTED_PODS:,} Pod dicts"):
        SchedulingEnv(nodes(2), itertools.repeat(pod_dict("p")), backend="numpy")
    with pytest.raises(ArgumentError, match="^SchedulingEnv: templates: at most 1,000,000 pod "
                       "specs, got more"):
        SchedulingEnv(nodes(2), steady(3), templates=itertools.repeat({}), backend="numpy")
    # what a factory or a trace function returns, per episode
    with pytest.raises(ArgumentError, match=r"^SchedulingEnv: cluster\(\): at most "):
        SchedulingEnv(lambda: itertools.repeat(node_dict("n0")), steady(3), backend="numpy")
    env = SchedulingEnv(nodes(2), lambda rng: itertools.repeat(pod_dict("p")),
                        backend="numpy")
    with pytest.raises(ArgumentError, match=r"^SchedulingEnv: trace\(rng\): at most "):
        env.reset()
    env.close()


def test_dicts_changed_after_construction_change_no_episode():
    # the environment keeps what it was given: a script that reuses (or
    # changes) its dicts between resets does not change later episodes
    objects = nodes(3)
    pods = [pod_dict(f"w{i}", cpu="1500m") for i in range(6)]
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1",
              "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler"}]}
    env = SchedulingEnv(objects, pods, config=config, backend="numpy", interval=None)
    before = play(env, first_feasible, seed=5)
    for o in objects:
        o["status"]["allocatable"]["cpu"] = "64"
        o["status"]["capacity"]["cpu"] = "64"
    objects.append(node_dict("extra", cpu="64", memory="64Gi"))
    for p in pods:
        p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "10m"
    pods.append(pod_dict("late"))
    config["profiles"][0]["schedulerName"] = "other"
    for _ in range(2):
        after = play(env, first_feasible, seed=5)
        assert len(after[0]) == len(before[0])
        for x, y in zip(before[0], after[0]):
            for k in x:
                np.testing.assert_array_equal(x[k], y[k])
        assert after[1:] == before[1:]
    env.close()
