"""kernels/victims/pick.py and its device twin (``_pick_cuda.pick_kernel``):
upstream's DryRunPreemption visit (two candidate lists of at most
numCandidates, stop once a non-violating candidate is found and the lists
are full) and pickOneNodeForPreemption over the victim search's
statistics.  Hand cases with the arithmetic, the array code against a plain
restatement of the serial visit and pick, and the CUDA block (simulator)
against the array code."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda

from tensorsched.kernels.victims import pick as VP
from tensorsched.kernels.victims import search as V

NOW = V.START_NOW


def row(code=0, nv=1, viol=0, calls=1, top=0, total=0, early=0):
    return [code, nv, viol, calls, top, total, early]


def serial(stats, cap):
    """Upstream's DryRunPreemption visit then pickOneNodeForPreemption,
    restated node by node: (visited, calls, chosen position)."""
    nv_list, v_list, calls, visited = [], [], 0, 0
    for j, s in enumerate(stats.tolist()):
        visited = j + 1
        calls += s[3]
        if s[0] == 0:
            target = v_list if s[2] > 0 else nv_list
            if len(target) < cap:
                target.append(j)
        if nv_list and len(nv_list) + len(v_list) >= cap:
            break
    alive = nv_list + v_list
    for col, sign in ((2, -1), (4, -1), (5, -1), (1, -1), (6, 1)):
        if len(alive) <= 1:
            break
        best = max(sign * stats[j, col] for j in alive)
        alive = [j for j in alive if sign * stats[j, col] == best]
    return visited, calls, (alive[0] if alive else -1)


def test_hand_visit_stops_and_picks():
    stats = np.array([
        row(code=V.CODE_NO_VICTIMS, nv=0, calls=0),     # 0: no victims
        row(viol=1, top=0, calls=2),                    # 1: violating candidate
        row(top=5, calls=3),                            # 2: non-violating, priority 5
        row(top=1, calls=2),                            # 3: non-violating, priority 1
        row(top=0, calls=2),                            # 4: never visited
    ], np.int64)
    # cap 3: after position 3 the lists hold 2 + 1 = 3 with one non-violating
    # candidate: visited 4, calls 0 + 2 + 3 + 2 = 7; fewest violations keeps
    # 2 and 3, the lower highest-victim priority (1 < 5) picks 3.
    assert VP.visit_and_pick(stats, 3) == (4, 7, 3)
    # cap 1: the violating one alone does not stop the visit (no
    # non-violating candidate yet); position 2 does: the violating list is
    # full already, so 2 is listed and chosen.
    assert VP.visit_and_pick(stats, 1) == (3, 5, 2)
    # No candidate at all: every position visited.
    none = stats.copy()
    none[:, 0] = int(V.CODE_NONE_LEFT)
    assert VP.visit_and_pick(none, 3) == (5, 9, -1)


def test_hand_ties_keep_the_first_listed():
    # Same statistics everywhere but the earliest start: the later start
    # wins (position 1); equal starts: the first position (0).
    stats = np.array([row(early=3), row(early=7), row(early=7)], np.int64)
    assert VP.visit_and_pick(stats, 3).chosen == 1
    stats[:, 6] = 7
    assert VP.visit_and_pick(stats, 3).chosen == 0


STATS_ROW = st.tuples(
    st.sampled_from([0, 0, 0, V.CODE_NO_VICTIMS, V.CODE_NONE_LEFT, 8]),
    st.integers(1, 3), st.sampled_from([0, 0, 1, 2]), st.integers(0, 3),
    st.sampled_from([-2, 0, 3]), st.integers(0, 4), st.sampled_from([0, 5, NOW]))


@st.composite
def visits(draw, max_m=30):
    m = draw(st.integers(1, max_m))
    stats = np.array(draw(st.lists(STATS_ROW, min_size=m, max_size=m)), np.int64)
    return stats, draw(st.integers(0, m + 1))


SETTINGS = {"deadline": None, "derandomize": True, "suppress_health_check": list(HealthCheck)}


@settings(max_examples=150, **SETTINGS)
@given(visits())
def test_random_array_code_equals_serial_visit(case):
    stats, cap = case
    assert tuple(VP.visit_and_pick(stats, cap)) == serial(stats, cap)


def _device_pick(stats, cap, c=3):
    from numba import cuda

    from tensorsched.kernels.victims import _pick_cuda as PC
    m = stats.shape[0]
    victims = np.arange(m * c, dtype=np.int64).reshape(m, c)
    out = cuda.to_device(np.full(PC.OUT_VICTIMS + c, -9, np.int64))
    PC.launch_pick(cuda.to_device(stats), cuda.to_device(victims), m, cap, out)
    host = out.copy_to_host()
    return host, victims, PC


@pytest.mark.cudasim
@needs_cuda
@settings(max_examples=12, **SETTINGS)
@given(visits(max_m=40))      # up to 40 positions over the simulator's 16 threads
def test_random_cuda_block_equals_array_code(case):
    stats, cap = case
    host, victims, PC = _device_pick(stats, cap)
    want = VP.visit_and_pick(stats, cap)
    assert (host[PC.OUT_VISITED], host[PC.OUT_CALLS], host[PC.OUT_CHOSEN]) == tuple(want)
    if want.chosen >= 0:
        assert host[PC.OUT_STATS: PC.OUT_STATS + 7].tolist() == stats[want.chosen].tolist()
        assert host[PC.OUT_VICTIMS:].tolist() == victims[want.chosen].tolist()
