"""A Simulation run in steps (``run(until=t)`` then ``run()``) reaches what
one ``run()`` reaches: the end time, every event and the time series,
under a termination grace too.  The hand-built case: a pending pod that
can never fit is deleted at its departure time, which is a step's end,
while it backs off; the scheduler paused its run heading to that backoff's
expiry (28 s) just before the deletion, and a deleted pending pod leaves
no timer, so both runs end at 24 s."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorsched as ts
from tensorsched.generators.clusters import node_dict

HEADER = "name,arrival,departure,duration,cpu,memory,priority"


def _simulation(path, n_nodes: int, grace: float, interval: float) -> ts.Simulation:
    nodes = [node_dict(f"n{i}", cpu="2", memory="4Gi") for i in range(n_nodes)]
    sim = ts.Simulation(nodes, termination_grace_seconds=grace, interval=interval)
    sim.submit(ts.read_trace(str(path)))
    return sim


def _outcome(path, n_nodes: int, grace: float, interval: float, stops: list) -> tuple:
    """(summary, events as (time, event, pod, node), time series rows) of
    a Simulation run to each of ``stops`` in turn, then to its end."""
    sim = _simulation(path, n_nodes, grace, interval)
    events: list = []
    sim.on("*", lambda e: events.append((e["time"], e["event"], e["pod"], e.get("node"))))
    for t in stops:
        if t > sim.now:
            sim.run(until=t)
    summary = sim.run()
    return summary, events, sim.timeseries().to_pylist()


def _write(path, lows, highs) -> None:
    """``lows``: (name, arrival, departure, duration, cpu, priority);
    ``highs``: (name, arrival, cpu) at priority 1000."""
    lines = [HEADER]
    lines += [f"{n},{a},{d},{du},{c},256Mi,{p}" for n, a, d, du, c, p in lows]
    lines += [f"{n},{a},,,{c},256Mi,1000" for n, a, c in highs]
    path.write_text("\n".join(lines) + "\n")


def test_a_pending_pod_deleted_at_a_step_end_leaves_no_wakeup(tmp_path):
    """l5 (3 cpu) never fits a 2-cpu node and is deleted at 24, the step's
    end, while backing off until 28; 24 s in steps as at once, grace 10."""
    path = tmp_path / "trace.csv"
    _write(path, [("l0", 2, "", 20, 2, 10), ("l1", 2, 9, "", 1, 0), ("l2", 2, 12, "", 1, 0),
                  ("l3", 0, "", 24, 2, 10), ("l4", 1, "", 11, 1, 0), ("l5", 3, 24, "", 3, 0)],
           [("h0", 10, 2), ("h1", 10, 1), ("h2", 14, 2)])
    whole = _outcome(path, 3, 10.0, 4.0, [])
    steps = _outcome(path, 3, 10.0, 4.0, [24.0])
    assert whole[0]["time"] == 24.0
    assert steps[0]["time"] == 24.0
    assert steps == whole
    assert whole[0]["preemptions"] > 0 and whole[0]["deleted"] == 1


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 3), n_low=st.integers(2, 7),
       n_high=st.integers(0, 3), grace=st.sampled_from([0.0, 3.0, 10.0]),
       interval=st.sampled_from([2.0, 5.0]), n_stops=st.integers(1, 3))
def test_run_in_steps_equals_one_run(tmp_path, seed, n_nodes, n_low, n_high, grace, interval,
                                     n_stops):
    """Random small traces on 2-cpu nodes: pods staying a duration or until
    a departure time (some never fitting, some preempted by priority-1000
    pods); steps ending at trace times or between: the same end,
    events and time series as one run."""
    rng = np.random.default_rng(seed)
    lows, times = [], []
    for k in range(n_low):
        a = int(rng.integers(0, 6))
        stay = int(rng.integers(1, 25))
        cpu = int(rng.choice([0, 1, 2, 3]))
        if rng.random() < 0.5:
            lows.append((f"l{k}", a, a + stay, "", cpu, int(rng.choice([0, 10]))))
            times.append(a + stay)
        else:
            lows.append((f"l{k}", a, "", stay, cpu, int(rng.choice([0, 10]))))
    highs = [(f"h{k}", int(rng.integers(1, 16)), int(rng.choice([1, 2])))
             for k in range(n_high)]
    # (a stop past the last trace time would hold a step's clock past the end)
    times += [h[1] for h in highs] + [lo[1] for lo in lows]
    times.append(int(rng.integers(0, max(times) + 1)))
    stops = sorted(float(rng.choice(times)) for _ in range(n_stops))
    path = tmp_path / "trace.csv"
    _write(path, lows, highs)
    assert _outcome(path, n_nodes, grace, interval, stops) == \
        _outcome(path, n_nodes, grace, interval, [])
