"""``evaluator.Rotation``: the visiting order as a rotation of its base,
not built.  It reads as ``np.roll(base, -offset)`` row by row and whole
(any base, offset, position); the cuda backend's device searches get one
(no [N] copy a preemptor) and give the numba backend's answers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda
from test_device_preemption import _run
from test_evaluator import _node, _pod

from tensorsched.framework.preemption import evaluator as EV
from tensorsched.kernels.victims.device import VisitBase


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 10_000), max_size=12), st.integers(0, 40))
def test_a_rotation_reads_as_the_rolled_order(base, offset):
    base = np.array(base, np.int64)
    m = base.shape[0]
    want = np.roll(base, -(offset % m)) if m else base
    rot = EV.Rotation(VisitBase(base, offset % m if m else 0))
    assert len(rot) == m and rot.shape == (m,)
    assert [int(rot[j]) for j in range(m)] == want.tolist()
    assert [int(rot[j]) for j in range(-m, 0)] == want.tolist()
    got = np.asarray(rot)
    assert got.dtype == np.int64 and got.tolist() == want.tolist()
    assert got is not base                  # a copy: the base stays the caller's
    assert rot[1:3].tolist() == want[1:3].tolist()
    with pytest.raises(IndexError):
        rot[m]


@pytest.mark.cudasim
@needs_cuda
def test_the_device_search_gets_the_rotation_and_answers_as_numba(monkeypatch):
    """Several preemptors on the cuda backend: each device search gets a
    ``Rotation`` (the old path built the rolled array), and the bindings,
    victims and messages are the numba backend's."""
    seen = []
    real = EV._device_visit

    def spy(fw, state, q, prio, pods, scan, *a, **k):
        seen.append(type(scan))
        return real(fw, state, q, prio, pods, scan, *a, **k)
    monkeypatch.setattr(EV, "_device_visit", spy)
    objs = [_node(f"n{i}", cpu=1000) for i in range(4)]
    objs += [_pod(f"low{i}-{j}", prio=0, cpu=400, node=f"n{i}") for i in range(4)
             for j in range(2)]
    pending = [_pod(f"high{j}", prio=10, cpu=500) for j in range(3)]
    got, _ = _run(objs, pending, "cuda")
    want, _ = _run(objs, pending, "numba")
    assert got == want
    assert seen and set(seen) == {EV.Rotation}
    assert all(b[1] is not None and b[3] for b in got)      # each placed by preempting
