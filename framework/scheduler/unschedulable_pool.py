"""The scheduling queue's unschedulable pods (upstream's
unschedulablePods): pods kept aside with the plugins that rejected them,
grouped by those plugins so that a cluster event visits only the groups
that care about it."""

from __future__ import annotations

from collections.abc import Callable


class UnschedulablePool(dict):
    """The unschedulable pods, ``{key: QueuedPodInfo}`` in arrival order,
    also grouped by the plugins that rejected them: a cluster event visits
    only the groups whose plugins care about it, so a pod arriving while
    thousands wait costs a few set lookups, not a scan of them all.

    A pod's group is its ``unschedulable_plugins`` when it entered (they
    do not change while it waits).  Pods enter and leave through ``[]=``,
    ``pop`` and ``del`` only.

    Pods requeued on a clock that only moves forward enter in the order of
    their timestamps: the ones waiting too long (``stale``) are then the
    first ones, and the flush before every pop reads only those, not every
    waiting pod (``_ordered`` says whether that holds; gated pods, never
    flushed, are left out of it)."""

    def __init__(self):
        super().__init__()
        self.groups: dict[frozenset, dict[str, int]] = {}   # plugins -> {key: order}
        self._group_of: dict[str, frozenset] = {}
        self._order = 0
        self._ordered = True            # non-gated pods in timestamp order
        self._last = float("-inf")      # the latest non-gated pod's timestamp
        # While ``_ordered``: the timestamp of the first non-gated pod the
        # last ``stale`` stopped at, and that call's limit (-inf: unknown).
        # No pod is stale at ``now`` while ``now - calm_since < calm_limit``:
        # later pods entered no earlier, and a pod leaving or turning gated
        # only makes the answer truer.
        self.calm_since = float("-inf")
        self.calm_limit = 0.0

    def __setitem__(self, key: str, pi) -> None:
        if key in self:
            _set(self, key, pi)         # keeps its place, as dict does
            if not pi.gated:
                self._ordered = False
                self.calm_since = float("-inf")
            return
        _set(self, key, pi)
        if not pi.gated:
            if pi.timestamp < self._last:
                self._ordered = False
                self.calm_since = float("-inf")
            else:
                self._last = pi.timestamp
        self._order += 1
        plugins = pi.unschedulable_plugins
        group = self.groups.get(plugins)
        if group is None:
            group = self.groups[plugins] = {}
        group[key] = self._order
        self._group_of[key] = plugins

    def pop(self, key: str, *default):
        if key in self:
            plugins = self._group_of.pop(key)
            group = self.groups[plugins]
            del group[key]
            if not group:
                del self.groups[plugins]
        got = _pop(self, key, *default)
        if not self:
            self._ordered, self._last = True, float("-inf")
            self.calm_since = float("-inf")
        return got

    def stale(self, now: float, limit: float) -> list:
        """The non-gated pods that have waited ``limit`` seconds or more at
        ``now``, in arrival order."""
        out = []
        self.calm_since = float("-inf")
        for pi in self.values():
            if pi.gated:
                continue
            if now - pi.timestamp >= limit:
                out.append(pi)
            elif self._ordered:
                if not out:     # none stale before it: a calm stretch
                    self.calm_since, self.calm_limit = pi.timestamp, limit
                break           # the later ones entered later still
        return out

    def __delitem__(self, key: str) -> None:
        self.pop(key)

    def interested(self, wants: Callable[[frozenset], bool]) -> list:
        """The waiting pods whose group ``wants(plugins)``, in arrival order."""
        hits = [g for plugins, g in self.groups.items() if wants(plugins)]
        if len(hits) == 1:
            return [self[k] for k in hits[0]]
        return [self[k] for k, _ in sorted(((k, o) for g in hits for k, o in g.items()),
                                           key=lambda ko: ko[1])]


# the dict's own (no ``super()`` object per pod: a pod joins and leaves per failure)
_set, _pop = dict.__setitem__, dict.pop
