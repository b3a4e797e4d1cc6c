"""Who hears a simulation's events: ``on`` subscribers per event name (or
"*"), and the list a ``step`` collects.  Event dicts carry event, pod, node,
message and time (and the Scheduler's extras for its own events)."""

from __future__ import annotations

from collections.abc import Callable


class Listeners:
    """Subscribers of a simulation's events, and an optional collecting
    list; ``clock`` times the simulation's own events."""

    def __init__(self, clock) -> None:
        self._clock = clock
        self._subs: dict[str, list] = {}
        self.collected: list | None = None     # a step's events, while it runs
        self._hearing = False

    @property
    def active(self) -> bool:
        """Whether anyone hears an event now (else events need not be built)."""
        return self.collected is not None or bool(self._subs)

    def hear(self, scheduler) -> None:
        """Pass on every event of ``scheduler`` from now on (called at the
        first subscriber or collecting step: until then the Scheduler
        builds no event dict the simulation does not count)."""
        if not self._hearing:
            self._hearing = True
            scheduler.subscribe("*", self._forward)

    def _forward(self, e: dict) -> None:
        if self.collected is not None or self._subs:
            self.emit(dict(e))

    def subscribe(self, event: str, callback: Callable) -> Callable:
        """Call ``callback(dict)`` on each ``event``; returns the unsubscribe."""
        subs = self._subs.setdefault(event, [])
        subs.append(callback)
        return lambda: subs.remove(callback)

    def emit(self, e: dict) -> None:
        """Hand ``e`` to the collecting step and to the subscribers of its event and of "*"."""
        if self.collected is not None:
            self.collected.append(e)
        for cb in self._subs.get(e["event"], ()):
            cb(e)
        for cb in self._subs.get("*", ()):
            cb(e)

    def event(self, event: str, pod: str | None, node: str | None = None,
              message: str = "") -> None:
        """One of the simulation's own events, now (built only when heard)."""
        if self.collected is None and not self._subs:
            return
        self.emit({"event": event, "pod": pod, "node": node, "message": message,
                   "time": self._clock.now()})
