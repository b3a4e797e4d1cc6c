"""The openb engine's node-event form (``kernels.batch.openb_events``):
its fragmentation sum over the live rows is ``numpy.sum``'s, bit for bit,
at every size; its inputs are checked by name; and the CUDA form
(``openb_events_cuda``, under the simulator) gives the CPU twin's
answers on a tiny cluster with every kind of node event, Pod creates and
deletes, and OpenbTieRank's ranks (an added node's its label)."""

import numpy as np
import pytest
from numba import cuda, float64, int64
from support.backends import needs_cuda

from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep_openb_events as E
from tensorsched.framework.simulation.scenario import load_scenario
from tensorsched.kernels.batch import openb_events as OE
from tensorsched.topology.gpu import read_openb_nodes
from tensorsched.topology.openb.batch import trace_arrays, trace_workload, workload_of
from tensorsched.topology.openb.trace import read_openb_trace

HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time," \
         "deletion_time,scheduled_time\n"


@pytest.mark.parametrize("m", [0, 1, 7, 8, 128, 129, 300, 1000, 4099])
def test_live_frag_sums_as_numpy(m):
    rng = np.random.default_rng(m)
    n = m + 17
    vals = rng.random(n) * 1000.0
    live = np.zeros(n, np.int8)
    live[rng.choice(n, size=m, replace=False)] = 1
    stack = [np.empty(64, np.int64) for _ in range(3)] + [np.empty(64, np.float64)]
    got = OE._events_ns["live_frag"](n, live, vals, np.empty(n), *stack)
    assert got == np.sum(vals[live == 1])


