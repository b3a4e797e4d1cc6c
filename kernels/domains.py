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
from ._compile import LazyNjit


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


# ---------------------------------------------------------------------------
# Per-node answers from per-domain counts, compiled for the host (the plugins
# run on the host whatever the backend; these are one pass over the nodes
# with no temporaries).  ``domp1`` [N] is a node's domain id plus one (0 =
# the node lacks the key), ``sums`` [D] the per-domain counts.
# ---------------------------------------------------------------------------

def _domain_rule(codes, domp1, sums, thresh, code_absent, code_above, code_not_above):
    """Where codes[i] == 0: code_absent when node i lacks the key, else
    code_above when sums[its domain] > thresh, else code_not_above."""
    for i in range(codes.shape[0]):
        if codes[i] != 0:
            continue
        d = domp1[i]
        if d == 0:
            codes[i] = code_absent
        elif sums[d - 1] > thresh:
            codes[i] = code_above
        else:
            codes[i] = code_not_above


def _add_domain_scores(out, domp1, sums, weight):
    """out[i] += weight * sums[domain of i] (nothing when i lacks the key)."""
    for i in range(out.shape[0]):
        d = domp1[i]
        if d != 0:
            out[i] += weight * sums[d - 1]


def _or_filter_bits(reasons, ok, bit, invalid):
    """reasons[j] |= bit where the plugin rejects j (not on invalid rows)."""
    for j in range(reasons.shape[0]):
        if not ok[j] and reasons[j] != invalid:
            reasons[j] |= bit


def _put_slot(raw, slot, values, reasons):
    """raw[j, slot] = values[j] on feasible rows, 0 elsewhere."""
    for j in range(raw.shape[0]):
        raw[j, slot] = values[j] if reasons[j] == 0 else 0


def _scored_rows(reasons, num_to_find, out):
    """out[j]: feasible and within the rows scanned up to the
    ``num_to_find``-th feasible one (percentageOfNodesToScore)."""
    found = 0
    m = reasons.shape[0]
    stop = m
    for j in range(m):
        if reasons[j] == 0:
            found += 1
            if num_to_find > 0 and found == num_to_find:
                stop = j + 1
                break
    for j in range(m):
        out[j] = j < stop and reasons[j] == 0


def _minmax_normalize(raw, scored, out):
    """``minmax_normalize`` in one pass for the extremes and one to write."""
    lo = 0
    hi = 0
    seen = False
    for j in range(raw.shape[0]):
        if scored[j]:
            v = raw[j]
            if not seen:
                lo = v
                hi = v
                seen = True
            elif v < lo:
                lo = v
            elif v > hi:
                hi = v
    span = hi - lo
    for j in range(raw.shape[0]):
        if not seen or span <= 0 or not scored[j]:
            out[j] = 0
        else:
            out[j] = int(math.trunc(100.0 * (float(raw[j] - lo) / float(span))))


#: the host kernels above, compiled on first use (or by warm()); cached in the
#: __pycache__ next to this file (functions of a real source file that call
#: nothing compiled elsewhere; the exec'd rule modules are cached through
#: kernels/_compile.py)
host = LazyNjit(lambda jit: {n: jit(f) for n, f in (
    ("domain_rule", _domain_rule), ("add_domain_scores", _add_domain_scores),
    ("or_filter_bits", _or_filter_bits), ("put_slot", _put_slot),
    ("scored_rows", _scored_rows), ("minmax_normalize", _minmax_normalize))})
_warmed = False


def warm() -> None:
    """Compile the host kernels now (outside any timed cycle)."""
    global _warmed
    if _warmed:
        return
    i64 = np.zeros(2, np.int64)
    b = np.ones(2, np.bool_)
    ro = i64.copy()                 # the plugins' memoized domain maps are read-only
    ro.flags.writeable = False
    for dom in (i64, ro):
        host.domain_rule(i64.copy(), dom, i64, 0, 1, 2, 0)
        host.add_domain_scores(i64.copy(), dom, i64, 1)
    host.or_filter_bits(i64.copy(), b, 1, 2)
    host.put_slot(np.zeros((2, 2), np.int64), 1, i64, i64)
    host.scored_rows(i64, 1, b.copy())
    host.minmax_normalize(i64, b, i64.copy())
    _warmed = True
    collect_compiler_garbage()


def collect_compiler_garbage() -> None:
    """A full collection after a one-time JIT compile: the compiler leaves
    many cyclic objects behind, which would otherwise bring the next full
    collection (tens of ms on a large cluster state) into a later cycle."""
    import gc
    gc.collect()


def minmax_normalize_host(raw, scored):
    """``minmax_normalize`` on NumPy arrays with the compiled kernel (same
    results: the same float64 operations in the same order)."""
    out = np.empty(raw.shape[0], np.int64)
    host.minmax_normalize(np.ascontiguousarray(raw, dtype=np.int64),
                          np.ascontiguousarray(scored, dtype=np.bool_), out)
    return out


__all__ = [
    "at_domain",
    "collect_compiler_garbage",
    "domain_sums",
    "go_round",
    "host",
    "min_match",
    "minmax_normalize",
    "minmax_normalize_host",
    "np",
    "spread_normalize",
    "spread_skew_fails",
    "topology_weight",
    "value_in",
    "warm",
]
