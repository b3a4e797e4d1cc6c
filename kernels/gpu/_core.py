"""Per-node scalar GPU rules shared by the Numba CPU and Numba CUDA backends.

Plain Python on scalars and array rows, no NumPy calls, no allocation:
``gpu.share`` / ``gpu.subsets`` compile these function objects with
``njit`` (and drive them with serial loops over nodes), ``gpu._cuda`` with
``cuda.jit(device=True)`` (one thread per node).  Both go through
``_compile.compile_module``: the source runs in a fresh namespace and each
function is replaced by its compiled form, so calls between these functions
resolve to compiled code of the same target.  The NumPy twins live in
``gpu.share.py`` / ``gpu.subsets.py``; tests compare all three.

Units: GPU shares in milli-GPU (1000 = one GPU), CPU in millicores, memory
in bytes (topology) or MiB (openb inventory); every per-GPU row holds at
least ``count`` entries.  Where a rule needs scratch space it takes a
``work`` row of ``GPU_SLOTS`` int64 (the caller owns it: one row reused by
the CPU loop, a thread-local array on the GPU).
"""

import math

# Keep in step with share.py / subsets.py / topology.node_topology
# (plain ints: device code has no globals of NumPy type).
MILLI = 1000
GPU_SLOTS = 16                 # GPUs per node at most
MAX_SPEC_CPU = 128000.0
MAX_SPEC_GPU = 8000.0
# GpuShareScore policies by name, in the order of their P_* numbers
POLICIES = ("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD")
P_RANDOM = 0
P_DOTPROD = 1
P_CLUSTERING = 2
P_PACKING = 3
P_BESTFIT = 4
P_FGD = 5
SEL_BEST = 0
SEL_RANDOM = 1
C_ISLAND = 1                   # pod constraint bits: all GPUs in one NVLink island
C_NUMA = 2                     # ... on one NUMA node with the pod's CPU and memory


def model_ok(model, mask):
    """The node's GPU model id is allowed by ``mask`` (bit per model; 0 = any)."""
    if mask == 0:
        return True
    if model < 0:
        return False
    return (mask >> model) & 1 == 1


def gpu_fit(count, model, left, num, milli, mask):
    """``num`` GPUs with ``milli`` free each, of an allowed model; an ask
    of no GPU (``num`` or ``milli`` <= 0) fits any node, GPU-less or of a
    disallowed model (the model is checked only for a pod asking GPUs)."""
    if num <= 0 or milli <= 0:
        return True
    if count == 0 or not model_ok(model, mask):
        return False
    c = 0
    for g in range(count):
        if left[g] >= milli:
            c += 1
    return c >= num


def node_fits(count, model, left, cpu_left, mem_left, cpu, mem, num, milli, mask):
    """The openb feasibility of one node: CPU, memory, then the GPU ask."""
    if cpu_left < cpu or mem_left < mem:
        return False
    if milli <= 0 or num <= 0:
        return True
    return gpu_fit(count, model, left, num, milli, mask)


def node_frag(count, model, left, cpu_left, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq):
    """Expected fragmented GPU milli (float) of one node under the typical
    pods ``tp_*`` [P] (frequencies ``tp_freq`` sum to 1)."""
    total = 0
    for g in range(count):
        total += left[g]
    if total == 0:
        return 0.0
    out = 0.0
    for p in range(tp_freq.shape[0]):
        m = tp_milli[p]
        if m <= 0 or not model_ok(model, tp_mask[p]):
            out += tp_freq[p] * total
            continue
        fit = 0
        small = 0
        for g in range(count):
            if left[g] >= m:
                fit += 1
            else:
                small += left[g]
        if fit >= tp_num[p] and cpu_left >= tp_cpu[p]:
            out += tp_freq[p] * small
        else:
            out += tp_freq[p] * total
    return out


def sigmoid_score(before, after):
    """FGD's 0..100 score of a fragmentation change (milli), truncated as
    the simulator's int conversion."""
    return int(100.0 / (1.0 + math.exp(-(before - after) / 1000.0)))


