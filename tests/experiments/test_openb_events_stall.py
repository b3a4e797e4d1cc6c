"""The Scheduler's stall stop in the node-event engine (``ts.simulate_batch``
on openb nodes with a scenario, ``kernels/batch/_openb_events`` over
``_queue.q_next_steps``): pods that never fit and keep retrying each other
(``max_unsched`` below the longest backoff) stop as the Simulation does,
then bind when a node added later makes room; placements, GPUs and times
equal the Simulation's."""
import functools

import pytest
import test_facade_openb_scenario as facade_tests
from test_sweep_batch import HEADER
from test_sweep_openb_events import _node

import tensorsched as ts
from tensorsched.experiments import simulate_run as run
from tensorsched.framework.simulation.scenario import load_scenario
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.topology.openb import trace as T


@pytest.mark.timeout(240)           # (a cold compile included; warm: about a second)
@pytest.mark.parametrize("added_at", [40.0, 100.0])
def test_stalled_pods_stop_then_bind_on_an_added_node(tmp_path, monkeypatch, added_at):
    """One T4 taken for good at 2 by p0; p1..p5 never fit and retry each
    other (max_unsched 4 s, backoff up to 10 s: before the stall stop the
    engine never returned); two T4s added at ``added_at`` (during the
    retries, or long after the stall stop at 57) take two of them."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,16000,65536,1,T4\n")
    arrivals = [2, 7, 9, 11, 14, 17]
    deletions = {2: 29, 5: 25}
    (tmp_path / "p.csv").write_text(HEADER + "".join(
        f"p{j},1000,1024,1,1000,,LS,Running,{t},{deletions.get(j, '')},{t}\n"
        for j, t in enumerate(arrivals)))
    nodes, pods = str(tmp_path / "n.csv"), str(tmp_path / "p.csv")
    scenario = {"steps": [{"at": added_at, "create": _node("x0", 2)}]}
    monkeypatch.setattr(facade_tests, "Simulation", functools.partial(
        Simulation, pod_max_in_unschedulable_seconds=4.0))
    trace = run.read_trace_file(pods)
    (res,) = ts.simulate_batch(nodes, [pods], [T.openb_config("FGD")], [0],
                               scenario=scenario, workers=1, max_unsched=4.0)
    got = facade_tests._batched(res)
    assert got == facade_tests._simulated(nodes, trace, "FGD", 0, load_scenario(scenario))
    assert len(got["bound"]) == 3 and {got["bound"][k][0] for k in got["bound"]} == {"n0", "x0"}
