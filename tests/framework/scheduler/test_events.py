"""events: Binding.to_dict, Outcomes' compact bound entries read as
Bindings, BindingList (a list in all but type, its run-bound part built
when first read), and the EventBus's subscription order, filtering and
muting."""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.framework.errors import ArgumentError
from tensorsched.framework.runtime.clock import SimulatedClock
from tensorsched.framework.scheduler.events import Binding, BindingList, EventBus, Outcomes


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


_bound_runs = st.lists(st.sampled_from(["n0", "n1", "n2"]), max_size=12).map(
    lambda nodes: {f"ns/p{i}": n for i, n in enumerate(nodes)})
_tails = st.lists(st.sampled_from([Binding("ns/t0", None, "not attempted"),
                                   Binding("ns/t1", None, "x", "n1", ["ns/v"]),
                                   Binding("ns/t2", None, "other", ignored=True)]),
                  max_size=3, unique_by=lambda b: b.pod)


@settings(max_examples=60, deadline=None)
@given(_bound_runs, _tails, st.integers(-15, 15), st.integers(-15, 15), st.integers(-3, 3))
def test_binding_list_reads_as_the_eager_list(bound, tail, i, j, step):
    def lazy():
        return BindingList.of_nodes(dict(bound), list(tail))
    eager = [Binding(k, n) for k, n in bound.items()] + list(tail)
    assert len(lazy()) == len(eager)
    assert lazy() == eager and eager == lazy() and not (lazy() != eager)
    assert lazy() == BindingList.holding(list(eager)) == BindingList(eager)
    assert list(lazy()) == eager and list(reversed(lazy())) == eager[::-1]
    assert bool(lazy()) == bool(eager)
    if -len(eager) <= i < len(eager):
        assert lazy()[i] == eager[i]
        assert lazy().index(eager[i]) == eager.index(eager[i])
        assert eager[i] in lazy() and lazy().count(eager[i]) == eager.count(eager[i])
    else:
        with pytest.raises(IndexError):
            lazy()[i]
    if step:
        assert lazy()[i:j:step] == eager[i:j:step]
    assert lazy() + [None] == eager + [None] and [None] + lazy() == [None] + eager
    assert [b.to_dict() for b in lazy()] == [b.to_dict() for b in eager]
    assert copy.copy(lazy()) == eager and copy.deepcopy(lazy()) == eager
    assert pickle.loads(pickle.dumps(lazy())) == eager
    grown = lazy()
    grown.append(Binding("ns/z", "n9"))
    grown.sort(key=lambda b: b.pod)
    assert grown == sorted(eager + [Binding("ns/z", "n9")], key=lambda b: b.pod)
    assert len(grown) == len(eager) + 1


def test_binding_list_owns_the_dict_it_was_given():
    bound = {"ns/a": "n1"}
    got = BindingList.of_nodes(bound, [])
    assert got[0] is got[0]                 # built once, then kept
    got[0].node = "n2"                      # a Binding read is the list's own
    assert got == [Binding("ns/a", "n2")] and bound == {"ns/a": "n1"}


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
