"""The node-local trace form with DefaultPreemption as a CUDA kernel
(``kernels/batch/local_preempt_cuda.run_local_preempt_cuda``, under the
simulator) gives the CPU twin's answers (``local_preempt.
run_local_preempt``): a tiny random cluster and trace with priorities
that preempt (queued and bound pods), two configurations and seeds in
one call."""

from pathlib import Path

import numpy as np
import pytest
import yaml
from support.backends import needs_cuda
from support.launch_guard import device_arrays_only  # noqa: F401 (autouse)
from support.preempt_inputs import write_inputs

from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep_local as SL
from tensorsched.kernels.batch.local_preempt import run_local_preempt

pytestmark = [pytest.mark.cudasim, needs_cuda,
              pytest.mark.filterwarnings("error::RuntimeWarning")]


def _preempt_of(tmp_path, monkeypatch):
    """The LocalPreempt ``sweep_local.run_setups`` hands the CPU twin."""
    cluster, trace, configs = write_inputs(tmp_path, 3, 2, 10, 2)
    objs = list(yaml.safe_load_all(Path(cluster).read_text()))
    tr = run.read_trace_file(trace)
    setups = [SL.trace_setup(objs, yaml.safe_load(Path(c).read_text()), tr) for c in configs[:2]]
    calls = []
    monkeypatch.setattr(SL, "run_local_preempt", lambda p, threads=None: calls.append(p) or
                        run_local_preempt(p, threads))
    SL.run_setups(setups, [[0, 1], [2]])
    return calls[0]


def test_cuda_preemption_equals_the_twin(tmp_path, monkeypatch):
    from tensorsched.kernels.batch.local_preempt_cuda import run_local_preempt_cuda
    p = _preempt_of(tmp_path, monkeypatch)
    twin, victim, at = run_local_preempt(p)
    bound = np.zeros(victim.shape[0], bool)
    for b in range(p.vic_ptr.shape[0] - 1):
        bound[p.vic_ptr[b] + p.trace.batch.pod_ptr[b + 1] - p.trace.batch.pod_ptr[b]:
              p.vic_ptr[b + 1]] = True
    # the queue's pods and the manifests' bound pods are preempted
    assert victim[~bound].sum() > 0 and victim[bound].sum() > 0
    dev, dev_victim, dev_at = run_local_preempt_cuda(p)
    for a, b in zip(twin, dev):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(victim, dev_victim)
    assert (np.isnan(at) == (victim == 0)).all()
    np.testing.assert_array_equal(at, dev_at)
