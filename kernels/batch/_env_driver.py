"""The vectorized environment's driver: every environment's ``_env.step_env``
in one ``prange`` (compiled with ``njit(parallel=True)`` by ``env_step``);
environment b's state is row b of the [B, ...] state arrays, its queue's
per-pod state its events' slice (``ev_off[b]``; rings and heap at twice
that); with ``rank`` (one per event; empty: every activeQ first in first
out) activeQ's heap keys ``ak`` at twice the slice too (empty without)."""

# ruff: noqa: F821

from numba import prange


def step_all(mode, action, n_nodes, gpu_count, model, cpu_cap, mem_cap, pods_cap, n_tree,
             t_lo, t_len, t_left, t_right, leaf_of, n_classes, c_cpu, c_mem, c_cpu_nz, c_num,
             c_milli, c_mask, n_typical, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, run_set,
             run_workload, policy, sel, seed_mix, gpu_weight, static_total, ev_off, ev_len,
             cls, u, arrive, depart, duration, rank, backoff0, backoff_max, max_unsched,
             out_node, out_gmask, out_frag, gpu_left, cpu_left, mem_left, pods_left, aff,
             node_ver, version, cache_score, cache_gpu, cache_ver, work, gidx, nfrag,
             tree_val, feas, scale, obs, pod_obs, ist, fst, qi, qf, pst, patt, pts, aq, up, hk,
             hs, hp, dk, ds, dp, ak):
    for b in prange(run_set.shape[0]):
        s = run_set[b]
        w = run_workload[b]
        n = n_nodes[s]
        nt = n_tree[s]
        nc = max(n_classes[w], 1)
        ntp = n_typical[w]
        o = ev_off[b]
        e = ev_len[b]
        # (no conditional inside the call: its arguments must be one block)
        rk = rank[o:o + e] if rank.shape[0] > 0 else rank[:0]
        k = ak[2 * o:2 * (o + e)] if rank.shape[0] > 0 else ak[:0]
        step_env(
            mode[b], action[b], n, gpu_count[s, :n], model[s, :n], cpu_cap[s, :n],
            mem_cap[s, :n], pods_cap[s, :n], t_lo[s, :nt], t_len[s, :nt], t_left[s, :nt],
            t_right[s, :nt], leaf_of[s, :n], c_cpu[w, :nc], c_mem[w, :nc], c_cpu_nz[w, :nc],
            c_num[w, :nc], c_milli[w, :nc], c_mask[w, :nc], tp_cpu[w, :ntp], tp_num[w, :ntp],
            tp_milli[w, :ntp], tp_mask[w, :ntp], tp_freq[w, :ntp], policy[b], sel[b],
            seed_mix[b], gpu_weight[b], static_total[b, :n], cls[o:o + e], u[o:o + e],
            arrive[o:o + e], depart[o:o + e], duration[o:o + e], backoff0[b], backoff_max[b],
            max_unsched[b], out_node[o:o + e], out_gmask[o:o + e], out_frag[o:o + e], gpu_left[b, :n],
            cpu_left[b, :n], mem_left[b, :n], pods_left[b, :n], aff[b, :n], node_ver[b, :n],
            version[b], cache_score[b, :nc, :n], cache_gpu[b, :nc, :n], cache_ver[b, :nc, :n],
            work[b], gidx[b], nfrag[b, :n], tree_val[b, :max(nt, 1)], feas[b],
            scale, obs[b], pod_obs[b], ist[b], fst[b], qi[b], qf[b], pst[o:o + e],
            patt[o:o + e], pts[o:o + e], aq[2 * o:2 * (o + e)], up[2 * o:2 * (o + e)],
            hk[2 * o:2 * (o + e)], hs[2 * o:2 * (o + e)], hp[2 * o:2 * (o + e)],
            dk[o:o + e], ds[o:o + e], dp[o:o + e], rk, k)
