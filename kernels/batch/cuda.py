"""The batched openb engine as one CUDA kernel: a thread block per
cluster, its threads over the cluster's nodes, running ``_rules`` compiled
with ``cuda.jit(device=True)`` (the CPU twin, ``cpu``, compiles the same
rules with ``njit``).

Per pod: every thread brings its nodes' answers up to date (the
per-(pod class, node) cache) and folds them; block-wide reductions (warp
shuffles, then the warps' partials reduced again by every warp) give the
feasible count, BestFit's range (Random: its drawn feasible row, by a
block-wide scan of the feasible rows), then the largest order key (the
total, then the seeded tie rank of the row and the pods on it now: the
tie rule of ``fused.ties``) with the lowest row holding it; thread 0
accounts the pod on its node and refreshes the fragmentation sum (the
same summation tree as ``numpy.sum``).  DefaultPreemption
(``_gpu_preempt``): thread 0 adds the nominated pods around a cycle and
does the nomination and the evictions; the victim search runs on every
node at once, a thread per node, and the block picks the node
(``block_post_filter``).  The cluster's event stream,
state and outputs live in device memory: one upload and one download per
chunk of clusters, chunks sized to the free device memory.

Under Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), which has no
warp shuffles, the shuffles are emulated through shared memory with the
block's barriers (every thread takes the same path through the
reductions, so both forms run the same algorithm).  Importing this module
without a device or the simulator raises ``BackendUnavailable``.
"""

from __future__ import annotations

import numpy as np

from tensorsched.kernels._deps import cuda_unavailable_reason
from tensorsched.kernels._errors import BackendUnavailable

_reason = cuda_unavailable_reason()
if _reason is not None:
    raise BackendUnavailable(f"backend 'cuda' cannot run: {_reason}")

from numba import cuda, float64, int64  # noqa: E402

from tensorsched.kernels._compile import COMPILED, KEY, compile_module  # noqa: E402
from tensorsched.kernels.mod64 import FUSED_CORE_WRAPS, device_jit  # noqa: E402
from tensorsched.kernels.fused import _core as _fused_core  # noqa: E402
from tensorsched.kernels.gpu import _cuda as _gpu_cuda  # noqa: E402

from . import _gpu_preempt as _gp  # noqa: E402
from . import _candidates, _queue, _rules  # noqa: E402
from .device_memory import device_budget  # noqa: E402
from .arrays import BatchArrays, BatchOutputs  # noqa: E402
from .preempt_arrays import BatchPreempt, check_terminating, termination_grace  # noqa: E402
from .warp import (BIG, NEG, THREADS, WARPS, block_scan, block_sum_min_max,  # noqa: E402
                   block_top)

_FROM_GPU = ("gpu_fit", "node_frag", "affinity_tag", "select_gpus", "dotprod_node",
             "clustering_node", "packing_node", "bestfit_raw", "fgd_node")
_FROM_FUSED = ("tie_rank", "tie_key", "draw_index")   # the tie rule, Random's draw
# per block; the simulator's "warps" are 8 threads (shuffles emulated with
# barriers cost a barrier each there: fewer lanes, the same two-level form)
AFF_TAGS = 18
MAX_GPUS = 16
NAN = float("nan")
QI_N = _queue.QI_N
QF_N = _queue.QF_N


def _base() -> dict:
    base = {name: _gpu_cuda.core[name] for name in _FROM_GPU}
    fused = device_jit(FUSED_CORE_WRAPS)
    base.update({name: fused(getattr(_fused_core, name)) for name in _FROM_FUSED})
    base[KEY] = None
    base[COMPILED] = _FROM_GPU + _FROM_FUSED
    return base


_ns = compile_module(_rules, lambda f: cuda.jit(f, device=True), base=_base())
_node_answer = _ns["node_answer"]
_init_node = _ns["init_node"]
_account = _ns["account"]
_node_frag_of = _ns["node_frag_of"]
_tree_refresh = _ns["tree_refresh"]
_bestfit_norm = _ns["bestfit_norm"]
_top_key = _ns["top_key"]
_draw_index = _ns["draw_index"]
_release = _ns["release"]
_qns = compile_module(_queue, lambda f: cuda.jit(f, device=True), base=_ns)


#: the rules and the queue as device functions (``env_cuda`` calls them too)
device_rules = _qns


def compile_device(module) -> dict:
    """``module``'s functions as device functions on the engine's rules
    (``_rules``'s, as this kernel calls them)."""
    return compile_module(module, lambda f: cuda.jit(f, device=True), base=_ns)


# on numCandidates and the seeded offset (``_candidates``, the node-local engines' too)
_pns = compile_module(_gp, lambda f: cuda.jit(f, device=True),
                      base=compile_module(_candidates,
                                          device_jit(_candidates.WRAPS_MOD_2_64), base=_qns))
