"""The rows each sync of a victim table wrote, for its followers.

A victim table (``framework.preemption.evaluator.PodTable``) stamps every
row it writes with its sync number (``row_stamp`` [N] int64); a follower
level with sync s (the device mirror's pod and index tables,
``device.DeviceVictims``) needs the rows stamped above s.  A pass over
``row_stamp`` finds them in O(N); ``SyncJournal`` keeps the rows of the
last syncs, so a follower a few syncs behind gets them in O(rows written).
The journal is bounded (``limit`` rows, ``max_syncs`` syncs): the oldest
syncs leave it, and a follower behind what it still holds (``floor``) is
told so (``rows_since`` None) and scans ``row_stamp``.
"""

from __future__ import annotations

from collections import deque

import numpy as np


class SyncJournal:
    """(sync number, rows written [k] int64 ascending) of the last syncs.

    Every sync numbered above ``floor`` is in the journal; ``reset``
    (the table rewritten whole: a new layout, which its followers upload
    whole anyway) empties it."""

    def __init__(self, limit: int = 1 << 16, max_syncs: int = 256):
        self.limit = max(int(limit), 1)             # rows held, all syncs together
        self.max_syncs = max(int(max_syncs), 1)
        self._syncs: deque = deque()                # (stamp, rows), stamps ascending
        self._held = 0                              # rows held
        self.floor = 0

    def reset(self, stamp: int) -> None:
        """Every sync up to ``stamp`` dropped (followers behind it scan)."""
        self._syncs.clear()
        self._held = 0
        self.floor = max(self.floor, int(stamp))

    def add(self, stamp: int, rows: np.ndarray) -> None:
        """Sync ``stamp`` (above every one added) wrote ``rows`` [k] int64."""
        rows = np.asarray(rows, np.int64)
        if rows.shape[0] > self.limit:              # more than the journal holds
            self.reset(stamp)
            return
        self._syncs.append((int(stamp), rows))
        self._held += rows.shape[0]
        while self._held > self.limit or len(self._syncs) > self.max_syncs:
            old, got = self._syncs.popleft()
            self._held -= got.shape[0]
            self.floor = max(self.floor, old)

    def rows_since(self, seen: int) -> np.ndarray | None:
        """[k] int64 ascending, each row once: the rows the syncs after
        ``seen`` wrote; None when the journal no longer holds them all
        (``seen`` below ``floor``).  O(syncs since + rows since)."""
        if seen < self.floor:
            return None
        parts = []
        for stamp, rows in reversed(self._syncs):
            if stamp <= seen:
                break
            parts.append(rows)
        if not parts:
            return np.zeros(0, np.int64)
        if len(parts) == 1:
            return parts[0]
        return np.unique(np.concatenate(parts))
