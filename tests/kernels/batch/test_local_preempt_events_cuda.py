"""The node-local trace form with DefaultPreemption and node events as a
CUDA kernel (``kernels/batch/local_preempt_events_cuda``, under the
simulator) gives the CPU twin's answers (``local_preempt_events.
run_local_preempt_events``): a tiny random cluster with priorities and
bound pods, a scenario that drains, deletes, adds and cordons nodes and
deletes a bound pod, two configurations and seeds in one call, where pods
preempt and leave with their nodes."""

from pathlib import Path

import numpy as np
import pytest
import yaml
from support.backends import needs_cuda
from support.launch_guard import device_arrays_only  # noqa: F401 (autouse)
from support.preempt_inputs import write_inputs

from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep_local as SL
from tensorsched.framework.simulation.scenario import parse_scenario
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels.batch.local_preempt_events import run_local_preempt_events

pytestmark = [pytest.mark.cudasim, needs_cuda,
              pytest.mark.filterwarnings("error::RuntimeWarning")]

STEPS = [{"at": 3, "drain": "n0"}, {"at": 4, "create": node_dict("c", cpu="2", memory="4Gi")},
         {"at": 30, "cordon": "n1"}, {"at": 31, "delete": {"kind": "Pod", "name": "top"}},
         {"at": 60, "delete": {"kind": "Node", "name": "n1"}}, {"at": 61, "uncordon": "n0"}]


def _calls_of(tmp_path, monkeypatch):
    """The LocalPreemptEvents ``sweep_local.run_setups`` hands the CPU twin."""
    cluster, trace, configs = write_inputs(tmp_path, 0, 2, 10, 2)
    objs = list(yaml.safe_load_all(Path(cluster).read_text()))
    top = pod_dict("top", cpu="500m", memory="256Mi", priority=5000)
    top["spec"]["nodeName"] = "n1"
    objs.append(top)
    tr = run.read_trace_file(trace)
    sc = parse_scenario({"steps": STEPS})
    setups = [SL.trace_setup(objs, yaml.safe_load(Path(c).read_text()), tr, sc)
              for c in configs[:2]]
    calls = []
    monkeypatch.setattr(SL, "run_local_preempt_events", lambda pe, threads=None:
                        calls.append(pe) or run_local_preempt_events(pe, threads))
    SL.run_setups(setups, [[0, 1], [2]])
    return calls[0]


def test_cuda_preemption_with_node_events_equals_the_twin(tmp_path, monkeypatch):
    from tensorsched.kernels.batch.local_preempt_events_cuda import (
        run_local_preempt_events_cuda,
    )
    pe = _calls_of(tmp_path, monkeypatch)
    twin, why, victim, at = run_local_preempt_events(pe)
    assert victim.sum() > 0 and (why > 0).sum() > 0     # both happen
    dev, dev_why, dev_victim, dev_at = run_local_preempt_events_cuda(pe)
    for a, b in zip(twin, dev):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(why, dev_why)
    np.testing.assert_array_equal(victim, dev_victim)
    np.testing.assert_array_equal(at, dev_at)
