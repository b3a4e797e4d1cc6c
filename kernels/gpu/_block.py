"""Blocks of unlike pods placed one after another in one compiled call: the
per-pod rules of a GPU-sharing profile (NodeResourcesFit's fit, GpuShareFit,
GpuShareScore's policy, node-only scores, the tie-break) over every node.

Plain Python compiled by ``gpu.block`` with ``njit`` on top of the GPU rules
(``gpu._core``); no allocation.  NodeResourcesFit's bits are the fused
filters' (``kernels.layout``: pod count, Insufficient <resource>).

Units as in ``gpu._core``: GPU shares in milli-GPU, CPU in millicores; the
resource columns are the ClusterState's (int64 [N, R]).
"""

from numba import int64, uint64

# The GPU rules (model_ok, gpu_fit, affinity_tag, score_node, select_gpus)
# are the compiled namespace's (``gpu.block``), not names of this file.
# ruff: noqa: F821

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


def tie_pick(seed_mix, attempt, n):
    """Which of ``n`` tied rows pod ``attempt`` takes: the runtime's
    ``tie_break_index`` (splitmix64 of seed * golden + attempt)."""
    z = uint64(seed_mix) + uint64(attempt) + uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> uint64(27))) * uint64(0x94D049BB133111EB)
    z = z ^ (z >> uint64(31))
    return int64(z % uint64(n))


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


def top_push(t, i, best, n_ties, ties):
    """Row ``i`` with total ``t`` folded into the running top: (best total,
    how many rows have it), ``ties[:count]`` those rows in the order seen."""
    if t > best:
        best = t
        n_ties = 0
    if t == best:
        ties[n_ties] = i
        n_ties += 1
    return best, n_ties


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


def tree_pull(tmax, tcnt, p):
    """Node ``p`` of a (max, count of the max) tree from its two children."""
    a = tmax[2 * p]
    b = tmax[2 * p + 1]
    if a > b:
        tmax[p] = a
        tcnt[p] = tcnt[2 * p]
    elif b > a:
        tmax[p] = b
        tcnt[p] = tcnt[2 * p + 1]
    else:
        tmax[p] = a
        tcnt[p] = tcnt[2 * p] + tcnt[2 * p + 1]


def tree_set(tmax, tcnt, size, i, v):
    """Leaf ``i`` := ``v`` and its ancestors pulled again (O(log size))."""
    p = size + i
    tmax[p] = v
    tcnt[p] = 1
    p >>= 1
    while p >= 1:
        tree_pull(tmax, tcnt, p)
        p >>= 1


def tree_count_top(tmax, tcnt, size, lo, hi, best):
    """How many leaves in [lo, hi) hold ``best`` (the whole tree's max, so
    no node holds more)."""
    k = 0
    lo += size
    hi += size
    while lo < hi:
        if lo & 1:
            if tmax[lo] == best:
                k += tcnt[lo]
            lo += 1
        if hi & 1:
            hi -= 1
            if tmax[hi] == best:
                k += tcnt[hi]
        lo >>= 1
        hi >>= 1
    return k


def tree_descend(tmax, tcnt, size, p, k, best):
    """The ``k``-th (0-based) leaf holding ``best`` under node ``p``."""
    while p < size:
        q = 2 * p
        if tmax[q] == best:
            if k < tcnt[q]:
                p = q
                continue
            k -= tcnt[q]
        p = q + 1
    return p - size


def tree_kth_top(tmax, tcnt, size, lo, hi, k, best, stack):
    """The ``k``-th (0-based, in row order) leaf in [lo, hi) holding
    ``best``; ``stack`` scratch (>= 64) for the range's right-hand nodes."""
    lo += size
    hi += size
    n_right = 0
    while lo < hi:
        if lo & 1:
            if tmax[lo] == best:
                if k < tcnt[lo]:
                    return tree_descend(tmax, tcnt, size, lo, k, best)
                k -= tcnt[lo]
            lo += 1
        if hi & 1:
            hi -= 1
            stack[n_right] = hi
            n_right += 1
        lo >>= 1
        hi >>= 1
    for q in range(n_right - 1, -1, -1):
        p = stack[q]
        if tmax[p] == best:
            if k < tcnt[p]:
                return tree_descend(tmax, tcnt, size, p, k, best)
            k -= tcnt[p]
    return -1


