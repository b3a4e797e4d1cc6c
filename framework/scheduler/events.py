"""What the scheduler reports: ``Binding`` (one scheduling outcome) and the
event bus behind ``Scheduler.subscribe``.

Events: Scheduled (node chosen and assumed), Bound, FailedScheduling,
Preempted (one per victim), BindFailed, AssumeExpired.  Each callback gets a
dict: event, pod, node, message, time (clock seconds), plus
``victims``/``preemptor``/``nominated_node`` where they apply.
"""

from __future__ import annotations

from collections import UserList
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

from tensorsched.framework.errors import ArgumentError
from tensorsched.framework.runtime.clock import Clock

EVENTS = ("Scheduled", "Bound", "FailedScheduling", "Preempted", "BindFailed",
          "AssumeExpired")
# The events that end a pod's attempt; the last one is its outcome.
OUTCOME_EVENTS = ("Bound", "FailedScheduling", "BindFailed")
# What ``Scheduler.schedule_pending`` records for a pod bound (its Binding is
# in ``Scheduler.outcomes``): bindings are logged without building an event.
BOUND = {"event": "Bound"}


@dataclass(slots=True)
class Binding:
    """One scheduling outcome: a node, or the FailedScheduling message."""

    pod: str
    node: str | None
    message: str = ""
    nominated_node: str | None = None
    victims: list = field(default_factory=list)     # "ns/name" evicted for this pod
    ignored: bool = False       # no profile has the pod's schedulerName: left alone

    def to_dict(self) -> dict:
        d = {"pod": self.pod, "node": self.node}
        if self.node is None:
            d["message"] = self.message
        if self.ignored:
            d["ignored"] = True
        if self.nominated_node is not None:
            d["nominated_node"] = self.nominated_node
            d["preempted"] = list(self.victims)
        return d


class Outcomes(dict):
    """Pod key -> its latest outcome (``Binding``).  A pod bound by a
    compiled run without a nomination is kept as its node's name (a run
    records thousands at once with one C-level ``update``); reading it
    gives its Binding, as for any other pod."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Binding:
        v = dict.__getitem__(self, key)
        return Binding(key, v) if type(v) is str else v

    def get(self, key: str, default=None):
        v = dict.get(self, key, _MISSING)
        if v is _MISSING:
            return default
        return Binding(key, v) if type(v) is str else v

    def pop(self, key: str, *default):
        v = dict.pop(self, key, _MISSING)
        if v is _MISSING:
            if default:
                return default[0]
            raise KeyError(key)
        return Binding(key, v) if type(v) is str else v

    def values(self) -> list:
        return [self[k] for k in self]

    def items(self) -> list:
        return [(k, self[k]) for k in self]

    def bound(self, keys: list, nodes: list) -> None:
        """Pods ``keys`` bound on ``nodes`` (node names), in order."""
        self.update(zip(keys, nodes))


_MISSING = object()


class BindingList(UserList):
    """A list of Bindings (``Scheduler.schedule_pending``'s outcomes): a
    list in everything but its type (len, iteration, indexing, slicing,
    ``==`` with a list, ``+``, sorting, mutation).

    ``of_nodes`` makes one whose leading Bindings are pods bound on nodes
    without a nomination (``Binding(key, node)``), kept as the ``key ->
    node name`` dict they came in until first read: compiled runs bind
    thousands of pods, and a caller that reads a few outcomes (or only
    counts them) then builds no Binding per pod.  The dict is the list's
    own (no one writes to it after), so reading later gives what an eager
    list would have held."""

    def __init__(self, initlist=None, *, bound: dict | None = None, tail: list | None = None):
        if bound is not None:
            # ``of_nodes``: built when first read
            self._bound, self._tail, self._data = bound, tail or [], None
            return
        self._bound, self._tail = None, []
        super().__init__(initlist)

    @classmethod
    def of_nodes(cls, bound: dict, tail: list) -> BindingList:
        """``[Binding(k, n) for k, n in bound.items()] + tail``, the
        first part built when first read; ``bound`` and ``tail`` are handed
        over (the caller keeps no reference it writes through)."""
        return cls(bound=bound, tail=tail)

    @classmethod
    def holding(cls, items: list) -> BindingList:
        """One that holds ``items`` itself (not a copy)."""
        out = cls()
        out.data = items
        return out

    @property
    def data(self) -> list:
        if self._bound is not None:
            bound = self._bound
            built = list(map(Binding, bound, bound.values()))
            built.extend(self._tail)
            self._bound, self._tail, self._data = None, [], built
        return self._data

    @data.setter
    def data(self, value: list) -> None:
        self._bound, self._tail, self._data = None, [], value

    def __len__(self) -> int:
        if self._bound is not None:
            return len(self._bound) + len(self._tail)
        return len(self._data)

    def node_pairs(self) -> tuple[dict, list]:
        """(``key -> node name`` of the leading pods bound without a
        nomination, the other Bindings): the list is those pairs as
        ``Binding(key, node)``, then the rest, in order.  The pairs are the
        dict ``of_nodes`` took while no Binding has been built for them
        (read it, never write it), else empty."""
        if self._bound is not None:
            return self._bound, self._tail
        return {}, self._data

    def __copy__(self) -> BindingList:
        return self.__class__(self.data)


class EventBus:
    """Subscribers per event name ("*" for all), called in subscription order."""

    def __init__(self, clock: Clock):
        self.clock = clock
        self._subs: dict[str, list] = {}

    @property
    def active(self) -> bool:
        """Anyone subscribed since the bus was made (an unsubscribed event
        keeps its empty list: callers that record outcomes for subscribers
        keep doing so)."""
        return bool(self._subs)

    def listening(self, event: str) -> bool:
        """Someone is subscribed to ``event`` now (or to every event)."""
        subs = self._subs
        return bool(subs.get(event) or subs.get("*"))

    @contextmanager
    def muted(self, callback: Callable):
        """``callback`` left out while inside (a subscriber that accounts for
        those events in bulk itself); put back where it was after."""
        held = []
        for subs in self._subs.values():
            at = [i for i, cb in enumerate(subs) if cb == callback]
            for i in reversed(at):
                del subs[i]
            held.append((subs, at))
        try:
            yield
        finally:
            for subs, at in held:
                for i in at:
                    subs.insert(i, callback)

    def subscribe(self, event: str, callback: Callable) -> Callable:
        """Call ``callback(dict)`` on each ``event`` (one of EVENTS, or "*"
        for all); returns a function that unsubscribes."""
        if event not in EVENTS and event != "*":
            raise ArgumentError("subscribe", "event",
                                f"unknown event {event!r}; known: {', '.join(EVENTS)}")
        subs = self._subs.setdefault(event, [])
        subs.append(callback)
        return lambda: subs.remove(callback)

    def emit(self, event: str, pod: str, node: str | None = None, message: str = "",
             **extra) -> None:
        subs = self._subs
        if not subs:
            return
        own, every = subs.get(event), subs.get("*")
        if not own and not every:
            return
        payload = {"event": event, "pod": pod, "node": node, "message": message,
                   "time": self.clock.now()}
        if extra:
            payload.update(extra)
        for cb in own or ():
            cb(payload)
        for cb in every or ():
            cb(payload)
