"""The openb engine's block-parallel victim search
(``cuda.block_post_filter``: every thread searches its nodes, each node's
pods in its own slots, then the block's visit up to numCandidates and the
pick) gives the serial ``_gpu_preempt.post_filter_gpu`` of the CPU twin
(compiled with ``njit``) the same node, victims in order and statistics,
and leaves the node columns as they were: random GPU clusters under
``NUMBA_ENABLE_CUDASIM``, one block per case, more nodes than the block's
threads (several rows per thread), nodes repeating a few patterns so that
candidates tie (the first visited from the seeded offset wins), and
numCandidates settings that cut the visit short."""
import numpy as np
import pytest
from numba import cuda, int64
from support.backends import needs_cuda

from tensorsched.kernels.batch import _gpu_preempt as gp
from tensorsched.topology.gpu import build_inventory
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import replay as R

pytestmark = [pytest.mark.cudasim, needs_cuda]

N = 37          # nodes: more than the simulator's 16 threads a block
G = 4           # GPU slots
P = 140         # pods of a case (the last one the preemptor)
CASES = 16
# classes: cpu (millicores), memory (MiB), GPUs, milli per GPU
CLASSES = np.array([(2000, 2048, 0, 0), (4000, 4096, 1, 500), (2000, 2048, 1, 1000),
                    (6000, 8192, 2, 1000), (1000, 1024, 1, 250), (9000, 30000, 0, 0),
                    (5000, 1024, 0, 0)])
CAPS = [(0, 3), (10, 100), (50, 1), (0, 2), (20, 4), (0, 1), (100, 0), (0, 5), (0, 0)]


def _twin():
    from tensorsched.kernels.batch import cpu
    # the twin's own compiled preemption steps
    return cpu.preempt_ns


def _case(rng, b, sums=False):
    """One cluster: nodes copying one of a few patterns (GPUs, model, the
    classes and priorities of their pods), their pods placed where they
    fit, some of them gone since; the preemptor asks a large class.
    ``sums``: every node three pods of 5 cores, priorities 3, 2 and 1 or 0,
    so that a pod of 9 cores evicts two from each (the highest priority
    the same, the sums differing)."""
    period = int(rng.integers(2, 6))
    pat_count = rng.integers(0, G + 1, period)
    pat_model = rng.integers(0, 2, period)
    pat_pods = [[(int(rng.integers(0, 5)), int(rng.integers(0, 4)))
                 for _ in range(int(rng.integers(1, 6)))] for _ in range(period)]
    gpu_count = np.array([pat_count[i % period] for i in range(N)], np.int64)
    model = np.array([pat_model[i % period] for i in range(N)], np.int64)
    cpu_left = np.full(N, 16000, np.int64)
    mem_left = np.full(N, 65536, np.int64)
    pods_left = np.full(N, 6, np.int64)
    gpu_left = np.array([[1000 if g < gpu_count[i] else 0 for g in range(G)] for i in range(N)],
                        np.int64)
    cls = np.zeros(P, np.int64)
    prio = np.zeros(P, np.int64)
    pst = np.full(P, 1, np.int64)
    out_node = np.full(P, -1, np.int64)
    gmask = np.zeros(P, np.int64)
    k = 0
    for i in range(N):
        own = [(c, pr) if rng.random() < 0.7 else (c, int(rng.integers(0, 4)))
               for c, pr in pat_pods[i % period]]     # most pods as the pattern's
        extra = [] if rng.random() < 0.7 else [(int(rng.integers(0, 5)), int(rng.integers(0, 4)))]
        if sums:
            own, extra = [(6, 3), (6, 2), (6, int(rng.random() < 0.8))], []
        for c, pr in own + extra:
            if k >= P - 1:
                break
            cpu, mem, num, milli = CLASSES[c]
            if cpu > cpu_left[i] or mem > mem_left[i] or pods_left[i] < 1:
                continue
            gm = 0
            if num > 0:
                free = [g for g in range(gpu_count[i]) if gpu_left[i, g] >= milli][:num]
                if len(free) < num:
                    continue
                for g in free:
                    gm |= 1 << g
                    gpu_left[i, g] -= milli
            cpu_left[i] -= cpu
            mem_left[i] -= mem
            pods_left[i] -= 1
            cls[k], prio[k], out_node[k], gmask[k] = c, pr, i, gm
            pst[k] = gp.P_BOUND
            k += 1
    # a few bound pods deleted since (their node rows keep them: only the
    # status says they are not searched)
    gone = rng.random(P) < 0.05
    pst[gone & (pst == gp.P_BOUND)] = gp.P_GONE
    j = P - 1
    cls[j] = 5 if sums else int(rng.choice([3, 5]))
    prio[j] = int(rng.integers(3, 6))
    pst[j] = 1
    pct, least = (0, 2 + 3 * b) if sums else CAPS[b % len(CAPS)]
    return {"j": j, "n": N, "attempt": int(rng.integers(1, 9)),
            "seed_mix": int(rng.integers(0, 2**62)), "pct": pct, "least": least,
            "mask": int(rng.choice([0, 1, 2, 3])), "prio": prio,
            "krank": rng.permutation(P).astype(np.int64), "pst": pst, "out_node": out_node,
            "cls": cls, "gmask": gmask, "gpu_count": gpu_count, "model": model,
            "gpu_left": gpu_left, "cpu_left": cpu_left, "mem_left": mem_left,
            "pods_left": pods_left}


