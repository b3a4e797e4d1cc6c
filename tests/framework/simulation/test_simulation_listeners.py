"""``Listeners``: subscribers per event and for "*", a collecting step,
events built only when someone hears them, the scheduler's events passed on
once heard."""

from __future__ import annotations

from tensorsched.framework.runtime.clock import SimulatedClock
from tensorsched.framework.simulation.listeners import Listeners


class _Scheduler:
    def __init__(self):
        self.subs = []

    def subscribe(self, event, fn):
        self.subs.append((event, fn))


def test_subscribers_collect_and_unsubscribe():
    clock = SimulatedClock(7.0)
    ls = Listeners(clock)
    assert not ls.active
    ls.event("Arrived", "default/a")            # nobody hears: nothing happens
    got, every = [], []
    off = ls.subscribe("Arrived", got.append)
    ls.subscribe("*", every.append)
    assert ls.active
    ls.event("Arrived", "default/a")
    ls.event("NodeAdded", None, "n1", "m")
    assert got == [{"event": "Arrived", "pod": "default/a", "node": None, "message": "",
                    "time": 7.0}]
    assert [e["event"] for e in every] == ["Arrived", "NodeAdded"]
    off()
    ls.collected = []
    ls.event("Arrived", "default/b")
    assert got == got[:1] and ls.collected[0]["pod"] == "default/b"


def test_scheduler_events_pass_on_once_heard():
    ls = Listeners(SimulatedClock())
    sched = _Scheduler()
    ls.hear(sched)
    ls.hear(sched)
    assert [e for e, _ in sched.subs] == ["*"]
    forward = sched.subs[0][1]
    event = {"event": "Bound", "pod": "default/a"}
    forward(event)                      # nobody listening: dropped
    ls.collected = []
    forward(event)
    assert ls.collected == [event] and ls.collected[0] is not event
