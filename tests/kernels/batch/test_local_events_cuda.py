"""The node-local trace form with timed node events as a CUDA kernel
(``kernels/batch/local_trace_cuda.run_local_events_cuda``, under the
simulator) gives the CPU twin's answers (``local_events.run_local_events``):
tiny random clusters, traces and scenarios (cordon, uncordon, drain,
addNodes, node deletes; pod creates and deletes), several configurations
in one call."""

from pathlib import Path

import numpy as np
import pytest
import yaml
from support.backends import needs_cuda
from support.launch_guard import device_arrays_only  # noqa: F401 (autouse)

from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep_local as SL
from tensorsched.framework.simulation.scenario import load_scenario, parse_scenario
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels.batch.local_events import EV_KEEP, EV_POD_DELETE, run_local_events

from support.local_scenarios import write_scenario
from support.local_traces import write_inputs

pytestmark = [pytest.mark.cudasim, needs_cuda,
              pytest.mark.filterwarnings("error::RuntimeWarning")]


# pod steps: creates (one leaving after a duration, a DaemonSet's the
# drains leave), deletes of a created pod and of the manifests' bound pod,
# the same time as node steps
POD_STEPS = [{"at": 1, "create": pod_dict("s0", cpu="300m", memory="512Mi"), "duration": 5},
             {"at": 2, "create": pod_dict("s1", cpu="1", memory="512Mi")},
             {"at": 3, "cordon": "n1"},
             {"at": 30, "delete": {"kind": "Pod", "name": "s1"}},
             {"at": 30, "delete": {"kind": "Pod", "name": "b0"}},
             {"at": 30, "uncordon": "n1"},
             {"at": 31, "addNodes": {"template": node_dict("x", cpu="2", memory="4Gi")}},
             {"at": 32, "create": {**pod_dict("ds", cpu="100m", memory="64Mi"), "metadata": {
                 "name": "ds", "ownerReferences": [{
                     "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "a", "uid": "u",
                     "controller": True}]}}},
             {"at": 40, "drain": "x-0"}, {"at": 40, "drain": "n0"}]


def _events_of(tmp_path, seed, monkeypatch, pods=False, n_nodes=3):
    """The LocalEvents ``sweep_local.run_setups`` hands the CPU twin;
    ``pods``: the scenario ``POD_STEPS``; ``n_nodes`` the cluster's nodes."""
    cluster, trace, configs = write_inputs(tmp_path, seed, n_nodes, 8, 1, durations=True)
    if pods:
        sc = parse_scenario({"steps": POD_STEPS})
    else:
        sc = load_scenario(write_scenario(tmp_path, seed, n_nodes, 5))
    objs = list(yaml.safe_load_all(Path(cluster).read_text()))
    tr = run.read_trace_file(trace)
    setups = [SL.trace_setup(objs, yaml.safe_load(Path(c).read_text()), tr, sc)
              for c in configs[:2]]
    calls = []
    monkeypatch.setattr(SL, "run_local_events", lambda ev, threads=None: calls.append(ev) or
                        run_local_events(ev, threads))
    SL.run_setups(setups, [[0, 1], [2]])
    return calls[0]


# seed 11: more live nodes than the simulator's threads (a block's
# threads stride over the live rows)
@pytest.mark.parametrize("seed, pods, n_nodes", [(4, False, 3), (11, False, 20), (5, True, 3)])
def test_cuda_events_equal_the_twin(tmp_path, seed, pods, n_nodes, monkeypatch):
    from tensorsched.kernels.batch.local_trace_cuda import run_local_events_cuda
    ev = _events_of(tmp_path, seed, monkeypatch, pods, n_nodes)
    assert ev.ev_t.shape[0] > 0
    kinds = ev.ev_kind[:ev.ev_ptr[1]]
    assert (kinds == EV_POD_DELETE).sum() == (kinds == EV_KEEP).sum() == (2 if pods else 0)
    twin, why = run_local_events(ev)
    dev, dev_why = run_local_events_cuda(ev)
    for a, b in zip(twin, dev):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(why, dev_why)
