"""Blocks of unlike pods placed one after another in one compiled call: the
per-pod rules of a GPU-sharing profile (NodeResourcesFit's fit, GpuShareFit
with its NVLink / NUMA constraints, GpuShareScore's policy, GpuTopologyScore,
the row-local built-in scores NodeResourcesFit and
NodeResourcesBalancedAllocation, node-only scores, the tie rule) over every
node.

Plain Python compiled by ``gpu.block`` with ``njit`` on top of the GPU rules
(``gpu._core``); no allocation.  NodeResourcesFit's bits are the fused
filters' (``kernels.layout``: pod count, Insufficient <resource>).

Units as in ``gpu._core``: GPU shares in milli-GPU, CPU in millicores; the
resource columns are the ClusterState's (int64 [N, R]).
"""

from numba import int64, uint64

# ruff: noqa: F821

# Names of the compiled namespace, not of this file (``gpu.block`` brings
# them compiled with njit): the GPU
# rules (``gpu._core``'s) and the fused stage's row-local built-in scores,
# the very rules a cycle runs, its tie rule (keys and key trees) and
# Random's draw (``fused._core``'s).
INHERITED = ("model_ok", "gpu_fit", "affinity_tag", "score_node", "select_gpus",
             "free_mask", "zone_allowed_mask", "best_subset")
FUSED = ("fit_score", "balanced_score", "tie_rank", "tie_key", "key_set", "key_pull_all",
         "key_top_row", "draw_index")
EX_LEN = 26                    # the arrays of place_block's ``ex`` tuple

MILLI = 1000
RES_PODS = 3                   # kernels.layout's, checked by gpu.block
R_TOO_MANY_PODS = 128
INSUFFICIENT_SHIFT = 24
SEL_BEST = 0
SEL_RANDOM = 1
SEL_FGD = 2
P_RANDOM = 0
P_BESTFIT = 4
P_FGD = 5
C_NUMA = 2                     # gpu._core's constraint bit: one NUMA node
LEVEL = 1000                   # gpu.subsets' cost per looseness level
MAX_NODE_SCORE = 100           # Random's drawn row (kernels.layout's)
TIE_RANK_BITS = 31             # fused.ties': a key is total << 31 | rank


def fit_bits(i, allocatable, requested, req, res, n_res):
    """NodeResourcesFit's reason bits for row ``i`` (``fit_reasons`` of the
    fused filters, over the pod's requested resources ``res[:n_res]`` only:
    the ones it asks for, not ignored)."""
    bits = 0
    if requested[i, RES_PODS] + 1 > allocatable[i, RES_PODS]:
        bits |= R_TOO_MANY_PODS
    for k in range(n_res):
        r = res[k]
        if req[r] > allocatable[i, r] - requested[i, r]:
            bits |= 1 << (INSUFFICIENT_SHIFT + r)
    return bits


def gpu_reject_code(count, model, mask):
    """GpuShareFit's rejection of one node as ``explain_many`` codes it:
    0 no GPUs, 1 no GPU of an allowed model, 2 too few with the milli free."""
    if count == 0:
        return 0
    if not model_ok(model, mask):
        return 1
    return 2


def row_tie_key(t, i, seed_mix, requested):
    """Row ``i``'s order key for a feasible total ``t``: the tie rule's
    (``fused._core.tie_key`` of ``t`` and ``tie_rank`` with the pods on the
    row now, ``requested[i, RES_PODS]``)."""
    return tie_key(t, tie_rank(seed_mix, i, requested[i, RES_PODS]))


def key_push(key, i, best, row):
    """Row ``i`` with order key ``key`` folded into the running pick
    (best key, its row): a larger key, or the same key on a lower row."""
    if key > best or (key == best and i < row):
        return key, i
    return best, row


def key_of(keys, n_keys, bits, code, row):
    """Index of (bits, code) in ``keys`` [K, 3] (bits, code, first row),
    appended when new; -1 when the table is full."""
    for k in range(n_keys[0]):
        if keys[k, 0] == bits and keys[k, 1] == code:
            return k
    k = n_keys[0]
    if k >= keys.shape[0]:
        return -1
    keys[k, 0] = bits
    keys[k, 1] = code
    keys[k, 2] = row
    n_keys[0] = k + 1
    return k


