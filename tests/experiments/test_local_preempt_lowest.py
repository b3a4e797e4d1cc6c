"""The node-local preemption engines skip PostFilter's search for a pod
whose priority is at most the lowest among the bound pods (nothing to
evict anywhere; ``_local_preempt.L_LOW``, ``_local_preempt_events.EL_LOW``:
a lower bound that each search makes exact and each binding lowers).  The
bound must follow the bindings: a pod bound below it after a search lets
a later pod of a priority in between preempt it.  Each run equals its
``ts.Simulation`` (``test_local_preempt_grace.assert_runs``) with and
without a termination grace, without and with a scenario (the node-event
form), on every backend the batched call takes (CUDA under the
simulator)."""
from __future__ import annotations

import pytest
from support.backends import needs_cuda
from test_local_preempt_grace import _at, _bound, _one, _trace, assert_runs

from tensorsched.generators.clusters import node_dict

# a (10) fills n0 and leaves at 3; f (10, 3 cpu) fits nowhere: its
# search at 1 finds a no lower-priority pod (the bound becomes 10); b (0)
# binds at 4 below it; c (5) at 5 must preempt b
TRACE = ("name,arrival,departure,cpu,priority\n"
         "a,0,3,2,10\nf,1,,3,10\nb,4,,2,0\nc,5,,2,5\n")


def _objs() -> list:
    # n1 (1 cpu) holds a bound pod of priority 10: the lowest bound
    # priority at f's search includes the manifests' bound pods
    return [node_dict("n0", cpu="2", memory="4Gi"), node_dict("n1", cpu="1", memory="4Gi"),
            _bound("z", "n1", "1", 10)]


@pytest.mark.parametrize("grace", [0.0, 10.0])
@pytest.mark.parametrize("steps", [None, [{"at": 100, "drain": "n1"}]])
def test_a_pod_bound_below_the_lowest_priority_seen_is_still_a_victim(tmp_path, grace, steps):
    r = _one(tmp_path, _objs(), TRACE, grace, steps)
    b, c, f = (_at(r, x, TRACE) for x in "bcf")
    assert r.victim[b] == 1
    assert r.node_names[r.node[c]] == "n0"
    assert r.bind[c] == (6.0 if grace == 0 else 15.0)
    assert r.node[f] == -1 and r.tries[f] >= 2


def test_pods_of_the_lowest_priority_fail_without_preempting(tmp_path):
    """Pods of priority 0 (the lowest bound) fail over and over and
    preempt nothing; one of priority 1 then evicts a pod of 0."""
    objs = [node_dict("n0", cpu="2", memory="4Gi"), _bound("z", "n0", "2", 0)]
    trace = ("name,arrival,cpu,priority\n"
             + "".join(f"p{k},{k},1,0\n" for k in range(6)) + "h,10,2,1\n")
    r = _one(tmp_path, objs, trace, 0.0)
    assert r.victim.tolist() == [0] * 7 + [1]
    assert r.node_names[r.node[_at(r, "h", trace)]] == "n0"


@pytest.mark.cudasim
@needs_cuda
@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("grace", [0.0, 10.0])
@pytest.mark.parametrize("steps", [None, [{"at": 100, "drain": "n1"}]])
def test_cuda_forms_follow_the_bindings_too(tmp_path, grace, steps):
    (r,) = assert_runs(_objs(), [None], _trace(tmp_path, TRACE), (0,), grace,
                       None if steps is None else {"steps": steps}, backend="cuda")
    assert r.victim[_at(r, "b", TRACE)] == 1