def pack_next(count, left, milli, prev_left, prev_g):
    """The simulator's Sub rule one step at a time: GPUs in ascending
    (free milli, index) order, the next one after (prev_left, prev_g) with
    at least ``milli`` free; -1 when none.  Same order as a stable argsort
    of the free milli, without a sort buffer (count <= 16)."""
    best = -1
    for g in range(count):
        lg = left[g]
        if lg < milli:
            continue
        if lg < prev_left or (lg == prev_left and g <= prev_g):
            continue
        if best < 0 or lg < left[best]:
            best = g
    return best


def take_shared(count, left, work, num, milli):
    """A shared ask placed by the Sub rule: ``milli`` taken off ``work``
    (free milli per GPU, [count]) on up to ``num`` GPUs in ``pack_next``'s
    order over ``left`` (the free milli before the pod)."""
    k = 0
    pl = -1
    pg = -1
    while k < num:
        g = pack_next(count, left, milli, pl, pg)
        if g < 0:
            break
        work[g] -= milli
        pl = left[g]
        pg = g
        k += 1


def first_free_gpus(count, left, num, out):
    """Whole GPUs: the first ``num`` fully free GPUs in index order."""
    k = 0
    for g in range(count):
        if k >= num:
            break
        if left[g] == MILLI:
            out[k] = g
            k += 1
    return k


def fgd_node(count, model, left, cpu_left, cpu_nz, num, milli,
             tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, work):
    """(score, gpu) of FGD for one feasible node; gpu = -1 unless a share.
    ``work``: scratch row (>= count)."""
    before = node_frag(count, model, left, cpu_left, tp_cpu, tp_num, tp_milli, tp_mask, tp_freq)
    for g in range(count):
        work[g] = left[g]
    if num == 1 and milli > 0 and milli < MILLI:
        best = -1
        best_g = -1
        for g in range(count):
            if left[g] >= milli:
                work[g] -= milli
                after = node_frag(count, model, work, cpu_left - cpu_nz,
                                  tp_cpu, tp_num, tp_milli, tp_mask, tp_freq)
                work[g] += milli
                s = sigmoid_score(before, after)
                if best_g == -1 or s > best:
                    best = s
                    best_g = g
        return best, best_g
    if num > 0 and milli > 0:
        take_shared(count, left, work, num, milli)
    after = node_frag(count, model, work, cpu_left - cpu_nz, tp_cpu, tp_num, tp_milli, tp_mask,
                      tp_freq)
    return sigmoid_score(before, after), -1


