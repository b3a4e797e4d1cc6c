"""The simulation's pending events: a heap of ``(time, priority, counter,
kind, payload)`` (SimPy's layout).  At equal times departures and deletions
(``PRIO_LEAVE``) go before node changes (``PRIO_NODE``) and arrivals
(``PRIO_ARRIVE``), and ties are first-in first-out by the counter, so the
order is a pure function of what was pushed."""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator

PRIO_LEAVE, PRIO_NODE, PRIO_ARRIVE = 0, 1, 2


class Agenda:
    """Events due at simulated times (seconds), earliest first."""

    def __init__(self) -> None:
        self._heap: list = []
        self._counter = 0

    def push(self, t: float, prio: int, kind: str, payload) -> None:
        """Add event ``kind`` with ``payload`` at time ``t`` (seconds)."""
        self._counter += 1
        heapq.heappush(self._heap, (float(t), prio, self._counter, kind, payload))

    def __len__(self) -> int:
        return len(self._heap)

    def next_time(self) -> float:
        """Time of the earliest event (inf when none)."""
        return self._heap[0][0] if self._heap else math.inf

    def head(self) -> tuple:
        """``(time, kind, payload)`` of the earliest event (there is one)."""
        t, _, _, kind, payload = self._heap[0]
        return t, kind, payload

    def later_time(self) -> float:
        """Time of the earliest event after the head (inf when none): the
        head's heap children hold it."""
        heap = self._heap
        return min(heap[1][0] if len(heap) > 1 else math.inf,
                   heap[2][0] if len(heap) > 2 else math.inf)

    def pop(self) -> tuple:
        """Remove the earliest event; ``(kind, payload)``."""
        _t, _p, _c, kind, payload = heapq.heappop(self._heap)
        return kind, payload

    def pop_entry(self) -> tuple:
        """Remove the earliest event; its whole entry, for ``put_back``."""
        return heapq.heappop(self._heap)

    def put_back(self, entry: tuple) -> None:
        """An entry ``pop_entry`` removed, back in its place (an event that
        failed to apply stays due, in the order it had)."""
        heapq.heappush(self._heap, entry)

    def __iter__(self) -> Iterator[tuple]:
        """``(time, kind, payload)`` of every pending event, in no order."""
        for t, _, _, kind, payload in self._heap:
            yield t, kind, payload