NEG = -(1 << 62)               # a tree leaf of a row that rejects the pod


def cnt_set(tc, size, i, v):
    """Leaf i of a count tree [2 size] (each inner node the sum of its
    two children) := v, its ancestors adjusted."""
    p = size + i
    d = v - tc[p]
    while d != 0 and p >= 1:
        tc[p] += d
        p >>= 1


def cnt_pull_all(tc, size):
    """Every inner node of a count tree from its leaves."""
    for p in range(size - 1, 0, -1):
        tc[p] = tc[2 * p] + tc[2 * p + 1]


def cnt_before(tc, size, i):
    """How many of a count tree's leaves before leaf ``i`` are set."""
    p = size + i
    s = 0
    while p > 1:
        if p & 1:
            s += tc[p - 1]
        p >>= 1
    return s


def cnt_kth(tc, size, k):
    """The leaf of a count tree holding its k-th set leaf (from 0, in row
    order; 0 <= k < ``tc[1]``)."""
    p = 1
    while p < size:
        a = 2 * p
        if k < tc[a]:
            p = a
        else:
            k -= tc[a]
            p = a + 1
    return p - size


def drawn_pick(best, row, d, t_d, bonus, seed_mix, requested):
    """Random's pick (``GpuShareScore._random_pick``): the drawn row ``d``
    (feasible total ``t_d`` without the draw) gains ``bonus`` (the
    policy's weight x MAX_NODE_SCORE) over the running pick (best key,
    its row) of every feasible row scored 0 by the policy; only its own
    key moves, so it takes the pick when its raised key beats the best
    (the lower row on an equal key)."""
    return key_push(row_tie_key(t_d + bonus, d, seed_mix, requested), d, best, row)


def subset_score(cost):
    """GpuTopologyScore from a subset cost (``gpu.subsets.topology_score``
    for one node): one island (or one GPU) 100, one NUMA node 50, looser or
    none (-1) 0."""
    if cost < 0:
        return 0
    lv = cost // LEVEL
    if lv <= 1:
        return 100
    if lv == 2:
        return 50
    return 0


def row_extras(i, c, milli, allocatable, requested, nonzero_requested, gpu_count, gpu_left,
               ex):
    """The parts of row ``i``'s total for class ``c`` beyond the GPU policy
    score, for a row that passed the filters so far; ``ex`` is the block's
    tuple of extras (``place_block``).  The cheapest allowed GPU subset
    (``gpu._core.subset_cost_node``; its index into ``out_sub[i]``) when the
    class has a subset table (``xs[c, 2]`` >= 0): the row rejects the pod
    (-1) when the class's constraint bits (``xs[c, 0]``, plus C_NUMA on a
    single-numa-node row for a Guaranteed pod, ``xs[c, 1]``) find none;
    else ``topology weight * GpuTopologyScore`` (``xs[c, 3]`` on) plus the
    weighted NodeResourcesFit and BalancedAllocation scores of the pod's
    query request ``c_qreq[c]`` / ``c_qnz[c]`` (``fit_args`` = flags (1
    fit, 2 balanced), strategy, fit weight, balanced weight, topology
    weight)."""
    (xs, c_qreq, c_qnz, fit_args, fit_res, fit_kind, fit_weights, shape_util, shape_score,
     bal_res, bal_kind, single_policy, numa, zcpu, zcpu_used, zmem, zmem_used, topo,
     sub3, cost3, iok3, nok3, zfc, zfm, out_sub, out_zone) = ex
    extra = 0
    k = xs[c, 2]
    if k >= 0:
        cons = xs[c, 0]
        if xs[c, 1] != 0 and single_policy[i]:
            cons |= C_NUMA
        allowed = -1
        if cons & C_NUMA:
            for z in range(zcpu.shape[1]):
                zfc[z] = zcpu[i, z] - zcpu_used[i, z]
                zfm[z] = zmem[i, z] - zmem_used[i, z]
            allowed = zone_allowed_mask(gpu_count[i], numa[i], zfc, zfm, xs[c, 4], xs[c, 5])
        e = free_mask(gpu_count[i], gpu_left[i], milli, allowed)
        b, bi = best_subset(topo[i], e, cons, sub3[k], cost3[k], iok3[k], nok3[k])
        out_sub[i] = bi
        if cons != 0 and b < 0:
            return -1
        if xs[c, 3] != 0:
            extra += fit_args[4] * subset_score(b)
    flags = fit_args[0]
    if flags & 1:
        extra += fit_args[2] * fit_score(i, allocatable, requested, nonzero_requested, c_qreq[c],
                                         c_qnz[c], fit_args[1], fit_res, fit_kind, fit_weights,
                                         shape_util, shape_score)
    if flags & 2:
        extra += fit_args[3] * balanced_score(i, allocatable, requested, nonzero_requested,
                                              c_qreq[c], c_qnz[c], bal_res, bal_kind)
    return extra