_preempt_init = _pns["preempt_init"]
_taken_off = _pns["taken_off"]
_nominees_on = _pns["nominees_on"]
_nominees_off = _pns["nominees_off"]
_victims_in_slots = _pns["victims_in_slots"]
_row_low = _pns["row_low"]
_row_push = _pns["row_push"]
_better_candidate = _pns["better_candidate"]
_num_candidates = _pns["num_candidates"]
_preempt_offset = _pns["preempt_offset"]
_preempt_for = _pns["preempt_for"]
_bound_here = _pns["bound_here"]
_q_init = _qns["q_init"]
_q_next_due = _qns["q_next_due"]
_deadline_next = _qns["deadline_next"]
_terminate_pop = _pns["terminate_pop"]
_waits_for_terminating = _pns["waits_for_terminating"]
_q_failed = _qns["q_failed"]
_q_bound = _qns["q_bound"]


@cuda.jit(device=True)
def _total(i, cs, policy, lo, hi, gpu_weight, static_total):
    s = cs[i]
    if s < 0:
        return NEG
    if policy == _rules.P_BESTFIT:
        s = _bestfit_norm(s, lo, hi)
    return gpu_weight * s + static_total[i]


@cuda.jit(device=True)
def _kth_feasible(k, n, cs, buf, sh):
    """The k-th (from 0) feasible row (``cs`` >= 0) in row order: a
    block-wide scan (warp shuffles up, the warps' counts scanned by every
    warp) over rounds of THREADS rows."""
    tid = cuda.threadIdx.x
    seen = 0
    for base in range(0, n, THREADS):
        i = base + tid
        f = 0
        if i < n and cs[i] >= 0:
            f = 1
        x, total = block_scan(f, buf, sh)
        if f == 1 and seen + x - 1 == k:
            sh[0, 2] = i
        seen += total
        cuda.syncthreads()
    row = sh[0, 2]
    cuda.syncthreads()
    return row


@cuda.jit(device=True)
def block_decide(n, policy, count, mdl, gpu_left, cpu_left, mem_left, pods_cap, pods_left, aff,
                 cpu, mem, cpu_nz, num, milli, mask, tpc, tpn, tpm, tpk, tpf, cs, cg, cv,
                 node_ver, work, gpu_weight, static_total, seed_mix, attempt, with_feas, feas,
                 buf, sh):
    """The row one pod (a class's ``cs``/``cg``/``cv`` cache rows) is
    placed on, -1 when none fits: ``_env.decide`` with the block's threads
    over the nodes (every thread gets the answer): each thread's best
    order key (``_rules.top_key``: the total, then the tie rank) over its
    rows, then the block's largest key and the lowest row holding it
    (Random: the ``draw_index(seed_mix, attempt, feasible)``-th feasible
    row, found by a block scan, scores MAX_NODE_SCORE, the others 0);
    with ``with_feas``, ``feas`` [N] set to the filters' mask (1: the row
    passes)."""
    tid = cuda.threadIdx.x
    feasible = 0
    lo = BIG
    hi = -BIG
    for i in range(tid, n, THREADS):
        if cv[i] != node_ver[i]:
            _node_answer(i, policy, count, mdl, gpu_left, cpu_left, mem_left, pods_left,
                         aff, cpu, mem, cpu_nz, num, milli, mask, tpc, tpn, tpm, tpk, tpf,
                         cs, cg, cv, node_ver, work)
        sc = cs[i]
        if sc >= 0:
            feasible += 1
            lo = min(lo, sc)
            hi = max(hi, sc)
        if with_feas:
            feas[i] = 1 if sc >= 0 else 0
    feasible, lo, hi = block_sum_min_max(feasible, lo, hi, buf, sh)
    if feasible == 0:
        return -1
    drawn = -1
    if policy == _rules.P_RANDOM:
        drawn = _kth_feasible(_draw_index(seed_mix, attempt, feasible), n, cs, buf, sh)
    best = -1
    row = BIG
    for i in range(tid, n, THREADS):
        t = _total(i, cs, policy, lo, hi, gpu_weight, static_total)
        if t != NEG:
            if i == drawn:
                t += gpu_weight * _rules.MAX_NODE_SCORE
            best, row = _top_key(t, i, seed_mix, pods_cap, pods_left, best, row)
    best, _count, row = block_top(best, 0, row, buf, sh)
    return row


