"""Which pod a departure belongs to.

Kubernetes ties a pod's lifetime to the pod object (its UID), not to its
name: a pod deleted and created again under the same name is another pod,
and a departure scheduled for the first one must not remove the second.
A departure carries the serial of the pod it was scheduled for; the serial
is given to a pod key when its first departure is scheduled and ends when
that pod leaves or another pod arrives under the key, so a departure that
outlived its pod finds another serial (or none) and does nothing.  Only
pods with a departure ahead hold a serial: memory follows the agenda."""

from __future__ import annotations

from collections.abc import Iterable


class Lifetimes:
    """Serials of the pods (``namespace/name``) with a departure ahead."""

    def __init__(self) -> None:
        self._last = 0
        self._serial: dict[str, int] = {}

    def arrived(self, key: str) -> None:
        """Pod ``key`` arrived: a departure of an earlier pod of that name
        no longer applies."""
        if self._serial:
            self._serial.pop(key, None)

    def arrived_all(self, keys: Iterable[str]) -> None:
        """``arrived`` for each of ``keys``."""
        serial = self._serial
        if serial:
            for key in keys:
                serial.pop(key, None)

    def of(self, key: str) -> int:
        """The serial a departure of the pod now under ``key`` carries (the
        same for each departure of that pod)."""
        s = self._serial.get(key)
        if s is None:
            self._last += 1
            s = self._serial[key] = self._last
        return s

    def current(self, key: str, serial: int) -> bool:
        """Whether a departure carrying ``serial`` is the pod now under ``key``'s."""
        return self._serial.get(key) == serial

    def ended(self, key: str) -> None:
        """Pod ``key`` left (departed, deleted, evicted)."""
        self._serial.pop(key, None)

    def __len__(self) -> int:
        return len(self._serial)
