"""backoffQ: exponential durations capped at the maximum, expiry from the
last requeue, entries due in expiry order with dead ones skipped."""

from types import SimpleNamespace

import pytest

from tensorsched.framework.runtime.clock import SimulatedClock
from tensorsched.framework.scheduler.backoff_queue import BackoffQueue


def _pi(key, attempts, timestamp):
    return SimpleNamespace(key=key, attempts=attempts, timestamp=timestamp)


@pytest.mark.parametrize("initial,maximum,want", [
    (1, 10, [1, 1, 2, 4, 8, 10, 10]), (0.5, 3, [0.5, 0.5, 1, 2, 3, 3, 3])])
def test_durations_double_up_to_the_maximum(initial, maximum, want):
    bq = BackoffQueue(SimulatedClock(), {}, initial, maximum)
    assert [bq.duration(_pi("a", n, 0.0)) for n in range(len(want))] == want


def test_expiry_and_backing_off_follow_the_clock():
    clock = SimulatedClock(5.0)
    bq = BackoffQueue(clock, {}, 1, 10)
    assert bq.expiry(_pi("a", 0, 5.0)) == 5.0           # never tried: no backoff
    assert not bq.backing_off(_pi("a", 0, 5.0))
    pi = _pi("a", 3, 4.0)
    assert bq.expiry(pi) == 8.0 and bq.backing_off(pi)
    clock.advance(3.0)
    assert not bq.backing_off(pi)


def test_due_in_expiry_order_and_dead_entries_skipped():
    token = {}
    bq = BackoffQueue(SimulatedClock(), token, 1, 10)
    assert bq.next_expiry() is None
    for seq, (key, attempts) in enumerate([("late", 3), ("early", 1), ("dead", 1)], 1):
        bq.push(_pi(key, attempts, 0.0), seq)
        token[key] = seq
    token["dead"] = 99                                  # moved on since
    assert bq.next_expiry() == 1.0
    assert bq.due(0.5) == []
    assert bq.due(1.0) == ["early"]
    assert bq.next_expiry() == 4.0
    assert bq.due(10.0) == ["late"]
    assert bq.next_expiry() is None


def test_earliest_follows_the_first_entry():
    """``earliest``: the first entry's expiry (inf when empty), through
    pushes, ``due`` and ``next_expiry`` dropping dead entries."""
    token: dict = {}
    bq = BackoffQueue(SimulatedClock(), token, 1.0, 8.0)
    assert bq.earliest == float("inf")
    a = SimpleNamespace(key="a", timestamp=0.0, attempts=3)     # 4 s
    b = SimpleNamespace(key="b", timestamp=0.0, attempts=1)     # 1 s
    token["a"], token["b"] = 1, 2
    bq.push(a, 1)
    assert bq.earliest == 4.0
    bq.push(b, 2)
    assert bq.earliest == 1.0
    assert bq.due(0.5) == [] and bq.earliest == 1.0
    assert bq.due(1.0) == ["b"] and bq.earliest == 4.0
    del token["a"]                                              # a's entry dies
    assert bq.next_expiry() is None and bq.earliest == float("inf")
