"""One cluster of the batched node-local engine: the default profile's
node-local plugins (NodeResourcesFit's filter and its three scoring
strategies, NodeResourcesBalancedAllocation, TaintToleration, NodeAffinity,
NodeUnschedulable, NodeName, ImageLocality) for pods placed one after
another, as the Scheduler's cycles place them.

Plain Python on scalars and arrays, compiled with ``njit`` on top of the
fused rules (``fused._core``: ``fit_reasons``, ``fit_score``,
``balanced_score``, ``finalize_rows``: the rounding rules live there once);
``local_cpu`` compiles it.

Per (pod class c, local node i) the engine keeps the filter reasons
(``reasons[c, i]``, 0 = feasible) and the raw per-plugin scores
(``raw[c, i, slot]``, slots as ``kernels/layout.py``: 0 Fit, 1 Balanced,
2 TaintToleration, 3 NodeAffinity, 4 ImageLocality, then 5
InterPodAffinity, normalized min-max over the scored nodes: the fused
core's ``NORM_MINMAX``).  What does not depend on the node's usage (taints,
affinity, unschedulable, nodeName, images, and InterPodAffinity's filter
and raw score where no pod of the batch is selected by another's terms:
``framework/capacity/batch_probe.py``) is given (``static_bits`` /
``static_raw``, or per cluster from a group's tables where its removed
nodes held bound pods InterPodAffinity reads: ``gather_group``); the
usage-dependent part (Fit's bits, Fit's and
Balanced's scores) is computed here and recomputed for every class on the
one node a pod lands on.  The normalization extremes (``hi``) hold 2 x
N_SLOTS entries: each slot's maximum, then the min-max slot's minimum.
"""

# ruff: noqa: F821

RES_PODS_COL = 3        # kernels/layout.py RES_PODS
N_SLOTS = 6             # kernels/layout.py's five built-in slots, then InterPodAffinity
IPA_SLOT = 5
TOO_MANY_PODS_BIT = 7   # kernels/layout.py R_TOO_MANY_PODS = 1 << 7
INSUFFICIENT_SHIFT = 24  # kernels/layout.py: bit 24 + r = "Insufficient <resource r>"
FIT_SLOTS = 65          # a failure's Fit counts: one per reason bit, then the nodes
NORM_MINMAX = 3         # fused._core NORM_MINMAX (a compiled namespace holds functions only)


def gather_node(i, x, g, alloc, used0, nz0, static_bits, static_raw, image_raw, a, u, z,
                sb, raw):
    """Universe row ``x`` into local node ``i`` of one cluster's scratch:
    allocatable ``a`` and usage ``u`` [n, R], non-zero usage ``z`` [n, 2],
    every class's usage-independent reason bits ``sb`` [C, n] and raw
    scores ``raw`` [C, n, N_SLOTS] (TaintToleration, NodeAffinity and
    InterPodAffinity from ``static_raw`` [C, U, 3], ImageLocality of image
    group ``g``; Fit's and Balanced's slots zeroed: ``refresh_row`` fills
    them)."""
    for r in range(alloc.shape[1]):
        a[i, r] = alloc[x, r]
        u[i, r] = used0[x, r]
    z[i, 0] = nz0[x, 0]
    z[i, 1] = nz0[x, 1]
    for c in range(static_bits.shape[0]):
        sb[c, i] = static_bits[c, x]
        raw[c, i, 0] = 0
        raw[c, i, 1] = 0
        raw[c, i, 2] = static_raw[c, x, 0]
        raw[c, i, 3] = static_raw[c, x, 1]
        raw[c, i, 4] = image_raw[g, c, x]
        raw[c, i, IPA_SLOT] = static_raw[c, x, 2]


def gather_group(i, x, q, group_raw, raw):
    """Local node ``i`` (universe row ``x``) of a cluster that reads static
    group ``q``: every class's InterPodAffinity raw score from
    ``group_raw`` [G, C, U] in place of ``static_raw``'s (a probe whose
    removed nodes held bound pods the plugin reads:
    ``LocalBatch.static_group``); call after ``gather_node``."""
    for c in range(raw.shape[0]):
        raw[c, i, IPA_SLOT] = group_raw[q, c, x]


