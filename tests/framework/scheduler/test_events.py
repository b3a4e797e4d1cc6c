"""events: Binding.to_dict, Outcomes' compact bound entries read as
Bindings, and the EventBus's subscription order, filtering and muting."""

from __future__ import annotations

import pytest

from tensorsched.framework.errors import ArgumentError
from tensorsched.framework.runtime.clock import SimulatedClock
from tensorsched.framework.scheduler.events import Binding, EventBus, Outcomes


def test_binding_to_dict_shows_only_what_applies():
    assert Binding("ns/a", "n1").to_dict() == {"pod": "ns/a", "node": "n1"}
    assert Binding("ns/a", None, "0/3 nodes").to_dict() == {
        "pod": "ns/a", "node": None, "message": "0/3 nodes"}
    d = Binding("ns/a", None, "m", nominated_node="n2", victims=["ns/v"], ignored=True).to_dict()
    assert d == {"pod": "ns/a", "node": None, "message": "m", "ignored": True,
                 "nominated_node": "n2", "preempted": ["ns/v"]}


def test_outcomes_read_compact_entries_as_bindings():
    o = Outcomes()
    o.bound(["ns/a", "ns/b"], ["n1", "n2"])
    o["ns/c"] = Binding("ns/c", None, "failed")
    assert o["ns/a"] == Binding("ns/a", "n1")
    assert o.get("ns/b") == Binding("ns/b", "n2")
    assert o.get("ns/x") is None and o.get("ns/x", 7) == 7
    assert [b.node for b in o.values()] == ["n1", "n2", None]
    assert o.items()[0] == ("ns/a", Binding("ns/a", "n1"))
    assert o.pop("ns/a") == Binding("ns/a", "n1")
    assert "ns/a" not in o
    assert o.pop("ns/a", None) is None
    with pytest.raises(KeyError):
        o.pop("ns/a")


def test_bus_calls_own_then_every_subscriber_with_the_clock_time():
    clock = SimulatedClock(5.0)
    bus = EventBus(clock)
    assert not bus.active and not bus.listening("Bound")
    seen = []
    bus.subscribe("*", lambda e: seen.append(("all", e["event"])))
    unsub = bus.subscribe("Bound", lambda e: seen.append(("bound", e["time"], e["victims"])))
    assert bus.listening("Bound") and bus.listening("Preempted")
    bus.emit("Bound", "ns/a", "n1", victims=[])
    assert seen == [("bound", 5.0, []), ("all", "Bound")]
    unsub()
    seen.clear()
    clock.advance(1.0)
    bus.emit("Bound", "ns/a", "n1")
    assert seen == [("all", "Bound")]


def test_unknown_event_is_refused_naming_it():
    bus = EventBus(SimulatedClock())
    with pytest.raises(ArgumentError, match="^subscribe: event: unknown event 'Bond'"):
        bus.subscribe("Bond", print)
    assert not bus.active


def test_muted_callback_is_left_out_then_put_back_in_place():
    bus = EventBus(SimulatedClock())
    calls = []
    a = lambda e: calls.append("a")   # noqa: E731
    b = lambda e: calls.append("b")   # noqa: E731
    bus.subscribe("Bound", a)
    bus.subscribe("Bound", b)
    with bus.muted(a):
        bus.emit("Bound", "ns/p")
    bus.emit("Bound", "ns/p")
    assert calls == ["b", "a", "b"]