def has_extras(c, ex):
    """Whether class ``c`` needs ``row_extras`` (a subset table or a
    row-local built-in score)."""
    return ex[0][c, 2] >= 0 or ex[3][0] != 0


def row_eval(i, c, sr, allocatable, requested, req, res, n_res, asks_gpu, gpu_bit,
             gpu_count, model, gpu_left, num, milli, mask, policy, cpu_left, mem_zero, aff,
             cpu_nz, gpu_num, gpu_milli, tag, pod_gpu, tp_cpu, tp_num, tp_milli, tp_mask,
             tp_freq, cs, cg, cv, node_ver, score, out_gpu, work, reasons):
    """Row ``i`` for a pod of class ``c``: its reason bits into
    ``reasons[i]`` and, when it passes (0 bits), the policy's score (>= 0;
    0 under Random), else -1."""
    b = sr[i] | fit_bits(i, allocatable, requested, req, res, n_res)
    if asks_gpu and gpu_bit != 0 and not gpu_fit(gpu_count[i], model[i], gpu_left[i],
                                                  num, milli, mask):
        b |= gpu_bit
    reasons[i] = b
    if b != 0:
        return -1
    if policy == P_RANDOM:
        return 0
    score_node(i, policy, gpu_count, model, gpu_left, cpu_left, mem_zero, aff,
               0, cpu_nz, 0, gpu_num, gpu_milli, mask, tag, pod_gpu, tp_cpu,
               tp_num, tp_milli, tp_mask, tp_freq, cs, cg, cv, node_ver, score,
               out_gpu, work)
    return max(score[i], 0)


def class_total(i, c, c_req, c_res, c_nres, c_num, c_milli, c_mask, c_cpu_nz, c_shape,
                static_reasons, gpu_bit, allocatable, requested, gpu_count, model, gpu_left,
                aff, node_ver, policy, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                cache_score, cache_gpu, cache_ver, gpu_weight, static_total, reasons,
                cpu_left, mem_zero, score, out_gpu, work, nonzero_requested, ex):
    """Row ``i``'s total for a pod of class ``c`` (``gpu_weight * policy
    score + static_total[i]`` + ``row_extras``), NEG when the row rejects
    it (its bits in ``reasons[i]``)."""
    num = c_num[c]
    milli = c_milli[c]
    asks_gpu = num > 0 and milli > 0
    sh = c_shape[c]
    gpu_num = 0
    gpu_milli = 0
    if asks_gpu:
        gpu_num = num
        gpu_milli = milli
    pod_gpu = 0
    if milli > 0:
        pod_gpu = num * milli
    tag = affinity_tag(num, milli)
    s = row_eval(i, c, static_reasons[c], allocatable, requested, c_req[c], c_res[c], c_nres[c],
                 asks_gpu, gpu_bit, gpu_count, model, gpu_left, num, milli, c_mask[c], policy,
                 cpu_left, mem_zero, aff, c_cpu_nz[c], gpu_num, gpu_milli, tag,
                 pod_gpu, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                 cache_score[sh], cache_gpu[sh], cache_ver[sh], node_ver, score, out_gpu, work,
                 reasons)
    if s < 0:
        return NEG
    total = gpu_weight * s + static_total[i]
    if has_extras(c, ex):
        e = row_extras(i, c, milli, allocatable, requested, nonzero_requested, gpu_count,
                       gpu_left, ex)
        if e < 0:
            reasons[i] |= gpu_bit
            return NEG
        total += e
    return total


