"""Clocks the scheduler reads time from.

Every time the scheduling queue, the permit timeouts, the assumed-pod TTL
and the end-to-end latencies use comes from a ``Clock`` the caller
controls, so a run is reproducible: ``SimulatedClock`` (the default) only
moves when told to (``advance`` / ``set``); ``MonotonicClock`` follows the
host's monotonic clock for a scheduler embedded in real time.
"""

from __future__ import annotations

import time


class Clock:
    """Seconds as a float; subclasses implement ``now``."""

    def now(self) -> float:   # pragma: no cover - interface
        raise NotImplementedError

    def advance(self, seconds: float) -> None:
        raise TypeError(f"{type(self).__name__} cannot be advanced")

    @property
    def simulated(self) -> bool:
        return False


class SimulatedClock(Clock):
    """A clock that stands still until ``advance``d (never backwards)."""

    def __init__(self, start: float = 0.0):
        self._now = float(start)

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"cannot advance a clock by {seconds} seconds")
        self._now += float(seconds)

    def set(self, t: float) -> None:
        if t < self._now:
            raise ValueError(f"cannot move the clock back from {self._now} to {t}")
        self._now = float(t)

    @property
    def simulated(self) -> bool:
        return True


class MonotonicClock(Clock):
    """The host's monotonic clock (``time.monotonic``)."""

    def now(self) -> float:
        return time.monotonic()
