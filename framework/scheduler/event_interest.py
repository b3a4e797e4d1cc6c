"""Which cluster events may help a pod out of the unschedulable pool: the
events its rejecting plugins declared interest in (upstream's queueing
hints at the granularity of events), asked once per (plugins, event)."""

from __future__ import annotations

from collections.abc import Callable


class EventInterest:
    """``interested(plugins, event)``: whether any plugin named in
    ``plugins`` (a frozenset of names) may be helped by ``event``.
    ``plugin_of(name)`` resolves a name to the plugin (None when no profile
    has it) and ``events_of(plugin)`` gives the events it declared; a pod
    rejected by no named plugin is helped by any event."""

    def __init__(self, plugin_of: Callable, events_of: Callable):
        self.plugin_of = plugin_of
        self.events_of = events_of
        self._cache: dict[tuple, bool] = {}

    def interested(self, plugins: frozenset, event: str) -> bool:
        if not plugins:
            return True
        got = self._cache.get((plugins, event))
        if got is None:
            got = any(event in self.events_of(self.plugin_of(n)) for n in plugins)
            self._cache[(plugins, event)] = got
        return got
