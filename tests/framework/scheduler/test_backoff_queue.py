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
