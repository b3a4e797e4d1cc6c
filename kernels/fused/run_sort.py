"""A run of alike pods placed by one sort: the sort path.

When every active score of a run is node-local (its raw value on a node
depends only on that node's columns and the run's pods) and every node is
scored, the one-pod-after-another greedy has a closed form.  Write, for
every node n and every k < J_n (how many pods of the run the node can
still take), the order key the (k+1)-th pod of the run would see on n
after k of them landed there:

    K_n(k) = tie_key(total score of n with k run pods added,
                     tie_rank(seed_mix, n, pods on n + k))

(``_core.tie_key`` / ``tie_rank``: the project's tie rule).  The greedy
takes at each step the node with the largest head key (the lower row on an
equal key), so its placements are the (node, k) pairs sorted by the running
minimum E_n(k) = min_{j <= k} K_n(j), descending, then by row and k
ascending: once a node's head drops below another's, nothing later on it
can overtake (a key above the running minimum waits behind it).  An
infeasible (n, k) ends node n's sequence (feasibility only shrinks as pods
land).  The first P = min(run length, feasible pairs) of that order are
the run; it stops where the pairs run out (the next pod fits nowhere).

The normalization maxima of TaintToleration / NodeAffinity (DefaultNormalize
over the feasible rows) are held fixed at the run's start: ``exact_prefix``
finds afterwards the first pod for which every row attaining some
normalized slot's maximum is full; the run stops before it (that pod takes
its own cycle, which sees the new maximum, and the pods after it the next
run).

Parts, each with a twin:

- ``KEY_SOURCE``: the per-node key sequence as plain Python over the fused
  core's scalar rules (``fit_reasons``, ``fit_score``, ``balanced_score``,
  ``slot_score``, ``tie_rank``, ``tie_key``), compiled here for ``njit``
  (``run_keys``: a ``prange`` over nodes) and in ``run_sort_cuda`` for
  ``cuda.jit`` (one thread per node), so rounding is the fused run's own;
- ``keys_numpy``: the NumPy twin, from the array rules (``filters`` /
  ``scores`` / ``ties``) pass by pass over k;
- ``order_by_sort`` (NumPy stable argsort of the flat [M, W] keys,
  position-major) and ``order_by_merge`` (a compiled k-way merge of the
  node sequences with a binary heap: each node's sequence is already
  sorted, and only the first P pairs are wanted) give the same order.

Shapes: rows [M] int64 node rows, ascending; keys [M, W] int64 (-1 after
a node's sequence); lens [M] int64; the order is [P] positions into rows.
"""

from __future__ import annotations

import os

import numpy as np
from numba import njit, prange

from tensorsched.kernels import layout as L
from tensorsched.kernels._compile import KEY, AnyLayout, compile_source

from . import filters, scores
from . import stage_args as SA
from ._numba import core
from .ties import tie_ranks

ENABLED = os.environ.get("TENSORSCHED_SORT_RUNS", "1") != "0"
"""The switch: False (or ``TENSORSCHED_SORT_RUNS=0``) leaves every run to the
compiled run (tests and bench compare the two)."""

MAX_KEYS = 1 << 25
"""At most this many (node, k) keys (8 bytes each) for one run; beyond, no sort path."""

SORTABLE_SLOTS = L.N_BUILTIN_SCORES
"""Active slots must be built-in ones: user slots may read the requested columns."""

# prange over nodes is opt-in, as for the fused pass (``_numba``).
_PARALLEL = os.environ.get("TENSORSCHED_NUMBA_PARALLEL", "0") == "1"


