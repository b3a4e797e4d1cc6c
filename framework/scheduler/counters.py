"""The counters every placement advances, whichever part places the pod (a
cycle, a compiled run, an arrival block), so that they place as one cycle
after another would."""

from __future__ import annotations


class CycleCounters:
    """``attempts``: scheduling attempts so far (the attempt number a
    placement's tie-breaks are seeded with); ``next_start_index``: the node
    the next cycle starts scanning from (upstream's nextStartNodeIndex:
    after each cycle it advances by the number of nodes processed)."""

    __slots__ = ("attempts", "next_start_index")

    def __init__(self) -> None:
        self.attempts = 0
        self.next_start_index = 0