def refresh_row(i, c, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res, fit_kind,
                fit_weights, shape_util, shape_score, bal_res, bal_kind):
    """Class ``c``'s answer on local node ``i`` from its usage now: the
    reason bits (static | Fit's) and, when feasible, Fit's and Balanced's
    raw scores (the other slots are static and already in ``raw``)."""
    bits = static_bits[c, i]
    if c_fit_filter[c]:
        bits |= fit_reasons(i, alloc, used, c_request[c], c_anything[c], c_ignored[c])
    reasons[c, i] = bits
    if bits != 0:
        return
    if c_active[c, 0]:
        raw[c, i, 0] = fit_score(i, alloc, used, nz_used, c_request[c], c_nonzero[c], strategy,
                                 fit_res, fit_kind, fit_weights, shape_util, shape_score)
    if c_active[c, 1]:
        raw[c, i, 1] = balanced_score(i, alloc, used, nz_used, c_request[c], c_nonzero[c],
                                      bal_res, bal_kind)


def place_on(i, c, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
             c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res, fit_kind,
             fit_weights, shape_util, shape_score, bal_res, bal_kind):
    """Account a pod of class ``c`` on local node ``i`` and refresh that
    node's answers for every class."""
    for r in range(used.shape[1]):
        used[i, r] += c_request[c, r]
    used[i, RES_PODS_COL] += 1
    nz_used[i, 0] += c_nonzero[c, 0]
    nz_used[i, 1] += c_nonzero[c, 1]
    for cc in range(reasons.shape[0]):
        refresh_row(i, cc, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                    c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res,
                    fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind)


def release_from(i, c, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                 c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res, fit_kind,
                 fit_weights, shape_util, shape_score, bal_res, bal_kind):
    """A pod of class ``c`` leaves local node ``i``: its usage returned and
    that node's answers refreshed for every class (``place_on`` undone)."""
    for r in range(used.shape[1]):
        used[i, r] -= c_request[c, r]
    used[i, RES_PODS_COL] -= 1
    nz_used[i, 0] -= c_nonzero[c, 0]
    nz_used[i, 1] -= c_nonzero[c, 1]
    for cc in range(reasons.shape[0]):
        refresh_row(i, cc, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                    c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res,
                    fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind)


def node_key(i, total, seed_mix, used):
    """Local node ``i``'s order key for the weighted ``total`` (-1:
    infeasible): ``fused._core.tie_key`` of the total and the node's tie
    rank (row i, the pods on it now: ``used[i, RES_PODS_COL]``)."""
    if total < 0:
        return -1
    return tie_key(total, tie_rank(seed_mix, i, used[i, RES_PODS_COL]))


def pick_scanned(ties_scratch, n_ties, start, n, seed_mix, used):
    """The local node the tie rule takes among the ``n_ties`` tied top
    positions ``ties_scratch[:n_ties]`` (position j is node (start + j)
    mod n): the highest tie rank, the lower node on an equal rank."""
    best = -1
    best_rank = -1
    for t in range(n_ties):
        i = start + ties_scratch[t]
        if i >= n:
            i -= n
        r = tie_rank(seed_mix, i, used[i, RES_PODS_COL])
        if r > best_rank or (r == best_rank and i < best):
            best = i
            best_rank = r
    return best


