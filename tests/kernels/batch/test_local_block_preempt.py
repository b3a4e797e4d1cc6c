"""The node-local engines' block-parallel victim search
(``local_preempt_cuda.block_preempt_on``: every row's list walked a thread
a row, each thread searching its potential rows in its own slots, then the
block's visit with the two candidate lists and the pick) answers what the
CPU twin's serial ``_local_preempt.preempt_on`` (``njit``) answers: the
node, the victims' count and order, the winner's statistics, the lowest
bound priority, and leaves ``used`` and the rows' lists as the twin does.
Random clusters under ``NUMBA_ENABLE_CUDASIM``, one block per case, more
rows than the block's threads; rows repeat a few patterns so candidates
tie (the first visited wins unless start times part them); PDBs on some
cases; numCandidates settings that cut the visit short."""
import numpy as np
import pytest
from numba import cuda, int64
from support.backends import needs_cuda

from tensorsched.kernels.batch import _local_preempt as LPS

pytestmark = [pytest.mark.cudasim, needs_cuda]

N = 37          # rows: more than the simulator's 16 threads a block
R = 4           # resources (pods column 3)
Q = 60          # queue pods
B = 230         # the manifests' bound pods
V = Q + B
W = 3           # PDBs
CASES = 16
REQ = np.array([(1000, 1024, 0, 1), (2000, 2048, 0, 1), (4000, 1024, 0, 1),
                (500, 4096, 0, 1), (6000, 6000, 0, 1),
                (7500, 2048, 0, 1)], np.int64)


def _case(rng, n_pdb, full):
    """One cluster: rows copying one of a few patterns of bound pods
    (``full``: every row seven pods of one core, so that a pod of 7.5
    cores evicts most of a row), some gone since; PDBs on the pods."""
    period = int(rng.integers(2, 5))
    pats = [[(0 if full else int(rng.integers(0, 4)), int(rng.integers(0, 4)),
              int(rng.integers(0, 3))) for _ in range(7 if full else int(rng.integers(1, 7)))]
            for _ in range(period)]
    alloc = np.tile(np.array([8000, 8192, 0, 7], np.int64), (N, 1))
    used = np.zeros((N, R), np.int64)
    prio = rng.integers(0, 5, V).astype(np.int64)
    pstart = rng.choice(np.array([10, 20, LPS.START_NOW], np.int64), V)
    krank = rng.permutation(V).astype(np.int64)
    preq = REQ[rng.integers(0, 4, V)]
    pst = np.full(Q, 3, np.int64)
    gone = np.zeros(V, np.int64)
    victim = (rng.random(V) < 0.1).astype(np.int64)
    head = np.full(N, -1, np.int64)
    nxt = np.full(V, -1, np.int64)
    free = list(range(V))
    rng.shuffle(free)
    for i in range(N):
        for (rq, pr, st) in pats[i % period]:
            if not free:
                break
            k = free.pop()
            preq[k] = REQ[rq]
            prio[k] = pr
            # (full rows: start times per pod, parting rows that tie otherwise)
            pstart[k] = (10, 20, LPS.START_NOW)[int(rng.integers(0, 3)) if full else st]
            if used[i, 3] + 1 > alloc[i, 3] or np.any(used[i, :2] + preq[k, :2] > alloc[i, :2]):
                continue
            used[i] += preq[k]
            if k < Q:
                pst[k] = LPS.P_BOUND
            head[i], nxt[k] = k, head[i]
    # some pods gone since (still in the lists: the walk unlinks them)
    for i in range(N):
        x = head[i]
        while x >= 0:
            if rng.random() < (0.03 if full else 0.15):
                used[i] -= preq[x]
                if x < Q:
                    pst[x] = LPS.P_GONE
                else:
                    gone[x] = 1
            x = nxt[x]
    pmatch = np.where(rng.random((V, W)) < 0.4,
                      rng.choice([LPS.PDB_HEALTHY, LPS.PDB_DELETING, LPS.PDB_DISRUPTED], (V, W)),
                      0).astype(np.int64)
    return dict(alloc=alloc, used=used, prio=prio, pstart=pstart, krank=krank, preq=preq,
                pst=pst, gone=gone, victim=victim, head=head, nxt=nxt, pmatch=pmatch,
                pdb_kind=rng.choice([LPS.PDB_FIXED, LPS.PDB_MAX_UNAVAILABLE, LPS.PDB_MIN_AVAILABLE],
                                    W).astype(np.int64),
                pdb_val=rng.integers(0, 3, W).astype(np.int64),
                n_pdb=n_pdb, j=int(rng.integers(0, Q)), c=int(rng.choice([1, 4, 5, 5])),
                pot=np.flatnonzero(rng.random(N) < 0.8).astype(np.int64),
                attempt=int(rng.integers(0, 50)), seed_mix=int(rng.integers(0, 1 << 62)),
                pct=int(rng.choice([0, 10, 100])), least=int(rng.choice([0, 1, 3, 100])))


C_REQUEST = np.concatenate([REQ, np.zeros((1, R), np.int64)])
C_ANY = np.ones(len(C_REQUEST), np.bool_)
C_IGN = np.zeros((len(C_REQUEST), R), np.bool_)
C_FIT = np.ones(len(C_REQUEST), np.bool_)