@pytest.mark.parametrize("m", [0, 1, 127, 128, 129, 300, 1000, 4099])
def test_leaves_and_their_sums_give_numpys_sum(m):
    """``pairwise_leaves`` lists ``pairwise.pairwise_tree``'s leaves left
    to right (at most ``m // 64 + 1``), and ``pairwise_sum`` given their
    sums adds them up as ``numpy.sum`` does (the device's ``block_frag``
    sums the leaves with its threads, then adds them so)."""
    from tensorsched.kernels.batch.pairwise import pairwise_tree
    ns = OE._events_ns
    rng = np.random.default_rng(m + 1)
    a = rng.random(max(m, 1)) * 10.0 ** rng.integers(-3, 9, max(m, 1))
    stack = [np.empty(64, np.int64) for _ in range(3)] + [np.empty(64, np.float64)]
    lo = np.empty(m // 64 + 1, np.int64)
    ln = np.empty(m // 64 + 1, np.int64)
    nl = ns["pairwise_leaves"](m, lo, ln, stack[0], stack[1])
    t_lo, t_len, left, _right, _leaf_of = pairwise_tree(m)
    leaves = left < 0
    assert (lo[:nl].tolist(), ln[:nl].tolist()) == (t_lo[leaves].tolist(),
                                                    t_len[leaves].tolist())
    sums = np.array([np.sum(a[x:x + k]) for x, k in zip(lo[:nl], ln[:nl])])
    assert ns["pairwise_sum"](a, m, sums, *stack) == np.sum(a[:m])
    assert ns["pairwise_sum"](a, m, sums[:0], *stack) == np.sum(a[:m])


def _block_frag(live, nfrag, log_frag, rs):
    """``block_frag`` run by a block under the simulator: (the log, ``rs``) after."""
    from tensorsched.kernels.batch import openb_events_cuda as OC
    from tensorsched.kernels.batch.warp import THREADS, WARPS

    n = live.shape[0]
    room = OC.leaf_room(n)

    @cuda.jit
    def kernel(live, nfrag, fbuf, log_frag, rs, leaf, leafv):
        buf = cuda.shared.array((3, THREADS), int64)
        sh = cuda.shared.array((WARPS, 3), int64)
        s_lo = cuda.local.array(64, int64)
        s_m = cuda.local.array(64, int64)
        s_st = cuda.local.array(64, int64)
        s_v = cuda.local.array(64, float64)
        OC.block_frag(live.shape[0], live, nfrag, fbuf, log_frag, rs, leaf[0], leaf[1], leafv,
                      s_lo, s_m, s_st, s_v, buf, sh)

    out = cuda.to_device(log_frag)
    d_rs = cuda.to_device(rs)
    kernel[1, THREADS](cuda.to_device(live), cuda.to_device(nfrag), cuda.device_array(n),
                       out, d_rs, cuda.device_array((2, room), np.int64),
                       cuda.device_array(room, np.float64))
    return out.copy_to_host(), d_rs.copy_to_host()


@pytest.mark.cudasim
@needs_cuda
@pytest.mark.parametrize("n,live_n,waiting,row_live", [(20, 13, 1, True), (700, 300, 4, True),
                                                       (700, 300, 2, False), (2100, 2000, 3,
                                                                              True)])
def test_block_frag_gives_live_frags_bits(n, live_n, waiting, row_live):
    """The block's fragmentation of the log rows a step left waiting (a
    node's evictions: one row's value changing log row to log row; a
    deleted row absent from the sum) equals ``numpy.sum`` over the live
    rows as they were at each log row, bit for bit: one leaf, several
    (m > 128), the row's leaf the first or a later one."""
    from tensorsched.kernels.batch import openb_events_cuda as OC

    rng = np.random.default_rng(n + waiting)
    live = np.zeros(n, np.int8)
    rows = rng.choice(n, size=live_n, replace=False)
    live[rows] = 1
    row = int(rows[-1]) if row_live else int(np.flatnonzero(live == 0)[0])
    nfrag = rng.random(n) * 10.0 ** rng.integers(-2, 7, n)
    values = rng.random(waiting) * 1e5          # the row's value at each waiting log row
    nfrag[row] = values[-1]
    m0 = 5
    log_frag = np.full(m0 + waiting + 2, -1.0)
    log_frag[m0:m0 + waiting] = values
    rs = np.zeros(OC.RS_N, np.int64)
    rs[OC.RS_DEFER] = 1
    rs[OC.RS_F_FIRST] = m0
    rs[OC.RS_F_ROW] = row
    rs[OC.RS_F_N] = waiting
    got, left = _block_frag(live, nfrag, log_frag, rs)
    for w in range(waiting):
        then = nfrag.copy()
        then[row] = values[w]
        assert got[m0 + w] == np.sum(then[live == 1])
    assert (got[:m0] == -1.0).all() and (got[m0 + waiting:] == -1.0).all()
    assert left[OC.RS_F_N] == 0


def _a_step(live, nfrag, rs, log_frag, changes, flush: bool):
    """One step's changes, each logged (``frag_log``, from log row 0):
    (row, its new value, its new live flag); ``flush``: ``frag_before``
    ahead of each, as the engine's steps call it (-1 for a live-set
    change)."""
    ns = OE._events_ns
    n = live.shape[0]
    fbuf = np.empty(n)
    stack = [np.empty(64, np.int64) for _ in range(3)] + [np.empty(64, np.float64)]
    for m, (row, value, on) in enumerate(changes):
        if flush:
            ns["frag_before"](row if on == live[row] else -1, n, live, nfrag, fbuf, *stack,
                              log_frag, rs)
        live[row] = on
        nfrag[row] = value
        ns["frag_log"](m, row, n, live, nfrag, fbuf, *stack, log_frag, rs)


@pytest.mark.cudasim
@needs_cuda
@pytest.mark.parametrize("n", [40, 700])
def test_several_changes_a_step_log_the_twins_bits(n):
    """A step whose changes span several rows and live sets (a row's
    changes, another row's, a row deleted, one added and changed again):
    deferred (``frag_before`` summing the waiting rows at each boundary,
    ``block_frag`` the rest after the step) it logs the twin's serial sums
    (``live_frag`` at each change), bit for bit; without the flushes (the
    deferral as it was, one row and one live set assumed) it does not."""
    from tensorsched.kernels.batch import openb_events_cuda as OC

    rng = np.random.default_rng(n)
    live = (rng.random(n) < 0.6).astype(np.int8)
    on = np.flatnonzero(live == 1)
    off = np.flatnonzero(live == 0)
    nfrag = rng.random(n) * 10.0 ** rng.integers(-2, 7, n)
    a, b, gone, new = int(on[0]), int(on[-1]), int(on[len(on) // 2]), int(off[0])
    changes = [(a, 1e5 * rng.random(), 1), (a, 1e3 * rng.random(), 1), (b, 7.5, 1),
               (gone, 0.0, 0), (new, 1e4 * rng.random(), 1), (new, 3e6 * rng.random(), 1)]
    k = len(changes)
    twin = np.zeros(k)
    _a_step(live.copy(), nfrag.copy(), np.zeros(OC.RS_N, np.int64), twin, changes, True)
    ref_live, ref_nfrag = live.copy(), nfrag.copy()
    for m, (row, value, flag) in enumerate(changes):
        ref_live[row], ref_nfrag[row] = flag, value
        assert twin[m] == np.sum(ref_nfrag[ref_live == 1])
    for flush in (True, False):
        lv, nf, log = live.copy(), nfrag.copy(), np.zeros(k)
        rs = np.zeros(OC.RS_N, np.int64)
        rs[OC.RS_DEFER] = 1
        _a_step(lv, nf, rs, log, changes, flush)
        assert rs[OC.RS_F_N] == (2 if flush else k)     # the last row's two changes wait
        got, left = _block_frag(lv, nf, log, rs)
        assert left[OC.RS_F_N] == 0
        assert (got.tolist() == twin.tolist()) == flush


def _node(name, gpus, unschedulable=False, tie=None):
    spec = {"unschedulable": True} if unschedulable else {}
    labels = {"nvidia.com/gpu.product": "T4"}
    if tie is not None:
        labels["openb.tensorsched.io/tie"] = tie
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": spec, "status": {"allocatable": {"cpu": "8", "memory": "16Gi",
                                                     "nvidia.com/gpu": str(gpus)}}}


def _generic_trace(tmp_path, rng):
    """A generic trace: pods leaving at a time or a duration after their
    binding, of three priorities (activeQ a heap of ranks)."""
    anno = '"alibabacloud.com/gpu-milli={m};alibabacloud.com/gpu-count={n}"'
    lines = ["name,arrival,departure,duration,cpu,memory,annotations,priority"]
    for j in range(14):
        t = 3 * j
        n, m = [(1, 1000), (1, 500), (2, 1000)][int(rng.integers(3))]
        how = int(rng.integers(3))
        dep = str(t + 20) if how == 0 else ""
        dur = "15" if how == 1 else ""
        lines.append(f"p{j},{t},{dep},{dur},1000m,1024Mi,{anno.format(m=m, n=n)},"
                     f"{int(rng.choice([0, 10, 100]))}")
    (tmp_path / "g.csv").write_text("\n".join(lines) + "\n")
    return run.read_trace_file(str(tmp_path / "g.csv"))


def _pod(name, milli, priority=None):
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1",
                                                                   "memory": "1Gi"}}}]}
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": {
        "alibabacloud.com/gpu-milli": str(milli), "alibabacloud.com/gpu-count": "1"}},
        "spec": spec}


