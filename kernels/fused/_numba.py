"""The fused per-node stages compiled for the CPU with Numba.

One ``prange`` pass over the evaluated rows runs every enabled filter and,
for feasible rows, every enabled score (``fused_pass``); a serial pass then
normalizes, weighs and finds the tied top rows (``finalize``).
"""

from __future__ import annotations

import hashlib
import inspect
import math
import os
import sys

from numba import njit, prange

from tensorsched.kernels._compile import KEY, AnyLayout, compile_module, compile_source

from . import _core
from . import stage_args as SA

# prange over nodes is opt-in: on 2 cores the per-call thread start-up costs
# more than it saves at these row counts (see bench/results).
_PARALLEL = os.environ.get("TENSORSCHED_NUMBA_PARALLEL", "0") == "1"

# Compiled once per machine: the machine code is kept on disk (kernels/_compile.py).
# The dense run scores' per-row formulas are inlined into the run's loops
# (numba IR inlining): as calls they cost the run a fifth of its time.
_INLINED = frozenset({"go_round", "base_total", "spread_raw", "affinity_raw", "dense_total"})


def _njit_core(f, **options):
    return njit(f, inline="always" if f.__name__ in _INLINED else "never", **options)


core = compile_module(_core, _njit_core, options={"nogil": True, "_nrt": False}, cache=True)
node_reasons = core["node_reasons"]
node_raw_scores = core["node_raw_scores"]
finalize = core["finalize_scores"]


_FUSED_TEMPLATE = """
def fused_pass(rows, {stage}, reasons_out, raw_out):
    for j in prange(rows.shape[0]):
        i = rows[j]
        o = {out_index}
        r = node_reasons(i, {reasons_args})
{filter_hooks}
        reasons_out[o] = r
        if r == 0:
            node_raw_scores(i, o, raw_out, {scores_args})
{score_hooks}
"""

_FILTER_HOOK = ("        if valid[i] and not user_filter_{k}(allocatable[i], requested[i], "
                "label_vals[i], request):\n            r |= {bit}")
_SCORE_HOOK = ("            raw_out[o, {slot}] = user_score_{k}(allocatable[i], requested[i], "
               "label_vals[i], request)")

_built: dict = {}
_built_keys: dict = {}          # fused pass -> its cache key (a run's key depends on it)


def _user_function_key(f):
    """What a compiled user function depends on: its file's text (Numba
    freezes the file's globals into the code), name and bytecode.  None
    (the pass then compiles in memory) when it has no source file, or when
    its module is not importable by name (``sys.modules``): a cached pass
    rebuilds the environments of the functions it calls by importing their
    modules."""
    py = getattr(f, "py_func", f)
    module = inspect.getmodule(py)
    if module is None or sys.modules.get(py.__module__) is not module:
        return None
    try:
        path = inspect.getsourcefile(py)
        with open(path, "rb") as fh:
            text = fh.read()
    except (OSError, TypeError):
        return None
    h = hashlib.sha256(text)
    h.update(f"\0{path}\0{py.__module__}.{py.__qualname__}\0".encode())
    h.update(py.__code__.co_code)
    return h.hexdigest()


def build_fused_pass(user_filters=(), user_scores=(), first_filter_bit=16, first_score_slot=5,
                     by_row=False):
    """The fused pass with per-node user functions compiled into the same loop.

    A user filter is ``f(allocatable [R], requested [R], label_vals [K],
    request [R]) -> bool`` (True = fits) and sets bit first_filter_bit + k
    when it fails; a user score has the same arguments and returns an int
    written to slot first_score_slot + k.  Functions are ``njit``-compiled
    here; one compiled pass is kept per tuple of functions, and on disk
    keyed by the generated source, the rules it calls and the user
    functions' source files (see ``_user_function_key``).

    With ``by_row`` the outputs are indexed by node row (reasons_out [N],
    raw_out [N, S]) instead of by position in ``rows``: the cached stage
    re-runs only the rows that changed and keeps the rest.

    The pass is an ``AnyLayout``: one signature, every array of any
    layout, for C-contiguous inputs and the state's strided column views
    alike."""
    key = (tuple(user_filters), tuple(user_scores), first_filter_bit, first_score_slot, by_row)
    fn = _built.get(key)
    if fn is not None:
        return fn
    namespace = {"prange": prange, "node_reasons": node_reasons,
                 "node_raw_scores": node_raw_scores}
    depends = [core[KEY]]
    hooks_f = []
    for k, f in enumerate(user_filters):
        namespace[f"user_filter_{k}"] = f if hasattr(f, "py_func") else njit(f)
        depends.append(_user_function_key(f))
        hooks_f.append(_FILTER_HOOK.format(k=k, bit=1 << (first_filter_bit + k)))
    hooks_s = []
    for k, f in enumerate(user_scores):
        namespace[f"user_score_{k}"] = f if hasattr(f, "py_func") else njit(f)
        depends.append(_user_function_key(f))
        hooks_s.append(_SCORE_HOOK.format(k=k, slot=first_score_slot + k))
    source = (_FUSED_TEMPLATE.replace("{filter_hooks}", "\n".join(hooks_f))
              .replace("{score_hooks}", "\n".join(hooks_s))
              .replace("{out_index}", "i" if by_row else "j")
              .replace("{stage}", SA.PARAMETERS)
              .replace("{reasons_args}", SA.call_arguments(_core.node_reasons, 1))
              .replace("{scores_args}", SA.call_arguments(_core.node_raw_scores, 3)))
    ns = compile_source(f"{__name__}.fused_pass", source, njit, ("fused_pass",), namespace,
                        options={"parallel": _PARALLEL, "nogil": True, "_nrt": False},
                        cache=True, depends=depends,
                        filename=f"<fused_pass {len(hooks_f)}f {len(hooks_s)}s>")
    fn = AnyLayout(ns["fused_pass"])
    _built[key] = fn
    _built_keys[fn] = ns.get(KEY)
    return fn


