"""One environment's step of the vectorized openb environment, on the
batched engine's rules (``_rules``) and queue (``_queue``; compiled with
``njit`` by ``env_step``): the cluster loop of ``_cluster.run_cluster``
cut at each decision, so that an agent picks the node of every attempt
some node takes (pods arrive, leave and retry as the run's queue says).

Per-environment state (rows of the caller's [B, ...] arrays): the node
columns and caches of ``_cluster`` plus

- ``feas`` [N] int8: 1 on the rows that pass the filters for the pending pod;
- ``obs`` [N, 6] float32: per row the allocatable cpu, memory and GPU milli,
  then what is free of each, each divided by ``scale[k]`` (the largest
  allocatable of that resource);
- ``pod_obs`` [3] float32: the pending pod's cpu, memory and GPU milli
  (GPUs x milli) over the same scales;
- ``ist`` [5] int64: the pending pod's index in the run's events (the
  pod count when done), the default row for it (-1 none), done (1:
  nothing left to attempt), whether the last action was outside the
  mask, the row the last step applied;
- ``fst`` [2] float64: the cluster's fragmentation (GPU milli), the GPU
  milli allocated;
- ``_queue``'s state (``qi``, ``qf``, ``pst``, ``patt``, ``pts``, ``aq``,
  ``up``, ``hk``, ``hs``, ``hp``, ``dk``, ``ds``, ``dp``; with ``rank``,
  ``ak`` [2P] activeQ's heap keys: the pending pod is the head of activeQ
  in PrioritySort's order, as the batched engine's run pops it).
"""

# ruff: noqa: F821

P_RANDOM = 0
P_BESTFIT = 4
MAX_NODE_SCORE = 100


def decide(n, gpu_count, model, gpu_left, cpu_left, mem_left, pods_cap, pods_left, aff,
           node_ver, cpu, mem, cpu_nz, num, milli, mask, tp_cpu, tp_num, tp_milli, tp_mask,
           tp_freq, policy, seed_mix, attempt, gpu_weight, static_total, cs, cg, cv, work,
           feas):
    """``feas`` set for one pod (a class's ``cs``/``cg``/``cv`` cache rows);
    returns the row the batched engine places it on (-1: none fits): the
    top total, the seeded tie rule among the rows that share it
    (``_rules.top_key``).  Random scores the k-th feasible row (in row
    order, k = ``draw_index(seed_mix, attempt, feasible rows)``)
    MAX_NODE_SCORE and the others 0, as the Scheduler's GpuShareScore
    does (its draw per pod, not a tie)."""
    feasible = 0
    best = -1
    row = -1
    lo = 1 << 62
    hi = -lo
    for i in range(n):
        if cv[i] != node_ver[i]:
            node_answer(i, policy, gpu_count, model, gpu_left, cpu_left, mem_left, pods_left,
                        aff, cpu, mem, cpu_nz, num, milli, mask, tp_cpu, tp_num, tp_milli,
                        tp_mask, tp_freq, cs, cg, cv, node_ver, work)
        s = cs[i]
        if s < 0:
            feas[i] = 0
            continue
        feas[i] = 1
        feasible += 1
        if policy == P_BESTFIT:
            lo = min(lo, s)
            hi = max(hi, s)
            continue
        if policy == P_RANDOM:
            continue
        best, row = top_key(gpu_weight * s + static_total[i], i, seed_mix, pods_cap, pods_left,
                            best, row)
    if feasible == 0:
        return -1
    if policy == P_BESTFIT:
        for i in range(n):
            if cs[i] >= 0:
                best, row = top_key(gpu_weight * bestfit_norm(cs[i], lo, hi) + static_total[i],
                                    i, seed_mix, pods_cap, pods_left, best, row)
    elif policy == P_RANDOM:
        k = draw_index(seed_mix, attempt, feasible)
        for i in range(n):
            if cs[i] >= 0:
                s = MAX_NODE_SCORE if k == 0 else 0
                best, row = top_key(gpu_weight * s + static_total[i], i, seed_mix, pods_cap,
                                    pods_left, best, row)
                k -= 1
    return row


def write_row(i, gpu_count, cpu_cap, mem_cap, gpu_left, cpu_left, mem_left, scale, obs):
    """Row ``i``'s observation (module doc)."""
    free = 0
    for g in range(gpu_count[i]):
        free += gpu_left[i, g]
    obs[i, 0] = cpu_cap[i] / scale[0]
    obs[i, 1] = mem_cap[i] / scale[1]
    obs[i, 2] = gpu_count[i] * 1000 / scale[2]
    obs[i, 3] = cpu_left[i] / scale[0]
    obs[i, 4] = mem_left[i] / scale[1]
    obs[i, 5] = free / scale[2]


HOLD = 2
# ``_queue``'s answers and slots (a compiled namespace holds functions only)
Q_DONE = 0
Q_DEPART = 2
Q_POD = 10
Q_ATTEMPT = 11


