"""``Agenda``: events come out by time, then priority (leave < node <
arrive), then first in first out; ``head``, ``later_time`` and iteration
see what is pending without taking it."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.framework.simulation.agenda import (
    PRIO_ARRIVE,
    PRIO_LEAVE,
    PRIO_NODE,
    Agenda,
)


def test_empty():
    a = Agenda()
    assert len(a) == 0 and not a
    assert a.next_time() == math.inf and list(a) == []


def test_equal_times_leave_before_nodes_before_arrivals_then_fifo():
    a = Agenda()
    a.push(5, PRIO_ARRIVE, "pods", "first arrival")
    a.push(5, PRIO_NODE, "cordon", "n1")
    a.push(5, PRIO_ARRIVE, "pods", "second arrival")
    a.push(5, PRIO_LEAVE, "depart", "p0")
    a.push(1, PRIO_ARRIVE, "trace", 0)
    assert a.head() == (1.0, "trace", 0)
    assert a.later_time() == 5.0
    assert sorted(p for _, _, p in a if isinstance(p, str)) == [
        "first arrival", "n1", "p0", "second arrival"]
    out = [a.pop() for _ in range(len(a))]
    assert out == [("trace", 0), ("depart", "p0"), ("cordon", "n1"),
                   ("pods", "first arrival"), ("pods", "second arrival")]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.sampled_from([PRIO_LEAVE, PRIO_NODE,
                                                               PRIO_ARRIVE])),
                min_size=1, max_size=30))
def test_pops_in_time_priority_fifo_order(events):
    a = Agenda()
    for i, (t, prio) in enumerate(events):
        a.push(t, prio, "k", i)
    later = sorted(range(len(events)), key=lambda i: (events[i][0], events[i][1], i))
    if len(events) > 1:
        # the earliest event after the head
        assert a.later_time() == events[later[1]][0]
    else:
        assert a.later_time() == math.inf
    assert [a.pop()[1] for _ in events] == later
