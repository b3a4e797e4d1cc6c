"""RunKeys: alike pods of a profile that can run share a key; a pod of no
profile, or with a signature a plugin cannot give, has none; a signature
that did not compile is not a key until cleared; a pod whose failure is
remembered gets the failure's key (on a simulated clock) and leaves what it
recalled for the caller."""

from types import SimpleNamespace

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.runtime.clock import SimulatedClock
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.counters import CycleCounters
from tensorsched.framework.scheduler.failure_memory import (
    FailureMemory,
    RememberedFailure,
    failure_stamp,
)
from tensorsched.framework.scheduler.nominator import Nominator
from tensorsched.framework.scheduler.profiles import Profiles
from tensorsched.framework.scheduler.run_keys import RunKeys


def _keys(memory=None, backend="numba", wait=300.0):
    cluster = build_cluster([node_dict("n0", cpu="1")])
    profiles = Profiles(cluster, backend, SimpleNamespace())
    nominator = Nominator()
    keys = RunKeys(cluster.state, profiles, nominator, CycleCounters(), SimulatedClock(),
                   failure_memory=memory, max_in_unschedulable=wait)
    return keys, profiles, cluster.state, nominator


def test_alike_pods_share_a_key_and_others_have_none():
    keys, *_ = _keys()
    a, b = parse_pod(pod_dict("a", cpu="1")), parse_pod(pod_dict("b", cpu="1"))
    other = parse_pod(pod_dict("c", cpu="1", spec={"schedulerName": "elsewhere"}))
    assert keys.key(a) is not None and keys.key(a) == keys.key(b)
    assert keys.key(parse_pod(pod_dict("d", cpu="2"))) != keys.key(a)
    assert keys.key(other) is None
    keys.unrunnable.add(keys.key(a))
    assert keys.key(b) is None
    keys.unrunnable.clear()
    assert keys.key(b) is not None and keys.recalled is None


def test_no_key_on_a_backend_without_compiled_runs():
    keys, *_ = _keys(backend="numpy")
    assert keys.key(parse_pod(pod_dict("a"))) is None


def test_a_remembered_failure_is_the_key_and_is_recalled():
    memory = FailureMemory()
    keys, profiles, state, nominator = _keys(memory)
    pod = parse_pod(pod_dict("big", cpu="8"))
    fkey = memory.key(profiles.of(pod), pod)
    stamp = failure_stamp(state, nominator)
    failure = RememberedFailure("0/1 nodes are available: 1 Insufficient cpu.",
                                frozenset({"NodeResourcesFit"}), 1, -1)
    memory.remember(fkey, stamp, failure)
    assert keys.key(pod) == ("failure", fkey)
    assert keys.recalled == (pod, failure, stamp, 0)
    # not on a queue that never keeps pods aside: each fails on its own
    aside = RunKeys(state, profiles, nominator, CycleCounters(), SimulatedClock(),
                    failure_memory=memory, max_in_unschedulable=0.0)
    assert aside.key(pod) is None and aside.recalled == (pod, failure, stamp, 0)
    # remembered for another start index: a full cycle (its usual key)
    moved = CycleCounters()
    moved.next_start_index = 1
    later = RunKeys(state, profiles, nominator, moved, SimulatedClock(),
                    failure_memory=memory, max_in_unschedulable=300.0)
    failure_at_0 = RememberedFailure("m", frozenset(), 0, 0)
    memory.remember(fkey, stamp, failure_at_0)
    later.recalled = None
    got = later.key(pod)
    assert got is not None and got[0] == "default-scheduler" and later.recalled is None
    assert keys.key(pod) == ("failure", fkey)          # from where it was remembered