def keys_build(n, reasons_c, raw_c, active, norm, weights, hi, hi_cnt, seed_mix, used, tkey,
               size):
    """One class's normalization extremes ``hi`` / ``hi_cnt`` [2S] (each
    normalized slot's maximum over the feasible nodes and how many reach
    it; a min-max slot's minimum and count at S + s) and its key tree
    ``tkey`` [2 size] (leaf i: ``node_key`` of node i's weighted total, -1
    beyond n; an inner node the max of its children), from scratch."""
    n_slots = raw_c.shape[1]
    start_extremes(active, norm, hi, hi_cnt, n_slots)
    for i in range(n):
        if reasons_c[i] != 0:
            continue
        for s in range(n_slots):
            if not active[s] or norm[s] == 0:
                continue
            v = raw_c[i, s]
            if v > hi[s]:
                hi[s] = v
                hi_cnt[s] = 1
            elif v == hi[s]:
                hi_cnt[s] += 1
            if norm[s] == NORM_MINMAX:
                lo = n_slots + s
                if v < hi[lo]:
                    hi[lo] = v
                    hi_cnt[lo] = 1
                elif v == hi[lo]:
                    hi_cnt[lo] += 1
    for i in range(size):
        tkey[size + i] = -1
        if i < n:
            tkey[size + i] = node_key(i, row_total(i, reasons_c, raw_c, active, norm, weights,
                                                   hi), seed_mix, used)
    for p in range(size - 1, 0, -1):
        tkey[p] = max(tkey[2 * p], tkey[2 * p + 1])


def keys_fold(i, n, old_reasons, old_raw, reasons_c, raw_c, active, norm, weights, hi, hi_cnt,
              seed_mix, used, tkey, size, dirty):
    """Node ``i`` re-evaluated for one class (its reasons and raw scores
    before: old_reasons [1], old_raw [1, S]), its pods changed: the
    extremes and node i's leaf follow (``fused._core.fold_maxima``; when an
    extreme moves every total changes and ``keys_build`` starts over)."""
    dirty[0] = i
    if fold_maxima(dirty, 1, old_reasons, old_raw, reasons_c, raw_c, active, norm, hi,
                   hi_cnt) == -1000000000:
        keys_build(n, reasons_c, raw_c, active, norm, weights, hi, hi_cnt, seed_mix, used, tkey,
                   size)
        return
    p = size + i
    tkey[p] = node_key(i, row_total(i, reasons_c, raw_c, active, norm, weights, hi), seed_mix,
                       used)
    p >>= 1
    while p >= 1:
        tkey[p] = max(tkey[2 * p], tkey[2 * p + 1])
        p >>= 1


def keys_top(tkey, size):
    """The node of a key tree's largest leaf, the lowest node among equal
    ones: the tie rule's pick (meaningful when ``tkey[1]`` >= 0)."""
    p = 1
    while p < size:
        a = 2 * p
        p = a if tkey[a] == tkey[p] else a + 1
    return p - size


def keep_node(i, reasons, raw, old_reasons, old_raw):
    """Node ``i``'s answers for every class before a change (old_reasons
    [C], old_raw [C, S]), for ``fold_node``."""
    for cc in range(reasons.shape[0]):
        old_reasons[cc] = reasons[cc, i]
        for s in range(raw.shape[2]):
            old_raw[cc, s] = raw[cc, i, s]


def fold_node(i, every, reasons, raw, c_active, c_norm, c_weights, hi, hi_cnt, seed_mix, used,
              tkey, old_reasons, old_raw, dirty):
    """After a pod came to or left node ``i`` (its answers before in
    ``old_reasons`` / ``old_raw``: ``keep_node``), every class's key tree
    follows (``keys_fold``; nothing when not every node is scored)."""
    if not every:
        return
    n = reasons.shape[1]
    size = tkey.shape[1] // 2
    for cc in range(reasons.shape[0]):
        keys_fold(i, n, old_reasons[cc:cc + 1], old_raw[cc:cc + 1], reasons[cc], raw[cc],
                  c_active[cc], c_norm[cc], c_weights[cc], hi[cc], hi_cnt[cc], seed_mix, used,
                  tkey[cc], size, dirty)


