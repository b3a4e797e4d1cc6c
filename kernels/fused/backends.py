"""The fused filter + score stage on three backends: ``numpy``, ``numba``, ``cuda``.

``make_backend(name)`` is called once per framework; ``backend.evaluate``
then answers, for the rows to evaluate, every filter's reasons and every
score, and finds the rows tied at the top total.  All backends return
identical arrays; the tie rule among them (``ties``) is the caller's, on
the host.  Runs of alike pods (``place_run``) take the tie rule themselves.

The column source passed to ``evaluate`` is a ``source.ColumnSource``:
``columns()`` -> NodeColumns, plus ``version``, ``layout_version`` and
``row_version`` [N] for the row caches and the device mirror (only rows
written since the last upload are copied).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from tensorsched.kernels import backend_names
from tensorsched.kernels import domain_rules as DR
from tensorsched.kernels import domain_rules_cycle as DRC
from tensorsched.kernels import domains
from tensorsched.kernels import layout as L
from tensorsched.kernels._deps import cuda_unavailable_reason, gpu_present
from tensorsched.kernels._errors import BackendUnavailable

from . import filters, scores
from . import query_match as QM
from . import stage_args as SA
from .source import LOG_READ_MAX, ColumnSource
from .ties import TIE_RANK_BITS, seed_mix as mix_of_seed


SORT_PATH = "sort"
"""The name of the path that places a run by one sort (``place_run_sorted``)."""
COMPILED_RUN_PATH = "compiled_run"
"""The numba backend's run path (``NumbaBackend.place_run``: one pod after another)."""
DEVICE_RUN_PATH = "device_run"
"""The cuda backend's run path (``CudaBackend.place_run``: the device run kernel)."""


class StageResult(NamedTuple):
    """One evaluation; arrays are host NumPy views valid until the next call.
    For a placement (no explain) ``scores`` may be None; when every node is
    scored for one, ``total`` is None too, and so is ``reasons`` when a node
    was found.

    reasons [M] int64 (0 = feasible); scores [M, S] int64 normalized for
    scored rows; total [M] int64 (-1 = not scored); ties [T] int64 positions
    tied at the top total in evaluation order; processed = rows scanned
    (percentageOfNodesToScore); found = feasible rows among them."""

    reasons: np.ndarray
    scores: np.ndarray
    total: np.ndarray
    ties: np.ndarray
    processed: int
    found: int


def kernel_args(cols: L.NodeColumns, q: L.PodQuery) -> tuple:
    """The fused kernels' arguments after ``rows``, before the outputs
    (``stage_args.STAGE_NAMES`` order)."""
    return SA.host_args(cols, q)


def _pad_bitsets(cols: L.NodeColumns, q: L.PodQuery) -> L.PodQuery:
    """Query bitsets as wide as the node bitsets (tables may have grown)."""
    if (q.taint_reject.shape[0] == cols.taint_bits.shape[1]
            and q.taint_prefer.shape[0] == cols.taint_bits.shape[1]
            and q.port_conflicts.shape[0] == cols.port_bits.shape[1]):
        return q

    def fit(mask, width):
        if mask.shape[0] == width:
            return mask
        out = np.zeros(width, np.int64)
        out[: min(width, mask.shape[0])] = mask[:width]
        return out
    return q._replace(taint_reject=fit(q.taint_reject, cols.taint_bits.shape[1]),
                      taint_prefer=fit(q.taint_prefer, cols.taint_bits.shape[1]),
                      port_conflicts=fit(q.port_conflicts, cols.port_bits.shape[1]))


class _Buffers:
    """Output arrays reused across pods (grown, never shrunk)."""

    def __init__(self):
        self.cap = 0
        self.slots = 0

    def get(self, m: int, slots: int, zero: bool = True):
        if m > self.cap or slots != self.slots:
            self.cap = max(m, 2 * self.cap, 16)
            self.slots = slots
            self.reasons = np.zeros(self.cap, np.int64)
            self.raw = np.zeros((self.cap, slots), np.int64)
            self.total = np.zeros(self.cap, np.int64)
            self.ties = np.zeros(self.cap, np.int64)
        raw = self.raw[:m]
        if zero:
            raw[:] = 0
        return self.reasons[:m], raw, self.total[:m], self.ties[:m]


_NO_TIES = np.zeros(0, np.int64)        # a failed cycle's ties (never written)


def fits_nowhere(buf: _Buffers, by_row: np.ndarray, rows, start: int, n_slots: int, extra,
                 processed: int, found: int) -> StageResult | None:
    """A rules pick that found no row (the backends' ``_rules_pick``): the
    failed cycle's reasons by position, for the diagnosis and the
    preemption's status codes, the cheapest way: the row cache's reasons
    ``by_row`` [N] put in evaluation order (``buf``'s, kept between
    cycles) and the host filters' bits added (``extra``, run once: a rules
    cycle has no host score, so the raw scores are neither gathered nor
    read), as a cycle without host filters answers a failure; no ranking.
    The pick scanned every row (``processed``) and found none.  None (the
    caller ranks on the host) in the case the filters pass a row the
    rules failed, which the rules' form rules out."""
    m = rows.shape[0]
    reasons, raw, _total, _ties = buf.get(m, n_slots, zero=False)
    np.take(by_row, rows[start:], out=reasons[: m - start])
    np.take(by_row, rows[:start], out=reasons[m - start:])
    reasons, _ = extra(reasons, raw)        # ``raw``: only host scores' slots are written
    if not reasons.all():
        return None
    return StageResult(reasons, None, None, _NO_TIES, processed, found)


class NumpyBackend:
    """Array-namespace kernels (the same source serves CuPy arrays)."""

    name = "numpy"

    def evaluate(self, source: ColumnSource, rows, start, q, num_to_find, active, norm, weights,
                 n_slots, extra=None, want_scores=True, seed=None) -> StageResult:
        cols = source.columns()
        q = _pad_bitsets(cols, q)
        rows = rotated(rows, start)
        reasons = filters.node_reasons(cols, rows, q, xp=np)
        raw = np.zeros((rows.shape[0], n_slots), np.int64)
        scores.raw_scores(cols, rows, q, raw, reasons == 0, xp=np)
        if extra is not None:
            reasons, raw = extra(reasons, raw)
        sc, total, ties, processed, found = scores.finalize(
            reasons, raw, num_to_find, active, norm, weights, xp=np)
        return StageResult(reasons, sc, total, ties, processed, found)


class _RowCache:
    """One query's filter reasons and raw scores by node row, valid up to
    state version ``seen`` (rows written later are recomputed).

    When every node is scored it also keeps the weighted total of every row
    and a segment tree of their tie keys (``_core.rebuild_keys``, ranks under
    ``top_mix``), so a cycle costs the changed rows times log N while the
    normalization maxima stay put."""

    def __init__(self, q, key, n_rows, n_slots):
        self.q = q
        self.fp = QM.fingerprint(q)     # for ``query_match.adopt``
        self.ffp = QM.form_fingerprint(q)
        self.epoch = None               # the source's query epoch when last run
        self.key = key
        self.seen = -1
        self.extra = None               # rows to recompute besides the written ones
        self.reasons = np.zeros(n_rows, np.int64)
        self.raw = np.zeros((n_rows, n_slots), np.int64)
        self.top_params = None          # (active, norm, weights) the totals use
        self.size = 1
        while self.size < max(n_rows, 1):
            self.size *= 2
        self.total = np.full(n_rows, -1, np.int64)
        self.hi = np.zeros(n_slots, np.int64)
        self.hi_cnt = np.zeros(n_slots, np.int64)
        self.tkey = np.full(2 * self.size, -1, np.int64)
        self.top_mix = np.uint64(0)     # the seed mix the tree's keys rank with
        self.feasible = 0
        self.args = None                # kernel_args for ``args_cols``
        self.args_cols = None
        self.mix_key = None             # parameters ``mix_total`` was computed with
        self.mix_params = None          # (use_slot, norm, weights, hi)
        self.mix_total = None           # [N] built-in slots' weighted sum per row


def tree_ties(cache, n: int, rows: np.ndarray, start: int) -> np.ndarray:
    """The positions (evaluation order from ``start`` over ``rows``, sorted
    node rows) of the rows at the top total of ``cache``'s key tree, in
    that order (none when no row is feasible)."""
    top = int(cache.tkey[1])
    if top < 0:
        return np.zeros(0, np.int64)
    tied = np.flatnonzero(cache.total[:n] == top >> _RANK_BITS)
    m = rows.shape[0]
    if m != n:                      # rows: some of the node rows, sorted
        tied = np.searchsorted(rows, tied)
    # positions from ``start``: the rows from there, then those before it
    return np.concatenate((tied[tied >= start] - start, tied[tied < start] + (m - start)))


def _grown(c: _RowCache, key, n: int, n_slots: int) -> _RowCache:
    """``c`` for ``n`` rows (more than it has): its reasons and raw scores
    kept, level with the same version; the totals, tree and mixed totals
    rebuilt when next used."""
    g = _RowCache(c.q, key, n, n_slots)
    g.extra = c.extra
    m = c.reasons.shape[0]
    g.reasons[:m] = c.reasons
    g.raw[:m] = c.raw
    g.seen = c.seen
    return g


def written_rows(k, source: ColumnSource, n: int, seen: int, out: np.ndarray) -> int:
    """(``k``: the numba kernels) How many of ``source``'s first ``n`` rows
    were written after version ``seen``, those rows ascending in ``out``
    ([>= n] int64): from the source's write log where it has one that
    covers ``seen`` with few entries since (O(rows written)), else by a scan
    of ``row_version`` (O(N))."""
    log = getattr(source, "write_log", None)
    if log is not None:
        got = k.logged_rows(log.rows, log.versions, log.length, log.floor, seen,
                            source.row_version, LOG_READ_MAX, out)
        if got >= 0:
            return int(got)
    return int(k.dirty_rows(source.row_version, n, seen, out))


def place_sorted(backend, cols, rows, pos, request, nonzero, register, start):
    """The sort path's placements on ``backend`` (``pos`` [P] positions
    into ``rows``; None: the sort path did not apply) added to the
    requested columns ``cols`` and registered: ``place_run``'s return (the
    start index unmoved), or None."""
    if pos is None:
        return None
    from . import run_sort as RS
    out = rows[pos]
    RS.add_requests(cols, out, request, nonzero)
    register(out)
    backend.sorted_runs += 1
    return out, int(start)


def tree_pick(k, cache, n: int, rows: np.ndarray, start: int) -> np.ndarray:
    """(``k``: the numba kernels) The position (evaluation order from ``start`` over ``rows``, sorted
    node rows) of the row at the top of ``cache``'s key tree: the tie
    rule's pick when the tree's ranks are the cycle's seed's ([1] int64;
    none when no row is feasible)."""
    if int(cache.tkey[1]) < 0:
        return np.zeros(0, np.int64)
    row = int(k.key_top_row(cache.tkey, cache.size))
    m = rows.shape[0]
    pos = row if m == n else int(np.searchsorted(rows, row))
    return np.array([pos - start if pos >= start else pos + (m - start)], np.int64)


_RANK_BITS = TIE_RANK_BITS          # a tie key is total << these | rank
# Runs of at least this many pods take the window trees under a percentage
# below every node (building them costs about one scan of every row).
WINDOW_TREE_MIN_RUN = 32
# Score classes of a run with pod-to-pod scores (``_place_classes``): at most
# this many (0: never classes), their trees within this many bytes (beyond:
# the scan), for runs of at least this many pods (building the classes
# costs about as much as scanning every row a few times).
CLASS_CAP = 64
CLASS_TREE_BYTES = 64 << 20
CLASS_MIN_RUN = 12