@cuda.jit(device=True)
def block_row_lists(pj, pot, npot, prio, pst, gone, nhead, pnext, slot, vs, cur, buf, sh):
    """The block's walk of the rows' lists of bound pods
    (``_candidates.row_low``, a thread a row; the rows ``pot[:npot]``,
    ``pot`` empty: rows 0 .. npot - 1): each row's count of bound pods of
    a priority below ``pj`` in ``vs[i, V_LOW]``, a range of the per-pod
    slots ``slot`` given to each row that has some (``vs[i, V_OFF]``, a
    block-shared cursor ``cur`` [1]; ranges in whatever order the threads
    come: a search sorts a row's pods itself) and its pods put there.
    Every thread gets (how many such pods in all, the lowest priority
    among the walked rows' bound pods, ``_candidates.LOW_NONE`` none).
    ``vs`` rows other than the walked ones are not touched; ``gone``: as
    ``row_low`` reads it (the openb engines: an empty view).  The openb
    engines' search (``block_post_filter``) and the node-local ones'
    (``local_preempt_cuda.block_preempt_on``) share it."""
    tid = cuda.threadIdx.x
    listed = pot.shape[0] > 0
    if tid == 0:
        cur[0] = 0
    low = 0
    lowest = BIG
    for q in range(tid, npot, THREADS):
        i = pot[q] if listed else q
        k, lo = _row_low(i, pj, prio, pst, gone, nhead, pnext, slot, 0, False)
        vs[i, _gp.V_LOW] = k
        low += k
        if lo < lowest:
            lowest = lo
    # (the reduction's barriers also order tid 0's cursor before its use)
    low, lowest, _hi = block_sum_min_max(low, lowest, 0, buf, sh)
    if low == 0:
        return low, lowest
    for q in range(tid, npot, THREADS):
        i = pot[q] if listed else q
        if vs[i, _gp.V_LOW] > 0:
            vs[i, _gp.V_OFF] = cuda.atomic.add(cur, 0, vs[i, _gp.V_LOW])
            _row_low(i, pj, prio, pst, gone, nhead, pnext, slot, vs[i, _gp.V_OFF], True)
    cuda.syncthreads()
    return low, lowest


@cuda.jit(device=True)
def block_post_filter(j, n, pot, npot, attempt, seed_mix, pct, least, cpu, mem, num, milli,
                      mask, prio, krank, pst, out_node, cls, c_cpu, c_mem, c_num, c_milli, gmask,
                      gpu_count, model, gpu_left, cpu_left, mem_left, pods_left, nhead, pnext,
                      pw, ps, vslot, vs, cur, buf, sh):
    """``_gpu_preempt.post_filter_rows``'s answer with the block's threads
    (the potential nodes ``pot[:npot]`` in row order, ``pot`` empty: rows
    0 .. npot - 1; the engine without a scenario: every row)
    (every thread gets the node, -1 none; the victims ``pw[:nv, W_VOUT]``
    most important first, the winner's statistics ``ps[S_STATS + 3:S_STATS
    + 6]``): the lower-priority bound pods counted per node (``vs[:,
    V_LOW]``; from each potential row's list ``nhead`` / ``pnext``, a
    thread per row, or, ``nhead`` empty, a scan of every pod), each node
    given a range of the per-pod slots ``vslot`` [P]
    (a block-shared cursor ``cur`` [1]) and its pods put there; then every
    thread runs ``victims_in_slots`` for its potential nodes (strided by thread:
    each touches only its node's row of the columns and its own slots),
    the statistics in ``vs[i, V_TOP:V_NV + 1]``; then the visit from the
    seeded offset, THREADS nodes a round, a block scan counting the
    candidates so that the numCandidates-th ends it, and the pick
    (pickOneNodeForPreemption, ties to the first visited) by three block
    reductions: the lowest highest priority, then the smallest sum among
    those, then the fewest victims with the first visit position."""
    tid = cuda.threadIdx.x
    pj = prio[j]
    e = pst.shape[0]
    for i in range(tid, n, THREADS):
        vs[i, _gp.V_LOW] = 0
        vs[i, _gp.V_FILL] = 0
        vs[i, _gp.V_NV] = 0
    if tid == 0:
        cur[0] = 0
    cuda.syncthreads()
    listed = pot.shape[0] > 0
    by_row = nhead.shape[0] > 0
    if by_row:
        # each potential row's pods from its list (the pods gone since unlinked)
        low, _lowest = block_row_lists(pj, pot, npot, prio, pst, pst[:0], nhead, pnext, vslot,
                                       vs, cur, buf, sh)
        if low == 0 or npot == 0:
            return -1
    else:
        low = 0
        for k in range(tid, e, THREADS):
            if pst[k] == _gp.P_BOUND and prio[k] < pj:
                cuda.atomic.add(vs, (out_node[k], _gp.V_LOW), 1)
                low += 1
        low, _lo, _hi = block_sum_min_max(low, 0, 0, buf, sh)
        if low == 0 or npot == 0:
            return -1
        # slot ranges in whatever order the threads come (the search sorts a
        # node's pods itself, so their order in the range is free)
        for i in range(tid, n, THREADS):
            if vs[i, _gp.V_LOW] > 0:
                vs[i, _gp.V_OFF] = cuda.atomic.add(cur, 0, vs[i, _gp.V_LOW])
        cuda.syncthreads()
        for k in range(tid, e, THREADS):
            if pst[k] == _gp.P_BOUND and prio[k] < pj:
                i = out_node[k]
                vslot[vs[i, _gp.V_OFF] + cuda.atomic.add(vs, (i, _gp.V_FILL), 1)] = k
    cuda.syncthreads()
    for q in range(tid, npot, THREADS):
        i = pot[q] if listed else q
        _victims_in_slots(i, vslot, vs[i, _gp.V_OFF], vs[i, _gp.V_LOW], cpu, mem, num, milli,
                          mask, prio, krank, cls, c_cpu, c_mem, c_num, c_milli, gmask,
                          gpu_count, model, gpu_left, cpu_left, mem_left, pods_left, vs[i])
    cuda.syncthreads()
    cap = _num_candidates(npot, pct, least)
    off = _preempt_offset(seed_mix, attempt, npot)
    # this thread's best eligible candidate: statistics and visit position
    bt = BIG
    bs = BIG
    bn = BIG
    bp = BIG
    seen = 0
    for base in range(0, npot, THREADS):
        t = base + tid
        q = off + t
        if q >= npot:
            q -= npot
        i = 0
        f = 0
        if t < npot:
            i = pot[q] if listed else q
            if vs[i, _gp.V_NV] > 0:
                f = 1
        x, total = block_scan(f, buf, sh)
        if f == 1 and seen + x <= cap and (bp == BIG or _better_candidate(
                vs[i, _gp.V_TOP], vs[i, _gp.V_SUM], vs[i, _gp.V_NV], bt, bs, bn)):
            bt = vs[i, _gp.V_TOP]
            bs = vs[i, _gp.V_SUM]
            bn = vs[i, _gp.V_NV]
            bp = t
        seen += total
        if seen >= cap:
            break
    if seen == 0 or cap == 0:
        return -1
    top, _c, _r = block_top(-bt if bp < BIG else NEG, 0, BIG, buf, sh)
    top = -top
    hold = bp < BIG and bt == top
    least_sum, _c, _r = block_top(-bs if hold else NEG, 0, BIG, buf, sh)
    least_sum = -least_sum
    hold = hold and bs == least_sum
    _n, _c, t = block_top(-bn if hold else NEG, 0, bp if hold else BIG, buf, sh)
    q = off + t
    if q >= npot:
        q -= npot
    best = pot[q] if listed else q
    if tid == 0:
        b = _gp.S_STATS + 3
        for s in range(3):
            ps[b + s] = vs[best, s]
        o = vs[best, _gp.V_OFF]
        for a in range(vs[best, _gp.V_NV]):
            pw[a, _gp.W_VOUT] = vslot[o + a]
    cuda.syncthreads()
    return best