def step_env(mode, action, n, gpu_count, model, cpu_cap, mem_cap, pods_cap,
             t_lo, t_len, t_left, t_right, leaf_of,
             c_cpu, c_mem, c_cpu_nz, c_num, c_milli, c_mask,
             tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
             policy, sel, seed_mix, gpu_weight, static_total, cls, u,
             arr, dep, dur, backoff0, backoff_max, max_unsched,
             out_node, out_gmask, out_frag,
             gpu_left, cpu_left, mem_left, pods_left, aff, node_ver, version,
             cache_score, cache_gpu, cache_ver, work, gidx, nfrag, tree_val,
             feas, scale, obs, pod_obs, ist, fst, qi, qf, pst, patt, pts, aq, up, hk, hs, hp,
             dk, ds, dp, rank, ak):
    """``mode`` 1 (reset): the cluster emptied and the run started again;
    2 (hold): nothing changes; 0 (step): the pending pod placed on row
    ``action`` (the default row when ``action`` is outside the mask).  Then
    on through the run's queue (``_queue``: arrivals, departures freeing
    their nodes, failed attempts waiting as the Simulation's queue lets
    them; activeQ in the order of ``rank`` [P], empty: first in first
    out, ``ak`` [2P] or empty its heap keys) to the next attempt some node
    takes.  Outputs per pod: the row
    it was bound to (-1: not yet or never), its GPUs, the fragmentation
    after it (or, for a failed attempt, when it failed)."""
    if mode == HOLD:
        return
    if mode == 1:
        for i in range(n):
            init_node(i, gpu_count, cpu_cap, mem_cap, pods_cap, model, gpu_left, cpu_left,
                      mem_left, pods_left, aff, node_ver, tp_cpu, tp_num, tp_milli, tp_mask,
                      tp_freq, nfrag)
            write_row(i, gpu_count, cpu_cap, mem_cap, gpu_left, cpu_left, mem_left, scale, obs)
        version[0] = 0
        for s in range(cache_ver.shape[0]):
            for i in range(n):
                cache_ver[s, i] = -1
        fst[0] = tree_refresh(nfrag, -1, t_lo, t_len, t_left, t_right, tree_val)
        fst[1] = 0.0
        for j in range(cls.shape[0]):
            out_node[j] = -1
            out_gmask[j] = 0
            out_frag[j] = fst[0]
        q_init(qi, qf, pst, patt, pts)
        ist[0] = 0
        ist[3] = 0
        ist[4] = -1
    else:
        if ist[2] == 1:
            ist[3] = 0
            ist[4] = -1
            return
        j = ist[0]
        c = cls[j]
        row = action
        invalid = row < 0 or row >= n
        if not invalid:
            invalid = feas[row] == 0
        if invalid:
            row = ist[1]
        gm = account(row, sel, gpu_count, c_cpu[c], c_mem[c], c_num[c], c_milli[c], u[j],
                     cache_gpu[c, row], gpu_left, cpu_left, mem_left, pods_left, aff,
                     node_ver, version, gidx)
        q_bound(j, dur, qi, qf, pst, dk, ds, dp)
        out_node[j] = row
        out_gmask[j] = gm
        nfrag[row] = node_frag_of(row, gpu_count, model, gpu_left, cpu_left,
                                  tp_cpu, tp_num, tp_milli, tp_mask, tp_freq)
        fst[0] = tree_refresh(nfrag, leaf_of[row], t_lo, t_len, t_left, t_right, tree_val)
        out_frag[j] = fst[0]
        fst[1] += gpus_of(gm) * c_milli[c]
        write_row(row, gpu_count, cpu_cap, mem_cap, gpu_left, cpu_left, mem_left, scale, obs)
        ist[3] = 1 if invalid else 0
        ist[4] = row
    while True:
        kind = q_next(arr, dep, backoff0, backoff_max, max_unsched,
                      qi, qf, pst, patt, pts, aq, up, hk, hs, hp, dk, ds, dp, rank, ak)
        if kind == Q_DONE:
            break
        j = qi[Q_POD]
        c = cls[j]
        if kind == Q_DEPART:
            row = out_node[j]
            release(row, out_gmask[j], c_cpu[c], c_mem[c], c_num[c], c_milli[c], gpu_left,
                    cpu_left, mem_left, pods_left, aff, node_ver, version)
            nfrag[row] = node_frag_of(row, gpu_count, model, gpu_left, cpu_left,
                                      tp_cpu, tp_num, tp_milli, tp_mask, tp_freq)
            fst[0] = tree_refresh(nfrag, leaf_of[row], t_lo, t_len, t_left, t_right, tree_val)
            fst[1] -= gpus_of(out_gmask[j]) * c_milli[c]
            write_row(row, gpu_count, cpu_cap, mem_cap, gpu_left, cpu_left, mem_left, scale,
                      obs)
            continue
        d = decide(n, gpu_count, model, gpu_left, cpu_left, mem_left, pods_cap, pods_left, aff,
                   node_ver, c_cpu[c], c_mem[c], c_cpu_nz[c], c_num[c], c_milli[c], c_mask[c],
                   tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, policy, seed_mix, qi[Q_ATTEMPT],
                   gpu_weight, static_total, cache_score[c], cache_gpu[c], cache_ver[c], work, feas)
        if d >= 0:
            ist[0] = j
            ist[1] = d
            ist[2] = 0
            pod_obs[0] = c_cpu[c] / scale[0]
            pod_obs[1] = c_mem[c] / scale[1]
            pod_obs[2] = (c_num[c] * c_milli[c] if c_milli[c] > 0 else 0) / scale[2]
            return
        q_failed(j, qi, qf, pst, pts, up)
        out_frag[j] = fst[0]
    ist[0] = cls.shape[0]
    ist[1] = -1
    ist[2] = 1
    for i in range(feas.shape[0]):
        feas[i] = 0
    for k in range(3):
        pod_obs[k] = 0.0


def gpus_of(gmask):
    """The GPUs a bit mask names (bit g: GPU g of 16)."""
    took = 0
    for g in range(16):
        took += (gmask >> g) & 1
    return took