fused_pass = build_fused_pass()
fused_pass_by_row = build_fused_pass(by_row=True)
finalize_rows = core["finalize_rows"]
dirty_rows = core["dirty_rows"]
logged_rows = core["logged_rows"]
snapshot_rows = core["snapshot_rows"]
# called from Python with C-contiguous and strided arrays alike: one signature
rebuild_keys = AnyLayout(core["rebuild_keys"])
update_keys = AnyLayout(core["update_keys"])
key_top_row = core["key_top_row"]
gather_rows = core["gather_rows"]
tied_position = core["tied_position"]
scan_mixed = core["scan_mixed"]
partial_totals = core["partial_totals"]
finalize_partial = core["finalize_partial"]


# ---------------------------------------------------------------------------
# Compiled runs: many alike pods placed in one call, each exactly as its own
# cycle would place it (every node scored, per-row cache and segment tree).

_RUN_TEMPLATE = """
def pick_tied(ties, n_ties, rows, start, seed_mix, requested):
    '''The position (in ``rows``) the tie rule takes among the tied
    positions ``ties[:n_ties]`` (counted from ``start``): ``tied_position``'s
    choice (the highest ``tie_rank`` of the row with the pods it holds now,
    the lower row on an equal rank); -1 when none is tied.'''
    j = tied_position(ties, n_ties, rows, start, seed_mix, requested)
    if j < 0:
        return j
    p = j + start
    if p >= rows.shape[0]:
        p -= rows.shape[0]
    return p


def rule_bits(i, domp1, sums, params, thr):
    bits = 0
    for r in range(params.shape[0]):
        if rule_fails_row(r, i, domp1, sums, params, thr):
            bits |= params[r, 0]
    return bits


def rules_start(n_rows, base_reasons, reasons_run, domp1, sums, present, params, thr, at_min):
    rule_thresholds(sums, present, params, thr, at_min)
    for i in range(n_rows):
        reasons_run[i] = base_reasons[i] | rule_bits(i, domp1, sums, params, thr)


def add_domain_rows(r, d, dom_ptr, dom_rows, mark, stamp, dirty, k, limit):
    for x in range(dom_ptr[r, d], dom_ptr[r, d + 1]):
        i = dom_rows[r, x]
        if mark[i] != stamp:
            if k >= limit:
                return -1
            mark[i] = stamp
            dirty[k] = i
            k += 1
    return k


def rules_count(row, count_dom, sums, present, params, thr, at_min, dom_ptr, dom_rows,
                mark, stamp, dirty, k, limit):
    return rules_count_rows(row, count_dom, sums, present, params, thr, at_min, dom_ptr,
                            dom_rows, mark, stamp, dirty, k, limit, None)


def finalize_spread(rows, start, reasons_by_row, raw_by_row, num_to_find, active_slots,
                    norm_mode, weights, ties_scratch, hi_scratch, sp_domp1, sp_sums,
                    sp_size_dom, sp_params, sp_has_all, sp_meta, sp_marks, stamp, sp_sizes,
                    sp_weights, raw_scratch, sp_base, sp_base_hi, norm_slots, af_domp1, af_sums,
                    af_params, af_meta, af_raw, feas_pos):
    m = rows.shape[0]
    n_slots = raw_by_row.shape[1]
    slot = sp_meta[0]
    require_all = sp_meta[1] != 0
    n_terms = sp_meta[2]
    processed = m
    found = 0
    if num_to_find < m:         # every node scored: no stop to find
        processed, found = scan_stop(rows, start, reasons_by_row, num_to_find)
    for s in range(n_slots):
        hi_scratch[s] = 0
    for c in range(n_terms):
        sp_sizes[c] = 0
    n_counted = 0
    n_feas = 0              # the scanned feasible positions, for the later passes
    for j in range(processed):
        jj = start + j
        if jj >= m:
            jj -= m
        i = rows[jj]
        if reasons_by_row[i] != 0:
            continue
        feas_pos[n_feas] = j
        n_feas += 1
        for x in range(norm_slots.shape[0]):
            s = norm_slots[x]
            if raw_by_row[i, s] > hi_scratch[s]:
                hi_scratch[s] = raw_by_row[i, s]
        if sp_has_all[i]:
            n_counted += 1
            for c in range(n_terms):
                if sp_params[c, 0] == 0:
                    d = sp_size_dom[c, i]
                    if sp_marks[c, d] != stamp:
                        sp_marks[c, d] = stamp
                        sp_sizes[c] += 1
    # The other slots' weighted sum per row, kept while their maxima stay
    # (only the placed row's raw scores move between two pods).
    same = sp_base_hi[n_slots] != 0
    for s in range(n_slots):
        if sp_base_hi[s] != hi_scratch[s]:
            same = False
    if not same:
        for s in range(n_slots):
            sp_base_hi[s] = hi_scratch[s]
        sp_base_hi[n_slots] = 1
        for i in range(raw_by_row.shape[0]):
            sp_base[i] = base_total(i, raw_by_row, active_slots, norm_mode, weights,
                                    hi_scratch, slot if n_terms > 0 else -1)
    for c in range(n_terms):
        size = n_counted if sp_params[c, 0] != 0 else sp_sizes[c]
        sp_weights[c] = math.log(float(size + 2))
    lo = 0
    hi = 0
    seen = False
    for x in range(n_feas if n_terms > 0 else 0):
        j = feas_pos[x]
        jj = start + j
        if jj >= m:
            jj -= m
        i = rows[jj]
        if not sp_has_all[i]:
            continue
        r = spread_raw(i, sp_domp1, sp_sums, sp_params, sp_weights, require_all, n_terms)
        raw_scratch[j] = r
        if not seen:
            lo = r
            hi = r
            seen = True
        elif r < lo:
            lo = r
        elif r > hi:
            hi = r
    # InterPodAffinity: weights x domain counts, min-max over the scanned rows
    n_af = af_meta[1]
    af_lo = 0
    af_hi = 0
    af_seen = False
    for x in range(n_feas if n_af > 0 else 0):
        j = feas_pos[x]
        jj = start + j
        if jj >= m:
            jj -= m
        i = rows[jj]
        r = affinity_raw(i, af_domp1, af_sums, af_params, n_af)
        af_raw[j] = r
        if not af_seen:
            af_lo = r
            af_hi = r
            af_seen = True
        elif r < af_lo:
            af_lo = r
        elif r > af_hi:
            af_hi = r
    af_span = af_hi - af_lo
    sp_on = n_terms > 0 and active_slots[slot]
    sp_w = weights[slot] if sp_on else 0
    best = -1
    n_ties = 0
    for x in range(n_feas):
        j = feas_pos[x]
        jj = start + j
        if jj >= m:
            jj -= m
        i = rows[jj]
        t = dense_total(sp_base[i], sp_has_all[i], raw_scratch[j], lo, hi, sp_on, sp_w,
                        af_raw[j] if n_af > 0 else 0, af_lo,
                        af_span if n_af > 0 else 0, af_meta[2])
        if t > best:
            best = t
            n_ties = 0
        if t == best:
            ties_scratch[n_ties] = j
            n_ties += 1
    return n_ties, processed, found


def place_run(count, seed_mix, pod_request, pod_nonzero, fargs,
              base_reasons, reasons_run, raw_by_row, active_slots, norm_mode, weights, hi,
              hi_cnt, total_by_row, tkey, size, n_rows, feasible, one_row, old_reasons,
              old_raw, out_rows, r_domp1, r_count_dom, r_sums, r_present, r_params, r_dom_ptr,
              r_dom_rows, r_thr, r_at_min, mark, dirty):
    requested = fargs[1]
    nonzero_requested = fargs[2]
    n_rules = r_params.shape[0]
    limit = old_reasons.shape[0]
    if n_rules > 0:
        rules_start(n_rows, base_reasons, reasons_run, r_domp1, r_sums, r_present, r_params,
                    r_thr, r_at_min)
        feasible = rebuild_keys(n_rows, reasons_run, raw_by_row, active_slots, norm_mode,
                                weights, hi, hi_cnt, total_by_row, seed_mix, requested, tkey,
                                size)
    for i in range(count):
        if tkey[1] < 0:
            return i, feasible
        row = key_top_row(tkey, size)
        out_rows[i] = row
        for r in range(pod_request.shape[0]):
            requested[row, r] += pod_request[r]
        nonzero_requested[row, 0] += pod_nonzero[0]
        nonzero_requested[row, 1] += pod_nonzero[1]
        # The rows whose answers move: the chosen one, and those of the
        # domains a rule's answer flipped for (all of them when too many).
        mark[row] = i + 1
        dirty[0] = row
        k = 1
        if n_rules > 0:
            k = rules_count(row, r_count_dom, r_sums, r_present, r_params, r_thr, r_at_min,
                            r_dom_ptr, r_dom_rows, mark, i + 1, dirty, 1, limit)
        if k > 0:
            snapshot_rows(dirty, k, reasons_run, raw_by_row, old_reasons, old_raw)
        one_row[0] = row
        fused_pass_by_row(one_row, *fargs, base_reasons, raw_by_row)
        if k < 0:
            for x in range(n_rows):
                reasons_run[x] = base_reasons[x] | rule_bits(x, r_domp1, r_sums, r_params,
                                                             r_thr)
            delta = -1000000000
        else:
            if n_rules > 0:
                for x in range(k):
                    j = dirty[x]
                    reasons_run[j] = base_reasons[j] | rule_bits(j, r_domp1, r_sums,
                                                                 r_params, r_thr)
            delta = update_keys(dirty, k, old_reasons, old_raw, reasons_run, raw_by_row,
                                active_slots, norm_mode, weights, hi, hi_cnt, total_by_row,
                                seed_mix, requested, tkey, size)
        if delta == -1000000000:
            feasible = rebuild_keys(n_rows, reasons_run, raw_by_row, active_slots,
                                    norm_mode, weights, hi, hi_cnt, total_by_row, seed_mix,
                                    requested, tkey, size)
        else:
            feasible += delta
    return count, feasible


def rules_count_rows(row, count_dom, sums, present, params, thr, at_min, dom_ptr, dom_rows,
                     mark, stamp, dirty, k, limit, r_col):
    '''Count a pod placed on ``row`` in every rule that counts it and list
    the rows whose answer may have moved (``dirty[k:]``; -1: too many,
    every row is re-tested).  With ``r_col`` (not None) the class rules
    (r_col[r] >= 0) only count: their answers are read per class.'''
    over = False
    for r in range(params.shape[0]):
        if params[r, 6] == 0:
            continue
        d = count_dom[r, row]
        if d < 0:
            continue
        if params[r, 8] != 0:
            rules_group_placed(params)
            over = True             # every row is re-tested
        before = rule_fails_count(r, sums[r, d], params, thr)
        old_thr = rule_count(r, d, sums, present, params, thr, at_min)
        if over:
            continue                # every row is re-tested anyway: only count
        if r_col is not None:       # a compile-time branch: None is its own type
            if r_col[r] >= 0:
                continue
        if thr[r] != old_thr:
            for dd in range(params[r, 7]):
                s_old = sums[r, dd] - 1 if dd == d else sums[r, dd]
                was = params[r, 4] != 0 if s_old > old_thr else params[r, 5] != 0
                if rule_fails_count(r, sums[r, dd], params, thr) != was:
                    k = add_domain_rows(r, dd, dom_ptr, dom_rows, mark, stamp, dirty, k, limit)
                    if k < 0:
                        over = True
                        break
        elif rule_fails_count(r, sums[r, d], params, thr) != before:
            k = add_domain_rows(r, d, dom_ptr, dom_rows, mark, stamp, dirty, k, limit)
            if k < 0:
                over = True
    return -1 if over else k


def place_run_classes(count, seed_mix, pod_request, pod_nonzero, fargs,
                      base_reasons, reasons_run, raw_by_row, active_slots, norm_mode, weights,
                      hi, n_rows, one_row, old_reasons, old_raw, out_rows, r_domp1,
                      r_count_dom, r_sums, r_present, r_params, r_dom_ptr, r_dom_rows, r_thr,
                      r_at_min, mark, dirty, sp_domp1, sp_count_dom, sp_size_dom, sp_sums,
                      sp_params, sp_has_all, sp_meta, af_domp1, af_count_dom, af_sums, af_params,
                      af_meta, mode, dom_row, r_col, base, row_class, ckey, cmembers, cfeas, cok,
                      cshi, cscnt, cstale, chw, ctkey, size, sd_cnt, sizes, counted,
                      term_weights, craw_sp, craw_af, cterm, key):
    requested = fargs[1]
    nonzero_requested = fargs[2]
    n_rules = r_params.shape[0]
    limit = old_reasons.shape[0]
    n_sp = sp_meta[2]
    n_af = af_meta[1]
    slot = sp_meta[0]
    skip = slot if n_sp > 0 else -1
    require_all = sp_meta[1] != 0
    sp_on = n_sp > 0 and active_slots[slot]
    sp_w = weights[slot] if sp_on else 0
    rebuild = True
    for i in range(count):
        if rebuild:
            # leaf reasons: built-in | per-row rules (class rules per class)
            if n_rules > 0:
                rule_thresholds(r_sums, r_present, r_params, r_thr, r_at_min)
                for x in range(n_rows):
                    reasons_run[x] = base_reasons[x] | row_rule_bits(x, r_domp1, r_sums,
                                                                     r_params, r_thr, r_col)
            if not classes_build(n_rows, reasons_run, raw_by_row, active_slots, norm_mode,
                                 weights, hi, skip, base, row_class, mode, sp_domp1, sp_sums,
                                 sp_size_dom, sp_params, sp_has_all, n_sp, af_domp1, af_sums,
                                 n_af, r_domp1, r_sums, r_params, r_thr, r_col, ckey, cmembers,
                                 cfeas, cok, cshi, cscnt, cstale, chw, seed_mix, requested,
                                 ctkey, size, sd_cnt, sizes, counted, key):
                return i, 1
            rebuild = False
        else:
            classes_usable(chw[0], cmembers, cfeas, ckey, cok, r_col, r_sums, r_params, r_thr)
            if classes_maxima(chw[0], cok, cshi, active_slots, norm_mode, hi):
                classes_rebase(n_rows, reasons_run, raw_by_row, active_slots, norm_mode,
                               weights, hi, skip, base, row_class, chw[0], seed_mix, requested,
                               ctkey, size)
        for c in range(n_sp):
            sz = counted[0] if sp_params[c, 0] != 0 else sizes[c]
            term_weights[c] = math.log(float(sz + 2))
        class_terms(chw[0], cok, ckey, mode, sp_sums, sp_params, term_weights, require_all,
                    n_sp, af_sums, af_params, n_af, sp_on, sp_w, af_meta[2], craw_sp, craw_af,
                    cterm)
        # the best key over the usable classes (a class's term shifts every
        # key of its tree alike); equal keys: the lower row
        best = -1
        row = -1
        for c in range(chw[0]):
            if not cok[c] or ctkey[c, 1] < 0:
                continue
            v = ctkey[c, 1] + (cterm[c] << 31)
            if v > best:
                best = v
                row = ctree_top_row(ctkey, c, size)
            elif v == best:
                row = min(row, ctree_top_row(ctkey, c, size))
        if best < 0:
            return i, 0
        out_rows[i] = row
        for r in range(pod_request.shape[0]):
            requested[row, r] += pod_request[r]
        nonzero_requested[row, 0] += pod_nonzero[0]
        nonzero_requested[row, 1] += pod_nonzero[1]
        mark[row] = i + 1
        dirty[0] = row
        k = 1
        if n_rules > 0:
            k = rules_count_rows(row, r_count_dom, r_sums, r_present, r_params, r_thr,
                                 r_at_min, r_dom_ptr, r_dom_rows, mark, i + 1, dirty, 1, limit,
                                 r_col)
        # a term counted per row moves the row of the domain the pod counts
        # in to another class (the placed row itself, for hostname)
        for x in range(n_sp + n_af):
            if k < 0:
                break
            if mode[x] == 0:
                continue
            if x < n_sp:
                d = sp_count_dom[x, row] if sp_params[x, 2] != 0 else -1
            else:
                d = af_count_dom[x - n_sp, row] if af_params[x - n_sp, 1] != 0 else -1
            if d < 0:
                continue
            j = dom_row[x, d]
            if j >= 0 and mark[j] != i + 1:
                if k >= limit:
                    k = -1
                    break
                mark[j] = i + 1
                dirty[k] = j
                k += 1
        if k > 0:
            snapshot_rows(dirty, k, reasons_run, raw_by_row, old_reasons, old_raw)
        count_placed(row, sp_count_dom, sp_sums, sp_params, n_sp, 2)
        count_placed(row, af_count_dom, af_sums, af_params, n_af, 1)
        one_row[0] = row
        fused_pass_by_row(one_row, *fargs, base_reasons, raw_by_row)
        if k < 0:
            rebuild = True
            continue
        for x in range(k):
            j = dirty[x]
            if n_rules > 0:
                reasons_run[j] = base_reasons[j] | row_rule_bits(j, r_domp1, r_sums, r_params,
                                                                 r_thr, r_col)
            if not class_move(j, x, old_reasons, old_raw, reasons_run, raw_by_row,
                              active_slots, norm_mode, weights, hi, skip, base, row_class, mode,
                              sp_domp1, sp_sums, sp_size_dom, sp_params, sp_has_all, n_sp,
                              af_domp1, af_sums, n_af, r_domp1, r_col, ckey, cmembers, cfeas,
                              cshi, cscnt, cstale, chw, seed_mix, requested, ctkey, size,
                              sd_cnt, sizes, counted, key):
                return i + 1, 1
        for c in range(chw[0]):
            if cstale[c] != 0:
                class_slots_rescan(c, n_rows, row_class, reasons_run, raw_by_row, cshi, cscnt,
                                   cstale)
    return count, 0


def place_run_scan(count, seed_mix, rows, start, num_to_find, pod_request,
                   pod_nonzero, fargs, base_reasons, reasons_run, raw_by_row, active_slots,
                   norm_mode, weights, scores_scratch, total_scratch, ties_scratch, hi_scratch,
                   one_row, out_rows, r_domp1, r_count_dom, r_sums, r_present, r_params, r_dom_ptr,
                   r_dom_rows, r_thr, r_at_min, mark, dirty, sp_domp1, sp_count_dom,
                   sp_size_dom, sp_sums, sp_params, sp_has_all, sp_meta, sp_marks, sp_sizes,
                   sp_weights, sp_raw, sp_base, sp_base_hi, norm_slots, af_domp1, af_count_dom,
                   af_sums, af_params, af_meta, af_raw, feas_pos):
    requested = fargs[1]
    nonzero_requested = fargs[2]
    m = rows.shape[0]
    n_rules = r_params.shape[0]
    if n_rules > 0:
        rules_start(base_reasons.shape[0], base_reasons, reasons_run, r_domp1, r_sums,
                    r_present, r_params, r_thr, r_at_min)
    for i in range(count):
        if sp_meta[2] > 0 or af_meta[1] > 0:
            n_ties, processed, found = finalize_spread(
                rows, start, reasons_run, raw_by_row, num_to_find, active_slots, norm_mode,
                weights, ties_scratch, hi_scratch, sp_domp1, sp_sums, sp_size_dom, sp_params,
                sp_has_all, sp_meta, sp_marks, i + 1, sp_sizes, sp_weights, sp_raw, sp_base,
                sp_base_hi, norm_slots, af_domp1, af_sums, af_params, af_meta, af_raw,
                feas_pos)
        else:
            n_ties, processed, found = finalize_rows(
                rows, start, reasons_run, raw_by_row, num_to_find, active_slots, norm_mode,
                weights, False, scores_scratch, total_scratch, ties_scratch, hi_scratch)
        if n_ties == 0:
            return i, start
        row = rows[pick_tied(ties_scratch, n_ties, rows, start, seed_mix, requested)]
        out_rows[i] = row
        for r in range(pod_request.shape[0]):
            requested[row, r] += pod_request[r]
        nonzero_requested[row, 0] += pod_nonzero[0]
        nonzero_requested[row, 1] += pod_nonzero[1]
        mark[row] = i + 1
        dirty[0] = row
        k = 1
        if n_rules > 0:
            k = rules_count(row, r_count_dom, r_sums, r_present, r_params, r_thr, r_at_min,
                            r_dom_ptr, r_dom_rows, mark, i + 1, dirty, 1, dirty.shape[0])
        count_placed(row, sp_count_dom, sp_sums, sp_params, sp_meta[2], 2)
        count_placed(row, af_count_dom, af_sums, af_params, af_meta[1], 1)
        one_row[0] = row
        fused_pass_by_row(one_row, *fargs, base_reasons, raw_by_row)
        if sp_base_hi[raw_by_row.shape[1]] != 0:
            sp_base[row] = base_total(row, raw_by_row, active_slots, norm_mode, weights,
                                      sp_base_hi, sp_meta[0] if sp_meta[2] > 0 else -1)
        if k < 0:
            for x in range(base_reasons.shape[0]):
                reasons_run[x] = base_reasons[x] | rule_bits(x, r_domp1, r_sums, r_params,
                                                             r_thr)
        elif n_rules > 0:
            for x in range(k):
                j = dirty[x]
                reasons_run[j] = base_reasons[j] | rule_bits(j, r_domp1, r_sums, r_params,
                                                             r_thr)
        start = (start + processed) % m
    return count, start


def win_sum(wt, size, lo, hi):
    '''Feasible positions in [lo, hi).'''
    c = 0
    a = lo + size
    b = hi + size
    while a < b:
        if a & 1:
            c += wt[a, 0]
            a += 1
        if b & 1:
            b -= 1
            c += wt[b, 0]
        a >>= 1
        b >>= 1
    return c


def win_kth(wt, size, r):
    '''The position of the r-th (0-based) feasible position.'''
    p = 1
    while p < size:
        a = 2 * p
        if r < wt[a, 0]:
            p = a
        else:
            r -= wt[a, 0]
            p = a + 1
    return p - size


def win_better(wt, q, key, row):
    '''Whether node q's top (key, row) beats ``key``/``row``: a larger
    key, or the same key on a lower row.'''
    return wt[q, 1] > key or (wt[q, 1] == key and wt[q, 2] < row)


def win_take(wt, q, acc):
    '''Fold node q into a window's answer ``acc``: its top tie key, that
    key's row and position (columns 1-3), the normalized slots' maxima
    (4...).'''
    if win_better(wt, q, acc[1], acc[2]):
        acc[1] = wt[q, 1]
        acc[2] = wt[q, 2]
        acc[3] = wt[q, 3]
    for c in range(4, wt.shape[1]):
        if wt[q, c] > acc[c]:
            acc[c] = wt[q, c]


def win_range(wt, size, lo, hi, acc):
    '''Fold the nodes covering [lo, hi) into ``acc`` (``win_take``): one
    walk up for the top key, its row and every slot's maximum.'''
    a = lo + size
    b = hi + size
    while a < b:
        if a & 1:
            win_take(wt, a, acc)
            a += 1
        if b & 1:
            b -= 1
            win_take(wt, b, acc)
        a >>= 1
        b >>= 1


def win_leaf(p, i, reasons_by_row, raw_by_row, active_slots, norm_mode, weights, href,
             norm_slots, wt, size, seed_mix, requested):
    '''Write position p (row i) into its leaf.'''
    ok = reasons_by_row[i] == 0
    q = size + p
    wt[q, 0] = 1 if ok else 0
    wt[q, 1] = row_key(i, row_total(i, reasons_by_row, raw_by_row, active_slots, norm_mode,
                                    weights, href), seed_mix, requested)
    wt[q, 2] = i
    wt[q, 3] = p
    for j in range(norm_slots.shape[0]):
        wt[q, 4 + j] = raw_by_row[i, norm_slots[j]] if ok else -1


def win_pull_top(wt, p):
    '''Node p's top key, its row and position from its children's.'''
    a = 2 * p
    if not win_better(wt, a, wt[a + 1, 1], wt[a + 1, 2]):
        a += 1
    wt[p, 1] = wt[a, 1]
    wt[p, 2] = wt[a, 2]
    wt[p, 3] = wt[a, 3]


def win_pull(wt, p):
    '''Node p from its children: feasible count, top key, slot maxima.'''
    a = 2 * p
    wt[p, 0] = wt[a, 0] + wt[a + 1, 0]
    win_pull_top(wt, p)
    for c in range(4, wt.shape[1]):
        wt[p, c] = max(wt[a, c], wt[a + 1, c])


def win_build(rows, reasons_by_row, raw_by_row, active_slots, norm_mode, weights, href,
              norm_slots, wt, size, seed_mix, requested):
    '''The tree over evaluation positions 0..M-1 (position p = row rows[p]).'''
    m = rows.shape[0]
    for p in range(size):
        if p < m:
            win_leaf(p, rows[p], reasons_by_row, raw_by_row, active_slots, norm_mode, weights,
                     href, norm_slots, wt, size, seed_mix, requested)
        else:
            q = size + p
            wt[q, 0] = 0
            wt[q, 1] = -1
            wt[q, 2] = 1 << 62
            wt[q, 3] = p
            for c in range(4, wt.shape[1]):
                wt[q, c] = -1
    for p in range(size - 1, 0, -1):
        win_pull(wt, p)


def win_totals(rows, reasons_by_row, raw_by_row, active_slots, norm_mode, weights, href,
               wt, size, seed_mix, requested):
    '''The keys again under new maxima ``href``.'''
    m = rows.shape[0]
    for p in range(m):
        i = rows[p]
        wt[size + p, 1] = row_key(i, row_total(i, reasons_by_row, raw_by_row, active_slots,
                                               norm_mode, weights, href), seed_mix, requested)
    for p in range(size - 1, 0, -1):
        win_pull_top(wt, p)


def win_answer(wt, size, start, end1, end2, acc):
    '''The window [start, end1) + [0, end2) folded into ``acc`` (top key,
    its row and position, slot maxima from 0).'''
    acc[1] = -1
    acc[2] = 1 << 62
    acc[3] = -1
    for c in range(4, acc.shape[0]):
        acc[c] = 0
    win_range(wt, size, start, end1, acc)
    if end2 > 0:
        win_range(wt, size, 0, end2, acc)


def place_run_window(count, seed_mix, rows, start, num_to_find, pod_request,
                     pod_nonzero, fargs, reasons_by_row, raw_by_row, active_slots, norm_mode,
                     weights, hi, href, one_row, out_rows, norm_slots, wt, acc, size):
    requested = fargs[1]
    nonzero_requested = fargs[2]
    m = rows.shape[0]
    n_slots = raw_by_row.shape[1]
    n_norm = norm_slots.shape[0]
    for s in range(n_slots):
        href[s] = 0
    win_build(rows, reasons_by_row, raw_by_row, active_slots, norm_mode, weights, href,
              norm_slots, wt, size, seed_mix, requested)
    misses = 0
    before = win_sum(wt, size, 0, start)    # feasible positions before ``start``
    for i in range(count):
        # the window: from ``start`` to the num_to_find-th feasible position
        # (every position when fewer are feasible), as ``scan_stop``
        feasible = wt[1, 0]
        if feasible == 0:
            return i, start
        if num_to_find <= 0 or num_to_find > feasible:
            processed = m
            after = before                  # the next window starts here again
        else:
            r = before + num_to_find - 1
            if r < feasible:
                processed = win_kth(wt, size, r) - start + 1
                after = r + 1
            else:
                processed = m - start + win_kth(wt, size, r - feasible) + 1
                after = r - feasible + 1
        end1 = min(m, start + processed)
        end2 = start + processed - m          # <= 0: the window does not wrap
        # one walk over the window: its top key (totals under ``href``),
        # that key's position, the normalization maxima over its feasible rows
        win_answer(wt, size, start, end1, end2, acc)
        same = True
        for s in range(n_slots):
            hi[s] = 0
        for j in range(n_norm):
            s = norm_slots[j]
            hi[s] = acc[4 + j]
            if hi[s] != href[s]:
                same = False
        if not same:
            # keys under other maxima: this window by a scan, and the tree
            # re-taken under them when windows keep disagreeing
            misses += 1
            if misses >= 4:
                for s in range(n_slots):
                    href[s] = hi[s]
                win_totals(rows, reasons_by_row, raw_by_row, active_slots, norm_mode, weights,
                           href, wt, size, seed_mix, requested)
                misses = 0
                same = True
                win_answer(wt, size, start, end1, end2, acc)
        if same:
            p = acc[3]
        else:
            best = -1
            best_row = -1
            p = -1
            for j in range(processed):
                q = start + j
                if q >= m:
                    q -= m
                x = rows[q]
                if reasons_by_row[x] != 0:
                    continue
                key = row_key(x, row_total(x, reasons_by_row, raw_by_row, active_slots,
                                           norm_mode, weights, hi), seed_mix, requested)
                if key > best or (key == best and x < best_row):
                    best = key
                    best_row = x
                    p = q
        row = rows[p]
        out_rows[i] = row
        for r in range(pod_request.shape[0]):
            requested[row, r] += pod_request[r]
        nonzero_requested[row, 0] += pod_nonzero[0]
        nonzero_requested[row, 1] += pod_nonzero[1]
        one_row[0] = row
        fused_pass_by_row(one_row, *fargs, reasons_by_row, raw_by_row)
        was = wt[size + p, 0]
        win_leaf(p, row, reasons_by_row, raw_by_row, active_slots, norm_mode, weights, href,
                 norm_slots, wt, size, seed_mix, requested)
        q = (size + p) >> 1
        while q >= 1:
            win_pull(wt, q)
            q >>= 1
        start = (start + processed) % m
        # the feasible positions before the next start, kept without a walk:
        # ``after`` counted them before the placement, which moved only p
        if start == 0:
            before = 0
        else:
            before = after + (wt[size + p, 0] - was if p < start else 0)
    return count, start
"""

