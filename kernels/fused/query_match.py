"""Row caches kept across a recompiled query.

A compiled query (``layout.PodQuery``) is rebuilt whenever the state's
epoch moves (a node added, updated or removed: ``state.query.QueryCache``),
and the backends' row caches are keyed by the query object, so the first
cycle after any node event recomputed every row.  The per-row pass reads
only the query and the row's own columns, and the state's dictionaries
only append (ids never move), so a cache's rows are still right for the
new query except the rows written since it last ran, which the write log
names, and the rows whose own values meet a part of the query that
changed (``changed_rows``): ``adopt`` hands the cache to the new query with
those rows, and the usual written-rows update recomputes both.

What a node event changes in a query, and which rows it moves
(``changed_rows``; every other field must be equal, else no cache):

- label programs: a value first seen now gets an id that ``vals`` now
  names, a key first seen now replaces -1 in ``req_key``.  Only rows
  carrying that value (that key) can answer differently; when the id is
  new those are rows the event wrote.
- ``taint_reject``/``taint_prefer``/``port_conflicts``: a new table entry
  adds a bit (and maybe a word).  Only rows carrying a changed bit move.
- ``image_entries``/``image_scaled`` (ImageLocality): a node gaining or
  losing an image changes that image's spread, and a node added or
  removed changes every image's spread (it divides by the node count), so
  every row holding an entry whose summed weight changed moves: those
  rows, found from ``image_bits``, not every row.
- ``request``/``fit_ignored``: a resource first seen now appends a column;
  where the pod requests 0 of it (with Fit enabled a requested resource
  has its column from the pod's compilation) no row moves.  A non-zero
  entry, or a resource the Fit or BalancedAllocation options name first
  seen (``fit_res``/``bal_res`` change: another form): no cache, a full
  pass.
- ``node_name_row``: the named node added or removed moves its row (old
  and new row) only.

A node appended in a new row (the row count grows) keeps the rows before
it (``NumbaBackend._row_cache``, ``CudaBackend._cache_of``: the cache
grown, the new row among the written ones), and so do arrays reallocated
(a new layout): a row's answer reads its own values, which reallocation
keeps.  A cache whose query differs is taken only from a query no longer
handed out (last run in an earlier epoch of the source: two live queries
of one form would otherwise take one cache from each other every cycle).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

__all__ = ["adopt", "changed_rows", "fingerprint", "form_fingerprint", "same_query",
           "source_epoch"]

# The fields a node event may change (``changed_rows`` compares them);
# every other field must be equal for a cache to be kept.
_LOCAL_FIELDS = frozenset({"request", "fit_ignored", "node_name_row", "taint_reject",
                           "taint_prefer", "port_conflicts", "image_entries",
                           "image_scaled"})
_LOCAL_PROGRAM_FIELDS = frozenset({"req_key", "val_offsets", "vals"})


def _leaves(q):
    for v in q:
        if isinstance(v, tuple):
            yield from _leaves(v)
        else:
            yield v


def _part(v):
    if isinstance(v, np.ndarray):
        return (v.dtype.str, v.shape, v.tobytes())
    return v


def fingerprint(q) -> int:
    """A hash of every field of ``q`` (arrays by dtype, shape and bytes);
    equal queries hash equal.  Costs one pass over the query's arrays."""
    return hash(tuple(_part(v) for v in _leaves(q)))


def form_fingerprint(q) -> int:
    """A hash of the fields of ``q`` a node event cannot change (all but
    those ``changed_rows`` compares): queries that may share a cache hash
    equal."""
    parts = []
    for name, v in zip(q._fields, q):
        if name in _LOCAL_FIELDS:
            continue
        if name == "programs":
            parts.extend(_part(x) for f, x in zip(v._fields, v)
                         if f not in _LOCAL_PROGRAM_FIELDS)
        else:
            parts.append(_part(v))
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


