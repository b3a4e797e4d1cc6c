"""Which events may help a pod back from the unschedulable pool: its
rejecting plugins' declared events, a pod rejected by no plugin helped by
any event, each answer asked of the plugins once."""

from types import SimpleNamespace

from tensorsched.framework.scheduler.event_interest import EventInterest
from tensorsched.framework.scheduler.queue import ALL_EVENTS, plugin_events

FIT = SimpleNamespace(name="Fit", events={"Node/Add", "Pod/Delete"})
PORTS = SimpleNamespace(name="Ports", events={"Pod/Delete"})


def test_declared_events_decide_and_answers_are_kept():
    asked = []

    def plugin_of(name):
        asked.append(name)
        return {"Fit": FIT, "Ports": PORTS}.get(name)

    interest = EventInterest(plugin_of, plugin_events)
    assert interest.interested(frozenset(), "Node/Update")          # no plugin: any event
    assert interest.interested(frozenset({"Fit"}), "Node/Add")
    assert not interest.interested(frozenset({"Ports"}), "Node/Add")
    assert interest.interested(frozenset({"Ports", "Fit"}), "Node/Add")
    n = len(asked)
    assert not interest.interested(frozenset({"Ports"}), "Node/Add")
    assert len(asked) == n                                           # answered from memory


def test_unknown_plugin_moves_on_every_event():
    interest = EventInterest(lambda name: None, plugin_events)
    assert all(interest.interested(frozenset({"Gone"}), e) for e in ALL_EVENTS)