@cuda.jit
def _kernel(n_nodes, gpu_count, model, cpu_cap, mem_cap, pods_cap, n_tree, t_lo, t_len,
            t_left, t_right, leaf_of, n_classes, c_cpu, c_mem, c_cpu_nz, c_num, c_milli, c_mask,
            n_typical, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, run_set, run_workload,
            policy_of, sel_of, seed_mix_of, gpu_weight_of, static_of, backoff0_of,
            backoff_max_of, max_unsched_of, ev_off, ev_len, cls, u, arrive, depart, duration,
            rank, out_node, out_gmask, out_bind, out_tries, log_t, log_pod, log_frag, n_log,
            frag0, end,
            gpu_left_all, cpu_left_all, mem_left_all, pods_left_all, aff_all, node_ver_all,
            version_all, cache_score_all, cache_gpu_all, cache_ver_all, nfrag_all, tree_all,
            qi_all, qf_all, pst_all, patt_all, pts_all, aq_all, up_all, hk_all, hs_all, hp_all,
            dk_all, ds_all, dp_all, ak_all, pct_of, least_of, prio_all, krank_all, victim_all,
            pw_all, nw_all, ps_all, vslot_all, vs_all, grace_of, tqp_all, tqt_all, tq_all,
            nhead_all, pnext_all):
    b = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    buf = cuda.shared.array((3, THREADS), int64)     # the simulator's shuffles
    sh = cuda.shared.array((WARPS, 3), int64)
    cmd = cuda.shared.array(3, int64)                # thread 0's queue answer, for all
    cur = cuda.shared.array(1, int64)                # the victim search's slot cursor
    work = cuda.local.array(MAX_GPUS, int64)
    gidx = cuda.local.array(MAX_GPUS, int64)
    s = run_set[b]
    w = run_workload[b]
    n = n_nodes[s]
    nt = n_tree[s]
    nc = n_classes[w]
    ntp = n_typical[w]
    policy = policy_of[b]
    sel = sel_of[b]
    seed_mix = seed_mix_of[b]
    gpu_weight = gpu_weight_of[b]
    static_total = static_of[b]
    count = gpu_count[s]
    mdl = model[s]
    tpc = tp_cpu[w, :ntp]
    tpn = tp_num[w, :ntp]
    tpm = tp_milli[w, :ntp]
    tpk = tp_mask[w, :ntp]
    tpf = tp_freq[w, :ntp]
    gpu_left = gpu_left_all[b]
    cpu_left = cpu_left_all[b]
    mem_left = mem_left_all[b]
    pods_left = pods_left_all[b]
    aff = aff_all[b]
    node_ver = node_ver_all[b]
    version = version_all[b]
    nfrag = nfrag_all[b]
    tree = tree_all[b]
    o = ev_off[b]
    e = ev_len[b]
    qi = qi_all[b]
    qf = qf_all[b]
    pst = pst_all[o:o + e]
    patt = patt_all[o:o + e]
    pts = pts_all[o:o + e]
    r2 = 2 * o
    aq = aq_all[r2:r2 + 2 * e]
    up = up_all[r2:r2 + 2 * e]
    hk = hk_all[r2:r2 + 2 * e]
    hs = hs_all[r2:r2 + 2 * e]
    hp = hp_all[r2:r2 + 2 * e]
    arr = arrive[o:o + e]
    dep = depart[o:o + e]
    dur = duration[o:o + e]
    rk = rank[o:o + e] if rank.shape[0] > 0 else rank[:0]    # empty: first in first out
    ak = ak_all[r2:r2 + 2 * e] if rank.shape[0] > 0 else ak_all[:0]
    dk = dk_all[o:o + e]
    ds = ds_all[o:o + e]
    dp = dp_all[o:o + e]
    lt = log_t[r2:r2 + 2 * e]
    lp = log_pod[r2:r2 + 2 * e]
    lf = log_frag[r2:r2 + 2 * e]
    pre = prio_all.shape[0] > 0 and pct_of[b] >= 0
    prio = prio_all[o:o + e] if pre else prio_all[:0]
    krank = krank_all[o:o + e] if pre else krank_all[:0]
    victim = victim_all[o:o + e]
    pw = pw_all[o:o + e] if pre else pw_all[:0]
    nw = nw_all[b]
    ps = ps_all[b]
    vslot = vslot_all[o:o + e] if pre else vslot_all[:0]
    vs = vs_all[b]
    grace = grace_of[b]
    tqp = tqp_all[o:o + e] if pre else tqp_all[:0]
    tqt = tqt_all[r2:r2 + 2 * e] if pre else tqt_all[:0]
    tq = tq_all[b]
    # each row's list of the pods bound there (the victim search's, ``_candidates.row_low``)
    nhead = nhead_all[b]
    pnext = pnext_all[o:o + e] if pre else pnext_all[:0]
    for i in range(tid, n, THREADS):
        _init_node(i, count, cpu_cap[s], mem_cap[s], pods_cap[s], mdl, gpu_left, cpu_left,
                   mem_left, pods_left, aff, node_ver, tpc, tpn, tpm, tpk, tpf, nfrag)
        for c in range(nc):
            cache_ver_all[b, c, i] = -1
        if pre:
            nhead[i] = -1
    for j in range(tid, e, THREADS):
        out_node[o + j] = -1
        out_gmask[o + j] = 0
        out_bind[o + j] = NAN
    frag = 0.0
    m = 0
    if tid == 0:
        version[0] = 0
        _q_init(qi, qf, pst, patt, pts)
        if pre:
            _preempt_init(pw, nw, ps, victim)
    cuda.syncthreads()
    if tid == 0:
        frag = _tree_refresh(nfrag, -1, t_lo[s, :nt], t_len[s, :nt], t_left[s, :nt],
                             t_right[s, :nt], tree)
        frag0[b] = frag
    while True:
        if tid == 0:
            cmd[0] = _q_next_due(arr, dep, backoff0_of[b], backoff_max_of[b],
                                 max_unsched_of[b], qi, qf, pst, patt, pts, aq, up, hk, hs, hp,
                                 dk, ds, dp, rk, ak, _deadline_next(tqt, tq))
            cmd[1] = qi[_queue.QI_POD]
            cmd[2] = qi[_queue.QI_ATTEMPT]
            if cmd[0] == _queue.TERMINATE:
                # a victim whose grace ended leaves like a departure
                k = _terminate_pop(qf[_queue.QF_NOW], grace, backoff0_of[b],
                                   backoff_max_of[b], qi, pst, patt, pts, aq, up, hk, hs, hp,
                                   rk, ak, tqp, tqt, tq)
                if k >= 0:
                    cmd[0] = _queue.DEPART
                    cmd[1] = k
        cuda.syncthreads()
        kind = cmd[0]
        j = cmd[1]
        attempt = cmd[2]
        cuda.syncthreads()
        if kind == _queue.DONE:
            break
        if kind == _queue.TERMINATE:
            continue
        c = cls[o + j]
        cpu = c_cpu[w, c]
        mem = c_mem[w, c]
        num = c_num[w, c]
        milli = c_milli[w, c]
        if kind == _queue.DEPART:
            if tid == 0:
                row = out_node[o + j]
                _release(row, out_gmask[o + j], cpu, mem, num, milli, gpu_left, cpu_left,
                         mem_left, pods_left, aff, node_ver, version)
                if pre:
                    _taken_off(j, row, out_gmask[o + j], ps)
                nfrag[row] = _node_frag_of(row, count, mdl, gpu_left, cpu_left, tpc, tpn, tpm,
                                           tpk, tpf)
                frag = _tree_refresh(nfrag, leaf_of[s, row], t_lo[s, :nt], t_len[s, :nt],
                                     t_left[s, :nt], t_right[s, :nt], tree)
                lt[m] = qf[_queue.QF_NOW]
                lp[m] = -1 - j
                lf[m] = frag
                m += 1
            cuda.syncthreads()
            continue
        cs = cache_score_all[b, c]
        cg = cache_gpu_all[b, c]
        cv = cache_ver_all[b, c]
        wcls = cls[o:o + e]
        waits = 0
        if pre:
            if tid == 0:
                _nominees_on(j, prio, pst, wcls, c_cpu[w], c_mem[w], c_num[w], c_milli[w],
                             count, gpu_left, cpu_left, mem_left, pods_left, aff, node_ver,
                             version, gidx, pw, nw, ps)
                cmd[2] = 1 if grace > 0.0 and _waits_for_terminating(
                    j, prio, pst, out_node[o:o + e], pw, tqp, tq) else 0
            cuda.syncthreads()
            waits = cmd[2]      # (rewritten only past block_decide's barriers)
        row = block_decide(n, policy, count, mdl, gpu_left, cpu_left, mem_left, pods_cap[s],
                           pods_left, aff, cpu, mem, c_cpu_nz[w, c], num, milli, c_mask[w, c],
                           tpc, tpn, tpm, tpk, tpf, cs, cg, cv, node_ver, work,
                           gpu_weight, static_total, seed_mix, attempt, False, cs, buf, sh)
        if pre:
            target = -1
            if row < 0 and waits == 0:
                target = block_post_filter(j, n, vslot[:0], n, attempt, seed_mix, pct_of[b],
                                           least_of[b], cpu, mem, num, milli, c_mask[w, c],
                                           prio, krank, pst,
                                           out_node[o:o + e], wcls, c_cpu[w], c_mem[w],
                                           c_num[w], c_milli[w], out_gmask[o:o + e], count, mdl,
                                           gpu_left, cpu_left, mem_left, pods_left, nhead,
                                           pnext, pw, ps, vslot, vs, cur, buf, sh)
            if tid == 0:
                _nominees_off(wcls, c_cpu[w], c_mem[w], c_num[w], c_milli[w], gpu_left,
                              cpu_left, mem_left, pods_left, aff, node_ver, version, pw, ps)
                cmd[0] = 0
                if target >= 0:
                    m = _preempt_for(j, target, qf[_queue.QF_NOW], backoff0_of[b],
                                     backoff_max_of[b], m, wcls, c_cpu[w], c_mem[w], c_num[w],
                                     c_milli[w], prio, out_gmask[o:o + e], count, mdl, gpu_left,
                                     cpu_left, mem_left, pods_left, aff, node_ver, version, tpc,
                                     tpn, tpm, tpk, tpf, nfrag, leaf_of[s], t_lo[s, :nt],
                                     t_len[s, :nt], t_left[s, :nt], t_right[s, :nt], tree, lt,
                                     lp, lf, victim, qi, pst, patt, pts, aq, up, hk, hs, hp, rk,
                                     ak, pw, nw, ps, grace, tqp, tqt, tq)
                    cmd[0] = 1
                elif row >= 0:
                    _bound_here(j, row, policy, c, count, mdl, gpu_left, cpu_left, mem_left,
                                pods_left, aff, c_cpu[w], c_mem[w], c_cpu_nz[w], c_num[w],
                                c_milli[w], c_mask[w], tpc, tpn, tpm, tpk, tpf, cs, cg, cv,
                                node_ver, work, pw, nw, ps)
            cuda.syncthreads()
            preempted = cmd[0]
            cuda.syncthreads()
            if preempted == 1:
                continue
        if row < 0:
            if tid == 0:
                _q_failed(j, qi, qf, pst, pts, up)
            cuda.syncthreads()
            continue
        if tid == 0:
            out_gmask[o + j] = _account(row, sel, count, cpu, mem, num, milli, u[o + j], cg[row],
                                        gpu_left, cpu_left, mem_left, pods_left, aff, node_ver,
                                        version, gidx)
            _q_bound(j, dur, qi, qf, pst, dk, ds, dp)
            out_node[o + j] = row
            out_bind[o + j] = qf[_queue.QF_NOW]
            if pre:
                _row_push(row, j, nhead, pnext)
            nfrag[row] = _node_frag_of(row, count, mdl, gpu_left, cpu_left, tpc, tpn, tpm, tpk,
                                       tpf)
            frag = _tree_refresh(nfrag, leaf_of[s, row], t_lo[s, :nt], t_len[s, :nt],
                                 t_left[s, :nt], t_right[s, :nt], tree)
            lt[m] = qf[_queue.QF_NOW]
            lp[m] = j
            lf[m] = frag
            m += 1
        cuda.syncthreads()
    if tid == 0:
        n_log[b] = m
        end[b] = qf[_queue.QF_NOW]
    for j in range(tid, e, THREADS):
        out_tries[o + j] = patt[j]


