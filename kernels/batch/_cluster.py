"""The CPU twin's per-cluster loop (``_rules`` compiled with ``njit`` and
inlined here; each pod's node chosen by the vector environment's
``_env.decide``, the one serial form of the decision; the CUDA kernel runs
the same rules a thread per node, ``cuda``)."""

# ruff: noqa: F821

def run_cluster(n, gpu_count, model, cpu_cap, mem_cap, pods_cap,
                t_lo, t_len, t_left, t_right, leaf_of,
                c_cpu, c_mem, c_cpu_nz, c_num, c_milli, c_mask,
                tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                policy, sel, seed_mix, gpu_weight, static_total,
                cls, u, out_node, out_gmask, out_frag,
                gpu_left, cpu_left, mem_left, pods_left, aff, node_ver, version,
                cache_score, cache_gpu, cache_ver, ties, work, gidx,
                nfrag, tree_val, feas):
    """One cluster (the CPU twin's serial form): rows 0..n-1 start empty;
    pod j (class ``cls[j]``, attempt j) is placed as the module doc says;
    ``out_node[j]`` its row or -1, ``out_gmask[j]`` its GPUs (bit mask),
    ``out_frag[j]`` the cluster's fragmentation (GPU milli, summed over
    the rows as ``numpy.sum``) after it.  The rest: scratch, [N] / [N, G]
    / [N, 18] / [C, N] / [16] / [T] as named (``feas`` [N] int8: the
    mask ``_env.decide`` leaves, unread here)."""
    for i in range(n):
        init_node(i, gpu_count, cpu_cap, mem_cap, pods_cap, model, gpu_left, cpu_left,
                  mem_left, pods_left, aff, node_ver, tp_cpu, tp_num, tp_milli, tp_mask,
                  tp_freq, nfrag)
    version[0] = 0
    for s in range(cache_ver.shape[0]):
        for i in range(n):
            cache_ver[s, i] = -1
    frag = tree_refresh(nfrag, -1, t_lo, t_len, t_left, t_right, tree_val)
    for j in range(cls.shape[0]):
        c = cls[j]
        cpu = c_cpu[c]
        mem = c_mem[c]
        num = c_num[c]
        milli = c_milli[c]
        mask = c_mask[c]
        cpu_nz = c_cpu_nz[c]
        cs = cache_score[c]
        cg = cache_gpu[c]
        cv = cache_ver[c]
        row = decide(n, gpu_count, model, gpu_left, cpu_left, mem_left, pods_left, aff, node_ver,
                     cpu, mem, cpu_nz, num, milli, mask, tp_cpu, tp_num, tp_milli, tp_mask,
                     tp_freq, policy, seed_mix, gpu_weight, static_total, j, cs, cg, cv, ties,
                     work, feas)
        if row < 0:
            out_node[j] = -1
            out_gmask[j] = 0
            out_frag[j] = frag
            continue
        out_gmask[j] = account(row, sel, gpu_count, cpu, mem, num, milli, u[j], cg[row],
                               gpu_left, cpu_left, mem_left, pods_left, aff, node_ver, version,
                               gidx)
        out_node[j] = row
        nfrag[row] = node_frag_of(row, gpu_count, model, gpu_left, cpu_left,
                                      tp_cpu, tp_num, tp_milli, tp_mask, tp_freq)
        frag = tree_refresh(nfrag, leaf_of[row], t_lo, t_len, t_left, t_right, tree_val)
        out_frag[j] = frag
