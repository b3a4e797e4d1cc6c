"""The scheduling queue's backoffQ: pods that failed, waiting out their
backoff (``podInitialBackoffSeconds * 2^(attempts-1)``, capped at
``podMaxBackoffSeconds``, counted from the time the pod was last put
back), as a heap of ``(backoff expiry, seq, key)`` entries."""

from __future__ import annotations

import heapq

from tensorsched.framework.runtime.clock import Clock


class BackoffQueue:
    """backoffQ on ``clock``.  ``token``: the queue's key -> live heap entry
    sequence number, shared with activeQ (a pod has one live entry; the
    others die lazily)."""

    def __init__(self, clock: Clock, token: dict, initial: float, maximum: float):
        self.clock = clock
        self.initial = float(initial)       # seconds
        self.maximum = float(maximum)       # seconds
        self._token = token
        self._heap: list = []
        # the first entry's expiry (inf: none), kept as the heap changes:
        # the flush before every pop reads it instead of calling ``due``
        self.earliest = _NONE_DUE

    def duration(self, pi) -> float:
        """Seconds of backoff after ``pi.attempts`` attempts."""
        d = self.initial
        for _ in range(1, pi.attempts):
            d *= 2
            if d >= self.maximum:
                return self.maximum
        return min(d, self.maximum)

    def expiry(self, pi) -> float:
        """Clock time the pod's backoff ends (its timestamp when never tried)."""
        return pi.timestamp + (self.duration(pi) if pi.attempts else 0.0)

    def backing_off(self, pi) -> bool:
        return pi.attempts > 0 and self.expiry(pi) > self.clock.now()

    def push(self, pi, seq: int) -> None:
        """``pi`` enters backoffQ as entry ``seq`` (the caller made it live)."""
        heap = self._heap
        heapq.heappush(heap, (self.expiry(pi), seq, pi.key))
        self.earliest = heap[0][0]

    def due(self, now: float) -> list[str]:
        """Pop the live entries whose backoff ended by ``now``: their keys,
        in expiry order."""
        heap, token = self._heap, self._token
        out = []
        while heap and heap[0][0] <= now:
            _, seq, key = heapq.heappop(heap)
            if token.get(key) == seq:
                out.append(key)
        self.earliest = heap[0][0] if heap else _NONE_DUE
        return out

    def next_expiry(self) -> float | None:
        """When the first live entry's backoff ends (None: backoffQ empty)."""
        heap, token = self._heap, self._token
        while heap and token.get(heap[0][2]) != heap[0][1]:
            heapq.heappop(heap)
        self.earliest = heap[0][0] if heap else _NONE_DUE
        return heap[0][0] if heap else None


_NONE_DUE = float("inf")