_runs: dict = {}
_classes_runs: dict = {}


def build_place_run_classes(by_row_pass):
    """The compiled run over score classes for ``by_row_pass`` (compiled
    with ``build_place_run``'s): every node scored, with PodTopologySpread's
    ScheduleAnyway score and / or InterPodAffinity's score, the same
    placements as ``place_run_scan`` without rescanning every row per pod
    (``_core``'s score classes); per-domain rules of few domains are answered
    per class too (a zone flip costs no row).  ``place_run_classes(count, seed_mix,
    pod_request, pod_nonzero, fargs, the row cache's reasons
    [N], the run's reasons [N] (built-in | per-row rules), raw [N, S],
    active, norm, weights, maxima [S], N, one_row [1], old reasons / raw scratch [L],
    [L, S], out_rows [count], the ``RuleArrays`` fields, thresholds /
    at-minimum counts [R], mark [N] zeros, dirty [L], the ``SpreadArrays``
    fields but marks, the ``AffinityArrays`` fields, then the class state
    (``domain_rules.ClassKeys``: mode [K], dom_row [K, D], r_col [R]),
    base [N], row_class [N], ckey [cap, K], members / leaf-feasible members /
    usable flags [cap], slot maxima and their counts [cap, S] x 2, stale
    flags [cap], high-water [1], key trees [cap, 2Z], Z, size-domain counts
    [C, K'], sizes [C], counted [1], and scratch: term weights [C], raw
    spread / affinity and terms by class [cap] x 3, key [K]) -> (placed,
    overflow)``: overflow 1 when the
    classes outgrew cap after ``placed`` pods (the caller places the rest
    by the scan; every array is current), else the run stopped before a
    pod with no feasible row or placed them all."""
    build_place_run(by_row_pass)
    return _classes_runs[by_row_pass]