class NumbaBackend:
    """Fused ``njit`` kernels.

    Results are cached per compiled query by node row: a cycle recomputes
    only the rows written since that query last ran (after a placement, one
    row), then one serial pass normalizes, weighs and finds the top rows.

    With host (array) plugins active (``extra``) the built-in part still
    comes from the cache: an explain cycle gathers it into evaluation order
    for ``extra``; a placement cycle gathers only the reasons, and the
    totals add the host plugins' slots to a per-row sum of the cached slots
    (``mix_total``, kept for the cycle's normalization maxima)."""

    name = "numba"
    run_path = COMPILED_RUN_PATH    # what ``place_run`` is called in the metrics
    MAX_CACHED_QUERIES = 32

    def __init__(self):
        from . import _numba as _fused_numba     # numba: compiled when first used
        self._k = _fused_numba
        self._fused = _fused_numba.fused_pass
        self._fused_by_row = _fused_numba.fused_pass_by_row
        self._buf = _Buffers()
        self._caches: OrderedDict = OrderedDict()
        self._dirty = np.zeros(16, np.int64)
        self.sorted_runs = 0        # runs the sort path placed (``place_run_sorted``)
        self._hi = np.zeros(16, np.int64)
        self._class_trees = None        # the score classes' trees, kept between runs
        self._all_rows = np.zeros(0, np.int64)
        self._from_pos: dict = {}         # (host slots, n_slots) -> [S] bool
        self._mix_static = None           # see _partial
        self.rows_recomputed = 0
        self.caches_adopted = 0     # row caches kept for an equal recompiled query
        # placement cycles whose host filters the pick answered as
        # per-domain rules (``_rules_pick``) and the domain sums they copied
        self.rule_picks = 0
        self.domain_sums_copied = 0
        self.fits_nowhere = 0       # rules picks that found no row (no ranking after)
        # the rule sets' stacked copies (``domain_rules_cycle.KeptTables``)
        self._rule_tables = DRC.KeptTables(CudaBackend.MAX_RULE_TABLES)
        self._cycle = None                  # ``fused.cycle``: compiled when first used
        self._pick_scratch = None
        self._pick_pos = np.zeros(1, np.int64)   # a rules pick's position (its ``ties``)
        self._sparams: dict = {}
        _warm_numba(self._k)

    def use_user_functions(self, filters, scores, first_bit, first_slot) -> None:
        """Compile per-node user functions into the fused passes."""
        self._fused = self._k.build_fused_pass(filters, scores, first_bit, first_slot)
        self._fused_by_row = self._k.build_fused_pass(filters, scores, first_bit, first_slot,
                                                      by_row=True)
        self._caches.clear()

    def fused(self, cols, rows, q, n_slots):
        reasons, raw, total, ties = self._buf.get(rows.shape[0], n_slots)
        self._fused(rows, *kernel_args(cols, _pad_bitsets(cols, q)), reasons, raw)
        return reasons, raw, total, ties

    def _row_cache(self, source: ColumnSource, cols, q, n_slots) -> _RowCache:
        n = cols.allocatable.shape[0]
        epoch = QM.source_epoch(source)
        # a source other than the state (the nominated overlay) has its own
        # counters: its caches are kept apart (``ColumnSource.cache_tag``)
        tag = getattr(source, "cache_tag", None)
        key = (source.layout_version, n, n_slots, tag)
        ck = (id(q), tag)
        c = self._caches.get(ck)
        if c is None or c.q is not q or c.key != key:
            # Recompiled after a node event: the kept rows stay, the written
            # ones and those the query's changes reach
            # (``query_match.changed_rows``) are recomputed below.  A node
            # appended: the rows before it kept in a grown cache (the new
            # row is written).  The layout may differ (arrays reallocated):
            # a row's answer reads its own values, which reallocation keeps.
            c, extra = QM.adopt(self._caches, q, ck, lambda k: k[2:] == key[2:] and k[1] <= n,
                                cols, n, epoch)
            if c is not None:
                c.extra = extra if extra.shape[0] else None
                if c.key[1] < n:
                    c = self._caches[ck] = _grown(c, key, n, n_slots)
                c.key = key
                c.args = c.args_cols = None
                self.caches_adopted += 1
            else:
                c = _RowCache(q, key, n, n_slots)
                self._caches[ck] = c
            while len(self._caches) > self.MAX_CACHED_QUERIES:
                self._caches.popitem(last=False)
        else:
            self._caches.move_to_end(ck)
        c.epoch = epoch
        if c.seen != source.version or c.extra is not None:
            if self._dirty.shape[0] < n:
                self._dirty = np.zeros(2 * n, np.int64)
            k = written_rows(self._k, source, n, c.seen, self._dirty)
            dirty = self._dirty[:k]
            if c.extra is not None:
                dirty = np.union1d(dirty, c.extra)
                k = dirty.shape[0]
                c.extra = None
            if k:
                track = c.top_params is not None and k < n
                if track:
                    old_reasons = np.empty(k, np.int64)
                    old_raw = np.empty((k, n_slots), np.int64)
                    self._k.snapshot_rows(dirty, k, c.reasons, c.raw, old_reasons, old_raw)
                if c.args_cols is not cols:
                    c.args = kernel_args(cols, _pad_bitsets(cols, q))
                    c.args_cols = cols
                self._fused_by_row(dirty, *c.args, c.reasons, c.raw)
                self.rows_recomputed += k
                if c.mix_key is not None:
                    self._k.partial_totals(dirty, k, c.raw, *c.mix_params, c.mix_total)
                if track:
                    active, norm, weights = c.top_params[:3]
                    delta = self._k.update_keys(dirty, k, old_reasons, old_raw, c.reasons, c.raw,
                                                active, norm, weights, c.hi, c.hi_cnt, c.total,
                                                c.top_mix, cols.requested, c.tkey, c.size)
                    if delta == -1000000000:
                        c.top_params = None
                    else:
                        c.feasible += delta
                else:
                    c.top_params = None
            c.seen = source.version
        return c

    def _partial(self, c, cols, active, norm, weights, from_pos, hi):
        """The cache's per-row sum of the built-in (cached) slots, weighted
        and normalized under this cycle's maxima ``hi``: kept while the
        parameters and those slots' maxima stay put (dirty rows are
        refreshed by ``_row_cache``), rebuilt for every row otherwise."""
        # The parts of the key that do not depend on ``hi``, kept while the
        # same arrays come back (the caller's memoized parameter arrays:
        # identity stands for equality, as in ``_select_top``).
        st = self._mix_static
        if st is None or not (st[0] is active and st[1] is norm and st[2] is weights
                              and st[3] is from_pos):
            u = active & ~from_pos
            st = (active, norm, weights, from_pos, u, u.tobytes(), norm.tobytes(),
                  weights.tobytes(), u & (norm != 0))
            self._mix_static = st
        use = st[4]
        key = (st[5], st[6], st[7], np.where(st[8], hi, 0).tobytes())
        if c.mix_key != key:
            use = use.copy()
            n = cols.allocatable.shape[0]
            if c.mix_total is None or c.mix_total.shape[0] != n:
                c.mix_total = np.zeros(n, np.int64)
            if self._all_rows.shape[0] != n:
                self._all_rows = np.arange(n, dtype=np.int64)
            c.mix_params = (use, norm.copy(), weights.copy(), hi.copy())
            self._k.partial_totals(self._all_rows, n, c.raw, *c.mix_params, c.mix_total)
            c.mix_key = key
        return c.mix_total

    def _select_top(self, c, cols, active, norm, weights, mix=None) -> None:
        """Every node scored: the key tree current for these score
        parameters (and tie ranks under ``mix``, when given)."""
        params = c.top_params
        if params is None or (mix is not None and mix != c.top_mix) or not (
                params[3] is active and params[4] is norm and params[5] is weights) and not (
                np.array_equal(params[0], active) and np.array_equal(params[1], norm)
                and np.array_equal(params[2], weights)):
            # Copies for the kernels, the callers' arrays for a cheap identity test.
            c.top_params = (active.copy(), norm.copy(), weights.copy(), active, norm, weights)
            if mix is not None:
                c.top_mix = mix
            c.feasible = self._k.rebuild_keys(
                cols.allocatable.shape[0], c.reasons, c.raw, *c.top_params[:3], c.hi,
                c.hi_cnt, c.total, c.top_mix, cols.requested, c.tkey, c.size)

    def place_run(self, source: ColumnSource, rows, start, q, num_to_find, active, norm, weights,
                  n_slots, count, seed, attempt, request, nonzero, register,
                  rules=None, spread=None, affinity=None) -> tuple[np.ndarray, int]:
        """Place ``count`` pods of query ``q`` one after another in one
        compiled call (see ``_numba.build_place_run``): [p] int64 rows
        chosen, p <= count (stops before a pod that fits nowhere) and the
        next start position.  Their requests are added to ``source``'s
        requested columns; ``register(rows)`` then records the pods in the
        source, after which the row cache is current again (only those rows
        moved, and the run already recomputed them).

        ``rules`` (``domain_rules.RuleArrays``, the kernel counts placed pods
        in its ``sums``): per-domain filters of host plugins, kept current
        by the run; the row cache keeps the built-in answers only.
        ``spread`` (``domain_rules.SpreadArrays``): PodTopologySpread's
        ScheduleAnyway score, and ``affinity`` (``AffinityArrays``):
        InterPodAffinity's score.  With every node scored, runs with these
        scores or with rules of few domains (``domain_rules.class_keys``)
        keep rows in score classes (``_place_classes``; past ``CLASS_CAP``
        classes the scan places the rest); otherwise the scores are computed
        over the scanned rows for each pod (the scan form: the same
        placements as the segment tree's, see ``_numba``)."""
        cols = source.columns()
        c = self._row_cache(source, cols, q, n_slots)
        n = cols.allocatable.shape[0]
        if c.args_cols is not cols:
            c.args = kernel_args(cols, _pad_bitsets(cols, q))
            c.args_cols = cols
        whole, scan, window = self._k.build_place_run(self._fused_by_row)
        out = np.empty(count, np.int64)
        seed_mix = np.uint64(mix_of_seed(seed))
        m = rows.shape[0]
        with_rules = rules is not None and rules.params.shape[0] > 0
        if not with_rules:
            rules = DR.no_rules(n)
        n_rules = rules.params.shape[0]
        # With rules the run ranks rows by their own reasons (built-in | rule
        # bits); the cache keeps the built-in ones.
        reasons_run = np.empty(n, np.int64) if with_rules else c.reasons
        thr = np.zeros(n_rules, np.int64)
        at_min = np.zeros(n_rules, np.int64)
        mark = np.zeros(n, np.int64)
        one_row = np.zeros(1, np.int64)
        with_spread = spread is not None and spread.params.shape[0] > 0
        if not with_spread:
            spread = DR.stack_spread(None, n)
        with_affinity = affinity is not None and affinity.params.shape[0] > 0
        if not with_affinity:
            affinity = DR.stack_affinity(None, n)
        dense = with_spread or with_affinity
        n_terms = spread.params.shape[0]
        # The dense scores' scratch: spread sizes [C] and weights [C], raw
        # spread by position [M], the other slots' weighted sum by row [N]
        # with the maxima it was taken under (+ a valid flag) [S + 1], the
        # normalized slots.
        spread_scratch = (np.zeros(n_terms, np.int64), np.zeros(n_terms, np.float64),
                          np.zeros(m if dense else 1, np.int64),
                          np.zeros(n if dense else 1, np.int64),
                          np.zeros(n_slots + 1, np.int64),
                          np.flatnonzero(active & (norm != 0)).astype(np.int64))
        placed = 0
        keys = (DR.class_keys(spread, affinity, rules, n)
                if num_to_find >= m and (dense or with_rules) and CLASS_CAP > 0 else None)
        if (keys is not None and count >= CLASS_MIN_RUN
                and (dense or keys.r_col.max(initial=-1) >= 0)):
            # every node scored: the pod-to-pod scores and the rules of few
            # domains over score classes
            placed, overflow = self._place_classes(
                c, n, request, nonzero, count, seed_mix, out, rules,
                keys, reasons_run, thr, at_min, mark, one_row, spread, affinity,
                active, norm, weights, n_slots)
            if overflow:
                # too many classes: the scan places the rest from here on
                count -= placed
            else:
                count = 0
            c.top_params = None         # rows moved outside the tree: rebuild when used
            next_start = start
        if count == 0:
            pass                        # the classes placed the whole run
        elif num_to_find >= m and not dense:
            if with_rules:
                # the run first ranks every row by its reasons with the rule
                # bits, rebuilding the tree: the built-in one is not needed
                c.top_params = (active.copy(), norm.copy(), weights.copy(), active, norm,
                                weights)
                c.top_mix = seed_mix
            else:
                self._select_top(c, cols, active, norm, weights, seed_mix)
            limit = max(64, n // 2) if with_rules else 1
            dirty = np.zeros(limit, np.int64)
            placed, feasible = whole(
                count, seed_mix, request, nonzero, c.args, c.reasons,
                reasons_run, c.raw, *c.top_params[:3], c.hi, c.hi_cnt, c.total, c.tkey,
                c.size, n, c.feasible, one_row, np.zeros(limit, np.int64),
                np.zeros((limit, n_slots), np.int64), out, *rules, thr, at_min, mark, dirty)
            if with_rules:
                c.top_params = None     # the tree ranked the rule bits too: rebuild when used
            else:
                c.feasible = feasible
            next_start = start
        elif not with_rules and not dense and count >= WINDOW_TREE_MIN_RUN:
            # percentageOfNodesToScore below every node: each pod's window
            # (to the num_to_find-th feasible row) answered by trees over
            # the evaluation positions, O(log N) a pod
            size = 1 << max(m - 1, 1).bit_length()
            norm_slots = spread_scratch[5]
            width = 4 + norm_slots.shape[0]
            placed, next_start = window(
                count, seed_mix, rows, start, num_to_find, request, nonzero, c.args,
                c.reasons, c.raw, active, norm, weights, np.zeros(n_slots, np.int64),
                np.zeros(n_slots, np.int64), one_row, out, norm_slots,
                np.empty((2 * size, width), np.int64), np.empty(width, np.int64), size)
            c.top_params = None         # rows moved outside the tree: rebuild when used
        else:
            reasons, scores, total, ties = self._buf.get(m, n_slots, zero=False)
            if self._hi.shape[0] < n_slots:
                self._hi = np.zeros(n_slots, np.int64)
            done = placed
            placed, next_start = scan(
                count, seed_mix, rows, start, num_to_find, request, nonzero, c.args,
                c.reasons, reasons_run, c.raw, active, norm, weights, scores, total, ties,
                self._hi, one_row, out[done:], *rules, thr, at_min, mark,
                np.zeros(n + 1 if with_rules else 1, np.int64), *spread, *spread_scratch,
                *affinity, np.zeros(m if with_affinity else 1, np.int64),
                np.zeros(m if dense else 1, np.int64))
            placed += done
            c.top_params = None         # rows moved outside the tree: rebuild when used
        register(out[:placed])
        if c.mix_key is not None and placed:
            # the host-plugin path's per-row sums follow the rows the run moved
            self._k.partial_totals(out, placed, c.raw, *c.mix_params, c.mix_total)
        c.seen = source.version
        self.rows_recomputed += placed
        return out[:placed], int(next_start)

    def _place_classes(self, c, n, request, nonzero, count, seed_mix, out, rules, keys,
                       reasons_run, thr, at_min, mark, one_row, spread, affinity, active, norm,
                       weights, n_slots) -> tuple[int, bool]:
        """``place_run``'s every-node-scored run over score classes
        (``_numba.build_place_run_classes``, ``keys`` from
        ``domain_rules.class_keys``): (placed, whether the classes outgrew
        their trees, the rest then left to the scan)."""
        size = 1 << max(n - 1, 1).bit_length()
        # class trees are [cap, 2Z]: cap bounded by their memory
        cap = int(min(CLASS_CAP, max(2, CLASS_TREE_BYTES // (32 * size))))
        n_terms = spread.params.shape[0]
        n_keys = keys.mode.shape[0]
        limit = max(64, n // 2)
        i64 = np.int64
        run = self._k.build_place_run_classes(self._fused_by_row)
        trees = self._class_trees
        if trees is None or trees.shape != (cap, 2 * size):
            # kept between runs: fresh pages cost more than the run's build
            trees = self._class_trees = np.empty((cap, 2 * size), i64)
        placed, overflow = run(
            count, seed_mix, request, nonzero, c.args, c.reasons,
            reasons_run, c.raw, active, norm, weights, np.zeros(n_slots, i64), n, one_row,
            np.zeros(limit, i64), np.zeros((limit, n_slots), i64), out, *rules, thr, at_min,
            mark, np.zeros(limit, i64), *spread[:7], *affinity, *keys, np.zeros(n, i64),
            np.zeros(n, i64), np.zeros((cap, n_keys), i64), np.zeros(cap, i64),
            np.zeros(cap, i64), np.zeros(cap, np.bool_), np.zeros((cap, n_slots), i64),
            np.zeros((cap, n_slots), i64), np.zeros(cap, i64), np.zeros(1, i64),
            trees, size,
            np.zeros(spread.marks.shape, i64), np.zeros(n_terms, i64), np.zeros(1, i64),
            np.zeros(n_terms, np.float64), np.zeros(cap, i64), np.zeros(cap, i64),
            np.zeros(cap, i64), np.zeros(n_keys, i64))
        if overflow:
            mark[:] = 0                 # the scan's stamps start over
        return int(placed), bool(overflow)

    def evaluate(self, source: ColumnSource, rows, start, q, num_to_find, active, norm, weights,
                 n_slots, extra=None, want_scores=True, seed=None) -> StageResult:
        """One cycle from the query's row cache.  A placement whose host
        filters all have per-domain rules (``extra.cycle_rules()``, as the
        cuda backend takes them) is picked with the rules tested in the
        compiled scan (``_rules_pick``), the host filters not run."""
        if (extra is not None and not want_scores and seed is not None and rows.shape[0] > 0
                and getattr(extra, "cycle_rules", None) is not None):
            rules = extra.cycle_rules()
            if rules is not None:
                got = self._rules_pick(source, rows, start, q, num_to_find, active, norm,
                                       weights, n_slots, seed, rules, extra)
                if got is not None:
                    return got
        cols = source.columns()
        if extra is not None:
            # Array user plugins need positional arrays: the built-in part
            # comes from the row cache (only rows written since the query
            # last ran are recomputed), gathered into evaluation order.
            c = self._row_cache(source, cols, q, n_slots)
            m = rows.shape[0]
            reasons, raw, total, ties = self._buf.get(m, n_slots, zero=False)
            host_slots = getattr(extra, "slots", None)
            if not want_scores and host_slots is not None:
                # A placement: only the host plugins' slots are positional;
                # finalize reads the built-in ones from the cache by row.
                np.take(c.reasons, rows[start:], out=reasons[: m - start])
                np.take(c.reasons, rows[:start], out=reasons[m - start:])
                reasons, raw = extra(reasons, raw)
                fkey = (tuple(host_slots), n_slots)
                from_pos = self._from_pos.get(fkey)
                if from_pos is None:        # kept per slot set, never written
                    from_pos = np.zeros(n_slots, np.bool_)
                    from_pos[list(host_slots)] = True
                    self._from_pos[fkey] = from_pos
                hi = np.zeros(n_slots, np.int64)
                processed, found = self._k.scan_mixed(
                    rows, start, reasons, c.raw, raw, from_pos, num_to_find, active, norm, hi)
                partial = self._partial(c, cols, active, norm, weights, from_pos, hi)
                n_ties = self._k.finalize_partial(rows, start, reasons, partial, raw,
                                                  np.flatnonzero(active & from_pos),
                                                  norm, weights, hi, processed, total, ties)
                ties = tied_one(self._k, ties, n_ties, rows, start, seed, cols, want_scores)
                return StageResult(reasons, None, total, ties, processed, found)
            self._k.gather_rows(rows, start, c.reasons, c.raw, reasons, raw)
            reasons, raw = extra(reasons, raw)
            n_ties, processed, found = self._k.finalize(reasons, raw, total, num_to_find,
                                                        active, norm, weights, ties)
            ties = tied_one(self._k, ties, n_ties, rows, start, seed, cols, want_scores)
            return StageResult(reasons, raw, total, ties, processed, found)
        c = self._row_cache(source, cols, q, n_slots)
        m = rows.shape[0]
        reasons, scores_out, total, ties = self._buf.get(m, n_slots, zero=False)
        if not want_scores and num_to_find >= m:
            n = cols.allocatable.shape[0]
            if seed is not None:
                # the key tree under the cycle's seed: its top row is the
                # tie rule's pick (no list of the tied rows to rank)
                self._select_top(c, cols, active, norm, weights, np.uint64(mix_of_seed(seed)))
                top = tree_pick(self._k, c, n, rows, start)
            else:
                self._select_top(c, cols, active, norm, weights)
                top = tree_ties(c, n, rows, start)
            if len(top):
                # A placement needs no per-node reasons: skip the gather.
                return StageResult(None, None, None, top, m, c.feasible)
            np.take(c.reasons, rows[start:], out=reasons[: m - start])
            np.take(c.reasons, rows[:start], out=reasons[m - start:])
            return StageResult(reasons, None, None, top, m, c.feasible)
        if self._hi.shape[0] < 2 * n_slots:       # [S] maxima, [S] minima (min-max)
            self._hi = np.zeros(2 * n_slots, np.int64)
        n_ties, processed, found = self._k.finalize_rows(
            rows, start, c.reasons, c.raw, num_to_find, active, norm, weights,
            bool(want_scores), scores_out, total, ties, self._hi)
        np.take(c.reasons, rows[start:], out=reasons[: m - start])
        np.take(c.reasons, rows[:start], out=reasons[m - start:])
        ties = tied_one(self._k, ties, n_ties, rows, start, seed, cols, want_scores)
        # scores_out is reused across cycles and written only when asked for.
        return StageResult(reasons, scores_out if want_scores else None, total,
                           ties, processed, found)

    def _rules_pick(self, source: ColumnSource, rows, start, q, num_to_find, active, norm,
                    weights, n_slots, seed, rules, extra) -> StageResult | None:
        """A placement cycle whose host filters all have a per-domain form
        (``rules``: ``domain_rules_cycle.CycleRule``) picked in one compiled
        scan of the row cache (``cycle.scan_in_order``: each scanned row's
        cached reasons, then the rules, ``_core.rule_fails_row``; stopping
        at the ``num_to_find``-th feasible row) and one pass over the
        feasible rows it kept (``cycle.best_in_order``: their totals from
        the cache ``_partial`` keeps by row), as the cuda backend's device
        pick: the host's work is the rules' thresholds and the domain sums
        moved since the last cycle (``_rule_tables``), not the filters over
        every node and the gather.  ``ties`` is the picked
        position alone.  When no scanned row is feasible, the cache's
        reasons in evaluation order with the host filters' bits (``extra``,
        run once: the diagnosis reads them), nothing ranked; None (the
        caller ranks on the host) in the case the filters pass a row the
        rules failed, which the rules' form rules out."""
        if self._cycle is None:
            from . import cycle as _cycle       # numba: compiled when first used
            self._cycle = _cycle
        cols = source.columns()
        n = cols.allocatable.shape[0]
        c = self._row_cache(source, cols, q, n_slots)
        table, built = self._rule_tables.get(rules, n, lambda: DRC.HostRuleTable(rules, n))
        if built:                       # its sums copied whole
            self.domain_sums_copied += table.sums_copied
        host, k = table.current(rules)
        self.domain_sums_copied += k
        scratch = self._pick_scratch
        if (scratch is None or scratch[0].shape[0] < 2 * n_slots
                or scratch[1].shape[0] < rows.shape[0]):
            scratch = self._pick_scratch = self._cycle.pick_scratch(
                max(rows.shape[0], n), n_slots)
        sparams, minmax = self._slot_params(active, norm, weights, n_slots)
        self._cycle.scan_in_order(rows, start, c.reasons, c.raw, num_to_find, sparams, host,
                                  scratch)
        totals = None
        if not minmax:
            # the totals by row kept while these extremes stay (``_partial``,
            # the host-plugin path's cache; a min-max slot is not in it)
            fkey = ((), n_slots)
            from_pos = self._from_pos.get(fkey)
            if from_pos is None:
                from_pos = self._from_pos[fkey] = np.zeros(n_slots, np.bool_)
            totals = self._partial(c, cols, active, norm, weights, from_pos,
                                   scratch[0][:n_slots])
        out = self._cycle.best_in_order(rows, start, c.raw, sparams, mix_of_seed(seed),
                                        cols.requested, L.RES_PODS, scratch, totals)
        self.rule_picks += 1
        row, processed, found, pos = out[:4].tolist()
        if row < 0:
            got = fits_nowhere(self._buf, c.reasons, rows, start, n_slots, extra, processed,
                               found)
            self.fits_nowhere += got is not None
            return got
        self._pick_pos[0] = pos         # kept: a StageResult's arrays last until the next call
        return StageResult(None, None, None, self._pick_pos, processed, found)

    def _slot_params(self, active, norm, weights, n_slots) -> tuple:
        """(``cycle.slot_params``, whether an active slot is min-max), one per
        distinct value (looked up by the three arrays' bytes)."""
        key = (n_slots, active.dtype.str, active.tobytes(), norm.dtype.str, norm.tobytes(),
               weights.dtype.str, weights.tobytes())
        got = self._sparams.get(key)
        if got is None:
            sp = self._cycle.slot_params(active, norm, weights, n_slots)
            got = self._sparams[key] = (sp, bool(np.any((sp[0] != 0)
                                                        & (sp[1] == L.NORM_MINMAX))))
            while len(self._sparams) > self.MAX_CACHED_QUERIES:
                self._sparams.pop(next(iter(self._sparams)))
        return got

    def place_run_sorted(self, source: ColumnSource, rows, start, q, num_to_find, active, norm,
                         weights, n_slots, count, seed, attempt, request, nonzero, register,
                         rules=None, spread=None, affinity=None) -> tuple[np.ndarray, int] | None:
        """``place_run`` by one sort of per-node keys (``run_sort``): the
        same placements where every active score is node-local and every
        node is scored; None (nothing done) where the sort path does not
        apply, and the compiled run places the run.  With every node scored
        the start index stays where it was, as in ``place_run``."""
        from . import run_sort as RS
        if (self._fused_by_row is not self._k.fused_pass_by_row
                or not RS.sortable(rows.shape[0], num_to_find, active, norm, n_slots,
                                   (rules, spread, affinity))):
            return None
        cols = source.columns()
        c = self._row_cache(source, cols, q, n_slots)
        if c.args_cols is not cols:
            c.args = kernel_args(cols, _pad_bitsets(cols, q))
            c.args_cols = cols
        rows = RS.ascending(rows)
        mix = mix_of_seed(seed)

        def keys(width, hi):
            return RS.keys_numba(c.args, rows, width, mix, c.reasons, c.raw, active, norm,
                                 weights, hi)
        pos = RS.sorted_positions(rows, count, c.reasons, c.raw, active, norm, cols, q, keys,
                                  min_share=RS.CPU_MIN_SHARE)
        return place_sorted(self, cols, rows, pos, request, nonzero, register, start)


_numba_warmed = False


def _warm_numba(k) -> None:
    """Compile the kernels of the host-plugin path (gather, finalize, and the
    host plugins' own in ``topology``) once per process, so the first cycle
    with an array plugin does not pay it (the other backends compile the
    host kernels they use on first use)."""
    global _numba_warmed
    if _numba_warmed:
        return
    domains.warm()
    rows = np.zeros(1, np.int64)
    reasons = np.zeros(1, np.int64)
    raw = np.zeros((1, 1), np.int64)
    k.gather_rows(rows, 0, reasons, raw, reasons.copy(), raw.copy())
    k.finalize(reasons, raw.copy(), np.zeros(1, np.int64), 1, np.ones(1, np.bool_),
               np.zeros(1, np.int64), np.ones(1, np.int64), np.zeros(1, np.int64))
    one, zero, no = np.ones(1, np.bool_), np.zeros(1, np.int64), np.zeros(1, np.bool_)
    k.scan_mixed(rows, 0, reasons, raw, raw.copy(), no, 1, one, zero, zero.copy())
    k.partial_totals(rows, 1, raw, one, zero, np.ones(1, np.int64), zero, zero.copy())
    k.finalize_partial(rows, 0, reasons, zero, raw, np.flatnonzero(no), zero,
                       np.ones(1, np.int64), zero, 1, zero.copy(), zero.copy())
    _numba_warmed = True
    domains.collect_compiler_garbage()


def tied_one(k, ties, n_ties: int, rows, start: int, seed, cols, want_scores) -> np.ndarray:
    """The tied top positions ``ties[:n_ties]`` a host-ranked cycle
    answers: for a placement (no scores wanted, a ``seed``) only the one
    the tie rule takes (``_core.tied_position`` on the pods each row holds
    in ``cols``, as ``framework.tied_node`` would take it: one compiled
    pass, where thousands of equal nodes cost the host a ranking of every
    one), else all of them."""
    if seed is None or want_scores or n_ties <= 1:
        return ties[:n_ties]
    j = k.tied_position(ties, n_ties, rows, start, np.uint64(mix_of_seed(seed)), cols.requested)
    ties[0] = j
    return ties[:1]


def rotated(rows, start):
    """rows in evaluation order from ``start`` (upstream's rotating start index)."""
    if start == 0:
        return rows
    return np.concatenate((rows[start:], rows[:start]))


def rotated_reasons(by_row: np.ndarray, rows: np.ndarray, start: int,
                    n: int) -> tuple[np.ndarray, bool]:
    """A failed cycle's reasons ([len(rows)] int64) in evaluation order
    from ``start``, out of ``by_row`` ([n] int64, by node row): (the
    reasons, whether they were two slices).  A cycle over every row
    (``len(rows) == n``: ``rows`` is ``arange(n)``, as the cycle's device
    rows take it) needs no index array: the rotation is the two slices
    (about 3 us at 10,000 rows, not the 20 of an index built and gathered)."""
    if rows.shape[0] == n:
        return np.concatenate((by_row[start:], by_row[:start])), True
    return np.take(by_row, rotated(rows, start)), False


class _DeviceRowCache:
    """One query's reasons [N] and raw scores [N, S] by node row on the
    device, valid up to state version ``seen``: a run recomputes only the
    rows written since (one by-row fused pass over them)."""

    def __init__(self, q, key, reasons, raw):
        self.q = q
        self.fp = QM.fingerprint(q)     # for ``query_match.adopt``
        self.ffp = QM.form_fingerprint(q)
        self.epoch = None               # the source's query epoch when last run
        self.key = key
        self.seen = -1
        self.extra = None               # rows to recompute besides the written ones
        self.reasons = reasons
        self.raw = raw
        self.full = None                # (reasons, raw) with spare rows (``_grow``)
        self.host_reasons = None    # host copies for a cycle's ranking (``_host_rows``)
        self.host_raw = None
        self.host_seen = -1         # the ``seen`` they are level with
        self.host_extra = None      # rows they lack besides those written since (an
        #                             adopted query's changed rows, ``_cache_of``)


class CudaBackend:
    """Numba CUDA kernels over device copies of the columns.

    The mirror keeps the node columns packed by dtype on the device
    (``stage_args.pack_rows``: three arrays, with spare rows and pack
    columns: ``_fit_mirror``) and re-uploads only the span of node rows
    written since its last upload (``row_version``; one copy per pack); a
    node appended, a column widened or the host's arrays reallocated keep
    the rows it holds (packs out of room move on the device).  Each compiled
    query is one device buffer (``stage_args.pack_query``), uploaded once.
    A run keeps its query's reasons and raw scores by row on the device
    between calls and recomputes the rows written since (their span, when
    it is short: no copy of row numbers): a run costs at most two launches
    (that pass and the run kernel) and one copy back; a sorted run one
    copy up (its parameters, rows and the rows written since, staged, in
    one buffer) and one back (O(S) counts and its placements,
    ``run_sort_cuda``); a placement cycle at
    most one copy up (the rows written since, staged in one buffer with
    their pack values: ``staged_rows``), one launch (the pick's block
    writes those rows into the packs and recomputes them first,
    ``_cuda_cycle``) and four numbers back (a query's first cycle, or one
    after many rows were written, adds the by-row pass; a cycle whose host
    filters have per-domain rules, ``_rules_pick``, one more copy up: the
    domain sums moved since its last cycle); a cycle that wants scores or
    has other host plugins the same copy up and one launch (the staged rows
    written, recomputed and gathered: ``_ranked_rows``) and, for the
    host's ranking, one copy back of those rows alone."""

    name = "cuda"
    run_path = DEVICE_RUN_PATH      # what ``place_run`` is called in the metrics
    MAX_CACHED_QUERIES = 32
    # The by-row pass recomputes the whole span of the rows written since
    # (a view of the device arange, no copy) while it holds at most this
    # many rows per written one; else the written rows are copied over.
    SPAN_SLACK = 4
    # A placement cycle stages at most this many written rows in its one
    # upload; more (a node set rewritten) go the packs' span copies.
    MAX_STAGED_ROWS = 256
    MAX_RULE_TABLES = 8         # rule sets kept on the device (``_rule_tables``)

    def __init__(self):
        reason = cuda_unavailable_reason()
        if reason is not None:
            raise BackendUnavailable(f"backend 'cuda' cannot run: {reason}")
        from numba import cuda
        from numba.cuda.cudadrv import driver

        self._driver = driver                    # a prefix copied up (``_upload_staged``)
        self.sorted_runs = 0        # runs the sort path placed (``place_run_sorted``)
        from . import _cuda as _fused_cuda       # numba-cuda: only with the cuda backend
        from . import _cuda_run
        from . import _numba as _fused_numba
        self._cuda = cuda
        self._k = _fused_cuda
        self._run = _cuda_run
        self._host = _fused_numba                # the host-side ranking kernels
        from . import _cuda_cycle
        from . import cycle as _cycle_host
        from . import staged_rows
        self._cycle = _cuda_cycle                # a placement cycle's finalize
        self._cycle_host = _cycle_host
        self._staged_rows = staged_rows
        self._staged = None                      # (column widths, row width, host pinned,
        #                                          device): the staging buffers
        self._pods_at = 0                        # the pods column in node_i64 (``_shape``'s)
        self._kept_rows = None
        self._kept: dict = {}                    # device buffers kept between runs
        self._sort_buffers = None                # a sorted run's (``run_sort_cuda.RunBuffers``)
        self._staged_since = -1                  # the row cache's ``seen`` before its staging
        self._dirty = np.zeros(LOG_READ_MAX, np.int64)   # ``_written``'s scratch
        self._sparams: dict = {}
        self._pick_out = None                    # the pick's answer, device and host
        self._pick_host = None
        self._pick_pos = np.zeros(1, np.int64)   # its position, the ``ties`` handed out
        self._steady = None                      # the last placement cycle's lookups
        #                                          (``_steady_cache``)
        self._launch_args = None                 # its launch's kept arguments
        #                                          (``_pick_args``)
        self._finalize = _fused_numba.finalize
        self._col_shapes = None                  # (columns, shapes, widths): ``_shapes``
        self._buf = _Buffers()                   # a host-ranked cycle's outputs
        self._hi = np.zeros(16, np.int64)        # its slot maxima (``finalize_rows``)
        self._packs: tuple = ()
        self._stage_kept = None                  # ``device_stage``'s last answer
        self.stage_rows_sent = 0    # node rows ``device_stage`` sent alone (staged)
        self._qbufs: OrderedDict = OrderedDict()
        self._caches: OrderedDict = OrderedDict()
        self._all_rows = None
        self._tag = None                         # whose columns the packs mirror
        self._full: tuple = ()                   # the packs at capacity (``_fit_mirror``)
        self._caps = None                        # (rows, each column's pack columns)
        self._row_cap = 0
        self._version = -1
        self._shape = None
        self.rows_uploaded = 0      # node rows sent to the device
        self.full_uploads = 0       # packs uploaded whole (the first time, another source)
        self.relayouts = 0          # packs out of room moved into larger ones on the device
        self.copies = 0             # host -> device copies made for them
        self.bytes_uploaded = 0     # bytes those copies carried
        self.rows_recomputed = 0    # rows the device row caches recomputed
        # device runs, summed over their pods: rows re-tested and re-read
        # (feasibility, raw pod-to-pod scores), rows whose key was recomputed,
        # pods that rescanned every position; and the pods they placed
        self.run_rows_recomputed = 0
        self.run_rows_rekeyed = 0
        self.run_full_scans = 0
        self.run_pods = 0
        self.caches_adopted = 0     # row caches kept for an equal recompiled query
        self.launches = 0           # kernels launched
        # placement cycles whose host filters the pick answered on the device
        # (``_rules_pick``) and the domain sums they copied up
        self.rule_picks = 0
        self.domain_sums_uploaded = 0
        # rules picks that found no row, answered without the host's ranking
        # (``fits_nowhere``), and cycles ranked on the host (``_host_finalize``)
        self.fits_nowhere = 0
        self.host_finalizes = 0
        # the rule sets' device copies (``domain_rules_cycle.KeptTables``)
        self._rule_tables = DRC.KeptTables(self.MAX_RULE_TABLES)
        self.rows_downloaded = 0    # row cache rows copied back (the host's ranking, a failed
        #                             placement's reasons)
        # failed cycles over every row whose reasons came back rotated by two
        # slices, no index array (``rotated_reasons``)
        self.reasons_sliced = 0

    def _shapes(self, cols) -> tuple:
        """(each column's shape, each column's shape less the rows) of
        ``cols``, kept for the last columns object seen (the state hands
        out one per layout: ``ClusterState.columns``), so that a cycle does
        not walk the columns for them three times."""
        got = self._col_shapes
        if got is None or got[0] is not cols:
            full = tuple(a.shape for a in cols)
            got = self._col_shapes = (cols, full, tuple(sh[1:] for sh in full))
        return got[1], got[2]

    def _qbuf(self, cols, q):
        """The query's packed buffer on the device, uploaded once per
        compiled query and column shapes."""
        key = (id(q), self._shapes(cols)[1], self._caps)
        hit = self._qbufs.get(key)
        if hit is not None and hit[0] is q:
            return hit[1]
        buf = self._cuda.to_device(SA.pack_query(cols, _pad_bitsets(cols, q), self._caps[1:]))
        self._qbufs[key] = (q, buf)
        while len(self._qbufs) > self.MAX_CACHED_QUERIES:
            self._qbufs.popitem(last=False)
        return buf

    def _fit_mirror(self, source: ColumnSource, cols) -> None:
        """The packs made to hold ``cols``: kept while they have room (the
        rows and each column's pack columns, ``_caps``), so that a node
        appended, a column widened (a new label key, a taint word) or the
        host's arrays reallocated leave the rows the device holds where they
        are; the spare rows and columns hold ``SA.FILLS``, what the host
        gives a row or column it has not used.  Without room the packs move
        on the device into ones with twice the room that ran out
        (``_cuda.relayout_kernel``); for another source (or the first time)
        every row is uploaded."""
        shape = self._shapes(cols)[0]
        if shape == self._shape and self._tag == _mirror_tag(source):
            return
        n = cols.allocatable.shape[0]
        widths = SA.widths_of(shape)
        caps = self._caps
        fresh = caps is None or self._tag != _mirror_tag(source)
        if fresh:
            # room for a few more rows and a half more of each column
            self._row_cap = n + max(16, n // 8)
            self._caps = (self._row_cap,) + tuple(w + max(1, w // 2) for w in widths)
            host = SA.pack_rows(cols, self._caps[1:], 0, n, self._row_cap)
            self._full = tuple(self._cuda.to_device(a) for a in host)
            self.rows_uploaded += n     # node rows (the spare ones are fills: bytes)
            self.full_uploads += 1
            self.copies += len(self._full)
            self.bytes_uploaded += sum(a.nbytes for a in host)
            self._version = source.version
            self._tag = _mirror_tag(source)
        elif n > self._row_cap or any(w > c for w, c in zip(widths, caps[1:])):
            # out of room: twice the room that ran out (as the host's arrays
            # grow), the rows moved on the device (one launch, the column
            # map up: no node row leaves the host); the rows written since
            # the mirror's version are staged or uploaded at the new layout
            self._row_cap = max(n, 2 * self._row_cap) if n > self._row_cap else self._row_cap
            self._caps = (self._row_cap,) + tuple(
                c if w <= c else max(w, 2 * c) for w, c in zip(widths, caps[1:]))
            colmap = SA.relayout_map(self._shape, caps[1:], shape, self._caps[1:])
            _, w, f = SA.node_packs(shape, self._caps[1:])
            k_cap = self._caps[1 + SA.NODE_NAMES.index("label_vals")]
            cuda = self._cuda
            new = (cuda.device_array((self._row_cap, w), np.int64),
                   cuda.device_array((self._row_cap, f), np.int8),
                   cuda.device_array((self._row_cap, k_cap), np.int32))
            self._k.launch_relayout(self._full, new, cuda.to_device(colmap))
            self._full = new
            self.launches += 1
            self.copies += 1
            self.bytes_uploaded += colmap.nbytes
            self.relayouts += 1
        self._shape = shape
        self._packs = tuple(a[:n] for a in self._full)
        spans, _, _ = SA.node_packs(shape, self._caps[1:])
        self._pods_at = spans[SA.NODE_NAMES.index("requested")][0] + L.RES_PODS

    def _sync_columns(self, source: ColumnSource) -> tuple:
        """The packs, level with ``source``: ``_fit_mirror``, then the span
        of the rows written since the mirror's version, one copy per pack."""
        cols = source.columns()
        self._fit_mirror(source, cols)
        if source.version != self._version:
            n = cols.allocatable.shape[0]
            dirty = self._written(source, n, self._version)
            if dirty.shape[0]:
                # One copy per pack over the span of written rows: a run
                # writes rows all over the node set, and a copy per row costs
                # a transfer's latency each; the unwritten rows inside the
                # span are re-sent unchanged.
                lo, hi = int(dirty[0]), int(dirty[-1]) + 1
                for dev, host in zip(self._full, SA.pack_rows(cols, self._caps[1:], lo, hi)):
                    dev[lo:hi].copy_to_device(host)
                    self.bytes_uploaded += host.nbytes
                self.rows_uploaded += hi - lo
                self.copies += len(self._full)
        self._version = source.version
        return self._packs

    def _written(self, source: ColumnSource, n: int, seen: int) -> np.ndarray:
        """The rows among the first ``n`` written after version ``seen``,
        ascending ([k] int64, a view of a scratch buffer valid until the
        next call): ``written_rows``."""
        if self._dirty.shape[0] < n:
            self._dirty = np.zeros(2 * n, np.int64)
        return self._dirty[:written_rows(self._host, source, n, seen, self._dirty)]

    def device_column(self, name: str) -> np.ndarray:
        """Node column ``name`` as the device holds it (a host copy; tests)."""
        spans, _, _ = SA.node_packs(self._shape, self._caps[1:])
        k = SA.NODE_NAMES.index(name)
        _, pack, dims = SA.NODE_COLUMNS[k]
        if pack == "labels":
            return self._packs[2].copy_to_host()[:, :self._shape[k][1]]
        host = self._packs[0 if pack == "i64" else 1].copy_to_host()
        lo, hi = spans[k]
        return host[:, lo] if dims == 1 else host[:, lo:hi]

    def device_stage(self, source: ColumnSource, q):
        """The fused stage on the device for query ``q`` over ``source``'s
        columns (``stage_args.DeviceStage``): the mirror's packs, level
        with ``source``, the query buffer (uploaded once per compiled
        query) and the allocatable view, for the victim kernel.  The rows
        written since the mirror's version go up alone (one staged copy
        and one write launch, ``_cuda.staged_write_kernel``), not the span
        between the lowest and the highest; the stage object is kept while
        the packs and query buffer are the same (no device view made per
        call)."""
        cols = source.columns()
        self._fit_mirror(source, cols)
        qbuf = self._qbuf(cols, q)
        if source.version != self._version:
            # found and packed by one compiled call (``staged_rows.stage``,
            # from the source's write log); the query buffer's header gives
            # the kernel the columns' spans; more than MAX_STAGED_ROWS: the
            # packs' span copies.  The row caches keep their own ``seen``:
            # their next cycle stages the same rows again (the same values).
            SR = self._staged_rows
            self._staged = _staging(self._cuda, self._staged, self._shapes(cols)[1], cols,
                                    self.MAX_STAGED_ROWS)
            _, width, host, dev = self._staged
            k = SR.stage(source.row_version, self._version, cols, host, self.MAX_STAGED_ROWS,
                         log=getattr(source, "write_log", None))
            if k > self.MAX_STAGED_ROWS:
                self._sync_columns(source)
            elif k:
                self._upload_staged(SR.staged_size(k, width))
                self._k.launch_staged_write(k, dev, self._packs, qbuf)
                self.launches += 1
                self.rows_uploaded += k
                self.stage_rows_sent += k
            self._version = source.version
        kept = self._stage_kept
        if kept is None or kept.packs is not self._packs or kept.qbuf is not qbuf:
            spans, _, _ = SA.node_packs(self._shape, self._caps[1:])
            lo, hi = spans[SA.NODE_NAMES.index("allocatable")]
            kept = self._stage_kept = SA.DeviceStage(self._packs, qbuf,
                                                     self._packs[0][:, lo:hi])
        return kept

    def evaluate(self, source: ColumnSource, rows, start, q, num_to_find, active, norm, weights,
                 n_slots, extra=None, want_scores=True, seed=None) -> StageResult:
        """One cycle: the query's device row cache brought up to date (at
        most one launch, over the rows written since).  A placement (no
        scores wanted, no host plugins, a seed for the tie rule) is then
        decided on the device (``_device_pick``: one more launch, O(1)
        numbers back); so is one whose host filters all have per-domain
        rules for it (``extra.cycle_rules()``: PodTopologySpread's
        DoNotSchedule, where the cycle counts no nominated pods), the
        rules tested by the pick (``_rules_pick``; where no row is feasible
        the filters run once for the reasons, nothing ranked).  Otherwise
        (host scores, other host filters, explain, or no feasible row
        without rules: the reasons are wanted) the cache's host copy is brought level
        (``_host_rows``: the rows written since) and normalized, weighed
        and ranked on the host in evaluation order (the numba backend's
        ``finalize_rows`` / ``gather_rows`` + ``finalize``: ``_host_finalize``;
        a placement's tie rule taken there too, ``tied_one``)."""
        if (extra is None and not want_scores and seed is not None and rows.shape[0] > 0
                and n_slots <= self._cycle.MAX_CYCLE_SLOTS):
            return self._device_pick(source, rows, start, q, num_to_find, active, norm,
                                     weights, n_slots, seed)
        if (extra is not None and not want_scores and seed is not None and rows.shape[0] > 0
                and n_slots <= self._cycle.MAX_CYCLE_SLOTS
                and getattr(extra, "cycle_rules", None) is not None):
            rules = extra.cycle_rules()
            if rules is not None:
                got = self._rules_pick(source, rows, start, q, num_to_find, active, norm,
                                       weights, n_slots, seed, rules, extra)
                if got is not None:
                    return got
        cols = source.columns()
        reasons_by_row, raw_by_row = self._ranked_rows(source, cols, q, n_slots)
        return self._host_finalize(cols, rows, start, reasons_by_row, raw_by_row, num_to_find,
                                   active, norm, weights, n_slots, extra, want_scores, seed)

    def _host_finalize(self, cols, rows, start, reasons_by_row, raw_by_row, num_to_find, active,
                       norm, weights, n_slots, extra, want_scores, seed) -> StageResult:
        """A cycle ranked on the host from the row cache's host copy
        (``_ranked_rows``): with host plugins (``extra``) gathered into
        evaluation order, their answers added, then normalized, weighed and
        ranked (``finalize``); else ranked by row (``finalize_rows``).  The
        output arrays are kept between cycles (``_Buffers``, as the numba
        backend's).  A placement (no scores wanted, a seed) takes the tie
        rule's position among the top rows here, in one compiled pass
        (``tied_one``): ``ties`` is that position alone, as
        ``_device_pick`` answers."""
        m = rows.shape[0]
        self.host_finalizes += 1
        if extra is not None:
            reasons, raw, total, ties = self._buf.get(m, n_slots, zero=False)
            self._host.gather_rows(rows, start, reasons_by_row, raw_by_row, reasons, raw)
            reasons, raw = extra(reasons, raw)
            n_ties, processed, found = self._finalize(reasons, raw, total, num_to_find, active,
                                                      norm, weights, ties)
            ties = tied_one(self._host, ties, n_ties, rows, start, seed, cols, want_scores)
            return StageResult(reasons, raw, total, ties, processed, found)
        reasons, scores_out, total, ties = self._buf.get(m, n_slots, zero=False)
        if self._hi.shape[0] < 2 * n_slots:       # [S] maxima, [S] minima (min-max)
            self._hi = np.zeros(2 * n_slots, np.int64)
        n_ties, processed, found = self._host.finalize_rows(
            rows, start, reasons_by_row, raw_by_row, num_to_find, active, norm, weights,
            bool(want_scores), scores_out, total, ties, self._hi)
        np.take(reasons_by_row, rows[start:], out=reasons[: m - start])
        np.take(reasons_by_row, rows[:start], out=reasons[m - start:])
        ties = tied_one(self._host, ties, n_ties, rows, start, seed, cols, want_scores)
        # scores_out is reused across cycles and written only when asked for
        return StageResult(reasons, scores_out if want_scores else None, total, ties,
                           processed, found)

    def _device_pick(self, source: ColumnSource, rows, start, q, num_to_find, active, norm,
                     weights, n_slots, seed) -> StageResult:
        """A placement cycle decided on the device: the row cache brought up
        to date, then one block scans it from ``start`` up to
        ``num_to_find`` feasible rows, normalizes, weighs and takes the tie
        rule's row (``_cuda_cycle.cycle_pick_kernel``; the numba backend's
        ``finalize_rows`` and ``ties.pick_tied``).  Back come four numbers:
        ``ties`` is the picked position alone (as the numba backend's key
        tree answers), ``reasons`` and ``total`` None.  Only when no row is
        feasible does the cache's reasons [N] come back (the diagnosis
        reads them by position)."""
        cols = source.columns()
        c, k = self._staged_cache(source, cols, q, n_slots)
        n = cols.allocatable.shape[0]
        if self._pick_out is None:
            self._pick_out = self._cuda.device_array(self._cycle_host.OUT_LEN, np.int64)
            self._pick_host = self._cuda.pinned_array(self._cycle_host.OUT_LEN, np.int64)
        qbuf, d_rows, sparams, mix = self._pick_args(cols, rows, n, q, active, norm, weights,
                                                     n_slots, seed)
        self._cycle.launch_cycle_pick(
            rows.shape[0], self._staged[3], k, self._packs, qbuf, d_rows, c.reasons, c.raw,
            sparams, start, num_to_find, mix, self._pods_at, self._pick_out)
        self.launches += 1
        self.rows_recomputed += k
        row, processed, found, pos = self._pick_out.copy_to_host(self._pick_host).tolist()
        if row >= 0:
            # ``ties``: a kept one-element array (a StageResult's arrays are
            # valid until the next call)
            self._pick_pos[0] = pos
            return StageResult(None, None, None, self._pick_pos, processed, found)
        self.rows_downloaded += n
        reasons, sliced = rotated_reasons(c.reasons.copy_to_host(), rows, start, n)
        self.reasons_sliced += sliced
        return StageResult(reasons, None, None, np.zeros(0, np.int64), processed, found)

    def _pick_args(self, cols, rows, n: int, q, active, norm, weights, n_slots, seed) -> tuple:
        """(query buffer, rows, slot parameters on the device, the seed's
        mix) for a placement cycle's launch, kept from the last cycle when
        it had the very same query, columns and packs (so the same shapes
        and room: ``_qbuf``'s key), every row (the device arange), the same
        score arrays holding the same values, and seed: a steady stream of
        alike cycles builds no key and looks nothing up."""
        m = self._launch_args
        if (m is not None and m[0] is q and m[1] is cols and m[2] is self._packs
                and rows.shape[0] == n and m[3] is active and m[4] is norm
                and m[5] is weights and m[6] == n_slots and m[7] == seed
                and m[8] == (active.tobytes(), norm.tobytes(), weights.tobytes())):
            return m[9]
        got = (self._qbuf(cols, q), self._cycle_rows(rows, n),
               self._slot_params(active, norm, weights, n_slots), mix_of_seed(seed))
        kept = rows.shape[0] == n and all(isinstance(a, np.ndarray)
                                          for a in (active, norm, weights))
        self._launch_args = ((q, cols, self._packs, active, norm, weights, n_slots, seed,
                              (active.tobytes(), norm.tobytes(), weights.tobytes()), got)
                             if kept else None)
        return got

    def _rules_pick(self, source: ColumnSource, rows, start, q, num_to_find, active, norm,
                    weights, n_slots, seed, rules, extra) -> StageResult | None:
        """A placement cycle whose host filters all have a per-domain form
        (``rules``: ``domain_rules_cycle.CycleRule``, PodTopologySpread's
        DoNotSchedule) decided on the device as ``_device_pick`` decides
        one without host filters: the row cache brought up to date
        (``_staged_cache``), the rules' thresholds and the domain sums that
        moved since the last cycle copied up (``_rule_tables``), then one
        launch whose block writes those, tests each row it scans against
        the rules and takes the tie rule's row; four numbers back.  The
        host's work is O(rules + domains moved), not the filter over every
        node, the gather and the ranking of ``_host_finalize``.  When no
        row is feasible, the failed cycle's reasons without a ranking
        (``fits_nowhere``: the host filters, ``extra``, run once for them)."""
        cols = source.columns()
        n = cols.allocatable.shape[0]
        c, k = self._staged_cache(source, cols, q, n_slots)
        table, built = self._rule_tables.get(rules, n,
                                             lambda: DRC.DeviceRuleTable(self._cuda, rules, n))
        if built:                       # its domain ids, sums and params copied up whole
            self.copies += 4
            self.bytes_uploaded += table.bytes_uploaded
            self.domain_sums_uploaded += table.sums_uploaded
        rbuf, n_upd, sent = table.stage(rules)
        if sent:
            self.copies += 1
            self.bytes_uploaded += sent
        self.domain_sums_uploaded += n_upd
        if self._pick_out is None:
            self._pick_out = self._cuda.device_array(self._cycle_host.OUT_LEN, np.int64)
            self._pick_host = self._cuda.pinned_array(self._cycle_host.OUT_LEN, np.int64)
        qbuf, d_rows, sparams, mix = self._pick_args(cols, rows, n, q, active, norm, weights,
                                                     n_slots, seed)
        self._cycle.launch_cycle_pick(
            rows.shape[0], self._staged[3], k, self._packs, qbuf, d_rows, c.reasons, c.raw,
            sparams, start, num_to_find, mix, self._pods_at, self._pick_out,
            rules=(table, rbuf, n_upd))
        self.launches += 1
        self.rows_recomputed += k
        self.rule_picks += 1
        row, processed, found, pos = self._pick_out.copy_to_host(self._pick_host).tolist()
        if row < 0:
            # the cache's reasons [N] back (no raw scores: nothing is ranked)
            by_row = c.reasons.copy_to_host()
            self.rows_downloaded += by_row.shape[0]
            got = fits_nowhere(self._buf, by_row, rows, start, n_slots, extra, processed, found)
            self.fits_nowhere += got is not None
            return got
        self._pick_pos[0] = pos         # kept, as ``_device_pick`` hands it out
        return StageResult(None, None, None, self._pick_pos, processed, found)

    def _staged_cache(self, source: ColumnSource, cols, q, n_slots) -> tuple:
        """(the query's device row cache, k) for a placement cycle, with the
        ``k`` rows it is behind on staged on the device (``_staged[2]``) for
        the pick's launch to write into the packs and recompute first: the
        rows written after the cache's ``seen`` (the mirror is never behind
        the cache, so they include every row the packs lack) and those a
        changed query reaches (``extra``, ``_cache_of``), found and
        packed by one compiled host call (``staged_rows.stage``) and copied
        up in one buffer; nothing written: no copy (k = 0).  New column
        shapes or reallocated host arrays keep the packs (``_fit_mirror``
        first).  A query's first pass, or more than ``MAX_STAGED_ROWS``
        rows written, go ``_sync_columns`` and ``_row_cache`` (the packs'
        span copies and a by-row launch; k = 0).  A cycle like the last
        one (the same columns, source, query) skips the lookups
        (``_steady_cache``) and reads the write log inside the packing
        call; the upload is one driver copy into the start of the device
        buffer (``_upload_staged``): no device object is made per cycle."""
        SR = self._staged_rows
        c = self._steady_cache(source, cols, q, n_slots)
        if c is None:
            n = cols.allocatable.shape[0]
            self._staged = _staging(self._cuda, self._staged, self._shapes(cols)[1], cols,
                                    self.MAX_STAGED_ROWS)
            # room in the packs for the columns as they are now (a node
            # appended, a column widened: the rows kept, those written staged)
            self._fit_mirror(source, cols)
            key = _cache_key(source, n, n_slots)
            c = self._cache_of(q, key, source, cols)
            if c is None or c.q is not q or c.key != key or c.seen < 0:
                self._steady = None
                return self._row_cache(source, cols, q, n_slots, self._sync_columns(source)), 0
            self._caches.move_to_end(id(q))
            c.epoch = QM.source_epoch(source)
            self._steady = (cols, source, q, n_slots, self._packs, self._staged,
                            source.layout_version, getattr(source, "cache_tag", None), c, c.key)
        if c.seen == source.version and c.extra is None:
            return c, 0
        width, host = self._staged[1], self._staged[2]
        if c.extra is not None:
            k = SR.stage(source.row_version, c.seen, cols, host, self.MAX_STAGED_ROWS,
                         self._dirty, self._behind(source, cols.allocatable.shape[0], c))
        else:
            # the write log read in the packing call itself (no list of rows
            # handed over; a scan of ``row_version`` when it cannot say)
            k = SR.stage(source.row_version, c.seen, cols, host, self.MAX_STAGED_ROWS,
                         log=getattr(source, "write_log", None))
        if k > self.MAX_STAGED_ROWS:
            self._steady = None
            return self._row_cache(source, cols, q, n_slots, self._sync_columns(source)), 0
        if k:
            self._upload_staged(SR.staged_size(k, width))
            self.rows_uploaded += k
        # level once the pick's launch has written the staged rows
        self._staged_since = c.seen
        self._version = c.seen = source.version
        c.extra = None
        return c, k

    def _steady_cache(self, source: ColumnSource, cols, q, n_slots):
        """The row cache the last placement cycle found, when nothing its
        lookup read has changed since: the same columns object (the same
        shapes and arrays: the staging buffers fit, ``_fit_mirror`` has
        nothing to do), the same source, layout version and tag (the same
        cache key), query and slots, the packs and staging buffers it left
        (any change to the mirror makes new ones), and the cache still that
        query's under the same key; else None (the full lookup)."""
        m = self._steady
        if (m is None or m[0] is not cols or m[1] is not source or m[2] is not q
                or m[3] != n_slots or m[4] is not self._packs or m[5] is not self._staged
                or source.layout_version != m[6]
                or getattr(source, "cache_tag", None) != m[7]):
            return None
        c = m[8]
        if c.key is not m[9] or c.seen < 0 or self._caches.get(id(q)) is not c:
            return None
        self._caches.move_to_end(id(q))
        c.epoch = QM.source_epoch(source)
        return c

    def _upload_staged(self, size: int) -> None:
        """The first ``size`` values of the staging buffer copied up: one
        driver copy into the start of the device buffer (no view of it: a
        device array view is an object the driver's wrapper builds)."""
        self._driver.host_to_device(self._staged[3], self._staged[2], 8 * size)
        self.copies += 1
        self.bytes_uploaded += 8 * size

    def _ranked_rows(self, source: ColumnSource, cols, q, n_slots) -> tuple:
        """(reasons [N], raw [N, S]) on the host for a cycle ranked there:
        the query's device row cache brought level as a placement cycle's
        (``_staged_cache``: the rows it is behind on, and those a changed
        query reaches, staged in one copy up), the staged rows written and
        recomputed by one launch (``_cuda.staged_rows_kernel``) which also
        gathers them when the host copy lacks no others (one copy back of
        those rows alone, not the span between them); else the host copy
        brought level by ``_host_rows``.  A query's first cycle, or more
        rows than a cycle stages: the packs' span copies and the by-row
        pass (``_staged_cache``)."""
        c, k = self._staged_cache(source, cols, q, n_slots)
        if k:
            staged = self._staged[2][:k]
            s = c.raw.shape[1]
            gather = (c.host_reasons is not None and c.host_seen == self._staged_since
                      and (c.host_extra is None or bool(np.isin(c.host_extra, staged).all())))
            out = self._kept_buffer("ranked", k * (1 + s), np.int64) if gather else None
            self._k.launch_staged_rows(k, self._staged[3], self._packs, self._qbuf(cols, q),
                                       c.reasons, c.raw, out)
            self.launches += 1
            self.rows_recomputed += k
            if gather:
                got = out[:k * (1 + s)].copy_to_host().reshape(k, 1 + s)
                c.host_reasons[staged] = got[:, 0]
                c.host_raw[staged] = got[:, 1:]
                c.host_seen, c.host_extra = c.seen, None
                self.rows_downloaded += k
        return self._host_rows(source, c)

    def _behind(self, source: ColumnSource, n: int, c: _DeviceRowCache) -> int:
        """How many rows the row cache ``c`` is behind on, those rows
        ascending in ``self._dirty`` (for ``staged_rows.stage``), or -1
        where the write log cannot say (``stage`` scans ``row_version``):
        the rows written after ``c.seen`` and those a changed query reaches
        (``extra``, ``_cache_of``: their pack values are the mirror's
        already)."""
        if c.extra is not None:
            rows = np.union1d(self._written(source, n, c.seen), c.extra)
            self._dirty[:rows.shape[0]] = rows
            return rows.shape[0]
        log = getattr(source, "write_log", None)
        if log is None:
            return -1
        return self._host.logged_rows(log.rows, log.versions, log.length, log.floor, c.seen,
                                      source.row_version, LOG_READ_MAX, self._dirty)

    def _cycle_rows(self, rows: np.ndarray, n: int):
        """``rows`` on the device for a cycle: every row is the cached
        ``arange(n)``; other rows are kept from the last cycle that had the
        same ones (a deleted node changes them), else copied."""
        if rows.shape[0] == n:
            return self._device_rows(rows, n)
        kept = self._kept_rows
        if kept is None or kept[0].shape != rows.shape or not np.array_equal(kept[0], rows):
            kept = self._kept_rows = (rows.copy(), self._cuda.to_device(rows))
        return kept[1]

    def _slot_params(self, active, norm, weights, n_slots):
        """The device copy of ``cycle.slot_params``, one per distinct value
        (looked up by the three arrays' bytes: no array built per cycle)."""
        active, norm, weights = (np.asarray(a) for a in (active, norm, weights))
        key = (n_slots, active.dtype.str, active.tobytes(), norm.dtype.str, norm.tobytes(),
               weights.dtype.str, weights.tobytes())
        got = self._sparams.get(key)
        if got is None:
            sp = self._cycle_host.slot_params(active, norm, weights, n_slots)
            got = self._sparams[key] = self._cuda.to_device(sp)
            while len(self._sparams) > self.MAX_CACHED_QUERIES:
                self._sparams.pop(next(iter(self._sparams)))
        return got

    def _host_rows(self, source: ColumnSource, c: _DeviceRowCache) -> tuple:
        """(reasons [N], raw [N, S]) of the device row cache ``c`` on the
        host, level with the device: copied whole the first time, then only
        the span of the rows written since the last copy (every change to
        the device cache is to a row whose ``row_version`` moved: the
        by-row pass recomputes those, the run kernel rewrites the rows it
        placed on, which ``register`` then marks) and of those an adopted
        query's changes reached (``host_extra``); a node appended (the
        cache grown, ``_grow``) is one of the rows written."""
        n = c.reasons.shape[0]
        if c.host_reasons is None:
            c.host_reasons, c.host_raw = c.reasons.copy_to_host(), c.raw.copy_to_host()
            self.rows_downloaded += n
        elif c.host_seen != c.seen or c.host_extra is not None:
            dirty = self._written(source, n, c.host_seen)
            if c.host_extra is not None:
                dirty = np.union1d(dirty, c.host_extra)
                c.host_extra = None
            if dirty.shape[0]:
                lo, hi = int(dirty[0]), int(dirty[-1]) + 1
                c.host_reasons[lo:hi] = c.reasons[lo:hi].copy_to_host()
                c.host_raw[lo:hi] = c.raw[lo:hi].copy_to_host()
                self.rows_downloaded += hi - lo
        c.host_seen = c.seen
        return c.host_reasons, c.host_raw

    def _cache_of(self, q, key, source, cols):
        """The query's device row cache, or one compiled before that
        ``query_match.adopt`` moves to ``q`` (an equal query's, or a stale
        one of the same form: the rows its changes reach kept in ``extra``
        for ``_row_cache``, and in ``host_extra`` for ``_host_rows``, as
        they are not among the written ones it copies back), or None."""
        c = self._caches.get(id(q))
        if c is not None and c.q is q and c.key == key:
            return c
        # as ``NumbaBackend._row_cache``: any layout, the same tag and
        # slots, at most as many rows (a node appended: grown on the device)
        n = key[2]
        got, extra = QM.adopt(self._caches, q, id(q), lambda k: (
            k[1] == key[1] and k[3:] == key[3:] and k[2] <= n), cols, n,
            QM.source_epoch(source))
        if got is not None:
            if got.key[2] < n:
                self._grow(got, n)
            if extra.shape[0]:
                got.extra = extra if got.extra is None else np.union1d(got.extra, extra)
                if got.host_reasons is not None:
                    got.host_extra = (extra if got.host_extra is None
                                      else np.union1d(got.host_extra, extra))
            got.key = key
            self.caches_adopted += 1
            return got
        return c

    def _grow(self, c: _DeviceRowCache, n: int) -> None:
        """``c``'s device arrays for ``n`` rows, the rows it has kept: views
        of arrays with spare rows (zeros), which grow to twice the rows
        (the kept rows copied on the device, the zeros uploaded once a
        doubling); its host copies grown alike (the new rows are written
        ones, which ``_host_rows`` copies back when next asked)."""
        cuda = self._cuda
        m = c.reasons.shape[0]
        full = c.full if c.full is not None else (c.reasons, c.raw)
        if full[0].shape[0] < n:
            cap = max(n, 2 * full[0].shape[0])
            zeros = np.zeros((cap, c.raw.shape[1]), np.int64)
            full = (cuda.device_array(cap, np.int64), cuda.to_device(zeros))
            full[0][:m].copy_to_device(c.reasons)
            full[1][:m].copy_to_device(c.raw)
            self.copies += 1
            self.bytes_uploaded += zeros.nbytes
        c.full = full
        c.reasons, c.raw = full[0][:n], full[1][:n]
        if c.host_reasons is not None and c.host_reasons.shape[0] < n:
            more = n - c.host_reasons.shape[0]
            c.host_reasons = np.concatenate((c.host_reasons, np.zeros(more, np.int64)))
            c.host_raw = np.concatenate((c.host_raw, np.zeros((more, c.host_raw.shape[1]),
                                                               np.int64)))

    def _row_cache(self, source: ColumnSource, cols, q, n_slots, packs) -> _DeviceRowCache:
        """The query's device row cache, current: the rows written since it
        last ran recomputed by one by-row fused pass (all rows the first time)."""
        cuda = self._cuda
        n = cols.allocatable.shape[0]
        key = _cache_key(source, n, n_slots)
        c = self._cache_of(q, key, source, cols)
        if c is None or c.q is not q or c.key != key:
            # spare rows for nodes appended later (``_grow``), as the packs'
            cap = n + max(16, n // 8)
            full = (cuda.device_array(cap, np.int64),
                    cuda.to_device(np.zeros((cap, n_slots), np.int64)))
            c = _DeviceRowCache(q, key, full[0][:n], full[1][:n])
            c.full = full
            self._caches[id(q)] = c
            while len(self._caches) > self.MAX_CACHED_QUERIES:
                self._caches.popitem(last=False)
        else:
            self._caches.move_to_end(id(q))
        c.epoch = QM.source_epoch(source)
        if c.seen != source.version or c.extra is not None:
            if c.seen < 0:
                d_rows, k = self._arange(n), n
            else:
                dirty = self._written(source, n, c.seen)
                if c.extra is not None:
                    dirty = np.union1d(dirty, c.extra)
                k = dirty.shape[0]
                d_rows = None
                if k:
                    lo, hi = int(dirty[0]), int(dirty[-1]) + 1
                    if hi - lo <= self.SPAN_SLACK * k:
                        # the span as a view of the device arange: no copy
                        # (its unwritten rows recompute to what they hold)
                        d_rows, k = self._arange(n)[lo:hi], hi - lo
                    else:
                        d_rows = cuda.to_device(dirty)
            if k:
                self._k.launch_fused_pass(k, d_rows, packs, self._qbuf(cols, q), True,
                                          c.reasons, c.raw)
                self.launches += 1
                self.rows_recomputed += k
            c.seen = source.version
            c.extra = None
        return c

    def place_run(self, source: ColumnSource, rows, start, q, num_to_find, active, norm, weights,
                  n_slots, count, seed, attempt, request, nonzero, register,
                  rules=None, spread=None, affinity=None) -> tuple[np.ndarray, int] | None:
        """``NumbaBackend.place_run`` device-resident: one block brings the
        query's device row cache up to date (the rows written since staged
        in one copy, as a placement cycle's: ``_staged_cache``) and places
        the whole run (``_cuda_run.place_run_kernel``, one launch;
        per-domain ``rules`` are evaluated by the block and counted by it,
        the ``spread`` and ``affinity`` scores recomputed by it over the
        scanned rows for each pod): the run's arrays go up packed in one
        copy (``_cuda_run.pack_run``) into device buffers kept between runs,
        the launch takes twelve arguments, and one copy of the placements
        comes back; then the host columns get the same requests added.  (A
        query's first run, or one after many rows were written, adds the
        by-row pass and the packs' span copies.)
        None (nothing done) with more score
        slots than the block keeps maxima for: those pods are scheduled one
        by one."""
        if n_slots > self._run.MAX_RUN_SLOTS:
            return None
        cols = source.columns()
        n = cols.allocatable.shape[0]
        m = rows.shape[0]
        if rules is None or rules.params.shape[0] == 0:
            rules = _never_fails(n)     # one rule no row fails: no empty device arrays
        if spread is None:
            spread = DR.stack_spread(None, n)
        if affinity is None:
            affinity = DR.stack_affinity(None, n)
        R = self._run
        rp = R.pack_run_params(count, start, num_to_find, request, nonzero, active, norm,
                               weights)
        host = R.pack_run(rp, np.ascontiguousarray(rows, np.int64), rules, spread, affinity)
        run = self._kept_buffer("run", host.shape[0], np.int64)
        run[:host.shape[0]].copy_to_device(host)
        self.copies += 1
        self.bytes_uploaded += host.nbytes
        work = self._kept_buffer("work", R.work_size(count, m, n, rules, spread, affinity),
                                  np.int64)
        sp_weights = self._kept_buffer("sp_weights", max(spread.params.shape[0], 1),
                                       np.float64)
        seed_mix = np.uint64(mix_of_seed(seed))
        # the rows written since the row cache's last pass: staged, for the
        # run's launch to write and recompute first (as a cycle's); last
        # before the launch (the mirror counts them written from here on)
        c, k = self._staged_cache(source, cols, q, n_slots)
        qbuf = self._qbuf(cols, q)      # the packs' layout as ``_staged_cache`` left them
        R.launch_place_run(m, seed_mix, self._staged[3], k, run, self._packs, qbuf, c.reasons,
                           c.raw, work, sp_weights)
        self.launches += 1
        self.rows_recomputed += k
        got = work[:count + R.OUT_EXTRA].copy_to_host()
        placed, next_start = int(got[0]), int(got[1])
        recomputed, rekeyed, full_scans = R.run_counters(got, count)
        self.run_rows_recomputed += recomputed
        self.run_rows_rekeyed += rekeyed
        self.run_full_scans += full_scans
        self.run_pods += placed
        out = got[2:2 + placed]
        # The host columns follow (the state's copy is the truth; the mirror
        # re-uploads these rows after ``register`` bumps their version, and
        # the row cache recomputes them at the next run).
        np.add.at(cols.requested, out, request)
        np.add.at(cols.nonzero_requested, out, nonzero)
        register(out)
        return out, next_start

    def _kept_buffer(self, name: str, size: int, dtype):
        """A device buffer of at least ``size`` values kept between runs
        (grown by doubling): no allocation a run."""
        got = self._kept.get(name)
        if got is None or got.shape[0] < size:
            cap = max(size, 2 * got.shape[0] if got is not None else 0, 16)
            got = self._kept[name] = self._cuda.device_array(cap, dtype)
        return got

    def place_run_sorted(self, source: ColumnSource, rows, start, q, num_to_find, active, norm,
                         weights, n_slots, count, seed, attempt, request, nonzero, register,
                         rules=None, spread=None, affinity=None) -> tuple[np.ndarray, int] | None:
        """``NumbaBackend.place_run_sorted`` on the device: the row cache
        kept there; one buffer goes up (``run_sort_cuda.run_layout``: the
        slot parameters, the run's rows unless they are every row, the
        rows the cache is behind on staged as a placement cycle stages
        them, the result head) and one comes back (the counts and the
        placements).  The staged rows are written and recomputed by a
        launch of their own, the normalization maxima reduced on the
        device, one launch writes every node's key sequence, one device
        sort orders them (the simulator path sorts on the host), the exact
        prefix is read from the counts beside the placements
        (``run_sort_cuda.sorted_positions``); the host columns then get
        the requests, as in ``place_run``.  A query's first run (or an
        unadoptable one's) builds its row cache first (``_row_cache``: the
        packs' span copies and the by-row pass).  None where the sort
        path does not apply."""
        from . import run_sort as RS
        from . import run_sort_cuda as RC
        if not RS.sortable(rows.shape[0], num_to_find, active, norm, n_slots,
                           (rules, spread, affinity)):
            return None
        cols = source.columns()
        rows = RS.ascending(rows)
        width = RS.key_width(cols, rows, q, count)
        if width == 0:
            return None
        n = cols.allocatable.shape[0]
        m = rows.shape[0]
        every = m == n
        lay = RC.run_layout(n_slots, 0 if every else m, 0, int(min(count, m * width)))
        c, k, host, dev, lay = self._sort_staged(source, cols, q, n_slots, lay)
        RC.fill_run(host, lay, np.asarray(active), np.asarray(norm), np.asarray(weights),
                    None if every else rows)
        pos, launches = RC.sorted_positions(
            host, dev, lay, k, self._arange(n) if every else None, count, width, c.reasons,
            c.raw, cols.requested.shape[1], mix_of_seed(seed), self._packs,
            self._qbuf(cols, q), self._sort_buffers)
        self.copies += 1
        self.bytes_uploaded += 8 * lay.pos_at
        self.rows_uploaded += k
        self.rows_recomputed += k
        self.launches += launches
        return place_sorted(self, cols, rows, pos, request, nonzero, register, start)

    def _sort_staged(self, source: ColumnSource, cols, q, n_slots, lay) -> tuple:
        """(the query's device row cache, k, host, device, layout) for a
        sorted run laid out as ``lay`` (no staged rows): the ``k`` rows the
        cache is behind on (``_behind``) staged into the run's host buffer
        (``_sort_buffers.run``, grown to hold them) and ``lay`` moved to
        make room; the staged rows' launch (``run_sort_cuda``) writes them
        into the packs, so the mirror counts them level.  A query's first
        run, or a cache none can be adopted for, goes ``_sync_columns``
        and ``_row_cache`` (k = 0)."""
        from . import run_sort_cuda as RC
        n = cols.allocatable.shape[0]
        SR = self._staged_rows
        if self._sort_buffers is None:
            self._sort_buffers = RC.RunBuffers()
        bufs = self._sort_buffers
        self._fit_mirror(source, cols)
        key = _cache_key(source, n, n_slots)
        c = self._cache_of(q, key, source, cols)
        if c is None or c.q is not q or c.key != key or c.seen < 0:
            c = self._row_cache(source, cols, q, n_slots, self._sync_columns(source))
            return (c, 0, *bufs.run(lay.end), lay)
        self._caches.move_to_end(id(q))
        c.epoch = QM.source_epoch(source)
        if c.seen == source.version and c.extra is None:
            return (c, 0, *bufs.run(lay.end), lay)
        width = SR.row_width(cols)
        found = self._behind(source, n, c)
        host, dev = bufs.run(lay.end + SR.staged_size(max(found, 1), width))
        while True:
            cap = (host.shape[0] - lay.end) // (1 + width)
            k = SR.stage(source.row_version, c.seen, cols, host[lay.staged_at:], cap,
                         self._dirty, found)
            if k <= cap:
                break
            host, dev = bufs.run(lay.end + SR.staged_size(k, width))
        staged = SR.staged_size(k, width)
        lay = RC.run_layout(n_slots, lay.staged_at - lay.rows_at, staged, lay.end - lay.pos_at)
        self._version = c.seen = source.version
        c.extra = None
        return c, k, host, dev, lay

    def _device_rows(self, rows: np.ndarray, n: int):
        """``rows`` (ascending, distinct, below ``n``) on the device: every
        row is the cached ``arange(n)``, else one copy."""
        if rows.shape[0] == n:
            return self._arange(n)
        return self._cuda.to_device(rows)

    def _arange(self, n: int):
        """``arange(n)`` on the device, kept."""
        if self._all_rows is None or self._all_rows.shape[0] != n:
            self._all_rows = self._cuda.to_device(np.arange(n, dtype=np.int64))
        return self._all_rows


def _staging(cuda, kept, widths: tuple, cols, cap: int) -> tuple:
    """The cuda backend's staging buffers for ``cols``: (column widths,
    row width, host pinned [S], device [S] int64; S =
    ``staged_rows.staged_size(cap, row width)``): ``kept`` while its
    widths are ``widths`` (a row appended keeps them), else new ones."""
    if kept is not None and kept[0] == widths:
        return kept
    from . import staged_rows as SR     # numba-compiled: the cuda backend's alone
    width = SR.row_width(cols)
    size = SR.staged_size(cap, width)
    return (widths, width, cuda.pinned_array(size, np.int64), cuda.device_array(size, np.int64))


def _layout_key(source: ColumnSource) -> tuple:
    """The source's layout and ``cache_tag`` (a source other than the
    state counts its own versions): part of a row cache's key (the packs
    follow ``_mirror_tag``, which a reallocation leaves alone)."""
    return (source.layout_version, getattr(source, "cache_tag", None))


def _mirror_tag(source: ColumnSource):
    """Whose columns the device packs mirror: the source's ``cache_tag``
    (a source other than the state counts its own versions); the state's
    reallocations keep its rows and ``row_version``, so they do not count."""
    tag = getattr(source, "cache_tag", None)
    return ("tag", tag) if tag is not None else ("source", id(source))


def _cache_key(source: ColumnSource, n: int, n_slots: int) -> tuple:
    """What a device row cache was computed for (with ``_layout_key``)."""
    return (*_layout_key(source), n, n_slots)


def _never_fails(n: int) -> DR.RuleArrays:
    """One per-domain rule over ``n`` rows that no row fails and no pod
    counts in (the device run's stand-in for none)."""
    return DR.stack_rules([DR.DomainRule(
        bit=0, domp1=np.zeros(n, np.int64), count_dom=np.full(n, -1, np.int64),
        sums=np.zeros(1, np.int64), present=None, thresh=0, track_min=False,
        fail_absent=False, fail_above=False, fail_not_above=False, increment=False)], n)


BACKENDS = backend_names.BACKENDS


def resolve_backend(name: str, stage: str = backend_names.CYCLE) -> str:
    """The backend that runs ``stage`` when ``name`` is asked for (``auto``:
    ``backend_names.resolve_backend`` with this machine's GPU)."""
    if name != backend_names.AUTO:
        return name
    return backend_names.resolve_backend(name, stage, gpu_present())


def make_backend(name: str):
    """The backend called ``name`` (``auto``: the fused cycle's, see
    ``resolve_backend``); an unknown name or a backend that cannot run here
    raises (there is no silent fallback)."""
    name = resolve_backend(name)
    if name == "numpy":
        return NumpyBackend()
    if name == "numba":
        return NumbaBackend()
    if name == "cuda":
        return CudaBackend()
    raise BackendUnavailable(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")


def cuda_kernels() -> dict:
    """The CUDA backend's kernels by what they do, ``{"fused pass": ...,
    "run kernel": ..., "cycle pick": ...}`` (numba-cuda dispatchers,
    ``.py_func`` their Python source), for compiling them ahead of a device
    (``bench.cuda_ptx``).  Imports numba-cuda: call it only where the cuda
    backend could run."""
    from . import _cuda as _fused_cuda
    from . import _cuda_cycle
    from . import _cuda_run
    return {"fused pass": _fused_cuda.fused_pass_kernel,
            "run kernel": _cuda_run.place_run_kernel,
            "cycle pick": _cuda_cycle.cycle_pick_kernel}


def numba_runs() -> tuple:
    """The numba backend's compiled runs over its by-row fused pass
    (``place_run``, ``place_run_scan``, ``place_run_window``: each an
    ``_compile.AnyLayout``, ``.dispatcher`` its Numba dispatcher), for
    timing one signature against another (``bench.run_layout``).  Compiles
    (or loads) the numba kernels: call it where numba runs."""
    from . import _numba as _fused_numba
    return _fused_numba.build_place_run(_fused_numba.fused_pass_by_row)


def numba_row_lookups() -> tuple:
    """The numba kernels that find the rows written since a version:
    (``dirty_rows``, the scan of ``row_version``; ``logged_rows``, the
    write log's lookup), for timing one against the other
    (``bench.cycle_cpu``).  Compiles (or loads) the numba kernels."""
    from . import _numba as _fused_numba
    return _fused_numba.dirty_rows, _fused_numba.logged_rows


def numba_fused_pass():
    """The numba backend's fused pass (positional outputs): an
    ``_compile.AnyLayout``, ``.dispatcher`` its Numba dispatcher (for
    timing one signature against another, ``bench.fused_layout``).
    Compiles (or loads) the numba kernels: call it where numba runs."""
    from . import _numba as _fused_numba
    return _fused_numba.fused_pass
