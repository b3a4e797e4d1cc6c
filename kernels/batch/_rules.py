"""Per-node and per-pod rules of the batched openb engine, shared by the CPU twin
(``cpu``: compiled with ``njit`` and inlined into ``_cluster``'s serial
loop over nodes, one cluster per ``prange`` iteration) and the CUDA kernel (``cuda``: compiled with
``cuda.jit(device=True)``, one thread block per cluster, a thread per
node).  Plain Python on scalars and array rows; no allocation.

The rules are ``gpu._block.place_block``'s for the openb profile, which is
what the ``Simulation`` runs for it: NodeResourcesFit (pod count, then the
cpu and memory the pod asks for), GpuShareFit (``gpu_fit``), GpuShareScore
(``score_node``'s policies; every row's answer kept per (pod class, node)
while the node is unchanged, as ``score_node`` keeps FGD's), the node's total ``gpu_weight * score + static_total[i]``
(BestFit min-max normalized over the feasible nodes first; Random: the
``draw_index(seed_mix, attempt, feasible rows)``-th feasible row in row
order scores MAX_NODE_SCORE, the others 0, the Scheduler's draw per pod),
the seeded tie rule among the top rows (``fused.ties``: the highest ``tie_rank(seed_mix,
row, pods on the row now)``, the lower row on an equal rank), then the
pod accounted on its node (Reserve's GPU pick: FGD's GPU for a share under
FGD, ``u`` for Random, else the best fit; whole GPUs: the first free).

The inherited names (``gpu_fit``, ``node_frag``, ``affinity_tag``, the
policies' ``*_node`` / ``bestfit_raw``, ``select_gpus`` of ``gpu._core``;
``tie_rank``, ``tie_key``, ``draw_index`` of ``fused._core``) are the
compiled namespace's.

Units: GPU milli (1000 = one GPU), CPU millicores, memory in the caller's
unit (any, the same for nodes and pods); node columns [N], GPU rows
[N, G] (G >= every node's GPU count), the FGD cache [C, N] (a row per pod
class).
"""

# ruff: noqa: F821

MILLI = 1000
SEL_BEST = 0
SEL_RANDOM = 1
SEL_FGD = 2
P_RANDOM = 0
P_DOTPROD = 1
P_CLUSTERING = 2
P_PACKING = 3
P_BESTFIT = 4
P_FGD = 5
NEG = -(1 << 62)
MAX_NODE_SCORE = 100    # Random's drawn row (the others score 0)
TIE_RANK_BITS = 31      # fused.ties': a key is total << 31 | rank


def leaf_sum(a, lo, m):
    """``numpy.sum``'s sum of ``a[lo:lo + m]`` (m <= 128): sequential
    below eight elements, else eight interleaved accumulators combined
    pairwise and the remainder added in order."""
    if m < 8:
        res = 0.0
        for k in range(m):
            res += a[lo + k]
        return res
    r0 = a[lo]
    r1 = a[lo + 1]
    r2 = a[lo + 2]
    r3 = a[lo + 3]
    r4 = a[lo + 4]
    r5 = a[lo + 5]
    r6 = a[lo + 6]
    r7 = a[lo + 7]
    k = 8
    top = m - m % 8
    while k < top:
        r0 += a[lo + k]
        r1 += a[lo + k + 1]
        r2 += a[lo + k + 2]
        r3 += a[lo + k + 3]
        r4 += a[lo + k + 4]
        r5 += a[lo + k + 5]
        r6 += a[lo + k + 6]
        r7 += a[lo + k + 7]
        k += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while k < m:
        res += a[lo + k]
        k += 1
    return res


def tree_refresh(a, first, t_lo, t_len, t_left, t_right, vals):
    """After ``a`` changed in leaf ``first`` (-1: anywhere), the tree
    nodes from ``first`` on (post order) summed again: that leaf and every
    inner node after it (the other leaves are unchanged).  Returns the
    root's value (``pairwise.pairwise_tree``'s arrays)."""
    for k in range(max(first, 0), t_lo.shape[0]):
        if t_left[k] < 0:
            if first < 0 or k == first:
                vals[k] = leaf_sum(a, t_lo[k], t_len[k])
        else:
            vals[k] = vals[t_left[k]] + vals[t_right[k]]
    return vals[t_lo.shape[0] - 1]


def node_feasible(i, gpu_count, model, gpu_left, cpu_left, mem_left, pods_left,
                  cpu, mem, num, milli, mask):
    """NodeResourcesFit (a pod slot, then the cpu and memory asked for, a
    zero request not checked) and GpuShareFit for row ``i``."""
    if pods_left[i] < 1:
        return False
    if cpu > 0 and cpu > cpu_left[i]:
        return False
    if mem > 0 and mem > mem_left[i]:
        return False
    if num > 0 and milli > 0:
        return gpu_fit(gpu_count[i], model[i], gpu_left[i], num, milli, mask)
    return True


def init_node(i, gpu_count, cpu_cap, mem_cap, pods_cap, model, gpu_left, cpu_left, mem_left,
              pods_left, aff, node_ver, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, nfrag):
    """Row ``i`` empty: every GPU free, nothing requested, its
    fragmentation under the typical pods."""
    for g in range(gpu_left.shape[1]):
        gpu_left[i, g] = MILLI if g < gpu_count[i] else 0
    cpu_left[i] = cpu_cap[i]
    mem_left[i] = mem_cap[i]
    pods_left[i] = pods_cap[i]
    for t in range(aff.shape[1]):
        aff[i, t] = 0
    node_ver[i] = 0
    nfrag[i] = node_frag_of(i, gpu_count, model, gpu_left, cpu_left,
                                tp_cpu, tp_num, tp_milli, tp_mask, tp_freq)