def cluster_bytes(a: BatchArrays) -> np.ndarray:
    """Device bytes each run of ``a`` needs (state, answer cache, events)."""
    n = a.gpu_count.shape[1]
    c = a.c_cpu.shape[1]
    t = a.t_lo.shape[1]
    fixed = 8 * (n * (a.gpu_slots + 5 + AFF_TAGS + 3 * c + 1) + t + 1)
    # events: inputs (cls, u, arrive, depart, duration), outputs (4), queue
    # state (3), rings and heap (5 x 2), the departure heap (3), the change
    # log (3 x 2); with ranks, the rank (1) and activeQ's heap keys (2)
    words = 31 + (3 if a.rank.shape[0] else 0)
    return fixed + 8 * (QI_N + QF_N) + 8 * words * a.ev_len


def preempt_bytes(a: BatchArrays, p: BatchPreempt) -> np.ndarray:
    """Device bytes DefaultPreemption adds to each run of ``a`` (its
    per-pod inputs, output and scratch, per-node and per-run scratch)."""
    if p.prio.shape[0] == 0:
        return np.zeros(a.n_runs, np.int64)
    n = a.gpu_count.shape[1]
    # per pod: prio, krank, victim, pw, a victim-search slot and its row
    # list's link; per node: its list's head
    return 8 * (_gp.PS_N + _gp.TQ_N + n * (_gp.NW_N + _gp.VS_N + 1)
                + (8 + _gp.PW_N) * a.ev_len)