KEY_SOURCE = '''
def run_key_sequence(j, i, width, seed_mix, allocatable, requested, nonzero_requested,
                     filter_flags, score_flags, request, nonzero_request, requests_anything,
                     fit_ignored, strategy, fit_res, fit_kind, fit_weights, shape_util,
                     shape_score, bal_res, bal_kind, base_reasons, raw_by_row, active_slots,
                     norm_mode, weights, hi, req_scratch, nz_scratch, keys):
    """keys[j, k] = running minimum of node row i's order keys for the
    (k+1)-th pod of the run, k < J (returned, at most ``width``); -1 after.
    req_scratch [N, R] / nz_scratch [N, 2]: row i is this node's columns
    with k run pods added (one writer per row)."""
    n_slots = raw_by_row.shape[1]
    n_res = request.shape[0]
    e = -1
    J = 0
    if base_reasons[i] == 0:
        for k in range(width):
            for r in range(n_res):
                req_scratch[i, r] = requested[i, r] + k * request[r]
            # each pod of the run is one more pod on the node
            req_scratch[i, RES_PODS] = requested[i, RES_PODS] + k
            nz_scratch[i, 0] = nonzero_requested[i, 0] + k * nonzero_request[0]
            nz_scratch[i, 1] = nonzero_requested[i, 1] + k * nonzero_request[1]
            if k > 0 and (filter_flags & F_FIT) != 0:
                if fit_reasons(i, allocatable, req_scratch, request, requests_anything,
                               fit_ignored) != 0:
                    break
            total = 0
            for s in range(n_slots):
                if not active_slots[s]:
                    continue
                v = raw_by_row[i, s]
                if s == 0 and (score_flags & 1) != 0:
                    v = fit_score(i, allocatable, req_scratch, nz_scratch, request,
                                  nonzero_request, strategy, fit_res, fit_kind, fit_weights,
                                  shape_util, shape_score)
                elif s == 1 and (score_flags & 2) != 0:
                    v = balanced_score(i, allocatable, req_scratch, nz_scratch, request,
                                       nonzero_request, bal_res, bal_kind)
                total += slot_score(v, norm_mode[s], hi, s, n_slots) * weights[s]
            key = tie_key(total, tie_rank(seed_mix, i, req_scratch[i, RES_PODS]))
            if k == 0 or key < e:
                e = key
            keys[j, k] = e
            J = k + 1
    for k in range(J, width):
        keys[j, k] = -1
    return J
'''

_RULES = ("fit_reasons", "fit_score", "balanced_score", "slot_score", "tie_rank", "tie_key")


def key_namespace(compiled_core: dict) -> dict:
    """What ``KEY_SOURCE`` calls, from a compiled fused core (njit or cuda)."""
    return {**{n: compiled_core[n] for n in _RULES}, "F_FIT": L.F_FIT,
            "RES_PODS": L.RES_PODS}


_keys = compile_source(f"{__name__}.keys", KEY_SOURCE, njit, ("run_key_sequence",),
                       key_namespace(core), options={"nogil": True, "_nrt": False},
                       cache=True, depends=[core[KEY] or ""], filename="<run keys>")
run_key_sequence = _keys["run_key_sequence"]

_DRIVER_SOURCE = '''
def run_keys(rows, width, seed_mix, {stage}, base_reasons, raw_by_row, active_slots,
             norm_mode, weights, hi, req_scratch, nz_scratch, keys, lens):
    for j in prange(rows.shape[0]):
        lens[j] = run_key_sequence(
            j, rows[j], width, seed_mix, allocatable, requested, nonzero_requested,
            filter_flags, score_flags, request, nonzero_request, requests_anything, fit_ignored,
            strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score, bal_res,
            bal_kind, base_reasons, raw_by_row, active_slots, norm_mode, weights, hi,
            req_scratch, nz_scratch, keys)
'''.replace("{stage}", SA.PARAMETERS)

_driver = compile_source(f"{__name__}.driver", _DRIVER_SOURCE, njit, ("run_keys",),
                         {"prange": prange, "run_key_sequence": run_key_sequence},
                         options={"parallel": _PARALLEL, "nogil": True, "_nrt": False},
                         cache=True, depends=[_keys[KEY] or ""], filename="<run keys driver>")
# The compiled keys of every row (``keys_numba`` calls it): the state's
# column views and C-contiguous columns (a test's) share one signature (the
# stage arguments' arrays typed A; ``_compile.AnyLayout``).
keys_kernel = AnyLayout(_driver["run_keys"], only=SA.STAGE_NAMES)


