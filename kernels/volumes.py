"""PersistentVolume matching for every node at once (VolumeBinding).

A pod's unbound claims, taken in order (smallest request first), each take
the smallest fitting volume a node can reach, a volume chosen for an earlier
claim of the pod on that node being out of reach for the later ones
(upstream's ``FindMatchingVolume`` with its excluded volumes, one node at a
time).  Here the answer for all nodes is one array pass per claim.

Axes: C claims, P candidate volumes, M nodes.
"""

from __future__ import annotations

import numpy as np


def match_claims(fits: np.ndarray, prebound: np.ndarray, affinity: np.ndarray) -> np.ndarray:
    """[C, M] int64: the volume each claim takes on each node, -1 none.

    fits [C, P] bool: claim c may take volume p on a node that satisfies its
      node affinity (class, size, volume mode, phase, selector, access modes,
      not reserved for another claim).  Volumes must be sorted by capacity
      ascending (ties in a fixed order): the first fitting one is the
      smallest.
    prebound [C] int64: the volume pre-bound to claim c (its claimRef names
      the claim), -1 none.  Where it is not taken yet it decides alone: the
      claim gets it on nodes its affinity allows and nothing elsewhere.
    affinity [P, M] bool: volume p's node affinity holds on node m.
    """
    c_n, p_n = fits.shape
    m = affinity.shape[1]
    chosen = np.full((c_n, m), -1, np.int64)
    taken = np.zeros((p_n, m), np.bool_)
    cols = np.arange(m)
    for c in range(c_n):
        cand = fits[c][:, None] & affinity & ~taken
        pick = np.where(cand.any(axis=0), cand.argmax(axis=0), -1) if p_n else chosen[c]
        p = int(prebound[c])
        if p >= 0:
            free = ~taken[p]
            pick = np.where(free, np.where(affinity[p], p, -1), pick)
        chosen[c] = pick
        got = pick >= 0
        taken[pick[got], cols[got]] = True
    return chosen


def first_true(mask: np.ndarray) -> np.ndarray:
    """[M] int64: per column of mask [K, M] the first row that is True, -1 none."""
    if mask.shape[0] == 0:
        return np.full(mask.shape[1], -1, np.int64)
    return np.where(mask.any(axis=0), mask.argmax(axis=0), -1).astype(np.int64)
