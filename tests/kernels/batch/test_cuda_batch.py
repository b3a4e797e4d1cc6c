"""The batched engine's CUDA kernel (a block per cluster, shuffles
emulated under the simulator) gives the CPU twin's answers, bit for bit,
and so each run's Simulation: tiny clusters under ``NUMBA_ENABLE_CUDASIM``,
all six policies, more nodes than threads (several rows per thread
before the block's reduction of the order keys), runs split into chunks
by a small memory budget; traces with departures (pods retrying after
them, thread 0 keeping the queue); Random's drawn rows on such a trace."""
import numpy as np
import pytest
from support.backends import needs_cuda
from support.launch_guard import device_arrays_only  # noqa: F401 (autouse)
from support.openb import openb_slice, read_openb_slice, simulate_trace, with_durations

from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.gpu import build_inventory
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb import trace as T

pytestmark = [pytest.mark.cudasim, needs_cuda]

FIELDS = ("node", "gmask", "bind", "tries", "n_log", "frag0", "end")


def _arrays(tmp_path, n_nodes, n_pods, seeds):
    inv, pods = read_openb_slice(tmp_path, "gpuspec10", n_nodes, 60)
    wl = [B.workload_of(inv, pods)]
    runs = []
    for pol, seed in zip(POLICIES, seeds):
        seq, tie = B.arrival_and_ties(inv, pods, seed, 1.3)
        runs.append(B.Run(0, pol, seed, seq[:n_pods], tie))
    return inv, pods, wl, runs, B.batch_arrays(inv, wl, runs)


def _assert_same(a, twin, dev):
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(twin, name), getattr(dev, name), err_msg=name)
    for b in range(a.n_runs):
        for name, x, y in zip(("log_t", "log_pod", "log_frag"), twin.log(a, b), dev.log(a, b)):
            np.testing.assert_array_equal(x, y, err_msg=f"run {b}: {name}")


def test_cuda_equals_the_twin_and_the_simulation(tmp_path):
    from tensorsched.kernels.batch import cpu
    from tensorsched.kernels.batch import cuda as KC
    inv, pods, wl, runs, a = _arrays(tmp_path, 20, 6, range(5, 11))
    assert a.gpu_count.shape[1] > KC.THREADS
    twin = cpu.run_batch(a)
    budget = int(KC.cluster_bytes(a)[:2].sum())      # chunks of about two runs
    dev = KC.run_batch(a, budget=budget)
    _assert_same(a, twin, dev)
    assert (twin.node >= 0).any() and len(set(twin.node.tolist())) > 2
    # the twin's runs are their Simulations' (as far as these pods go)
    for res in B.results_of(inv, wl, runs, a, twin, 1.3, 0.0, True):
        _rec, _sched, seq, (where, _gpus, _m) = T._experiment(
            inv, pods, res.policy, res.seed, 1.3, "numba", outcomes=True)
        assert [p[1] for p in res.placements] == where[:6].tolist(), res.policy


def test_cuda_with_departures_equals_the_twin_and_the_simulation(tmp_path):
    """A compressed openb trace on 18 nodes (more than the simulator's 16
    threads): pods leave (at a time or a duration after their binding),
    the ones waiting retry (backing off or not) in the order of their
    priorities, the runs chunked; device, twin and Simulation agree.  Four
    policies (two chunks of up to three runs; the test above runs all
    six), 16 pods."""
    inv, tw = _departure_trace(tmp_path)
    twin, dev, a = _trace_runs(inv, tw, [(0, 0, pol, 3) for pol in POLICIES[2:]], 3)
    for res in twin[::3]:
        _sim, log, _gpus = simulate_trace(inv, tw, res.policy, res.seed)
        assert [(t, p) for t, p, _n in log] == list(zip(res.log_t.tolist(),
                                                        res.log_pod.tolist()))


def test_cuda_random_draws_equal_the_twin_and_the_simulation(tmp_path):
    """Random on the trace above (18 nodes: the drawn row's block scan runs
    two rounds of the simulator's 16 threads; failed pods retry, so the
    draw's attempt numbers count retries): device and twin agree, and the
    twin is its Simulation's with the Scheduler batching alike pods or
    not."""
    from tensorsched.kernels.batch import cuda as KC
    inv, tw = _departure_trace(tmp_path)
    twin, _dev, _a = _trace_runs(inv, tw, [(0, 0, "Random", s) for s in (3, 8)], 1)
    assert max(int(r.node.max()) for r in twin) >= KC.THREADS
    for res in twin:
        for batch in (True, False):
            _sim, log, _gpus = simulate_trace(inv, tw, res.policy, res.seed, batch=batch)
            assert [(t, p) for t, p, _n in log] == list(zip(res.log_t.tolist(),
                                                            res.log_pod.tolist()))


def _departure_trace(tmp_path):
    """(inventory, TraceWorkload): the first 16 pods of gpuspec10 on its
    first 18 nodes, times compressed, half the leaving pods leaving a
    duration after their binding, three priorities."""
    nodes, pods = openb_slice(tmp_path, "gpuspec10", 18, 16)
    inv = R.read_openb_nodes(nodes)
    tw = B.trace_workload(T.read_openb_trace(pods))
    arrival = np.floor(tw.arrival / 20000.0)
    # half the pods that leave do so a duration after their binding, and
    # the pods have three priorities (activeQ a heap of ranks)
    tw = with_durations(B.TraceWorkload(tw.pods, arrival, arrival + np.floor(
        (tw.departure - tw.arrival) / 20000.0)))
    tw.rank = np.arange(len(tw.arrival)) % 3
    assert np.isfinite(tw.duration).any() and np.isfinite(tw.departure).any()
    return inv, tw