def _bits_changed(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The bits set in one of two bitsets ([W1], [W2] int64) and not the
    other, over the longer width."""
    if old.shape == new.shape and np.array_equal(old, new):
        return old[:0]
    w = max(old.shape[0], new.shape[0])
    out = np.zeros(w, np.int64)
    out[:old.shape[0]] ^= old
    out[:new.shape[0]] ^= new
    return out


def _carry_bits(bits: np.ndarray, mask: np.ndarray, moved: np.ndarray) -> None:
    """Mark in ``moved`` [n] the rows of the bitset column ``bits`` [n, W]
    sharing a bit with ``mask`` (bits beyond the column's width: no row
    carries them), a word at a time over the mask's non-zero words."""
    for w in np.flatnonzero(mask[:bits.shape[1]]).tolist():
        moved |= (bits[:, w] & mask[w]) != 0


def _image_weights(q) -> dict:
    """Image table entry -> the sum of its scaled sizes in ``q`` (an image
    named by two containers counts twice)."""
    out: dict = {}
    for e, s in zip(q.image_entries.tolist(), q.image_scaled.tolist()):
        out[e] = out.get(e, 0) + s
    return out


def _label_rows(old, new, lv: np.ndarray, moved: np.ndarray) -> bool:
    """Mark in ``moved`` the rows whose labels (``lv`` [n, K] value ids)
    meet a requirement that differs between the programs of ``old`` and
    ``new`` (same form: the same requirements in the same order); False
    when a requirement changed in a way no row set bounds (a key replaced
    by another)."""
    po, pn = old.programs, new.programs
    for r in range(po.req_key.shape[0]):
        ko, kn = int(po.req_key[r]), int(pn.req_key[r])
        vo = po.vals[po.val_offsets[r]:po.val_offsets[r + 1]]
        vn = pn.vals[pn.val_offsets[r]:pn.val_offsets[r + 1]]
        if ko == kn:
            if ko < 0 or (vo.shape == vn.shape and np.array_equal(vo, vn)):
                continue
            # a value named by one and not the other: only rows carrying it
            col = lv[:, ko]
            for v in np.setxor1d(vo, vn).tolist():
                moved |= col == v
        elif ko < 0 and kn < lv.shape[1]:
            # the key first seen now (the kernels read -1 as "absent",
            # which every row without it still is)
            moved |= lv[:, kn] >= 0
        else:
            return False
    return True


def changed_rows(old, new, cols, n: int) -> np.ndarray | None:
    """The rows among the first ``n`` of ``cols`` (``layout.NodeColumns``)
    whose filter reasons or raw scores may differ between queries ``old``
    and ``new`` of the same form (``form_fingerprint``), ascending [k]
    int64; None when they differ in a way that is not bounded by rows
    (module doc).  Exact for rows whose columns are as they were when
    ``old`` last ran: those are the ones this spares."""
    ro, rn = old.request, new.request
    m = ro.shape[0]
    if (rn.shape[0] < m or not np.array_equal(rn[:m], ro) or rn[m:].any()
            or old.fit_ignored.shape[0] != m or new.fit_ignored.shape[0] != rn.shape[0]
            or not np.array_equal(new.fit_ignored[:m], old.fit_ignored)):
        return None
    moved = np.zeros(n, np.bool_)
    if not _label_rows(old, new, cols.label_vals[:n], moved):
        return None
    taints = cols.taint_bits[:n]
    _carry_bits(taints, _bits_changed(old.taint_reject, new.taint_reject), moved)
    _carry_bits(taints, _bits_changed(old.taint_prefer, new.taint_prefer), moved)
    _carry_bits(cols.port_bits[:n], _bits_changed(old.port_conflicts, new.port_conflicts),
                moved)
    wo, wn = _image_weights(old), _image_weights(new)
    images = [e for e in set(wo) | set(wn) if wo.get(e, 0) != wn.get(e, 0)]
    if images:
        mask = np.zeros(cols.image_bits.shape[1], np.int64)
        for e in images:
            if (e >> 6) < mask.shape[0]:
                mask[e >> 6] |= np.int64(1) << np.int64(e & 63)
        _carry_bits(cols.image_bits[:n], mask, moved)
    if old.node_name_row != new.node_name_row:
        if old.node_name_row == -1 or new.node_name_row == -1:
            return None
        for r in (old.node_name_row, new.node_name_row):
            if 0 <= r < n:
                moved[r] = True
    return np.flatnonzero(moved).astype(np.int64)


# At most this many caches of the same form are compared (``changed_rows``
# costs a few passes over single columns), the most recently run first.
FORM_TRIES = 4


def adopt(caches: OrderedDict, q, new_key, fits, cols, n: int, epoch):
    """(cache, rows): a cache in ``caches`` (least recently run first;
    values with ``q``, ``key``, ``fp``, ``ffp``: the ``fingerprint`` and
    ``form_fingerprint`` of their ``q``, and ``epoch``: the source's query
    epoch when they last ran) whose ``key`` passes ``fits``, moved to
    ``new_key`` and given ``q``:

    - one whose query is ``q`` or equal to it (rows: none);
    - else one of the same form last run in an epoch other than ``epoch``
      (its query is no longer handed out: a cache another live query uses
      is not taken from it), of the ``FORM_TRIES`` most recently run the
      one whose ``changed_rows`` against ``q`` over the first ``n`` rows of
      ``cols`` are fewest, if fewer than ``n`` (rows: those).  ``epoch``
      None (a source that does not say): none.

    (None, None) when there is none.  The caller recomputes the rows
    written since the cache last ran and ``rows``."""
    fp = fingerprint(q)
    best, best_rows = None, None
    for k, c in caches.items():
        if fits(c.key) and c.fp == fp and (c.q is q or same_query(c.q, q)):
            best, best_rows = k, np.zeros(0, np.int64)
            break
    if best is None and epoch is not None:
        ffp = form_fingerprint(q)
        tries = 0
        for k, c in reversed(caches.items()):
            if c.ffp != ffp or c.epoch == epoch or not fits(c.key):
                continue
            rows = changed_rows(c.q, q, cols, n)
            if rows is not None and rows.shape[0] < n and (
                    best_rows is None or rows.shape[0] < best_rows.shape[0]):
                best, best_rows = k, rows
            tries += 1
            if tries == FORM_TRIES:
                break
    if best is None:
        return None, None
    c = caches.pop(best)
    c.q = q
    c.fp = fp
    caches[new_key] = c
    return c, best_rows


def source_epoch(source):
    """The epoch in which ``source`` hands out compiled queries (a query
    compiled in another is no longer handed out: ``state.query.state_epoch``),
    or None when the source does not say (no ``epoch``)."""
    e = getattr(source, "epoch", None)
    return None if e is None else (e, source.layout_version)