def class_total(i, c, c_req, c_res, c_nres, c_num, c_milli, c_mask, c_cpu_nz, c_shape,
                static_reasons, gpu_bit, allocatable, requested, gpu_count, model, gpu_left,
                aff, node_ver, policy, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                cache_score, cache_gpu, cache_ver, gpu_weight, static_total, reasons,
                cpu_left, mem_zero, score, out_gpu, work):
    """Row ``i``'s total for a pod of class ``c`` (``gpu_weight * policy
    score + static_total[i]``), NEG when the row rejects it (its bits in
    ``reasons[i]``)."""
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
    return gpu_weight * s + static_total[i]


def place_block(count, seed_mix, attempt0, start, n, cls, u,
                c_req, c_nz, c_res, c_nres, c_num, c_milli, c_mask, c_cpu_nz, c_shape,
                static_reasons, gpu_bit, allocatable, requested,
                nonzero_requested, gpu_count, model, gpu_left, aff, node_ver, version,
                policy, sel, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                cache_score, cache_gpu, cache_ver, gpu_weight, static_total,
                reasons, cpu_left, mem_zero, score, out_gpu, ties, work,
                keys, n_keys, out_rows, out_gpus, out_counts,
                size, slot, tree_max, tree_cnt, built, stack):
    """Place pods 0..count-1 in order, each as its own cycle would with every
    node scored: pod j (class ``cls[j]``: request ``c_req[c]`` [R], non-zero
    request ``c_nz[c]`` [2], the resources NodeResourcesFit checks
    ``c_res[c, :c_nres[c]]``, GPU ask ``c_num``/``c_milli``/``c_mask``,
    ``c_cpu_nz``, FGD cache row ``c_shape``) is rejected by a node for
    ``static_reasons[c, i]`` (the filters that read no pod on the node),
    NodeResourcesFit and, when it asks GPUs, GpuShareFit (``gpu_bit``);
    feasible nodes total ``gpu_weight * policy score + static_total[i]``;
    the tie ``tie_pick(seed_mix, attempt0 + j, ties)`` among the top rows
    in order from row ``start`` wins.  The pod's requests are added to its
    row, its GPUs taken (FGD's GPU for a share under FGD, ``u[j]`` for
    Random, else the best fit; whole GPUs: the first free) and the row's
    GPU version bumped (``version``[0] is the table's counter).

    Top structure (``size`` > 0, a power of two >= n; not for BestFit,
    whose min-max normalization reads every feasible row): for the
    classes with ``slot[c]`` >= 0 a tree of (max total, how many rows
    hold it) over the rows, ``tree_max``/``tree_cnt`` [T, 2 * size]
    int64 row ``slot[c]`` (leaf ``size + i`` = row i's total, NEG when it
    rejects), built at the class's first pod (``built[c]`` 0 -> 1); the
    other classes pass over the rows.  A row's total is a function of
    that row alone (its columns, GPUs and version; the static parts are
    fixed for the block), so after a placement only the placed row is
    evaluated again for each built class: a pod costs O(trees + log n),
    not a pass over the rows; the tie is the k-th top leaf from
    ``start`` on, found by descending the tree.  A pod that fits nowhere still passes
    over every row for its rejection counts.  ``stack`` int64 [>= 64]
    scratch.  ``size`` 0: one pass over every row per pod.  Either way the
    placements are the same.

    Outputs: ``out_rows[j]`` the row or -1 when no node fits; ``out_gpus[j]``
    the GPU indices (-1 padded); a pod that fits nowhere takes the next row
    of ``out_counts`` [F, K]: how many nodes rejected it for each (reason
    bits, GPU code, first such row) of ``keys`` [K, 3].  Returns (pods
    handled, failures): fewer than ``count`` when the failure rows or the
    key table run out (the next pod has not been touched).  ``cpu_col`` 0
    is cpu (millicores), as ``kernels.layout`` orders the resources."""
    failures = 0
    cpu_col = 0
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
                    tm[size + i] = class_total(
                        i, c, c_req, c_res, c_nres, c_num, c_milli, c_mask, c_cpu_nz, c_shape,
                        static_reasons, gpu_bit, allocatable, requested, gpu_count, model,
                        gpu_left, aff, node_ver, policy, tp_cpu, tp_num, tp_milli, tp_mask,
                        tp_freq, cache_score, cache_gpu, cache_ver, gpu_weight, static_total,
                        reasons, cpu_left, mem_zero, score, out_gpu, work)
                    tc[size + i] = 1
                for i in range(n, size):
                    tm[size + i] = NEG
                    tc[size + i] = 1
                for p in range(size - 1, 0, -1):
                    tree_pull(tm, tc, p)
                built[c] = 1
            best = tm[1]
            if best != NEG:
                feasible = 1
                pick = tie_pick(seed_mix, attempt0 + j, tc[1])
                a = tree_count_top(tm, tc, size, start, n, best)
                if pick < a:
                    row = tree_kth_top(tm, tc, size, start, n, pick, best, stack)
                else:
                    row = tree_kth_top(tm, tc, size, 0, start, pick - a, best, stack)
                # the chosen row's own answer for this class (FGD's GPU in
                # ``out_gpu[row]``): another class may have evaluated it last
                class_total(row, c, c_req, c_res, c_nres, c_num, c_milli, c_mask, c_cpu_nz,
                            c_shape, static_reasons, gpu_bit, allocatable, requested, gpu_count,
                            model, gpu_left, aff, node_ver, policy, tp_cpu, tp_num, tp_milli,
                            tp_mask, tp_freq, cache_score, cache_gpu, cache_ver, gpu_weight,
                            static_total, reasons, cpu_left, mem_zero, score, out_gpu, work)
            else:
                for i in range(n):      # the rejections, counted below
                    class_total(i, c, c_req, c_res, c_nres, c_num, c_milli, c_mask, c_cpu_nz,
                                c_shape, static_reasons, gpu_bit, allocatable, requested,
                                gpu_count, model, gpu_left, aff, node_ver, policy, tp_cpu,
                                tp_num, tp_milli, tp_mask, tp_freq, cache_score, cache_gpu,
                                cache_ver, gpu_weight, static_total, reasons, cpu_left,
                                mem_zero, score, out_gpu, work)
        else:
            # one pass in evaluation order (from row ``start``): the filters,
            # the policy's score (GpuShareScore.score) and the top total's
            # ties; BestFit normalizes over the feasible rows first, so it
            # totals in a second pass
            best = -(1 << 62)
            n_ties = 0
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
                best, n_ties = top_push(gpu_weight * s + static_total[i], i, best, n_ties, ties)
            if feasible > 0:
                if policy == P_BESTFIT:
                    for p in range(n):
                        i = start + p
                        if i >= n:
                            i -= n
                        if reasons[i] != 0:
                            continue
                        s = 0 if hi == lo else (score[i] - lo) * 100 // (hi - lo)
                        best, n_ties = top_push(gpu_weight * s + static_total[i], i, best,
                                                n_ties, ties)
                row = ties[tie_pick(seed_mix, attempt0 + j, n_ties)]
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
            for g in range(out_gpus.shape[1]):
                out_gpus[j, g] = -1
            failures += 1
            continue
        # account the pod on its row (ClusterState.add_pod, GpuTable.apply)
        for r in range(req.shape[0]):
            requested[row, r] += req[r]
        nonzero_requested[row, 0] += c_nz[c, 0]
        nonzero_requested[row, 1] += c_nz[c, 1]
        for g in range(out_gpus.shape[1]):
            out_gpus[j, g] = -1
        if asks_gpu:
            left = gpu_left[row]
            if sel == SEL_FGD and num == 1 and milli < MILLI:
                out_gpus[j, 0] = out_gpu[row]
                took = 1
            else:
                took = select_gpus(SEL_RANDOM if sel == SEL_RANDOM else SEL_BEST,
                                   gpu_count[row], left, num, milli, u[j], out_gpus[j])
            for q in range(took):
                left[out_gpus[j, q]] -= milli
        cpu_left[row] = allocatable[row, cpu_col] - requested[row, cpu_col]
        aff[row, tag] += 1
        version[0] += 1
        node_ver[row] = version[0]
        out_rows[j] = row
        if size > 0:
            # the placed row is the only one whose totals moved
            for c2 in range(built.shape[0]):
                if built[c2] == 1:
                    tree_set(tree_max[slot[c2]], tree_cnt[slot[c2]], size, row, class_total(
                        row, c2, c_req, c_res, c_nres, c_num, c_milli, c_mask, c_cpu_nz,
                        c_shape, static_reasons, gpu_bit, allocatable, requested, gpu_count,
                        model, gpu_left, aff, node_ver, policy, tp_cpu, tp_num, tp_milli,
                        tp_mask, tp_freq, cache_score, cache_gpu, cache_ver, gpu_weight,
                        static_total, reasons, cpu_left, mem_zero, score, out_gpu, work))
    return count, failures