# ------------------------------------------------------------------ checks
def sortable(n_rows: int, num_to_find: int, active, norm, n_slots: int,
             forms=(None, None, None)) -> bool:
    """Whether a run qualifies on its setup: every node scored, no host
    plugin forms (per-domain rules, spread or pod-affinity scores), only
    built-in slots active, none min-max normalized, Fit and Balanced
    (whose raw scores move with the run) not normalized."""
    if not ENABLED or n_rows == 0 or num_to_find < n_rows:
        return False
    if any(f is not None and f.params.shape[0] > 0 for f in forms):
        return False
    act = np.asarray(active[:n_slots], bool)
    if act[SORTABLE_SLOTS:].any():
        return False
    mode = np.asarray(norm[:n_slots])
    if (act & (mode == L.NORM_MINMAX)).any():
        return False
    return not (act[:2] & (mode[:2] != 0)).any()


def run_maxima(base_reasons, raw_by_row, rows, active, norm) -> np.ndarray:
    """[S] int64 each normalized active slot's maximum over the feasible
    rows at the run's start (from 0, as DefaultNormalizeScore counts); 0
    for the others."""
    n_slots = raw_by_row.shape[1]
    hi = np.zeros(n_slots, np.int64)
    feasible = rows[base_reasons[rows] == 0]
    normalized = np.asarray(active[:n_slots], bool) & (np.asarray(norm[:n_slots]) != 0)
    for s in np.flatnonzero(normalized):
        if feasible.shape[0]:
            hi[s] = max(0, int(raw_by_row[feasible, s].max()))
    return hi