def _device(cases):
    # the simulator swaps a kernel's global ``cuda``: it is imported above
    from tensorsched.kernels.batch import cuda as KC
    from tensorsched.kernels.batch.warp import THREADS, WARPS

    @cuda.jit
    def search(scal, prio, krank, pst, out_node, cls, c_cpu, c_mem, c_num, c_milli, gmask,
               gpu_count, model, gpu_left, cpu_left, mem_left, pods_left, pw, ps, vslot, vs,
               target):
        b = cuda.blockIdx.x
        buf = cuda.shared.array((3, THREADS), int64)
        sh = cuda.shared.array((WARPS, 3), int64)
        cur = cuda.shared.array(1, int64)
        s = scal[b]
        c = cls[b, s[0]]
        t = KC.block_post_filter(s[0], s[1], vslot[b, :0], s[1], s[2], s[3], s[4], s[5],
                                 c_cpu[c], c_mem[c],
                                 c_num[c], c_milli[c], s[6], prio[b], krank[b], pst[b],
                                 out_node[b], cls[b], c_cpu, c_mem, c_num, c_milli, gmask[b],
                                 gpu_count[b], model[b], gpu_left[b], cpu_left[b], mem_left[b],
                                 pods_left[b], vslot[b, :0], vslot[b, :0], pw[b], ps[b],
                                 vslot[b], vs[b], cur, buf, sh)
        if cuda.threadIdx.x == 0:
            target[b] = t

    def stack(name):
        return np.ascontiguousarray(np.stack([c[name] for c in cases]))

    scal = np.array([[c[k] for k in ("j", "n", "attempt", "seed_mix", "pct", "least", "mask")]
                     for c in cases], np.int64)
    cols = {name: stack(name) for name in ("gpu_left", "cpu_left", "mem_left", "pods_left")}
    b = len(cases)
    pw = np.zeros((b, P, gp.PW_N), np.int64)
    ps = np.zeros((b, gp.PS_N), np.int64)
    vs = np.zeros((b, N, gp.VS_N), np.int64)
    target = np.zeros(b, np.int64)
    dcols = {k: cuda.to_device(v) for k, v in cols.items()}
    dpw, dps, dvs, dt = (cuda.to_device(x) for x in (pw, ps, vs, target))
    search[b, THREADS](scal, stack("prio"), stack("krank"), stack("pst"), stack("out_node"),
                       stack("cls"), *(np.ascontiguousarray(CLASSES[:, q]) for q in range(4)),
                       stack("gmask"), stack("gpu_count"), stack("model"), dcols["gpu_left"],
                       dcols["cpu_left"], dcols["mem_left"], dcols["pods_left"], dpw, dps,
                       np.zeros((b, P), np.int64), dvs, dt)
    after = {k: v.copy_to_host() for k, v in dcols.items()}
    return dt.copy_to_host(), dpw.copy_to_host(), dps.copy_to_host(), dvs.copy_to_host(), after


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_block_victim_search_equals_the_serial_twin():
    twin = _twin()
    rng = np.random.default_rng(2)
    cases = [_case(rng, b) for b in range(CASES)] + [_case(rng, b, sums=True) for b in (1, 2)]
    target, pw, ps, vs, after = _device(cases)
    cut = tied = summed = 0
    for b, c in enumerate(cases):
        cols = {k: c[k].copy() for k in ("gpu_left", "cpu_left", "mem_left", "pods_left")}
        spw = np.zeros((P, gp.PW_N), np.int64)
        snw = np.zeros((N, gp.NW_N), np.int64)
        sps = np.zeros(gp.PS_N, np.int64)
        q = CLASSES[c["cls"][c["j"]]]
        want = twin["post_filter_gpu"](
            c["j"], c["n"], c["attempt"], np.uint64(c["seed_mix"]), c["pct"], c["least"],
            q[0], q[1], q[2], q[3], c["mask"], c["prio"], c["krank"], c["pst"], c["out_node"],
            c["cls"], *(np.ascontiguousarray(CLASSES[:, x]) for x in range(4)), c["gmask"],
            c["gpu_count"], c["model"], cols["gpu_left"], cols["cpu_left"], cols["mem_left"],
            cols["pods_left"], spw, snw, sps)
        assert target[b] == want, f"case {b}"
        for k, v in cols.items():      # both leave the nodes as they were
            np.testing.assert_array_equal(v, c[k], err_msg=f"case {b}: {k} (serial)")
            np.testing.assert_array_equal(after[k][b], c[k], err_msg=f"case {b}: {k}")
        if want < 0:
            continue
        nv = sps[gp.S_STATS + 5]
        np.testing.assert_array_equal(ps[b, gp.S_STATS + 3:gp.S_STATS + 6],
                                      sps[gp.S_STATS + 3:gp.S_STATS + 6], err_msg=f"case {b}")
        np.testing.assert_array_equal(pw[b, :nv, gp.W_VOUT], spw[:nv, gp.W_VOUT],
                                      err_msg=f"case {b}: victims")
        # what the case exercised: the visit cut by numCandidates, a tie
        # decided by the visit order
        off = twin["preempt_offset"](np.uint64(c["seed_mix"]), c["attempt"], N)
        order = [(off + t) % N for t in range(N)]
        cand = [i for i in order if vs[b, i, gp.V_NV] > 0]
        cap = twin["num_candidates"](N, c["pct"], c["least"])
        seen = cand[:cap]
        stats = [tuple(vs[b, i, :3]) for i in seen]
        win = tuple(vs[b, want, :3])
        # the next candidate, past numCandidates, would have won
        cut += len(cand) > cap and tuple(vs[b, cand[cap], :3]) < win
        tied += stats.count(win) > 1 and want != min(i for i, s in zip(seen, stats) if s == win)
        # one as important and as many victims, but a larger sum, came first
        summed += any(s[0] == win[0] and s[2] == win[2] and s[1] > win[1]
                      for s in stats[:seen.index(want)])
    assert cut >= 1 and tied >= 1 and summed >= 1, (cut, tied, summed)


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_preempting_runs_with_more_nodes_than_threads_equal_the_twin():
    """Through the whole kernel: two preempting runs in one chunk (the
    second's pods after the first's in the per-pod slots) on 20 nodes of 1
    or 2 GPUs (more than the simulator's 16 threads), numCandidates cut to
    3: device and twin give the same placements, GPUs, victims and log."""
    n = 20
    inv = build_inventory([f"n{i}" for i in range(n)], [8000] * n, [32768] * n,
                          [1 + i % 2 for i in range(n)], ["T4"] * n)
    gpus = [(1, 1000), (1, 600), (2, 1000), (1, 500)] * 8
    e = len(gpus)
    prio = np.array([j % 3 for j in range(e - 6)] + [7, 9, 8, 9, 7, 9])
    pods = R.TracePods([f"p{j}" for j in range(e)], np.full(e, 1000), np.full(e, 1024),
                       np.array([g[0] for g in gpus]), np.array([g[1] for g in gpus]),
                       [""] * e)
    tw = B.TraceWorkload(pods, np.arange(float(e)), np.full(e, np.inf),
                         rank=np.unique(-prio, return_inverse=True)[1], priority=prio)
    jobs = [(0, 0, "FGD", 3), (0, 0, "BestFit", 4)]
    pre = [(0, 3), (10, 5)]
    twin = B.trace_batch([inv], [tw], jobs, workers=1, preempt=pre)
    dev = B.trace_batch([inv], [tw], jobs, backend="cuda", preempt=pre)
    assert all(int(r.preempted.sum()) >= 2 for r in twin)
    for x, y in zip(twin, dev):
        assert x.node.tolist() == y.node.tolist() and x.gpus == y.gpus
        assert x.preempted.tolist() == y.preempted.tolist()
        for name in ("log_t", "log_pod", "log_frag", "tries", "bind"):
            np.testing.assert_array_equal(getattr(x, name), getattr(y, name), err_msg=name)