def place_block(count, seed_mix, attempt0, start, n, cls, u,
                c_req, c_nz, c_res, c_nres, c_num, c_milli, c_mask, c_cpu_nz, c_shape,
                static_reasons, gpu_bit, allocatable, requested,
                nonzero_requested, gpu_count, model, gpu_left, aff, node_ver, version,
                policy, sel, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                cache_score, cache_gpu, cache_ver, gpu_weight, static_total,
                reasons, cpu_left, mem_zero, score, out_gpu, ties, work,
                keys, n_keys, out_rows, out_gpus, out_counts,
                size, slot, tree_max, tree_cnt, built, stack, placed_log, seen, row_mark, ex):
    """Place pods 0..count-1 in order, each as its own cycle would with every
    node scored: pod j (class ``cls[j]``: request ``c_req[c]`` [R], non-zero
    request ``c_nz[c]`` [2], the resources NodeResourcesFit checks
    ``c_res[c, :c_nres[c]]``, GPU ask ``c_num``/``c_milli``/``c_mask``,
    ``c_cpu_nz``, FGD cache row ``c_shape``) is rejected by a node for
    ``static_reasons[c, i]`` (the filters that read no pod on the node),
    NodeResourcesFit and, when it asks GPUs, GpuShareFit (``gpu_bit``: the
    fit, and its NVLink / NUMA constraint, ``row_extras``);
    feasible nodes total ``gpu_weight * policy score + static_total[i]``
    plus ``row_extras`` (GpuTopologyScore, the row-local built-in scores);
    the tie rule takes the row (the highest ``tie_rank(seed_mix, row, pods
    on the row now)`` among the top rows, the lower row on an equal rank;
    ``attempt0`` and ``start`` do not move it).  Under Random (``policy``
    P_RANDOM with a ``gpu_weight``) pod j draws as its cycle (attempt
    ``attempt0 + j``) does: the ``draw_index(seed_mix, attempt0 + j,
    feasible rows)``-th feasible row counted from row ``start`` (the
    evaluation order, every node scored) gains ``gpu_weight *
    MAX_NODE_SCORE`` (``drawn_pick``).  The pod's requests are
    added to its row, its GPUs taken (FGD's GPU for a share under FGD, ``u[j]`` for
    Random, else the best fit; whole GPUs: the cheapest allowed subset when
    the class has a subset table, else the first free) and the row's
    GPU version bumped (``version``[0] is the table's counter); a NUMA
    constraint pins the pod's CPU and memory (``xs[c, 4:6]``) on its GPUs'
    NUMA zone (``zcpu_used`` / ``zmem_used``, ``out_zone[j]``, else -1).

    ``ex`` = (xs [C, 6] int64: constraint bits, Guaranteed, subset table
    (-1: none), GpuTopologyScore on, CPU millicores, memory bytes;
    c_qreq [C, Rq] / c_qnz [C, 2] the query's request and non-zero request;
    fit_args [5] (``row_extras``); NodeResourcesFit's fit_res, fit_kind,
    fit_weights, shape_util, shape_score and BalancedAllocation's bal_res,
    bal_kind (``kernels.fused``); single_policy [N] bool; numa [N, G];
    zcpu, zcpu_used, zmem, zmem_used [N, Z]; topo [N]; sub3, cost3, iok3,
    nok3 [K, T, S] the stacked subset tables by table index; zfc, zfm [Z]
    scratch; out_sub [N] scratch; out_zone [P] output).

    Top structure (``size`` > 0, a power of two >= n; not for BestFit,
    whose min-max normalization reads every feasible row): for the
    classes with ``slot[c]`` >= 0 a max tree of the rows' order keys
    (``row_tie_key``), ``tree_max`` [T, 2 * size] int64 row ``slot[c]``
    (leaf ``size + i`` = row i's key, NEG when it rejects), built at the
    class's first pod (``built[c]`` 0 -> 1); the
    other classes pass over the rows.  A row's total is a function of
    that row alone (its columns, GPUs, zones and version; the static parts
    are fixed for the block), so only the rows placed on since are
    evaluated again for a built class, each once, when its next pod comes
    (``placed_log`` [P] the rows placed on in order, ``seen[c]`` how much
    of it class c's tree has taken in, ``row_mark`` [n] scratch, -1 at the
    start): a pod costs O(rows placed on since its class's last pod +
    log n), not a pass over the rows; the pick is the tree's largest leaf,
    the lowest row among equal ones (``key_top_row``).  A pod that fits
    nowhere still passes over every row for its rejection counts.
    Under Random a class's ``tree_cnt`` row [2 * size] counts its
    feasible rows (a leaf 1 per feasible row), so the drawn row is found
    in O(log n) (``cnt_kth``); without a tree ``ties`` [n] holds the
    feasible rows in evaluation order and ``score`` [n] their totals.
    ``stack``: unused scratch of the caller's layout.  ``size`` 0: one
    pass over every row per pod.  Either way the placements are the same.

    Outputs: ``out_rows[j]`` the row or -1 when no node fits; ``out_gpus[j]``
    the GPU indices (-1 padded); a pod that fits nowhere takes the next row
    of ``out_counts`` [F, K]: how many nodes rejected it for each (reason
    bits, GPU code, first such row) of ``keys`` [K, 3].  Returns (pods
    handled, failures): fewer than ``count`` when the failure rows or the
    key table run out, or when the chosen row has no subset for whole GPUs
    (Reserve would fail there; the next pod has not been touched).
    ``cpu_col`` 0 is cpu (millicores), as ``kernels.layout`` orders the
    resources."""
    failures = 0
    cpu_col = 0
    xs = ex[0]
    zcpu_used = ex[14]
    zmem_used = ex[16]
    topo = ex[17]
    numa = ex[12]
    sub3 = ex[18]
    out_sub = ex[24]
    out_zone = ex[25]
    n_log = 0
    draw = policy == P_RANDOM and gpu_weight != 0
    bonus = gpu_weight * MAX_NODE_SCORE
    for i in range(n):          # kept current as pods are placed
        cpu_left[i] = allocatable[i, cpu_col] - requested[i, cpu_col]
    for j in range(count):
        c = cls[j]
        num = c_num[c]
        milli = c_milli[c]
        mask = c_mask[c]
        asks_gpu = num > 0 and milli > 0
        req = c_req[c]
        tag = affinity_tag(num, milli)
        feasible = 0
        row = -1
        if size > 0 and slot[c] >= 0:
            tm = tree_max[slot[c]]
            tc = tree_cnt[slot[c]]
            if built[c] == 0:
                for i in range(n):
                    t = class_total(
                        i, c, c_req, c_res, c_nres, c_num, c_milli, c_mask, c_cpu_nz, c_shape,
                        static_reasons, gpu_bit, allocatable, requested, gpu_count, model,
                        gpu_left, aff, node_ver, policy, tp_cpu, tp_num, tp_milli, tp_mask,
                        tp_freq, cache_score, cache_gpu, cache_ver, gpu_weight, static_total,
                        reasons, cpu_left, mem_zero, score, out_gpu, work, nonzero_requested, ex)
                    tm[size + i] = NEG if t == NEG else row_tie_key(t, i, seed_mix, requested)
                for i in range(n, size):
                    tm[size + i] = NEG
                key_pull_all(tm, size)
                if draw:
                    for i in range(size):
                        tc[size + i] = 0 if tm[size + i] == NEG else 1
                    cnt_pull_all(tc, size)
                built[c] = 1
            else:
                # the rows placed on since this class's last pod, each once
                for q in range(seen[c], n_log):
                    r = placed_log[q]
                    if row_mark[r] != j:
                        row_mark[r] = j
                        t = class_total(
                            r, c, c_req, c_res, c_nres, c_num, c_milli, c_mask, c_cpu_nz,
                            c_shape, static_reasons, gpu_bit, allocatable, requested, gpu_count,
                            model, gpu_left, aff, node_ver, policy, tp_cpu, tp_num, tp_milli,
                            tp_mask, tp_freq, cache_score, cache_gpu, cache_ver, gpu_weight,
                            static_total, reasons, cpu_left, mem_zero, score, out_gpu, work,
                            nonzero_requested, ex)
                        key_set(tm, size, r,
                                NEG if t == NEG else row_tie_key(t, r, seed_mix, requested))
                        if draw:
                            cnt_set(tc, size, r, 0 if t == NEG else 1)
            seen[c] = n_log
            if tm[1] != NEG:
                feasible = 1
                row = key_top_row(tm, size)
                if draw:
                    m = tc[1]
                    d = cnt_kth(tc, size, (cnt_before(tc, size, start)
                                           + draw_index(seed_mix, attempt0 + j, m)) % m)
                    # the leaf's key raised by the bonus: tie_key(t + bonus, rank)
                    kd = tm[size + d] + (bonus << TIE_RANK_BITS)
                    if kd > tm[1] or (kd == tm[1] and d < row):
                        row = d
            else:
                for i in range(n):      # the rejections, counted below
                    class_total(i, c, c_req, c_res, c_nres, c_num, c_milli, c_mask, c_cpu_nz,
                                c_shape, static_reasons, gpu_bit, allocatable, requested,
                                gpu_count, model, gpu_left, aff, node_ver, policy, tp_cpu,
                                tp_num, tp_milli, tp_mask, tp_freq, cache_score, cache_gpu,
                                cache_ver, gpu_weight, static_total, reasons, cpu_left,
                                mem_zero, score, out_gpu, work, nonzero_requested, ex)
        elif has_extras(c, ex):
            # one pass over the rows' whole totals (no BestFit here: its
            # normalization reads every feasible row)
            best = -1
            for p in range(n):
                i = start + p
                if i >= n:
                    i -= n
                t = class_total(i, c, c_req, c_res, c_nres, c_num, c_milli, c_mask, c_cpu_nz,
                                c_shape, static_reasons, gpu_bit, allocatable, requested,
                                gpu_count, model, gpu_left, aff, node_ver, policy, tp_cpu,
                                tp_num, tp_milli, tp_mask, tp_freq, cache_score, cache_gpu,
                                cache_ver, gpu_weight, static_total, reasons, cpu_left,
                                mem_zero, score, out_gpu, work, nonzero_requested, ex)
                if t == NEG:
                    continue
                if draw:
                    ties[feasible] = i
                    score[i] = t        # (Random writes no policy score there)
                feasible += 1
                best, row = key_push(row_tie_key(t, i, seed_mix, requested), i, best, row)
            if draw and feasible > 0:
                d = ties[draw_index(seed_mix, attempt0 + j, feasible)]
                best, row = drawn_pick(best, row, d, score[d], bonus, seed_mix, requested)
        else:
            # one pass in evaluation order (from row ``start``): the filters,
            # the policy's score (GpuShareScore.score) and the tie rule's
            # pick; BestFit normalizes over the feasible rows first, so it
            # totals in a second pass
            best = -1
            lo = 1 << 62
            hi = -lo
            # the class's arguments taken once, not per row
            sr = static_reasons[c]
            res = c_res[c]
            n_res = c_nres[c]
            cpu_nz = c_cpu_nz[c]
            gpu_num = 0
            gpu_milli = 0
            if asks_gpu:
                gpu_num = num
                gpu_milli = milli
            pod_gpu = 0
            if milli > 0:
                pod_gpu = num * milli
            cs = cache_score[c_shape[c]]
            cg = cache_gpu[c_shape[c]]
            cv = cache_ver[c_shape[c]]
            for p in range(n):
                i = start + p
                if i >= n:
                    i -= n
                # row_eval written out: a call per row with this many
                # array arguments costs more than the row itself
                b = sr[i] | fit_bits(i, allocatable, requested, req, res, n_res)
                if asks_gpu and gpu_bit != 0 and not gpu_fit(gpu_count[i], model[i],
                                                              gpu_left[i], num, milli, mask):
                    b |= gpu_bit
                reasons[i] = b
                if b != 0:
                    continue
                if draw:
                    ties[feasible] = i
                feasible += 1
                s = 0
                if policy != P_RANDOM:
                    score_node(i, policy, gpu_count, model, gpu_left, cpu_left, mem_zero, aff,
                               0, cpu_nz, 0, gpu_num, gpu_milli, mask, tag, pod_gpu, tp_cpu,
                               tp_num, tp_milli, tp_mask, tp_freq, cs, cg, cv, node_ver, score,
                               out_gpu, work)
                    s = max(score[i], 0)
                if policy == P_BESTFIT:
                    score[i] = s
                    lo = min(lo, s)
                    hi = max(hi, s)
                    continue
                best, row = key_push(row_tie_key(gpu_weight * s + static_total[i], i, seed_mix,
                                                 requested), i, best, row)
            if draw and feasible > 0:
                d = ties[draw_index(seed_mix, attempt0 + j, feasible)]
                best, row = drawn_pick(best, row, d, static_total[d], bonus, seed_mix, requested)
            if feasible > 0:
                if policy == P_BESTFIT:
                    for p in range(n):
                        i = start + p
                        if i >= n:
                            i -= n
                        if reasons[i] != 0:
                            continue
                        s = 0 if hi == lo else (score[i] - lo) * 100 // (hi - lo)
                        best, row = key_push(row_tie_key(gpu_weight * s + static_total[i], i,
                                                         seed_mix, requested), i, best, row)
        if feasible == 0:
            if failures >= out_counts.shape[0]:
                return j, failures
            mark = n_keys[0]
            for k in range(out_counts.shape[1]):
                out_counts[failures, k] = 0
            for i in range(n):
                b = reasons[i]
                code = -1
                if b & gpu_bit:
                    code = gpu_reject_code(gpu_count[i], model[i], mask)
                k = key_of(keys, n_keys, b, code, i)
                if k < 0:
                    n_keys[0] = mark            # forget this pod's new keys
                    return j, failures
                out_counts[failures, k] += 1
            out_rows[j] = -1
            out_zone[j] = -1
            for g in range(out_gpus.shape[1]):
                out_gpus[j, g] = -1
            failures += 1
            continue
        if size > 0 and slot[c] >= 0 or has_extras(c, ex):
            # the chosen row's own answer for this class (FGD's GPU in
            # ``out_gpu[row]``, the subset in ``out_sub[row]``): another
            # class may have evaluated it last
            class_total(row, c, c_req, c_res, c_nres, c_num, c_milli, c_mask, c_cpu_nz,
                        c_shape, static_reasons, gpu_bit, allocatable, requested, gpu_count,
                        model, gpu_left, aff, node_ver, policy, tp_cpu, tp_num, tp_milli,
                        tp_mask, tp_freq, cache_score, cache_gpu, cache_ver, gpu_weight,
                        static_total, reasons, cpu_left, mem_zero, score, out_gpu, work,
                        nonzero_requested, ex)
        # the pod's GPUs (Reserve's pick), before anything is accounted
        for g in range(out_gpus.shape[1]):
            out_gpus[j, g] = -1
        out_zone[j] = -1
        took = 0
        if asks_gpu:
            left = gpu_left[row]
            if xs[c, 2] >= 0:
                bi = out_sub[row]
                if bi < 0:
                    return j, failures      # no subset: Reserve fails there
                sm = sub3[xs[c, 2], topo[row], bi]
                for g in range(gpu_count[row]):
                    if (sm >> g) & 1:
                        out_gpus[j, took] = g
                        took += 1
            elif sel == SEL_FGD and num == 1 and milli < MILLI:
                out_gpus[j, 0] = out_gpu[row]
                took = 1
            else:
                took = select_gpus(SEL_RANDOM if sel == SEL_RANDOM else SEL_BEST,
                                   gpu_count[row], left, num, milli, u[j], out_gpus[j])
            for q in range(took):
                left[out_gpus[j, q]] -= milli
        if xs[c, 2] >= 0 and took > 0:
            cons = xs[c, 0]
            if xs[c, 1] != 0 and ex[11][row]:
                cons |= C_NUMA
            if cons & C_NUMA:
                z = numa[row, out_gpus[j, 0]]
                out_zone[j] = z
                zcpu_used[row, z] += xs[c, 4]
                zmem_used[row, z] += xs[c, 5]
        # account the pod on its row (ClusterState.add_pod, GpuTable.apply)
        for r in range(req.shape[0]):
            requested[row, r] += req[r]
        nonzero_requested[row, 0] += c_nz[c, 0]
        nonzero_requested[row, 1] += c_nz[c, 1]
        cpu_left[row] = allocatable[row, cpu_col] - requested[row, cpu_col]
        aff[row, tag] += 1
        version[0] += 1
        node_ver[row] = version[0]
        out_rows[j] = row
        placed_log[n_log] = row     # the trees take it in at their next pod
        n_log += 1
    return count, failures