def key_width(cols: L.NodeColumns, rows, q: L.PodQuery, count: int) -> int:
    """W: the most pods of a run of ``count`` any node can take, bounded
    when Fit filters by each node's free pod slots and its free amount of
    every resource the Fit filter checks over the pod's request (else
    ``count``); 0 when M x W keys would pass ``MAX_KEYS``."""
    width = int(count)
    if q.filter_flags & L.F_FIT and rows.shape[0]:
        alloc = cols.allocatable[rows]
        used = cols.requested[rows]
        room = alloc[:, L.RES_PODS] - used[:, L.RES_PODS]
        if q.requests_anything:
            for r in range(min(q.request.shape[0], alloc.shape[1])):
                want = int(q.request[r])
                if r != L.RES_PODS and want > 0 and not q.fit_ignored[r]:
                    room = np.minimum(room, (alloc[:, r] - used[:, r]) // want)
        width = int(min(count, max(0, int(room.max()))))
    if rows.shape[0] * max(width, 1) > MAX_KEYS:
        return 0
    return max(width, 1)


def add_requests(cols: L.NodeColumns, out, request, nonzero) -> None:
    """The run's requests on the rows it placed ``out`` [P] (a row taking k
    pods gets k requests), on the host columns."""
    k = np.bincount(out, minlength=cols.requested.shape[0])[:, None]
    touched = np.flatnonzero(k[:, 0])
    cols.requested[touched] += k[touched] * np.asarray(request, np.int64)[None, :]
    cols.nonzero_requested[touched] += k[touched] * np.asarray(nonzero, np.int64)[None, :]


def exact_prefix(order, lens, rows, base_reasons, raw_by_row, active, norm, hi) -> int:
    """How many pods of the run placed in ``order`` ([P] positions) saw
    the maxima ``hi`` of every normalized slot: pod i sees the state after
    the first i placements, and a slot's maximum moves once every row
    attaining it has taken as many pods as its sequence holds (a maximum
    of 0 never moves: a subset of the feasible rows has none larger).
    The first that many placements are exact; the pod after them takes
    its own cycle (which sees the new maxima)."""
    p = order.shape[0]
    n_slots = raw_by_row.shape[1]
    slots = np.flatnonzero(np.asarray(active[:n_slots], bool)
                           & (np.asarray(norm[:n_slots]) != 0) & (hi != 0))
    if slots.shape[0] == 0 or p == 0:
        return p
    # filled[j]: the index in order of position j's last pod (P: never filled)
    by_pos = np.argsort(order, kind="stable")
    first = np.searchsorted(order[by_pos], np.arange(rows.shape[0]))
    nth = np.empty(p, np.int64)
    nth[by_pos] = np.arange(p) - first[order[by_pos]]
    filled = np.full(rows.shape[0], p, np.int64)
    last = nth == lens[order] - 1
    filled[order[last]] = np.flatnonzero(last)
    feasible = base_reasons[rows] == 0
    exact = p
    for s in slots:
        at_max = feasible & (raw_by_row[rows, s] == hi[s])
        exact = min(exact, int(filled[at_max].max()) + 1)
    return exact


# ------------------------------------------------------------------- keys
def keys_numba(fargs: tuple, rows, width: int, seed_mix, base_reasons, raw_by_row, active,
               norm, weights, hi) -> tuple[np.ndarray, np.ndarray]:
    """(keys [M, W], lens [M]) by the compiled kernel; ``fargs`` the stage
    arguments (``backends.kernel_args``) over the current columns."""
    m = rows.shape[0]
    n = fargs[0].shape[0]
    keys = np.empty((m, width), np.int64)
    lens = np.zeros(m, np.int64)
    keys_kernel(rows, width, np.uint64(seed_mix), *fargs, base_reasons, raw_by_row,
              np.asarray(active, np.bool_), np.asarray(norm, np.int64),
              np.asarray(weights, np.int64), hi, np.zeros((n, fargs[1].shape[1]), np.int64),
              np.zeros((n, 2), np.int64), keys, lens)
    return keys, lens


def _normalized(v, mode: int, hi: int):
    if mode == 0:
        return v
    if hi == 0:
        return np.full(v.shape, L.MAX_NODE_SCORE if mode == 2 else 0, np.int64)
    v = (L.MAX_NODE_SCORE * v) // hi
    return L.MAX_NODE_SCORE - v if mode == 2 else v


def keys_numpy(cols: L.NodeColumns, q: L.PodQuery, rows, width: int, seed_mix: int,
               active, norm, weights, hi) -> tuple[np.ndarray, np.ndarray]:
    """The NumPy twin of ``keys_numba``: for k = 0..W-1 the columns with k
    run pods added on every row, their reasons and raw scores by the array
    rules, totals under the maxima ``hi``, keys (-1 infeasible) and their
    running minimum (a -1 ends a node's sequence)."""
    m = rows.shape[0]
    n_slots = hi.shape[0]
    keys = np.full((m, width), -1, np.int64)
    request = np.array(q.request, np.int64)
    request[L.RES_PODS] = 1         # each pod of the run is one more pod on the node
    nz = np.asarray(q.nonzero_request, np.int64)
    for k in range(width):
        cur = cols._replace(requested=cols.requested + k * request,
                            nonzero_requested=cols.nonzero_requested + k * nz)
        reasons = filters.node_reasons(cur, rows, q, xp=np)
        raw = np.zeros((m, max(n_slots, L.N_BUILTIN_SCORES)), np.int64)
        scores.raw_scores(cur, rows, q, raw, reasons == 0, xp=np)
        total = np.zeros(m, np.int64)
        for s in range(n_slots):
            if active[s]:
                total += _normalized(raw[:, s], int(norm[s]), int(hi[s])) * int(weights[s])
        rank = tie_ranks(seed_mix, rows, cur.requested[rows, L.RES_PODS])
        keys[:, k] = np.where(reasons == 0, (total << 31) | rank, -1)
    keys = np.minimum.accumulate(keys, axis=1)
    lens = (keys >= 0).sum(axis=1).astype(np.int64)
    return keys, lens


# ------------------------------------------------------------------ order
def order_by_sort(keys, lens, count: int) -> np.ndarray:
    """[P] positions of the first P = min(count, sum(lens)) pairs by key
    descending, then position and k ascending (a stable sort of the flat
    position-major keys)."""
    p = int(min(count, int(lens.sum())))
    flat = keys.reshape(-1)
    order = np.argsort(-flat, kind="stable")[:p]
    return order // keys.shape[1]


@njit(nogil=True, cache=True)
def _merge(keys, lens, count, heap, head, out):
    """Max-heap over positions by (head key, -position); pops ``count``
    pairs at most into out; returns how many."""
    m = keys.shape[0]
    size = 0
    for j in range(m):
        head[j] = 0
        if lens[j] > 0:
            heap[size] = j
            size += 1
    for start in range(size // 2 - 1, -1, -1):
        _sift(keys, head, heap, size, start)
    p = 0
    while p < count and size > 0:
        j = heap[0]
        out[p] = j
        p += 1
        head[j] += 1
        if head[j] >= lens[j]:
            size -= 1
            heap[0] = heap[size]
        _sift(keys, head, heap, size, 0)
    return p


@njit(nogil=True, cache=True, inline="always")
def _before(keys, head, a, b):
    ka = keys[a, head[a]]
    kb = keys[b, head[b]]
    return ka > kb or (ka == kb and a < b)


@njit(nogil=True, cache=True)
def _sift(keys, head, heap, size, at):
    while True:
        left = 2 * at + 1
        if left >= size:
            return
        best = left
        right = left + 1
        if right < size and _before(keys, head, heap[right], heap[left]):
            best = right
        if not _before(keys, head, heap[best], heap[at]):
            return
        heap[at], heap[best] = heap[best], heap[at]
        at = best


def order_by_merge(keys, lens, count: int) -> np.ndarray:
    """``order_by_sort``'s answer by merging the node sequences (each
    already descending): O(P log M) instead of a sort of M x W keys."""
    m = keys.shape[0]
    p = int(min(count, int(lens.sum())))
    out = np.empty(p, np.int64)
    got = _merge(keys, lens, p, np.empty(m, np.int64), np.empty(m, np.int64), out)
    return out[:got]


# ------------------------------------------------------------------- host
CPU_MIN_SHARE = 0.5
"""On the CPU the sort path takes runs of at least this share of the M x W
keys it writes: basic, 10,000 nodes x 40 keys, placement CPU seconds on 2
cores (bench/run_sort.py): 100,000 pods 0.078 sorted vs 0.062 compiled run,
400,000 pods 0.084 vs 0.248."""

CPU_ORDER = order_by_sort
"""The host's order: NumPy's stable argsort of the M x W keys took 37 ms
where the heap merge took 99 ms (10,000 nodes x 110 keys, 400,000 pods
taken, 2-core machine); the merge stays as the second witness."""

def sorted_positions(rows, count: int, base_reasons, raw_by_row, active, norm, cols,
                     q: L.PodQuery, make_keys, order=None, min_share: float = 0.0):
    """The run's [P] positions into ``rows`` (ascending) in placement order
    (up to where a normalized slot's maximum would move: ``exact_prefix``),
    or None when the sort path cannot place it (too many keys) or should
    not (fewer than ``min_share`` x M x W pods: most keys would go unused).
    ``make_keys(width, hi)`` -> (keys [M, W], lens [M]) on some target."""
    hi = run_maxima(base_reasons, raw_by_row, rows, active, norm)
    width = key_width(cols, rows, q, count)
    if width == 0 or count < min_share * rows.shape[0] * width:
        return None
    keys, lens = make_keys(width, hi)
    pos = (order or CPU_ORDER)(keys, lens, count)
    return pos[:exact_prefix(pos, lens, rows, base_reasons, raw_by_row, active, norm, hi)]


def ascending(rows) -> np.ndarray:
    """``rows`` in row order (the tie rule's lower row first)."""
    if rows.shape[0] > 1 and bool((rows[1:] <= rows[:-1]).any()):
        return np.sort(rows)
    return rows