def build_place_run(by_row_pass):
    """The compiled runs over ``by_row_pass`` (a ``build_fused_pass(...,
    by_row=True)`` pass): (``place_run``, ``place_run_scan``,
    ``place_run_window``).

    ``place_run`` is for every node scored: ``place_run(count, seed_mix,
    pod_request [R], pod_nonzero [2], fargs (kernel_args), the row cache's
    reasons [N], the run's reasons [N] (the same array without rules), raw
    [N, S], the score setup, maxima, totals, the key tree over the run's
    reasons [2Z], Z, feasible count, scratch (one_row [1], old reasons / raw
    [L], [L, S]), out_rows [count], the ``domain_rules.RuleArrays`` fields,
    thresholds / at-minimum counts [R], mark [N] zeros, dirty [L]) ->
    (placed, feasible)``.

    Every run takes the tie rule (``fused.ties``, ``seed_mix`` = seed *
    0x9E3779B97F4A7C15 mod 2**64): among the rows at the top total the
    highest ``tie_rank(seed_mix, row, pods on the row)``, the lower row on
    an equal rank, whatever the evaluation order.  Pod i takes the row of
    the largest key (``_core.row_key``); its request is added to that row
    of ``fargs``' requested columns (its pod count with it), the row is
    recomputed and its key folded into the tree.  A rule that counts the
    pod adds one to the row's domain; the rows of every domain whose answer
    flipped are re-tested and folded in too (more than L rows: every row,
    and the tree rebuilt).  The run stops before the first pod with no
    feasible row.

    ``place_run_scan`` is for percentageOfNodesToScore below every node:
    each pod's cycle scans ``rows`` (evaluation order from position
    ``start``) until ``num_to_find`` feasible rows, as ``finalize_rows``
    does, takes the tie rule's row among the scanned top ones
    (``pick_tied``), and the next pod starts where that scan stopped;
    returns (placed, the next start position).

    ``place_run_window`` places as ``place_run_scan`` does (without
    per-domain rules or pod-to-pod scores) in O(log N) a pod: one tree over
    the evaluation positions (position p = row ``rows[p]``), a node's
    answers side by side in a row of ``wt`` (one walk reads them all):
    column 0 counts the feasible positions (the window's end is the k-th
    feasible one from ``start``), columns 1 to 3 hold the largest tie key
    under reference maxima ``href``, its row (the lowest among equal keys)
    and its position (the window's pick), column 4 + j the largest raw
    score of normalized slot ``norm_slots[j]`` on a feasible position (the
    window's maxima).  A window whose maxima differ from ``href`` keys its
    rows by a scan; after four such windows the keys are re-taken under the
    new maxima.  ``place_run_window(count, seed_mix, rows [M], start,
    num_to_find, pod_request, pod_nonzero, fargs, reasons [N], raw [N, S],
    active, norm, weights, maxima scratch [S], href [S], one_row [1],
    out_rows [count], norm_slots [K] (the active normalized slots), wt [2Z,
    4 + K], acc [4 + K], Z) -> (placed, next start position)``, Z a power
    of two >= M."""
    fn = _runs.get(by_row_pass)
    if fn is not None:
        return fn
    namespace = {"fused_pass_by_row": by_row_pass.dispatcher,
                 "RES_PODS": _core.RES_PODS,
                 **{n: core[n] for n in ("tie_rank", "tied_position", "row_key", "key_top_row",
                                         "update_keys", "rebuild_keys")},
                 "snapshot_rows": core["snapshot_rows"], "finalize_rows": core["finalize_rows"],
                 "row_total": core["row_total"],
                 "normalized": core["normalized"], "scan_stop": core["scan_stop"],
                 **{n: core[n] for n in ("go_round", "base_total", "spread_raw",
                                         "affinity_raw", "dense_total", "count_placed")},
                 **{n: core[n] for n in ("rule_fails_count", "rule_fails_row",
                                         "rule_thresholds", "rule_count",
                                         "rules_group_placed")},
                 **{n: core[n] for n in ("classes_build", "class_move", "class_terms",
                                         "ctree_top_row", "classes_usable",
                                         "classes_maxima", "classes_rebase", "row_rule_bits",
                                         "class_slots_rescan")},
                 "math": math}
    depends = [core[KEY], _built_keys.get(by_row_pass)]
    ns = compile_source(f"{__name__}.place_run", _RUN_TEMPLATE, njit,
                        ("pick_tied", "rule_bits", "rules_start", "add_domain_rows",
                         "rules_count", "finalize_spread", "place_run", "rules_count_rows",
                         "place_run_classes",
                         "place_run_scan",
                         "win_sum", "win_kth", "win_better", "win_take", "win_range",
                         "win_leaf", "win_pull_top", "win_pull",
                         "win_build", "win_totals", "win_answer", "place_run_window"),
                        namespace,
                        options={"nogil": True, "_nrt": False},
                        cache=None not in depends, depends=[d or "" for d in depends],
                        filename="<place_run>")
    # Called from Python with the state's column views (strided, or C where
    # a table is exactly as wide as its columns, or one row long) and with
    # C-contiguous columns: one signature each, the stage arguments' arrays
    # typed A; the rest (the backend's scratch and caches, C) keep their
    # types, and so the rules the runs call share the backend's signatures.
    fn = tuple(AnyLayout(ns[name], only=("fargs",))
               for name in ("place_run", "place_run_scan", "place_run_window"))
    _classes_runs[by_row_pass] = AnyLayout(ns["place_run_classes"], only=("fargs",))
    _runs[by_row_pass] = fn
    return fn