def _chunks(a: BatchArrays, budget: int, p: BatchPreempt) -> list:
    """Runs in consecutive chunks whose device bytes fit ``budget``."""
    need = cluster_bytes(a) + preempt_bytes(a, p)
    out, cur, used = [], [], 0
    for b, m in enumerate(need.tolist()):
        if cur and used + m > budget:
            out.append(cur)
            cur, used = [], 0
        cur.append(b)
        used += m
    if cur:
        out.append(cur)
    return out


def run_batch(a: BatchArrays, memory_fraction: float = 0.5,
              budget: int | None = None, preempt: BatchPreempt | None = None,
              victim: np.ndarray | None = None,
              grace: np.ndarray | None = None) -> BatchOutputs:
    """Every run of ``a`` (checked first): ``cpu.run_batch``'s outputs
    (``preempt`` / ``victim`` / ``grace`` as there); the runs in chunks that fit
    ``budget`` bytes (default: ``memory_fraction`` of the device's free
    memory), each chunk one upload, one launch (a block per run) and one
    download."""
    a.check()
    pre = BatchPreempt.off(a.n_runs) if preempt is None else preempt
    pre.check(a.n_runs, a.cls.shape[0])
    if victim is None:
        victim = np.zeros(a.cls.shape[0], np.int64)
    grace = termination_grace(grace, a.n_runs)
    if budget is None:
        budget = device_budget(memory_fraction)
    out = BatchOutputs.empty(a.cls.shape[0], a.n_runs)
    for chunk in _chunks(a, budget, pre):
        part = a.runs(chunk)
        ev = np.concatenate([np.arange(int(a.ev_off[b]), int(a.ev_off[b] + a.ev_len[b]))
                             for b in chunk])
        got, vic, over = _run_chunk(part, pre.runs(chunk, ev), grace[chunk])
        check_terminating(over)
        for k, b in enumerate(chunk):
            lo, ln = int(a.ev_off[b]), int(a.ev_len[b])
            plo = int(part.ev_off[k])
            victim[lo:lo + ln] = vic[plo:plo + ln]
            for name in ("node", "gmask", "bind", "tries"):
                getattr(out, name)[lo:lo + ln] = getattr(got, name)[plo:plo + ln]
            for name in ("log_t", "log_pod", "log_frag"):
                getattr(out, name)[2 * lo:2 * (lo + ln)] = getattr(got, name)[2 * plo:
                                                                              2 * (plo + ln)]
            out.n_log[b] = got.n_log[k]
            out.frag0[b] = got.frag0[k]
            out.end[b] = got.end[k]
    return out