def _inputs(tmp_path, seed: int = 3, generic: bool = False):
    """A two-node cluster, a trace with departures (``generic``: durations
    and priorities too), every kind of node step (added nodes with tie
    labels) and Pod steps; the workloads with the created pods, the jobs
    (six policies, two seeds), their rows of the created pods."""
    (tmp_path / "n.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                                    "n0,8000,16384,2,T4\nn1,16000,32768,1,T4\n")
    rng = np.random.default_rng(seed)
    lines = []
    for j in range(14):
        t = 3 * j
        num, milli = [(1, 1000), (1, 500), (2, 1000), (0, 0)][int(rng.integers(4))]
        dep = "" if rng.random() < 0.5 else str(t + int(rng.choice([2, 20, 60])))
        lines.append(f"p{j},1000,1024,{num},{milli},,LS,Running,{t},{dep},{t}")
    (tmp_path / "p.csv").write_text(HEADER + "\n".join(lines) + "\n")
    sc = load_scenario({"steps": [
        {"at": 1, "create": _pod("c0", 1000)}, {"at": 3, "create": _pod("c1", 500, 10)},
        {"at": 4, "cordon": "n0"}, {"at": 9, "create": _node("x0", 4, tie="3")},
        {"at": 9, "delete": {"kind": "Pod", "name": "c1"}},
        {"at": 12, "drain": "n1"}, {"at": 15, "uncordon": "n0"},
        {"at": 18, "create": _pod("c2", 1000), "duration": 4},
        {"at": 20, "removeNodes": ["x0"]}, {"at": 24, "create": _node("x1", 2, True)},
        {"at": 30, "uncordon": ["n1", "x1"]}, {"at": 33, "create": _node("x2", 1, tie="5")},
        {"at": 8, "delete": {"kind": "Pod", "name": "c0"}}]})
    inv = read_openb_nodes(tmp_path / "n.csv")
    trace = _generic_trace(tmp_path, rng) if generic else read_openb_trace(tmp_path / "p.csv")
    plan = E.plan_openb(inv, sc, trace)
    tw = trace_workload(trace)
    tw.typical = run.typical_of(trace)
    tw, made = plan.workload(tw, trace)
    jobs = [(0, p, s) for p in ("FGD", "Random", "BestFit", "DotProd", "GpuPacking",
                                "GpuClustering") for s in (0, 1)]
    return inv, plan, [tw], jobs, [made]


def test_event_inputs_are_checked_by_name(tmp_path):
    inv, plan, tws, jobs, made = _inputs(tmp_path)
    ev = plan.events
    bad = ev._replace(ev_row=np.full(ev.n_events, 99, np.int64))
    with pytest.raises(ValueError, match="NodeEvents.ev_row"):
        bad.check()
    with pytest.raises(ValueError, match="NodeEvents.ev_t"):
        ev._replace(ev_t=ev.ev_t[::-1].copy() + np.arange(ev.n_events)[::-1]).check() \
            if ev.n_events > 1 else ev._replace(ev_t=np.array([-1.0])).check()
    lead = ev.ev_kind == OE.EV_POD_DELETE
    with pytest.raises(ValueError, match="NodeEvents.ev_kind: a time's EV_POD_DELETE"):
        k = int(np.flatnonzero(lead)[0])
        t = ev.ev_t.copy()
        t[k - 1] = t[k]     # an event of its time before it
        ev._replace(ev_t=t).check()
    u = ev.u_gpu_count.shape[0]
    with pytest.raises(ValueError, match=r"u_static: shape \(12, 2\)"):
        OE.run_scenario(*_arrays(inv, plan, tws, jobs), np.zeros((12, 2), np.int64), None)
    with pytest.raises(ValueError, match="u_static: static scores"):
        OE.run_scenario(*_arrays(inv, plan, tws, jobs), np.full((12, u), -1, np.int64), None)
    with pytest.raises(ValueError, match="made: a pod index of its run"):
        OE.run_scenario(*_arrays(inv, plan, tws, jobs), None, np.full((12, 3), 999, np.int64))
    with pytest.raises(ValueError, match="NodeEvents.ev_x: an EV_POD_DELETE's created pod"):
        OE.run_scenario(*_arrays(inv, plan, tws, jobs), None, np.zeros((12, 1), np.int64))
    with pytest.raises(ValueError, match="made: the rows of the pods the scenario creates"):
        E.openb_event_runs(inv, plan, tws, jobs)


def _arrays(inv, plan, tws, jobs) -> tuple:
    """(``BatchArrays``, ``NodeEvents``) of the jobs (as ``openb_event_runs`` builds them)."""
    wide = inv.copy()
    wide.models = list(plan.models)
    a = trace_arrays([wide], [(workload_of(wide, tws[0].pods, tws[0].typical), tws[0])],
                     {(0, 0): 0}, [(0, 0, p, s) for _t, p, s in jobs], 300.0, (1.0, 10.0),
                     weights=[(1, 0)] * len(jobs))
    return a, plan.events


@pytest.mark.cudasim
@needs_cuda
@pytest.mark.parametrize("generic,preempt,grace", [(False, False, 0.0), (True, True, 0.0),
                                                   (True, True, 2.0)])
def test_cuda_form_equals_the_twin(tmp_path, generic, preempt, grace):
    """A block per run (thread 0 the serial steps, the block the picks and
    the victim search) gives the twin's answers: two or three policies a
    case (seeds alternating), without DefaultPreemption, with it (a generic trace's
    priorities, ranks and durations), with a grace."""
    inv, plan, tws, jobs, made = _inputs(tmp_path, generic=generic)
    # (FGD, Random, DotProd; BestFit, GpuPacking, GpuClustering: each policy once)
    pick = [0, 2, 6] if not preempt else [4, 8, 10] if grace == 0.0 else [0, 2]
    jobs = [(jobs[k][0], jobs[k][1], a % 2) for a, k in enumerate(pick)]
    # seed 0: the experiment's profile (OpenbTieRank), seed 1: GpuShareScore alone
    weights = [(inv.n_nodes + 1, 1) if s == 0 and p != "Random" else (1, 0)
               for _t, p, s in jobs]
    pre = [(100, 1), (10, 1), (50, 1)][:len(jobs)] if preempt else None
    twin, dev = (E.openb_event_runs(inv, plan, tws, jobs, b, weights=weights, made=made,
                                    preempt=pre, grace=grace)[1] for b in ("numba", "cuda"))
    assert (twin.why > 0).any() and (twin.node >= 0).any()
    assert (twin.why == OE.WHY_POD_DELETED).any()
    assert not generic or (tws[0].rank is not None and np.isfinite(tws[0].duration).any())
    assert not preempt or (twin.victim > 0).any()
    for x, y in zip(twin, dev):
        np.testing.assert_array_equal(x, y)