def _trace_runs(inv, tw, jobs, per_chunk):
    """The twin's runs of ``jobs`` on ``tw`` and the device's (chunks of
    ``per_chunk`` runs), asserted equal: (twin results, device outputs,
    arrays)."""
    from tensorsched.kernels.batch import cuda as KC
    twin = B.trace_batch([inv], [tw], jobs, workers=1)
    sets = [inv]
    wl = [(B.workload_of(inv, tw.pods), tw)]
    a = B.trace_arrays(sets, wl, {(0, 0): 0}, jobs, B.DEFAULT_MAX_UNSCHED, (1.0, 10.0))
    dev = KC.run_batch(a, budget=int(KC.cluster_bytes(a)[:per_chunk].sum()))
    for b, res in enumerate(twin):
        o, e = int(a.ev_off[b]), int(a.ev_len[b])
        assert dev.node[o:o + e].tolist() == res.node.tolist(), res.policy
        t, p, f = dev.log(a, b)
        np.testing.assert_array_equal(t, res.log_t)
        np.testing.assert_array_equal(p, res.log_pod)
        np.testing.assert_array_equal(f, res.log_frag)
        np.testing.assert_array_equal(dev.tries[o:o + e], res.tries)
    assert any((r.tries > 1).any() for r in twin)
    return twin, dev, a


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_cuda_preemption_equals_the_twin():
    """DefaultPreemption in the queue (thread 0 adds the nominated pods
    around a cycle, searches the victims, evicts them): on a small
    preempting trace (three nodes of 1-4 GPUs, shares and whole GPUs of
    unequal priorities, some leaving), two policies and two candidate
    settings in chunks of one run, device and twin give the same
    placements, GPUs, change log and victims (the twin is its
    Simulation's: ``tests/topology/openb/test_batch_preempt.py``)."""
    inv = build_inventory(["n0", "n1", "n2"], [16000] * 3, [65536] * 3, [2, 4, 1],
                          ["T4", "T4", "A10"])
    gpus = [(1, 500), (1, 1000), (2, 1000), (1, 250), (4, 1000), (1, 700)] * 2
    pods = R.TracePods([f"p{j}" for j in range(12)], np.full(12, 2000), np.full(12, 2048),
                       np.array([g[0] for g in gpus]), np.array([g[1] for g in gpus]),
                       [""] * 12)
    prio = np.array([0, 0, 3, 0, 9, 5, 0, 1, 9, 0, 20, 2])
    tw = B.TraceWorkload(pods, np.arange(12.0), np.array([np.inf, 30.0] * 6),
                         rank=np.unique(-prio, return_inverse=True)[1], priority=prio)
    jobs = [(0, 0, "FGD", 2), (0, 0, "Random", 5)]
    pre = [(10, 100), (50, 1)]
    twin = B.trace_batch([inv], [tw], jobs, workers=1, preempt=pre)
    dev = B.trace_batch([inv], [tw], jobs, backend="cuda", preempt=pre, chunk=1)
    assert sum(int(r.preempted.sum()) for r in twin) >= 2
    for x, y in zip(twin, dev):
        assert x.node.tolist() == y.node.tolist() and x.gpus == y.gpus
        assert x.preempted.tolist() == y.preempted.tolist()
        for name in ("log_t", "log_pod", "log_frag", "tries", "bind"):
            np.testing.assert_array_equal(getattr(x, name), getattr(y, name), err_msg=name)


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_cuda_preemption_with_a_grace_equals_the_twin():
    """A termination grace above 0 (victims terminating on their node
    until it ends, thread 0 letting them leave; a preemptor whose
    nominated node holds one does not preempt): two nodes of one GPU,
    pods of rising priorities, one leaving; device and twin give the same
    placements, GPUs, change log and victims (the twin is its
    Simulation's: ``tests/topology/openb/test_batch_preempt_grace.py``)."""
    inv = build_inventory(["n0", "n1"], [8000, 16000], [65536, 65536], [1, 1], ["A10", "T4"])
    pods = R.TracePods(["a", "b", "x", "c", "d"], np.array([2000, 2000, 13000, 4000, 2000]),
                       np.full(5, 1024), np.array([1, 1, 0, 1, 1]),
                       np.array([1000, 1000, 0, 1000, 500]), ["A10", "T4", "", "", ""])
    prio = np.array([3, 1, 5, 100, 200])
    tw = B.TraceWorkload(pods, np.array([0.0, 0.0, 0.0, 2.0, 3.0]),
                         np.array([np.inf, np.inf, 4.0, np.inf, np.inf]),
                         rank=np.unique(-prio, return_inverse=True)[1], priority=prio)
    jobs = [(0, 0, "FGD", 3), (0, 0, "BestFit", 1)]
    pre = [(10, 100), (50, 1)]
    twin = B.trace_batch([inv], [tw], jobs, workers=1, preempt=pre,
                         termination_grace_seconds=10.0)
    dev = B.trace_batch([inv], [tw], jobs, backend="cuda", preempt=pre, chunk=1,
                        termination_grace_seconds=10.0)
    assert all(r.preempted.any() for r in twin) and any(r.bind[3] >= 12.0 for r in twin)
    for x, y in zip(twin, dev):
        assert x.node.tolist() == y.node.tolist() and x.gpus == y.gpus
        assert x.preempted.tolist() == y.preempted.tolist()
        assert x.evictions.tolist() == y.evictions.tolist()
        for name in ("log_t", "log_pod", "log_frag", "tries", "bind"):
            np.testing.assert_array_equal(getattr(x, name), getattr(y, name), err_msg=name)
