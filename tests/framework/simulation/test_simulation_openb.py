"""The paper's experiment through the framework (``simulate_replay``: a
GpuShareFit + GpuShareScore(policy) profile, arrivals only, tune 1.3) gives
``replay``'s curves.  On slices of the trace here; the full traces are in
bench/results/simulate.json (``replay_equal``)."""
import numpy as np
import pytest
from support.openb import NODES, read_openb_slice

from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb.trace import (
    openb_config,
    openb_node_objects,
    read_openb_trace,
    simulate_replay,
)
from tensorsched.topology.sim_metrics import trace_shapes, typical_shapes


@pytest.mark.parametrize("trace, policy, seed", [("default", "FGD", 42),
                                                 ("multigpu20", "BestFit", 3),
                                                 ("default", "DotProd", 7),
                                                 ("gpuspec10", "GpuPacking", 11),
                                                 ("default", "GpuClustering", 5)])
def test_simulation_gives_replays_curves(tmp_path, trace, policy, seed):
    nodes, pods = read_openb_slice(tmp_path, trace, 120, 600)
    a = R.replay(nodes, pods, policy, seed=seed)
    b = simulate_replay(nodes, pods, policy, seed=seed)
    assert a.pods == b.pods and a.scheduled == b.scheduled
    for col in (100, 130):
        assert abs(a.alloc[col] - b.alloc[col]) <= 0.5, (col, a.alloc[col], b.alloc[col])
    np.testing.assert_allclose(a.alloc, b.alloc, atol=0.5, equal_nan=True)
    np.testing.assert_allclose(a.frag_amount, b.frag_amount, atol=0.5, equal_nan=True)


def test_random_policy_matches_replay_in_the_mean(tmp_path):
    """Random draws its node from the scheduler's seeded stream, not
    replay's, so single runs differ; the means over seeds agree."""
    nodes, pods = read_openb_slice(tmp_path, "default", 120, 600)
    a = np.array([[R.replay(nodes, pods, "Random", seed=s).alloc[c] for c in (100, 130)]
                  for s in range(42, 52)])
    b = np.array([[simulate_replay(nodes, pods, "Random", seed=s).alloc[c] for c in (100, 130)]
                  for s in range(42, 52)])
    assert np.abs(a.mean(axis=0) - b.mean(axis=0)).max() <= 1.0


def test_where_a_run_pauses_changes_nothing(tmp_path):
    """The same trace with samples every hour, every day or never, run in
    one call or in 100 steps, schedules the same pods on the same nodes
    (a small slice where the scheduler stalls between arrivals)."""
    out = []
    for src, dst, n in ((NODES, tmp_path / "n.csv", 10),
                        ("data/openb/csv/openb_pod_list_default.csv", tmp_path / "p.csv", 400)):
        with open(src) as f:
            dst.write_text("".join(f.readlines()[:n + 1]))
        out.append(str(dst))
    trace = read_openb_trace(out[1])
    cfg = openb_config("FGD", typical_shapes(trace_shapes(trace)))
    runs = []
    for interval, steps in ((None, 1), (3600.0, 1), (86400.0, 1), (None, 100)):
        sim = Simulation(openb_node_objects(out[0]), cfg, "numba", 1, interval=interval)
        sim.submit(read_openb_trace(out[1]))
        bound = []
        sim.on("Bound", lambda e, bound=bound: bound.append((e["time"], e["pod"], e["node"])))
        if steps == 1:
            sim.run()
        else:
            end = float(trace.arrival.max()) + 1
            for k in range(1, steps + 1):
                sim.run(until=end * k / steps)
            sim.run()
        s = sim.summary()
        runs.append((bound, s["scheduled"], s["failed_attempts"], s["time"]))
    assert all(r == runs[0] for r in runs[1:])
