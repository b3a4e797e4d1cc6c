"""``ts.simulate_batch`` on openb nodes with a scenario, on the device
(``kernels.batch.openb_events_cuda`` under the simulator: a block per
run, the fragmentation each change logs summed by the block after thread
0's step): on random clusters, traces with departures and random node
and Pod steps, under all six policies, every run's outputs are the CPU
twin's bit for bit (the change log's fragmentation too) and its
placements, GPU indices, binding times, evictions, removals and
deletions are its own Simulation's."""
import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda
from test_facade_openb_scenario import POLICIES, _batched, _simulated
from test_sweep_batch import _write, _write_generic
from test_sweep_openb_events import _random_scenario

import tensorsched as ts
from tensorsched.experiments import simulate_run as run
from tensorsched.framework.simulation.scenario import ScenarioError, load_scenario
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import trace as T
from tensorsched.topology.openb.batch_sim import BatchProfileError


def _same(twin, dev) -> None:
    """Every output field of two runs equal (arrays bit for bit)."""
    for f in dataclasses.fields(twin):
        if f.name == "seconds":
            continue
        x, y = getattr(twin, f.name), getattr(dev, f.name)
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=f"{twin.policy}: {f.name}")
        else:
            assert x == y or (x != x and y != y), (twin.policy, f.name)


@pytest.mark.cudasim
@pytest.mark.timeout(900)       # (a simulated block per run, a Simulation per run)
@needs_cuda
@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(2, 14),
       generic=st.booleans())
def test_device_runs_are_the_twins_and_each_simulations(tmp_path, seed, n_nodes, n_pods,
                                                        generic):
    """Random node steps (adds, cordons, drains, removals) and, on odd
    seeds, Pod creates and deletes; the six policies (GpuShareScore
    alone), one seed: the device's runs equal the twin's field by field
    and each Simulation's outcome."""
    nodes, pods = (_write_generic if generic else _write)(tmp_path, seed, n_nodes, n_pods)
    trace = run.read_trace_file(pods)
    if not B.trace_workload(trace).pods.gpu_total.any():
        return                                  # no GPU ask: the batched engine's input check
    scenario = _random_scenario(np.random.default_rng(seed), n_nodes, pods=seed % 2 == 1)
    configs = [p if p == "Random" else T.openb_config(p) for p in POLICIES]
    seeds = [seed % 5]
    try:
        twin, dev = (ts.simulate_batch(nodes, [pods], configs, seeds, backend=b,
                                       scenario=scenario, workers=1)
                     for b in ("numba", "cuda"))
    except (BatchProfileError, ScenarioError):
        return                                  # (the generator's rare refusals)
    assert len(dev) == len(POLICIES)         # (a scenario may leave no node to bind on)
    sc = load_scenario(scenario)
    for x, y in zip(twin, dev):
        _same(x, y)
        assert _batched(y) == _simulated(nodes, trace, y.policy, y.seed, sc), y.policy
