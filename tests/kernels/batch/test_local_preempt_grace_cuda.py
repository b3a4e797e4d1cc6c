"""The node-local trace forms with DefaultPreemption and a termination
grace above 0 as CUDA kernels (``local_preempt_cuda``,
``local_preempt_events_cuda``, under the simulator) give their CPU twins'
answers: the tiny calls of ``test_local_preempt_cuda`` and
``test_local_preempt_events_cuda`` under a grace of 3 s, where victims
terminate (and with node events, leave with their nodes too)."""

import numpy as np
import pytest
from support.backends import needs_cuda
from test_local_preempt_cuda import _preempt_of
from test_local_preempt_events_cuda import _calls_of

from tensorsched.kernels.batch.local_preempt import run_local_preempt
from tensorsched.kernels.batch.local_preempt_events import run_local_preempt_events

pytestmark = [pytest.mark.cudasim, needs_cuda,
              pytest.mark.filterwarnings("error::RuntimeWarning")]


def test_cuda_graceful_preemption_equals_the_twin(tmp_path, monkeypatch):
    from tensorsched.kernels.batch.local_preempt_cuda import run_local_preempt_cuda
    p = _preempt_of(tmp_path, monkeypatch)._replace(grace=3.0)
    twin, victim, at = run_local_preempt(p)
    now, _, _ = run_local_preempt(p._replace(grace=0.0))
    # victims preempted, and the grace changed the run
    assert victim.sum() > 0 and not np.array_equal(twin.log_t, now.log_t)
    dev, dev_victim, dev_at = run_local_preempt_cuda(p)
    for a, b in zip(twin, dev):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(victim, dev_victim)
    # the first evictions' times: a victim's only (NaN elsewhere)
    assert (np.isnan(at) == (victim == 0)).all()
    np.testing.assert_array_equal(at, dev_at)


def test_cuda_graceful_preemption_with_node_events_equals_the_twin(tmp_path, monkeypatch):
    from tensorsched.kernels.batch.local_preempt_events_cuda import (
        run_local_preempt_events_cuda,
    )
    pe = _calls_of(tmp_path, monkeypatch)
    pe = pe._replace(preempt=pe.preempt._replace(grace=3.0))
    twin, why, victim, at = run_local_preempt_events(pe)
    assert victim.sum() > 0 and (why > 0).sum() > 0
    assert (np.isnan(at) == (victim == 0)).all()
    dev, dev_why, dev_victim, dev_at = run_local_preempt_events_cuda(pe)
    for a, b in zip(twin, dev):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(why, dev_why)
    np.testing.assert_array_equal(victim, dev_victim)
    np.testing.assert_array_equal(at, dev_at)
