"""The seeded tie rule: which of the top-scored nodes a cycle takes.

kube-scheduler picks uniformly at random among the nodes that share the
highest total score (``selectHost``, reservoir sampling over the scored
list).  tensorsched replaces the draw by a seeded rank that a sort can
express: every node carries ``tie_rank(seed_mix, row, pods)``; among the
top-scored nodes the cycle takes the node with the fewest pods, among
those the highest seeded hash of (seed, row, pods), and the lower row on
an equal rank.  So the order of candidates is the plain order of
``(total, rank)`` keys, descending, and

* a run of alike pods is one sort of per-node keys;
* the answer does not depend on the order nodes are evaluated in, nor on
  how pods were grouped into runs or cycles: every backend, batching on or
  off, gives the same placements;
* alike pods spread over equally good nodes (in a seeded order, a round
  over them before any takes a second pod), where a rank of (row, pods)
  alone would keep taking the node just placed on: a fresh hash beats the
  others' ranks, which are what lost the earlier draws.

A policy that chooses at random on purpose (openb's Random: one feasible
node uniformly at random per pod) draws with ``draw_index`` itself and
does not rely on ties.

``tie_rank`` is written once, in ``_core`` (compiled for njit and
cuda.jit alike); this module is its NumPy twin and the helpers the host
side uses.  Keys: ``total << TIE_RANK_BITS | rank`` for a feasible node
(``total`` < 2**32: at most 100 x the profile's summed score weights),
-1 for an infeasible one.
"""

from __future__ import annotations

import numpy as np

TIE_RANK_BITS = 31
HASH_BITS = 20                  # a rank's hash bits, below the pod-count bits
MAX_PODS_RANKED = 2047          # 11 bits: nodes with more pods rank alike
SEED_GOLDEN = 0x9E3779B97F4A7C15
ROW_MIX = 0xD1B54A32D192ED03
_MASK64 = (1 << 64) - 1


def seed_mix(seed: int) -> int:
    """The kernels' form of a scheduler seed: seed x golden ratio mod 2**64."""
    return (int(seed) * SEED_GOLDEN) & _MASK64


def tie_ranks(mix: int, rows: np.ndarray, pods: np.ndarray) -> np.ndarray:
    """[n] int64 ranks in [0, 2**31) of nodes ``rows`` [n] holding ``pods``
    [n] pods each (``_core.tie_rank`` over arrays; ``mix`` = ``seed_mix``):
    ``(2047 - min(pods, 2047)) << 20`` plus the top 20 bits of a splitmix64
    hash of (seed, row, pods)."""
    r = np.asarray(rows).astype(np.uint64)
    p = np.asarray(pods).astype(np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(mix) + r * np.uint64(ROW_MIX) + p * np.uint64(SEED_GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    few = (MAX_PODS_RANKED - np.minimum(p, MAX_PODS_RANKED)).astype(np.int64)
    return (few << HASH_BITS) | (z >> np.uint64(64 - HASH_BITS)).astype(np.int64)


def draw_index(seed: int, attempt: int, n: int) -> int:
    """``_core.draw_index`` on the host: which of ``n`` candidates (in
    evaluation order) a seeded uniform draw of attempt ``attempt`` takes."""
    z = (seed_mix(seed) + int(attempt) + SEED_GOLDEN) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    z ^= z >> 31
    return z % int(n)


def pick_tied(mix: int, rows: np.ndarray, pods: np.ndarray) -> int:
    """Index into ``rows`` [n >= 1] (nodes sharing the top total, ``pods``
    [n] pods on each) of the node the tie rule takes: the highest rank, the
    lowest row on an equal rank."""
    ranks = tie_ranks(mix, rows, pods)
    top = ranks == ranks.max()
    cand = np.flatnonzero(top)
    if cand.shape[0] == 1:
        return int(cand[0])
    return int(cand[np.argmin(np.asarray(rows)[cand])])
