"""The unschedulable pool: pods grouped by their rejecting plugins, visited
by group in arrival order, and the ones waiting too long found from the
front while they entered in timestamp order."""

from types import SimpleNamespace

from tensorsched.framework.scheduler.unschedulable_pool import UnschedulablePool


def _pi(key, plugins, timestamp, gated=False):
    return SimpleNamespace(key=key, unschedulable_plugins=frozenset(plugins),
                           timestamp=timestamp, gated=gated)


def test_groups_follow_the_pods_in_and_out():
    pool = UnschedulablePool()
    pool["a"] = _pi("a", {"Fit"}, 0.0)
    pool["b"] = _pi("b", {"Ports"}, 1.0)
    pool["c"] = _pi("c", {"Fit"}, 2.0)
    assert set(pool.groups) == {frozenset({"Fit"}), frozenset({"Ports"})}
    fit = [pi.key for pi in pool.interested(lambda plugins: "Fit" in plugins)]
    assert fit == ["a", "c"]
    every = [pi.key for pi in pool.interested(lambda plugins: True)]
    assert every == ["a", "b", "c"]                 # arrival order across groups
    del pool["b"]
    assert frozenset({"Ports"}) not in pool.groups
    assert pool.pop("a").key == "a" and pool.pop("zz", None) is None
    assert list(pool) == ["c"]


def test_stale_reads_the_front_and_skips_gated_pods():
    pool = UnschedulablePool()
    pool["g"] = _pi("g", set(), 0.0, gated=True)
    pool["a"] = _pi("a", {"Fit"}, 1.0)
    pool["b"] = _pi("b", {"Fit"}, 5.0)
    assert [pi.key for pi in pool.stale(10.0, 6.0)] == ["a"]
    assert [pi.key for pi in pool.stale(11.0, 6.0)] == ["a", "b"]
    # out of timestamp order: every waiting pod is read
    pool["c"] = _pi("c", {"Fit"}, 0.5)
    assert [pi.key for pi in pool.stale(7.0, 6.0)] == ["a", "c"]


def test_calm_since_marks_the_first_waiting_pod_until_the_order_breaks():
    pool = UnschedulablePool()
    pool["g"] = _pi("g", set(), 0.0, gated=True)
    pool["a"] = _pi("a", {"Fit"}, 1.0)
    pool["b"] = _pi("b", {"Fit"}, 5.0)
    assert pool.calm_since == float("-inf")         # nothing asked yet
    assert [pi.key for pi in pool.stale(10.0, 6.0)] == ["a"]
    assert pool.calm_since == float("-inf")         # "a" still waits to be moved
    del pool["a"]
    assert pool.stale(10.0, 6.0) == []
    assert (pool.calm_since, pool.calm_limit) == (5.0, 6.0)   # "b": none stale before 11
    pool["c"] = _pi("c", {"Fit"}, 7.0)              # later: the answer holds
    assert pool.calm_since == 5.0
    pool["d"] = _pi("d", {"Fit"}, 4.5)              # earlier: unknown again
    assert pool.calm_since == float("-inf")
    assert pool.stale(10.0, 6.0) == []              # out of order: no calm stretch
    assert pool.calm_since == float("-inf")
    for k in ["g", "b", "c", "d"]:
        del pool[k]
    pool["e"] = _pi("e", {"Fit"}, 0.0)
    assert pool.stale(3.0, 6.0) == [] and pool.calm_since == 0.0