def _run_chunk(a: BatchArrays, p: BatchPreempt, grace: np.ndarray) -> tuple:
    b = a.n_runs
    n = a.gpu_count.shape[1]
    c = max(1, a.c_cpu.shape[1])
    t = a.t_lo.shape[1]
    e = a.cls.shape[0]
    e2 = max(2 * e, 1)
    d = cuda.to_device
    f64 = np.float64
    ins = [d(np.ascontiguousarray(x)) for x in (
        a.n_nodes, a.gpu_count, a.model, a.cpu_cap, a.mem_cap, a.pods_cap, a.n_tree, a.t_lo,
        a.t_len, a.t_left, a.t_right, a.leaf_of, a.n_classes, a.c_cpu, a.c_mem, a.c_cpu_nz,
        a.c_num, a.c_milli, a.c_mask, a.n_typical, a.tp_cpu, a.tp_num, a.tp_milli, a.tp_mask,
        a.tp_freq, a.run_set, a.run_workload, a.policy, a.sel, a.seed_mix.astype(np.uint64),
        a.gpu_weight, a.static_total, a.backoff0.astype(f64), a.backoff_max.astype(f64),
        a.max_unsched.astype(f64), a.ev_off, a.ev_len, a.cls, a.u, a.arrive.astype(f64),
        a.depart.astype(f64), a.duration.astype(f64), a.rank.astype(np.int64))]
    i64 = np.int64
    outs = [cuda.device_array(e, i64), cuda.device_array(e, i64), cuda.device_array(e, f64),
            cuda.device_array(e, i64), cuda.device_array(e2, f64), cuda.device_array(e2, i64),
            cuda.device_array(e2, f64), cuda.device_array(b, i64), cuda.device_array(b, f64),
            cuda.device_array(b, f64)]
    g = a.gpu_slots
    scratch = [cuda.device_array((b, n, g), i64), cuda.device_array((b, n), i64),
               cuda.device_array((b, n), i64), cuda.device_array((b, n), i64),
               cuda.device_array((b, n, AFF_TAGS), i64), cuda.device_array((b, n), i64),
               cuda.device_array((b, 1), i64), cuda.device_array((b, c, n), i64),
               cuda.device_array((b, c, n), i64), cuda.device_array((b, c, n), i64),
               cuda.device_array((b, n), f64), cuda.device_array((b, max(t, 1)), f64),
               cuda.device_array((b, QI_N), i64), cuda.device_array((b, QF_N), f64),
               cuda.device_array(max(e, 1), i64), cuda.device_array(max(e, 1), i64),
               cuda.device_array(max(e, 1), f64), cuda.device_array(e2, i64),
               cuda.device_array(e2, i64), cuda.device_array(e2, f64),
               cuda.device_array(e2, i64), cuda.device_array(e2, i64),
               cuda.device_array(max(e, 1), f64), cuda.device_array(max(e, 1), i64),
               cuda.device_array(max(e, 1), i64),
               cuda.device_array(e2 if a.rank.shape[0] else 1, i64)]
    on = p.prio.shape[0] > 0
    victim = d(np.zeros(max(e, 1), i64))
    pre = [*(d(x) for x in p.inputs()), victim,
           cuda.device_array((e if on else 0, _gp.PW_N), i64),
           cuda.device_array((b, n if on else 0, _gp.NW_N), i64),
           cuda.device_array((b, _gp.PS_N), i64),
           cuda.device_array(e if on else 0, i64),
           cuda.device_array((b, n if on else 0, _gp.VS_N), i64),
           d(np.ascontiguousarray(grace, f64)), cuda.device_array(e if on else 0, i64),
           cuda.device_array(2 * e if on else 0, f64), d(np.zeros((b, _gp.TQ_N), i64)),
           cuda.device_array((b, n if on else 0), i64), cuda.device_array(e if on else 0, i64)]
    _kernel[b, THREADS](*ins, *outs, *scratch, *pre)
    over = pre[-3].copy_to_host()[:, _gp.T_OVER]
    return BatchOutputs(*(x.copy_to_host() for x in outs)), victim.copy_to_host()[:e], over


__all__ = ["run_batch", "cluster_bytes", "compile_device", "block_decide", "block_post_filter",
           "block_row_lists",
           "device_rules", "THREADS", "float64"]
