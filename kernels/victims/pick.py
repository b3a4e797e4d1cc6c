"""DryRunPreemption's visit and pickOneNodeForPreemption over the victim
search's statistics, as array code (the host twin of ``_pick_cuda``).

Input: ``stats`` [M, 7] int64 (``search.STAT_*`` columns) of the nodes in
visiting order, and ``cap`` (numCandidates).  Upstream visits node after
node and keeps two candidate lists, non-violating and violating (PDB), each
at most ``cap`` long; it stops after the first position where the
non-violating list is not empty and the two lists hold ``cap`` candidates
together.  Position j is a candidate when its code is 0; it is listed when
it is among the first ``cap`` of its kind.  The chosen candidate is the
first listed one in ``_core.ranks_before`` order.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .search import STAT_CODE, STAT_FILTER_CALLS, STAT_N_VIOLATIONS

__all__ = ["Pick", "listed", "pick", "stop_position", "visit_and_pick"]


class Pick(NamedTuple):
    """visited: positions visited (a prefix of the order); calls: Filter calls
    made on them; chosen: the chosen position (-1: no candidate)."""

    visited: int
    calls: int
    chosen: int


def _kinds(stats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """([M] bool non-violating candidate, [M] bool violating candidate)."""
    cand = stats[:, STAT_CODE] == 0
    viol = stats[:, STAT_N_VIOLATIONS] > 0
    return cand & ~viol, cand & viol


def stop_position(stats: np.ndarray, cap: int) -> int:
    """The position after which upstream's visit stops, -1 when it does not."""
    nv, v = _kinds(stats)
    a = np.minimum(np.cumsum(nv), cap)
    b = np.minimum(np.cumsum(v), cap)
    hit = np.flatnonzero((a >= 1) & (a + b >= cap))
    return int(hit[0]) if hit.shape[0] else -1


def listed(stats: np.ndarray, cap: int) -> np.ndarray:
    """[M] bool: the positions in upstream's candidate lists (each list's
    first ``cap``); ``stats`` holds the visited positions only."""
    nv, v = _kinds(stats)
    return (nv & (np.cumsum(nv) <= cap)) | (v & (np.cumsum(v) <= cap))


def pick(stats: np.ndarray, mask: np.ndarray) -> int:
    """The first of the positions ``mask`` in ``_core.ranks_before`` order, -1
    when there is none."""
    pos = np.flatnonzero(mask)
    if pos.shape[0] == 0:
        return -1
    s = stats[pos]
    # lexsort: last key first; later earliest start wins, position last.
    order = np.lexsort((pos, -s[:, 6], s[:, 1], s[:, 5], s[:, 4], s[:, 2]))
    return int(pos[order[0]])


def visit_and_pick(stats: np.ndarray, cap: int) -> Pick:
    """The visit over ``stats`` (every node of the order searched) and the
    chosen candidate."""
    m = stats.shape[0]
    stop = stop_position(stats, cap)
    visited = stop + 1 if stop >= 0 else m
    seen = stats[:visited]
    calls = int(seen[:, STAT_FILTER_CALLS].sum())
    return Pick(visited, calls, pick(seen, listed(seen, cap)))
