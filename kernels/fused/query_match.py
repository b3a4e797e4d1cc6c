"""Row caches kept across a recompiled query that compiles to the same arrays.

A compiled query (``layout.PodQuery``) is rebuilt whenever the state's
epoch moves (a node added, updated or removed: ``state.query.QueryCache``),
and the backends' row caches are keyed by the query object, so the first
cycle after any node event recomputed every row.  The per-row pass reads
only the query and the row's own columns, and the state's dictionaries
only append (ids never move), so when the new query holds the same arrays
as a cached one, that cache's rows are still right except the rows written
since it last ran, which the write log names: ``adopt`` hands the cache to
the new query and the usual written-rows update does the rest.  A node
appended in a new row (the row count grows) keeps the rows before it
(``NumbaBackend._row_cache``, ``CudaBackend._cache_of``: the cache grown,
the new row among the written ones), and so do arrays reallocated (a new
layout): a row's answer reads its own values, which reallocation keeps.  A query
that differs in any array (a label value the node event brought, a new
image count, a new taint word) gets no cache: a full pass, as before.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

__all__ = ["adopt", "fingerprint", "same_query"]


def _leaves(q):
    for v in q:
        if isinstance(v, tuple):
            yield from _leaves(v)
        else:
            yield v


def fingerprint(q) -> int:
    """A hash of every field of ``q`` (arrays by dtype, shape and bytes);
    equal queries hash equal.  Costs one pass over the query's arrays."""
    parts = []
    for v in _leaves(q):
        if isinstance(v, np.ndarray):
            parts.append((v.dtype.str, v.shape, v.tobytes()))
        else:
            parts.append(v)
    return hash(tuple(parts))


def same_query(a, b) -> bool:
    """Every field of ``a`` equals ``b``'s (arrays: dtype, shape, values)."""
    la, lb = list(_leaves(a)), list(_leaves(b))
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)
                    and x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y)):
                return False
        elif type(x) is not type(y) or x != y:
            return False
    return True


def adopt(caches: OrderedDict, q, new_key, fits):
    """The cache in ``caches`` (values with ``q``, ``key`` and ``fp``, the
    fingerprint of their ``q``) whose ``key`` passes ``fits`` and whose
    query is ``q`` or equal to it, moved to ``new_key`` and given ``q``;
    None when there is none.  (The caller then brings its written rows up
    to date.)"""
    fp = fingerprint(q)
    for k, c in caches.items():
        if fits(c.key) and c.fp == fp and (c.q is q or same_query(c.q, q)):
            del caches[k]
            c.q = q
            caches[new_key] = c
            return c
    return None