def _twin(x):
    from tensorsched.kernels.batch.local_preempt import PREEMPT_NAMESPACE
    x = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in x.items()}
    x["prio"][x["j"]] = 3
    cur = np.zeros(V, np.int64)
    vout = np.zeros(V, np.int64)
    stats = np.zeros(8, np.int64)
    left = np.zeros((2, W), np.int64)
    vflag = np.zeros(V, np.int64)
    t, nv, low = PREEMPT_NAMESPACE["preempt_on"](
        x["j"], x["c"], len(x["pot"]), N, x["attempt"], x["seed_mix"], x["pct"], x["least"],
        x["alloc"], x["used"], C_REQUEST, C_ANY, C_IGN, C_FIT, x["preq"], x["prio"],
        x["pstart"], x["krank"], x["pst"], x["gone"], x["victim"], x["pot"], x["head"],
        x["nxt"], cur, vout, stats, x["n_pdb"], x["pdb_kind"], x["pdb_val"], x["pmatch"],
        left, vflag)
    return t, nv, low, vout[:nv], stats[4:8], x["used"], x["head"], x["nxt"]


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_block_search_equals_the_twins_serial_search():
    from tensorsched.kernels.batch.local_preempt_cuda import LVS_N, block_preempt_on
    from tensorsched.kernels.batch.warp import THREADS, WARPS

    @cuda.jit
    def search(scal, pot, alloc, used, c_request, c_any, c_ign, c_fit, preq, prio, pstart,
               krank, pst, gone, victim, head, nxt, cur, vout, stats, pdb_kind, pdb_val,
               pmatch, left, vflag, vs, out):
        b = cuda.blockIdx.x
        buf = cuda.shared.array((3, THREADS), int64)
        sh = cuda.shared.array((WARPS, 3), int64)
        slot_cur = cuda.shared.array(1, int64)
        s = scal[b]
        t, nv, low = block_preempt_on(
            s[0], s[1], s[2], N, s[3], s[4], s[5], s[6], alloc[b], used[b], c_request, c_any,
            c_ign, c_fit, preq[b], prio[b], pstart[b], krank[b], pst[b], gone[b], victim[b],
            pot[b], head[b], nxt[b], cur[b], vout[b], stats[b], s[7], pdb_kind[b], pdb_val[b],
            pmatch[b], left[b], vflag[b], vs[b], slot_cur, buf, sh)
        if cuda.threadIdx.x == 0:
            out[b, 0] = t
            out[b, 1] = nv
            out[b, 2] = low

    rng = np.random.default_rng(22)
    cases = [_case(rng, 0 if k % 3 == 0 else W, k % 2 == 1) for k in range(CASES)]
    for x in cases:
        x["prio"][x["j"]] = 3
    want = [_twin(x) for x in cases]
    nb = len(cases)

    def stack(name):
        return cuda.to_device(np.ascontiguousarray(np.stack([x[name] for x in cases])))

    scal = np.array([[x["j"], x["c"], len(x["pot"]), x["attempt"], x["seed_mix"], x["pct"],
                      x["least"], x["n_pdb"]] for x in cases], np.int64)
    pot = np.zeros((nb, N), np.int64)
    for k, x in enumerate(cases):
        pot[k, :len(x["pot"])] = x["pot"]
    names = ("alloc", "used", "preq", "prio", "pstart", "krank", "pst", "gone", "victim",
             "head", "nxt", "pdb_kind", "pdb_val", "pmatch")
    dev = {k: stack(k) for k in names}
    out = cuda.to_device(np.zeros((nb, 3), np.int64))
    vout = cuda.to_device(np.zeros((nb, V), np.int64))
    stats = cuda.to_device(np.zeros((nb, 8), np.int64))
    zeros = lambda *shape: cuda.to_device(np.zeros((nb, *shape), np.int64))  # noqa: E731
    # (a potential row list of a case's own length: the kernel slices it)
    pots = [cuda.to_device(pot)]
    search[nb, THREADS](cuda.to_device(scal), pots[0], dev["alloc"], dev["used"],
                        C_REQUEST, C_ANY, C_IGN, C_FIT, dev["preq"], dev["prio"],
                        dev["pstart"], dev["krank"], dev["pst"], dev["gone"], dev["victim"],
                        dev["head"], dev["nxt"], zeros(V), vout, stats, dev["pdb_kind"],
                        dev["pdb_val"], dev["pmatch"], zeros(2 + 2 * THREADS, W), zeros(V),
                        zeros(N, LVS_N), out)
    got = out.copy_to_host()
    gv = vout.copy_to_host()
    gs = stats.copy_to_host()
    host = {k: dev[k].copy_to_host() for k in ("used", "head", "nxt")}
    found = 0
    for b, (t, nv, low, v, st, used, head, nxt) in enumerate(want):
        assert tuple(got[b]) == (t, nv, low), b
        if t >= 0:
            found += 1
            assert gv[b, :nv].tolist() == v.tolist(), b
            assert gs[b, 4:8].tolist() == st.tolist(), b
        np.testing.assert_array_equal(host["used"][b], used)
        np.testing.assert_array_equal(host["head"][b], head)
        # the lists walk the same (unlinked pods' own links are free)
        for i in range(N):
            a, c = [], []
            x = head[i]
            while x >= 0:
                a.append(x)
                c.append(host["nxt"][b, x])
                x = nxt[x]
            assert c[:-1] == a[1:] if a else True
    # the cases exercise the search: most find a node, some with PDBs
    assert found >= CASES // 2
