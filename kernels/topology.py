"""Pod counts per topology domain, and the per-node answers that follow.

Pure array code on an array namespace ``xp`` (NumPy or CuPy): no pods, no
selectors.  The caller supplies, per node row, how many pods match some
selector (``node_counts``, kept incrementally by the framework) and the
node's domain id under one topology key (``dom``: the label value id, -1
when the node lacks the key); these functions segment-sum nodes into
domains and read each evaluated node's domain back.

Domain ids are dense per key (dictionary-encoded labels), so a domain table
is a plain [D] array indexed by value id.
"""

from __future__ import annotations

import math

import numpy as np

from ._backend import array_namespace


def domain_sums(dom, weights, include, n_domains: int, *, xp=None):
    """Segment sums of ``weights`` by domain over included nodes.

    dom [N] int (value id, -1 absent), weights [N] int64, include [N] bool.
    Returns (sums [D] int64, present [D] bool): ``present[d]`` when some
    included node is in domain d (even with weight 0)."""
    xp = xp or array_namespace(dom)
    m = include & (dom >= 0)
    d = dom[m].astype(xp.int64)
    n = max(int(n_domains), 1)
    present = xp.bincount(d, minlength=n) > 0
    w = weights[m]
    if w.shape[0] == 0:
        return xp.zeros(n, dtype=xp.int64), present
    # Exact in float64 for any realistic count (< 2**53).
    sums = xp.rint(xp.bincount(d, weights=w.astype(xp.float64), minlength=n)).astype(xp.int64)
    return sums, present


def at_domain(table, dom, *, xp=None):
    """table[dom] where dom >= 0, else 0 ([M] int64)."""
    xp = xp or array_namespace(dom)
    ok = dom >= 0
    return xp.where(ok, table[xp.where(ok, dom, 0)], 0)


def min_match(sums, present, min_domains: int) -> int:
    """PodTopologySpread's global minimum: the least count over present
    domains, or 0 when fewer than ``min_domains`` domains are present."""
    n = int(present.sum())
    if n < min_domains or n == 0:
        return 0
    return int(sums[present].min())


def spread_skew_fails(dom, sums, self_match: int, global_min: int, max_skew: int, *, xp=None):
    """[M] bool: matching pods in the node's domain + self - minimum > maxSkew
    (rows without the key are reported separately by the caller)."""
    return at_domain(sums, dom, xp=xp) + int(self_match) - int(global_min) > int(max_skew)


def topology_weight(size: int) -> float:
    """log(size + 2): how much one pod counts in a topology of ``size`` domains."""
    return math.log(float(size + 2))


def go_round(x, *, xp=None):
    """Go's math.Round (half away from zero) on a float64 array."""
    xp = xp or array_namespace(x)
    t = xp.trunc(x)
    frac = x - t
    return (t + xp.where(xp.abs(frac) >= 0.5, xp.sign(x), 0.0)).astype(xp.int64)


def spread_normalize(raw, counted, *, xp=None):
    """PodTopologySpread's NormalizeScore over scored rows: ``counted`` rows
    (not ignored) map to 100 * (max + min - s) / max, 100 when max is 0;
    the others get 0."""
    xp = xp or array_namespace(raw)
    if not bool(counted.any()):
        return xp.zeros(raw.shape[0], dtype=xp.int64)
    lo = int(raw[counted].min())
    hi = int(raw[counted].max())
    if hi == 0:
        return xp.where(counted, 100, 0).astype(xp.int64)
    return xp.where(counted, (100 * (hi + lo - raw)) // hi, 0).astype(xp.int64)


def minmax_normalize(raw, scored, *, xp=None):
    """InterPodAffinity's NormalizeScore: int64(100 * (s - min) / (max - min))
    over scored rows (0 everywhere when max == min)."""
    xp = xp or array_namespace(raw)
    out = xp.zeros(raw.shape[0], dtype=xp.int64)
    if not bool(scored.any()):
        return out
    lo = int(raw[scored].min())
    hi = int(raw[scored].max())
    if hi - lo <= 0:
        return out
    f = 100.0 * ((raw - lo).astype(xp.float64) / float(hi - lo))
    return xp.where(scored, xp.trunc(f).astype(xp.int64), 0)


def value_in(dom, values, *, xp=None):
    """[M] bool: the node's domain id is one of ``values`` ([V] int)."""
    xp = xp or array_namespace(dom)
    if values.shape[0] == 0:
        return xp.zeros(dom.shape[0], dtype=bool)
    return (dom >= 0) & xp.isin(dom, values)


__all__ = ["domain_sums", "at_domain", "min_match", "spread_skew_fails", "topology_weight",
           "go_round", "spread_normalize", "minmax_normalize", "value_in", "np"]
