"""The scheduling queue's activeQ: a heap of ``(sort key, seq, key)``
entries and, beside it, the lane blocks of pods added together
(``queue_lane``); its head is the smallest of the heads.

An entry is live while the queue's token for its key is its ``seq`` (a pod
has one live entry; the others die lazily, dropped when they reach a
head).  A lane position is live while its key still maps to the block in
the queue's ``infos`` or, once the pod has an info, while its token is the
position's ``seq``."""

from __future__ import annotations

import heapq

from .queue_lane import QueueLane


class ActiveQueue:
    """activeQ's entries.  ``infos`` and ``token`` are the queue's (key ->
    QueuedPodInfo or QueueLane; key -> live entry seq): this class reads
    them to tell live entries from dead ones and never writes them."""

    def __init__(self, infos: dict, token: dict):
        self.heap: list = []
        self.lane: list[QueueLane] = []
        self._infos = infos
        self._token = token

    def push(self, entry: tuple) -> None:
        """A ``(sort key, seq, key)`` entry into the heap."""
        heapq.heappush(self.heap, entry)

    def add_block(self, block: QueueLane) -> None:
        self.lane.append(block)

    def head(self) -> tuple:
        """The smallest live entry (dead ones are dropped on the way) and
        the lane block it heads (None: the heap); (None, None) when empty."""
        h = self.heap_head() if self.heap else None
        e, b = self._lane_head() if self.lane else (None, None)
        if e is not None and (h is None or e < h):
            return e, b
        return h, None

    def heap_head(self):
        """The heap's smallest live entry (dead ones dropped), or None."""
        aq, token = self.heap, self._token
        while aq and token.get(aq[0][2]) != aq[0][1]:
            heapq.heappop(aq)
        return aq[0] if aq else None

    def bound_besides(self, block: QueueLane):
        """The smallest head other than ``block``'s (the heap's and the
        other blocks' next positions), or None."""
        others = [self.heap_head()]
        others += [o.entry(o.pos) for o in self.lane if o is not block and o.pos < len(o)]
        return min((o for o in others if o is not None), default=None)

    def take(self, entry: tuple, block: QueueLane | None) -> None:
        """Remove the head ``entry`` (of ``block``, or of the heap)."""
        if block is None:
            heapq.heappop(self.heap)
        else:
            block.pos = entry[1] - block.seq0 + 1

    def put_back(self, block: QueueLane, pos: int) -> None:
        """``block``'s positions from ``pos`` on are heads again."""
        block.pos = pos
        if block not in self.lane:
            self.lane.append(block)

    def _live(self, b: QueueLane, i: int) -> bool:
        k = b.keys[i]
        v = self._infos.get(k)
        return v is b or (v is not None and self._token.get(k) == b.seq0 + i)

    def _lane_head(self) -> tuple:
        """(entry, block) of the smallest live lane position, dead positions
        and spent blocks dropped on the way; (None, None) when none."""
        best = best_b = None
        lane = self.lane
        infos, token = self._infos, self._token
        spent = False
        # the lane itself, not a copy of it per pop: spent blocks are
        # dropped after the walk
        for b in lane:
            keys = b.keys
            i, n, seq0 = b.pos, len(keys), b.seq0
            while i < n:            # ``_live``, inline: asked per pop
                v = infos.get(keys[i])
                if v is b or (v is not None and token.get(keys[i]) == seq0 + i):
                    break
                i += 1
            b.pos = i
            if i == n:
                spent = True
                continue
            e = b.entry(i)
            if best is None or e < best:
                best, best_b = e, b
        if spent:
            lane[:] = [b for b in lane if b.pos < len(b.keys)]
        return best, best_b
