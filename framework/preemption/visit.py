"""DryRunPreemption and pickOneNodeForPreemption in compiled passes over the
victim table (``kernels.victims.on_counts``): the nodes are searched in
visiting order, batch after batch, until upstream's visit stops, and the
chosen candidate is kept on the way; nothing per node is built in Python.

Used for every preemptor on the numba backend whose host filters are none,
or PodTopologySpread and/or InterPodAffinity only (searched on counts,
``HostVictimSearch.counts``).  Same candidate, victims, Filter calls and
failure codes as the search-then-pick path (``evaluator._candidates`` with
``every``, the oracle of ``tests/framework/preemption/test_visit.py``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tensorsched.kernels.victims import on_counts as VS
from tensorsched.kernels.victims import search as V


class Visited(NamedTuple):
    """chosen: the chosen candidate's visit position (-1: none); row, stats
    [7] and victim slots of it; calls: Filter calls made; failures: (row,
    code) of every visited position when there is no candidate (code:
    reason bits, a kernel code, or a host filter's reasons)."""

    chosen: int
    row: int
    stats: np.ndarray
    victims: np.ndarray
    calls: int
    failures: list


def _builtin_answer(kind: int, bits: int):
    if kind == VS.KIND_NO_VICTIMS:
        return V.CODE_NO_VICTIMS
    if kind == VS.KIND_NONE_LEFT:
        return V.CODE_NONE_LEFT
    return bits


def _next_batch(state, pos: int, cap: int) -> int:
    """How many positions to search next: numCandidates at first, then what
    the candidates found so far per position visited say the lists still
    need, with a margin (each batch's per-node inputs cost their rows
    whether visited or not, and each batch a fixed set-up).  Lists full of
    violating candidates (every one breaks a PodDisruptionBudget) stop at
    the first non-violating one, at a rate nothing seen foretells: the
    batches double (O(log n) of them, not n / 64, over a cluster where
    none is found and every node is visited)."""
    if pos == 0:
        return max(cap, 64)
    listed = int(state.vs[0] + state.vs[1])
    if listed >= cap:       # (so none is non-violating: the visit would have stopped)
        return max(64, pos)
    need = max(cap - listed, 1)
    rate = max(listed, 1) / pos
    return max(64, int(need / rate * 1.15) + 16)


def visit_candidates(cols, q, prio: int, pods: V.VictimPods, order: np.ndarray,
                     scan: np.ndarray, cap: int, search=None, any_pdb: bool = True,
                     alike_from: np.ndarray | None = None) -> Visited:
    """The visit over ``scan`` [n] (node rows, visiting order) with
    numCandidates ``cap``; ``search`` a ``HostVictimSearch`` on counts, or
    None for the built-in filters only; ``any_pdb`` False when there is no
    PodDisruptionBudget; ``order`` / ``alike_from`` the victim table's
    importance order and alike tails (``PodTable``)."""
    pods = V.fit_pods(cols, pods)
    q = V.pad_query(cols, q)
    n = scan.shape[0]
    state = VS.VisitState(cap, pods.pod_prio.shape[1])
    parts = []
    pos = 0
    while pos < n and not state.stopped:
        rows = scan[pos: pos + _next_batch(state, pos, cap)]
        if search is None:
            got = VS.visit(cols, q, prio, pods, order, rows, pos, state, any_pdb=any_pdb,
                           alike_from=alike_from)
        else:
            got = search.visit(rows, pos, state, any_pdb=any_pdb)
        parts.append((rows, got))
        pos += rows.shape[0]
    best = state.chosen
    if best >= 0:
        return Visited(best, int(scan[best]), state.best_stats.copy(), state.victims(),
                       state.calls, [])
    answer = _builtin_answer if search is None else search.answer
    failures = [(row, answer(k, code))
                for rows, got in parts
                for row, k, code in zip(rows.tolist(), got.kind.tolist(),
                                        got.stats[:, V.STAT_CODE].tolist())]
    return Visited(-1, -1, np.zeros(V.N_STATS, np.int64), np.zeros(0, np.int64),
                   state.calls, failures)