def count_failure(c, n, rows, reasons, static_bits, s_key, key_first, k_static, n_res, out):
    """Why class ``c`` fits none of the cluster's n nodes now, as the
    FailedScheduling diagnosis counts it (each node's status is its first
    rejecting filter in profile order): ``out`` [k_static + FIT_SLOTS]
    receives, per static status id k (``s_key[c, rows[i]]``, the status of
    the usage-independent filters, ``key_first[k]``: that filter comes
    before NodeResourcesFit), the nodes it decides, and for the nodes
    NodeResourcesFit decides, per reason bit b the nodes with it
    (``out[k_static + b]``) and their number (``out[k_static + 64]``)."""
    for s in range(out.shape[0]):
        out[s] = 0
    for i in range(n):
        bits = reasons[c, i]
        if bits == 0:
            continue
        key = s_key[c, rows[i]]
        if key >= 0 and key_first[key]:
            out[key] += 1
            continue
        fit = bits & ~static_bits[c, i]
        if fit != 0:
            out[k_static + 64] += 1
            if (fit >> TOO_MANY_PODS_BIT) & 1:
                out[k_static + TOO_MANY_PODS_BIT] += 1
            for r in range(n_res):
                b = INSUFFICIENT_SHIFT + r
                if b < 63 and (fit >> b) & 1:
                    out[k_static + b] += 1
        elif key >= 0:
            out[key] += 1


def start_answers(alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                  c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons, raw,
                  strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score, bal_res,
                  bal_kind, num_to_find, positions, hi, hi_cnt, seed_mix, tkey):
    """A cluster's answers before its first pod: every class's reasons and
    raw scores on every local node (``refresh_row``), the evaluation order
    ``positions`` the identity, and, when every node is scored
    (``num_to_find >= n``; returned), each class's key tree built
    (``keys_build``)."""
    n = alloc.shape[0]
    for c in range(reasons.shape[0]):
        for i in range(n):
            refresh_row(i, c, alloc, used, nz_used, c_request, c_nonzero, c_anything,
                        c_ignored, c_fit_filter, c_active, static_bits, reasons, raw,
                        strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score,
                        bal_res, bal_kind)
    for i in range(n):
        positions[i] = i
    every = num_to_find >= n
    if every:
        size = tkey.shape[1] // 2
        for c in range(reasons.shape[0]):
            keys_build(n, reasons[c], raw[c], c_active[c], c_norm[c], c_weights[c], hi[c],
                       hi_cnt[c], seed_mix, used, tkey[c], size)
    return every