def _row_lists(rng, c):
    """Each row's list of the pods bound there (``nhead`` / ``pnext``, the
    engine's with a scenario): its bound pods and the ones gone since (left
    in the list: the search unlinks them), in a random order."""
    nhead = np.full(N, -1, np.int64)
    pnext = np.full(P, -1, np.int64)
    was = np.flatnonzero(c["out_node"] >= 0)
    for k in rng.permutation(was):
        i = c["out_node"][k]
        pnext[k] = nhead[i]
        nhead[i] = k
    return nhead, pnext


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("every_row", [False, True])
def test_block_victim_search_from_row_lists_equals_the_scan(every_row):
    """The search over potential rows (a random subset, in row order; or,
    ``every_row``, no list of rows: every row, the engine without a
    scenario) that finds a row's lower-priority pods in its list of bound
    pods (the twin and the block: ``_gpu_preempt.row_low``) answers what
    the twin's scan of every pod answers: the node, the victims in order
    and their statistics; the gone pods leave the lists, the bound ones
    stay."""
    from tensorsched.kernels.batch import cuda as KC
    from tensorsched.kernels.batch.warp import THREADS, WARPS
    twin = _twin()

    @cuda.jit
    def search(scal, pot, prio, krank, pst, out_node, cls, c_cpu, c_mem, c_num, c_milli,
               gmask, gpu_count, model, gpu_left, cpu_left, mem_left, pods_left, nhead, pnext,
               pw, ps, vslot, vs, target):
        b = cuda.blockIdx.x
        buf = cuda.shared.array((3, THREADS), int64)
        sh = cuda.shared.array((WARPS, 3), int64)
        cur = cuda.shared.array(1, int64)
        s = scal[b]
        c = cls[b, s[0]]
        t = KC.block_post_filter(s[0], s[1], pot[b, :s[8]], s[7], s[2], s[3], s[4], s[5],
                                 c_cpu[c], c_mem[c], c_num[c], c_milli[c], s[6], prio[b],
                                 krank[b], pst[b], out_node[b], cls[b], c_cpu, c_mem, c_num,
                                 c_milli, gmask[b], gpu_count[b], model[b], gpu_left[b],
                                 cpu_left[b], mem_left[b], pods_left[b], nhead[b], pnext[b],
                                 pw[b], ps[b], vslot[b], vs[b], cur, buf, sh)
        if cuda.threadIdx.x == 0:
            target[b] = t

    rng = np.random.default_rng(5)
    cases = [_case(rng, b) for b in range(6)]
    pots = [np.arange(N) if every_row else np.flatnonzero(rng.random(N) < 0.8) for _ in cases]
    # (the rows' list as given: none for every row)
    given = [q[:0] if every_row else q for q in pots]
    lists = [_row_lists(rng, c) for c in cases]
    b = len(cases)
    scal = np.array([[c[k] for k in ("j", "n", "attempt", "seed_mix", "pct", "least", "mask")]
                     + [len(q), len(g)] for c, q, g in zip(cases, pots, given)], np.int64)
    pot = np.zeros((b, N), np.int64)
    for k, q in enumerate(pots):
        pot[k, :len(q)] = q

    def stack(name):
        return np.ascontiguousarray(np.stack([c[name] for c in cases]))

    dev_lists = [cuda.to_device(np.stack([x[q] for x in lists])) for q in (0, 1)]
    dpw = cuda.to_device(np.zeros((b, P, gp.PW_N), np.int64))
    dps = cuda.to_device(np.zeros((b, gp.PS_N), np.int64))
    dt = cuda.to_device(np.zeros(b, np.int64))
    cols = ("gpu_left", "cpu_left", "mem_left", "pods_left")
    search[b, THREADS](scal, pot, stack("prio"), stack("krank"), stack("pst"), stack("out_node"),
                       stack("cls"), *(np.ascontiguousarray(CLASSES[:, q]) for q in range(4)),
                       stack("gmask"), stack("gpu_count"), stack("model"),
                       *(cuda.to_device(stack(k)) for k in cols), *dev_lists, dpw, dps,
                       np.zeros((b, P), np.int64), np.zeros((b, N, gp.VS_N), np.int64), dt)
    target, pw, ps = dt.copy_to_host(), dpw.copy_to_host(), dps.copy_to_host()
    heads, nexts = (x.copy_to_host() for x in dev_lists)
    found = 0
    for k, c in enumerate(cases):
        q = CLASSES[c["cls"][c["j"]]]
        got = []
        for by_row in (False, True):
            spw = np.zeros((P, gp.PW_N), np.int64)
            sps = np.zeros(gp.PS_N, np.int64)
            nh, nx = (x.copy() for x in lists[k]) if by_row else (np.zeros(0, np.int64),) * 2
            t = twin["post_filter_rows"](
                c["j"], N, given[k], len(pots[k]), c["attempt"], np.uint64(c["seed_mix"]),
                c["pct"], c["least"], q[0], q[1], q[2], q[3], c["mask"], c["prio"], c["krank"],
                c["pst"], c["out_node"], c["cls"],
                *(np.ascontiguousarray(CLASSES[:, x]) for x in range(4)), c["gmask"],
                c["gpu_count"], c["model"], *(c[x].copy() for x in cols), nh, nx, spw,
                np.zeros((N, gp.NW_N), np.int64), sps)
            nv = sps[gp.S_STATS + 5] if t >= 0 else 0
            got.append((t, spw[:nv, gp.W_VOUT].tolist(), sps[gp.S_STATS + 3:].tolist()))
        assert got[0] == got[1], f"case {k}: the twin's lists"
        t, victims, _stats = got[0]
        assert target[k] == t, f"case {k}"
        if t >= 0:
            found += 1
            assert pw[k, :len(victims), gp.W_VOUT].tolist() == victims, f"case {k}"
            np.testing.assert_array_equal(ps[k, gp.S_STATS + 3:gp.S_STATS + 6],
                                          got[0][2][:3], err_msg=f"case {k}")
        # a searched row's list holds its bound pods only now
        for i in pots[k]:
            x, held = heads[k, i], []
            while x >= 0:
                held.append(int(x))
                x = nexts[k, x]
            want = np.flatnonzero((c["out_node"] == i) & (c["pst"] == gp.P_BOUND))
            assert sorted(held) == want.tolist(), f"case {k}: row {i}"
    assert found >= 2, found