def packing_node(count, left, num, milli):
    """GpuPacking's score of one feasible node."""
    if milli <= 0:
        return 0
    full = 0
    for g in range(count):
        if left[g] == MILLI:
            full += 1
    if full == count:
        return max(33 - full, full)
    k = 0
    full_used = 0
    ratio = 0
    pl = -1
    pg = -1
    while k < num:
        g = pack_next(count, left, milli, pl, pg)
        if g < 0:
            break
        if left[g] == MILLI:
            full_used += 1
        ratio += left[g] * 100 // MILLI
        pl = left[g]
        pg = g
        k += 1
    if k < num:
        return 0
    if full_used > 0:
        return max(50 - full_used, 33)
    return max(100 - ratio // 10, 50)


def affinity_tag(num, milli):
    """0 = no GPU, 1 = share, 1 + k = k whole GPUs (k <= 16)."""
    if num <= 0 or milli <= 0:
        return 0
    if num == 1 and milli < MILLI:
        return 1
    return 1 + min(num, 16)


def clustering_node(left_total, aff_row, tag):
    """GpuClustering's score from the node's pod-shape counts ``aff_row``."""
    if tag == 0:
        return 0
    distinct = 0
    for t in range(1, aff_row.shape[0]):
        if aff_row[t] > 0:
            distinct += 1
    base = 25 * (8000 - left_total) // 8000
    if aff_row[tag] > 0:
        return base + (75 if distinct == 1 else 50)
    return base + (25 if distinct == 0 else 0)


def dotprod_node(cpu_left, left_total, cpu_nz, pod_gpu):
    if cpu_left < cpu_nz:
        return 0
    dot = (cpu_left / MAX_SPEC_CPU) * (cpu_nz / MAX_SPEC_CPU) + \
          (left_total / MAX_SPEC_GPU) * (pod_gpu / MAX_SPEC_GPU)
    s = 1.0 - dot / 2.0
    return int(100.0 * s)


def bestfit_raw(cpu_left, left_total, cpu_nz, pod_gpu):
    """BestFit before the min-max normalization over the feasible nodes."""
    s = 0.0
    s += (cpu_left - cpu_nz) / MAX_SPEC_CPU * 0.5
    s += (left_total - pod_gpu) / MAX_SPEC_GPU * 0.5
    return int((1.0 - s) * 100.0)


def score_node(i, policy, gpu_count, model, gpu_left, cpu_left, mem_left, aff,
               cpu, cpu_nz, mem, num, milli, mask, tag, pod_gpu,
               tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
               cache_score, cache_gpu, cache_ver, node_ver, out, out_gpu, work):
    """Node ``i`` for one pod: out[i] = -1 (infeasible) or the policy's raw
    score (BestFit before normalization); out_gpu[i] = -1 infeasible, -2
    feasible, or FGD's share GPU.  FGD answers are cached per node while
    ``node_ver[i]`` is unchanged (``cache_*`` rows of this pod's shape)."""
    c = gpu_count[i]
    left = gpu_left[i]
    if not node_fits(c, model[i], left, cpu_left[i], mem_left[i], cpu, mem, num, milli, mask):
        out[i] = -1
        out_gpu[i] = -1
        return
    out_gpu[i] = -2
    lt = 0
    for g in range(c):
        lt += left[g]
    s = 0
    if policy == P_DOTPROD:
        s = dotprod_node(cpu_left[i], lt, cpu_nz, pod_gpu)
    elif policy == P_CLUSTERING:
        s = clustering_node(lt, aff[i], tag)
    elif policy == P_PACKING:
        s = packing_node(c, left, num, milli)
    elif policy == P_BESTFIT:
        s = bestfit_raw(cpu_left[i], lt, cpu_nz, pod_gpu)
    elif policy == P_FGD:
        if cache_ver[i] == node_ver[i]:
            s = cache_score[i]
            out_gpu[i] = cache_gpu[i]
        else:
            s, gg = fgd_node(c, model[i], left, cpu_left[i], cpu_nz, num, milli,
                             tp_cpu, tp_num, tp_milli, tp_mask, tp_freq, work)
            cache_score[i] = s
            cache_gpu[i] = gg
            cache_ver[i] = node_ver[i]
            out_gpu[i] = gg
    out[i] = s


def select_gpus(sel, count, left, num, milli, u, out):
    """Concrete GPU indices for a pod on a node (into ``out``; returns how
    many).  Whole GPUs: the first free ones.  A share: SEL_BEST = the GPU
    with the least free milli that fits (lowest index on ties); SEL_RANDOM =
    uniform among the GPUs that fit, by ``u`` in [0, 1)."""
    if num <= 0 or milli <= 0:
        return 0
    if not (num == 1 and milli < MILLI):
        return first_free_gpus(count, left, num, out)
    best = -1
    nfit = 0
    for g in range(count):
        if left[g] >= milli:
            nfit += 1
            if best == -1 or left[g] < left[best]:
                best = g
    if nfit == 0:
        return 0
    if sel == SEL_RANDOM:
        pick = int(u * nfit)
        for g in range(count):
            if left[g] >= milli:
                if pick == 0:
                    out[0] = g
                    return 1
                pick -= 1
    out[0] = best
    return 1


# ---------------------------------------------------------------- topology

def free_mask(count, left, milli, allowed):
    """Bitmask of the GPUs with at least ``milli`` free, within ``allowed``
    (bitmask; -1 = all)."""
    m = 0
    for g in range(count):
        if left[g] >= milli:
            m |= 1 << g
    return m & allowed


def zone_allowed_mask(count, numa, zone_cpu_free, zone_mem_free, cpu, mem):
    """Bitmask of the GPUs whose (known) NUMA node has room for (cpu, mem)."""
    m = 0
    for g in range(count):
        z = numa[g]
        if z >= 0 and zone_cpu_free[z] >= cpu and zone_mem_free[z] >= mem:
            m |= 1 << g
    return m


def best_subset(t, free, cons, sub, cost, isl_ok, numa_ok):
    """(cost, index) of the cheapest allowed subset of topology ``t`` within
    ``free`` under constraint bits ``cons`` (first in enumeration order among
    equals); (-1, -1) when none or ``t`` < 0."""
    best = -1
    bi = -1
    if t < 0:
        return best, bi
    for s in range(sub.shape[1]):
        if sub[t, s] & ~free:
            continue
        if (cons & C_ISLAND) and not isl_ok[t, s]:
            continue
        if (cons & C_NUMA) and not numa_ok[t, s]:
            continue
        if bi < 0 or cost[t, s] < best:
            best = cost[t, s]
            bi = s
    return best, bi


def subset_cost_node(i, gpu_count, gpu_left, numa, zone_cpu_free, zone_mem_free, topo, cons,
                     cpu, mem, milli, sub, cost, isl_ok, numa_ok, out_cost, out_idx):
    """Node ``i``: the cheapest allowed GPU subset for a pod asking for
    ``milli`` on each GPU (subset size is the table's); a single-numa-node
    constraint also needs room for (cpu, mem) on the GPUs' NUMA node."""
    c = gpu_count[i]
    allowed = -1
    if cons[i] & C_NUMA:
        allowed = zone_allowed_mask(c, numa[i], zone_cpu_free[i], zone_mem_free[i], cpu, mem)
    e = free_mask(c, gpu_left[i], milli, allowed)
    b, bi = best_subset(topo[i], e, cons[i], sub, cost, isl_ok, numa_ok)
    out_cost[i] = b
    out_idx[i] = bi


# --------------------------------------------------------------- CPU loops
# The njit target's drivers: serial loops over all nodes (the cuda target
# runs the per-node rules one thread per node instead, ``gpu._cuda``).  They
# live in this module so that Numba's on-disk cache, keyed by this file's
# stamp, never pairs a cached loop with changed rules; outputs are the
# caller's arrays, so the module stays allocation-free.

def normalize_bestfit(out, out_gpu):
    """BestFit's min-max normalization over the feasible nodes (out_gpu !=
    -1), in place: the array-level step after the per-node raw scores."""
    lo = 1 << 62
    hi = -lo
    for i in range(out.shape[0]):
        if out_gpu[i] != -1:
            lo = min(lo, out[i])
            hi = max(hi, out[i])
    rng = hi - lo
    for i in range(out.shape[0]):
        if out_gpu[i] != -1:
            out[i] = 0 if rng == 0 else (out[i] - lo) * 100 // rng


def score_nodes_into(policy, gpu_count, model, gpu_left, cpu_left, mem_left, aff,
                     cpu, cpu_nz, mem, num, milli, mask,
                     tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                     cache_score, cache_gpu, cache_ver, node_ver, out, out_gpu, work):
    """``score_node`` for every node, then BestFit's normalization."""
    pod_gpu = num * milli if milli > 0 else 0
    tag = affinity_tag(num, milli)
    for i in range(gpu_count.shape[0]):
        score_node(i, policy, gpu_count, model, gpu_left, cpu_left, mem_left, aff,
                   cpu, cpu_nz, mem, num, milli, mask, tag, pod_gpu,
                   tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                   cache_score, cache_gpu, cache_ver, node_ver, out, out_gpu, work)
    if policy == P_BESTFIT:
        normalize_bestfit(out, out_gpu)


def score_rows_into(rows, policy, gpu_count, model, gpu_left, allocatable, requested,
                    cpu_left, mem_left, aff, cpu, cpu_nz, mem, num, milli, mask,
                    tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                    cache_score, cache_gpu, cache_ver, node_ver, out, out_gpu, work):
    """``score_node`` for the nodes ``rows`` [k] only, on the full node
    columns (no gather): ``cpu_left[i]`` is set first from ``allocatable`` /
    ``requested`` [N, R] (column 0 is cpu), then ``out[i]`` / ``out_gpu[i]``
    and the FGD cache are written at those rows.  Raw scores (no BestFit
    normalization, which reads every node)."""
    pod_gpu = num * milli if milli > 0 else 0
    tag = affinity_tag(num, milli)
    for j in range(rows.shape[0]):
        i = rows[j]
        cpu_left[i] = allocatable[i, 0] - requested[i, 0]
        score_node(i, policy, gpu_count, model, gpu_left, cpu_left, mem_left, aff,
                   cpu, cpu_nz, mem, num, milli, mask, tag, pod_gpu,
                   tp_cpu, tp_num, tp_milli, tp_mask, tp_freq,
                   cache_score, cache_gpu, cache_ver, node_ver, out, out_gpu, work)


def gpu_fit_rows_into(rows, gpu_count, model, gpu_left, num, milli, mask, out):
    """``gpu_fit_into`` for the nodes ``rows`` [k] only, on full columns."""
    for j in range(rows.shape[0]):
        i = rows[j]
        out[i] = gpu_fit(gpu_count[i], model[i], gpu_left[i], num, milli, mask)


def subset_rows_into(rows, base_cons, guaranteed, single_policy, gpu_count, gpu_left, numa,
                     zcpu, zcpu_used, zmem, zmem_used, topo, cpu, mem, milli, sub, cost,
                     isl_ok, numa_ok, cons, zone_cpu_free, zone_mem_free, out_cost, out_idx):
    """``subset_cost_node`` for the nodes ``rows`` [k] only, on full
    columns: ``cons[i]`` (``base_cons``, plus C_NUMA for a ``guaranteed``
    pod on a single-numa-node row) and the zones' free CPU / memory
    (``zcpu - zcpu_used``, ``zmem - zmem_used`` [N, Z]) are set at those
    rows first."""
    for j in range(rows.shape[0]):
        i = rows[j]
        c = base_cons
        if guaranteed and single_policy[i]:
            c |= C_NUMA
        cons[i] = c
        for z in range(zcpu.shape[1]):
            zone_cpu_free[i, z] = zcpu[i, z] - zcpu_used[i, z]
            zone_mem_free[i, z] = zmem[i, z] - zmem_used[i, z]
        subset_cost_node(i, gpu_count, gpu_left, numa, zone_cpu_free, zone_mem_free, topo, cons,
                         cpu, mem, milli, sub, cost, isl_ok, numa_ok, out_cost, out_idx)


def cluster_frag_into(gpu_count, model, gpu_left, cpu_left, tp_cpu, tp_num, tp_milli, tp_mask,
                      tp_freq, out):
    for i in range(gpu_count.shape[0]):
        out[i] = node_frag(gpu_count[i], model[i], gpu_left[i], cpu_left[i],
                           tp_cpu, tp_num, tp_milli, tp_mask, tp_freq)


def gpu_fit_into(gpu_count, model, gpu_left, num, milli, mask, out):
    for i in range(gpu_count.shape[0]):
        out[i] = gpu_fit(gpu_count[i], model[i], gpu_left[i], num, milli, mask)


def free_masks_into(gpu_count, gpu_left, milli, allowed, out):
    for i in range(gpu_count.shape[0]):
        out[i] = free_mask(gpu_count[i], gpu_left[i], milli, allowed[i])


def zone_allowed_into(gpu_count, numa, zone_cpu_free, zone_mem_free, cpu, mem, out):
    for i in range(gpu_count.shape[0]):
        out[i] = zone_allowed_mask(gpu_count[i], numa[i], zone_cpu_free[i], zone_mem_free[i],
                                   cpu, mem)


def best_subsets_into(topo, free, cons, sub, cost, isl_ok, numa_ok, out_cost, out_idx):
    for i in range(topo.shape[0]):
        b, bi = best_subset(topo[i], free[i], cons[i], sub, cost, isl_ok, numa_ok)
        out_cost[i] = b
        out_idx[i] = bi


def subset_costs_into(gpu_count, gpu_left, numa, zone_cpu_free, zone_mem_free, topo, cons,
                      cpu, mem, milli, sub, cost, isl_ok, numa_ok, out_cost, out_idx):
    for i in range(topo.shape[0]):
        subset_cost_node(i, gpu_count, gpu_left, numa, zone_cpu_free, zone_mem_free, topo, cons,
                         cpu, mem, milli, sub, cost, isl_ok, numa_ok, out_cost, out_idx)