def pick_node(c, n, every, start, reasons, raw, c_active, c_norm, c_weights, num_to_find,
              seed_mix, used, positions, total_scratch, ties_scratch, hi_scratch, tkey):
    """One cycle of a pod of class ``c`` on the cluster's n > 0 nodes from
    the start index ``start``: (the local node it takes, -1 when none;
    the nodes processed).  With every node scored the pick is the top of
    the class's key tree; otherwise the nodes scanned from ``start`` up to
    the ``num_to_find``-th feasible one are normalized and weighed
    (``fused._core.finalize_rows``) and the tie rule picks among the top
    ones (``pick_scanned``)."""
    if every:
        if tkey[c, 1] < 0:
            return -1, n
        return keys_top(tkey[c], tkey.shape[1] // 2), n
    n_ties, processed, found = finalize_rows(
        positions, start, reasons[c], raw[c], num_to_find, c_active[c], c_norm[c],
        c_weights[c], False, raw[c], total_scratch, ties_scratch, hi_scratch)
    if n_ties == 0:
        return -1, processed
    return pick_scanned(ties_scratch, n_ties, start, n, seed_mix, used), processed


def run_local_cluster(alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                      c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons, raw,
                      strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score,
                      bal_res, bal_kind, pod_cls, num_to_find, seed_mix, out_row,
                      positions, total_scratch, ties_scratch, hi_scratch, hi, hi_cnt, tkey,
                      old_reasons, old_raw, dirty, rows, s_key, key_first, k_static, fail_pod,
                      fail_counts, pod_group):
    """Place the pods ``pod_cls`` ([P] class ids, queue order) on one
    cluster of n local nodes, each as its own cycle would: filter, score the
    nodes scanned from the start index up to the ``num_to_find``-th feasible
    one (percentageOfNodesToScore), normalize over them, weigh, take among
    the top-scored nodes the one of highest ``fused._core.tie_rank(seed_mix,
    i, pods on i now)``, the lower local node i on an equal rank (the local
    node is the row the cluster's own Scheduler gives it), account the pod;
    the next start index is (start + processed) mod n.  A pod that fits
    nowhere gets -1 and changes nothing (every node was scanned: the start
    index stays).

    alloc/used [n, R] int64 and nz_used [n, 2] (non-zero cpu/memory) are the
    cluster's own (``used``/``nz_used`` are updated; column RES_PODS_COL
    counts the pods on each node); reasons [C, n] and raw [C, n, S] hold
    the static parts on entry.  out_row [P] receives the local node of each
    pod or -1.  With every node scored (num_to_find >= n: the start stays
    0) each class keeps its nodes' order keys (``node_key``: total, then
    tie rank) in a max tree (``keys_build`` / ``fold_node``: hi, hi_cnt
    [C, 2S], tkey [C, 2 size], size a power of two >= n), so a pod costs
    O(classes x log n); otherwise each pod scans (``pick_node``).  Scratch:
    positions, total_scratch, ties_scratch [n]; hi_scratch [2S];
    old_reasons [C], old_raw [C, S], dirty [1].

    The first F pods that fit nowhere (F = fail_pod.shape[0]) get their
    diagnosis at that moment: fail_pod [F] their index k (-1: fewer
    failed), fail_counts [F, k_static + FIT_SLOTS] ``count_failure`` of
    each (rows [n]: the local nodes' universe rows, s_key [C, U],
    key_first [k_static]).

    pod_group [P] int64: each pod's group (0..62) or -1; once a pod of group
    g fits nowhere, the later pods of g are dropped (-1, never attempted:
    the start index stays, no diagnosis), as a caller that deletes the rest
    of a template at its first failure has them.  Returns the number of
    pods bound."""
    n = alloc.shape[0]
    every = start_answers(alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                          c_fit_filter, c_active, c_norm, c_weights, static_bits, reasons, raw,
                          strategy, fit_res, fit_kind, fit_weights, shape_util, shape_score,
                          bal_res, bal_kind, num_to_find, positions, hi, hi_cnt, seed_mix,
                          tkey)
    start = 0
    bound = 0
    failed = 0
    for f in range(fail_pod.shape[0]):
        fail_pod[f] = -1
    dropped = 0             # bit g: a pod of group g fit nowhere
    for k in range(pod_cls.shape[0]):
        c = pod_cls[k]
        out_row[k] = -1
        grp = pod_group[k]
        if grp >= 0 and (dropped >> grp) & 1:
            continue
        if n == 0:
            if grp >= 0:
                dropped |= 1 << grp
            if failed < fail_pod.shape[0]:
                fail_pod[failed] = k
                for s in range(fail_counts.shape[1]):
                    fail_counts[failed, s] = 0
                failed += 1
            continue
        i, processed = pick_node(c, n, every, start, reasons, raw, c_active, c_norm, c_weights,
                                 num_to_find, seed_mix, used, positions, total_scratch,
                                 ties_scratch, hi_scratch, tkey)
        if i >= 0:
            if every:
                keep_node(i, reasons, raw, old_reasons, old_raw)
            place_on(i, c, alloc, used, nz_used, c_request, c_nonzero, c_anything, c_ignored,
                     c_fit_filter, c_active, static_bits, reasons, raw, strategy, fit_res,
                     fit_kind, fit_weights, shape_util, shape_score, bal_res, bal_kind)
            fold_node(i, every, reasons, raw, c_active, c_norm, c_weights, hi, hi_cnt,
                      seed_mix, used, tkey, old_reasons, old_raw, dirty)
            out_row[k] = i
            bound += 1
        else:
            if grp >= 0:
                dropped |= 1 << grp
            if failed < fail_pod.shape[0]:
                fail_pod[failed] = k
                count_failure(c, n, rows, reasons, static_bits, s_key, key_first, k_static,
                              used.shape[1], fail_counts[failed])
                failed += 1
        start += processed
        while start >= n:
            start -= n
    return bound