def node_frag_of(i, gpu_count, model, gpu_left, cpu_left, tp_cpu, tp_num, tp_milli, tp_mask,
                 tp_freq):
    return node_frag(gpu_count[i], model[i], gpu_left[i], cpu_left[i],
                     tp_cpu, tp_num, tp_milli, tp_mask, tp_freq)


def policy_score(i, policy, gpu_count, model, gpu_left, cpu_left, aff, cpu_nz, num, milli,
                 mask, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, work):
    """(GpuShareScore's raw score, FGD's share GPU or -1) of feasible row
    ``i``: ``score_node``'s policies (BestFit before its normalization,
    Random 0), without its cache.  A row whose free cpu is below 0 (a
    nominated pod the cycle counts there over-commits it) scores 0 under
    every policy but Random and BestFit: GpuShareScore's kernels test the
    node's fit for a pod of no request first (``node_fits`` with cpu 0:
    free cpu >= 0), while BestFit's raw score reads every row; FGD's GPU
    is still its pick (Reserve picks again without the nominated pods)."""
    if policy == P_RANDOM:
        return 0, -1
    asks = num > 0 and milli > 0
    gnum = num if asks else 0
    gmilli = milli if asks else 0
    c = gpu_count[i]
    left = gpu_left[i]
    lt = 0
    for g in range(c):
        lt += left[g]
    if policy == P_BESTFIT:
        return bestfit_raw(cpu_left[i], lt, cpu_nz, gnum * gmilli), -1
    short = cpu_left[i] < 0
    if policy == P_DOTPROD:
        return 0 if short else dotprod_node(cpu_left[i], lt, cpu_nz, gnum * gmilli), -1
    if policy == P_CLUSTERING:
        return 0 if short else clustering_node(lt, aff[i], affinity_tag(num, milli)), -1
    if policy == P_PACKING:
        return 0 if short else packing_node(c, left, gnum, gmilli), -1
    s, g = fgd_node(c, model[i], left, cpu_left[i], cpu_nz, gnum, gmilli,
                    tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, work)
    return 0 if short else s, g


def node_answer(i, policy, gpu_count, model, gpu_left, cpu_left, mem_left, pods_left, aff,
                cpu, mem, cpu_nz, num, milli, mask, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                cs, cg, cv, node_ver, work):
    """Row ``i``'s answer for a pod class, kept while the row is unchanged
    (``cv[i] == node_ver[i]``): ``cs[i]`` -1 infeasible, else the policy's
    raw score (>= 0); ``cg[i]`` FGD's share GPU (-1 none).  A row's answer
    reads the row and the class only, so the cache is a pure memo."""
    if node_feasible(i, gpu_count, model, gpu_left, cpu_left, mem_left, pods_left,
                     cpu, mem, num, milli, mask):
        s, g = policy_score(i, policy, gpu_count, model, gpu_left, cpu_left, aff, cpu_nz, num,
                            milli, mask, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, work)
        cs[i] = max(s, 0)
        cg[i] = g
    else:
        cs[i] = -1
        cg[i] = -1
    cv[i] = node_ver[i]


def bestfit_norm(s, lo, hi):
    return 0 if hi == lo else (s - lo) * 100 // (hi - lo)


def top_key(total, i, seed_mix, pods_cap, pods_left, best, row):
    """Feasible row ``i`` with ``total`` (>= 0) folded into the running pick
    (``best`` the largest key so far, -1 none; ``row`` its row): the key is
    ``tie_key(total, tie_rank(seed_mix, i, pods on i now))``, the pods on
    a row ``pods_cap[i] - pods_left[i]``; rows come in increasing order, so
    an equal key keeps the lower row.  The rank is hashed only for a row
    whose total reaches the best's."""
    if total < (best >> TIE_RANK_BITS):
        return best, row
    k = tie_key(total, tie_rank(seed_mix, i, pods_cap[i] - pods_left[i]))
    if k > best:
        return k, i
    return best, row


def account(row, sel, gpu_count, cpu, mem, num, milli, u, fgd_gpu, gpu_left, cpu_left,
            mem_left, pods_left, aff, node_ver, version, gidx):
    """The pod on ``row``: its requests taken, its GPUs picked and taken,
    the row's version bumped.  Returns the GPUs taken as a bit mask."""
    cpu_left[row] -= cpu
    mem_left[row] -= mem
    pods_left[row] -= 1
    gm = 0
    if num > 0 and milli > 0:
        left = gpu_left[row]
        if sel == SEL_FGD and num == 1 and milli < MILLI:
            gidx[0] = fgd_gpu
            took = 1
        else:
            took = select_gpus(SEL_RANDOM if sel == SEL_RANDOM else SEL_BEST, gpu_count[row],
                               left, num, milli, u, gidx)
        for q in range(took):
            left[gidx[q]] -= milli
            gm |= 1 << gidx[q]
    aff[row, affinity_tag(num, milli)] += 1
    version[0] += 1
    node_ver[row] = version[0]
    return gm


def release(row, gm, cpu, mem, num, milli, gpu_left, cpu_left, mem_left, pods_left, aff,
            node_ver, version):
    """A pod that ``account`` placed on ``row`` (GPUs ``gm``, a bit mask)
    leaves: what it took given back, the row's version bumped."""
    cpu_left[row] += cpu
    mem_left[row] += mem
    pods_left[row] += 1
    if num > 0 and milli > 0:
        left = gpu_left[row]
        for g in range(left.shape[0]):
            if (gm >> g) & 1:
                left[g] += milli
    aff[row, affinity_tag(num, milli)] -= 1
    version[0] += 1
    node_ver[row] = version[0]
