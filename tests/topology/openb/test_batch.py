"""The openb experiment's runs in one batched call (``openb.batch``) equal
``simulate_replay`` -- the experiment through ``Simulation`` -- run by
run, bit for bit: placements (node and GPU indices), the three curves and
the scheduled count, for all six policies, on random small clusters and
traces; ``openb.batch.sweep`` (``replay --sweep``) is that batched call."""
import hashlib

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.openb import read_openb_slice

from tensorsched.framework.errors import BackendError
from tensorsched.kernels.batch import arrays as BA
from tensorsched.kernels.batch import cpu
from tensorsched.kernels.fused.ties import draw_index, pick_tied, seed_mix
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.gpu import build_inventory
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb import trace as T

CURVES = ("alloc", "frag_amount", "frag_ratio")
MODELS = ("A10", "V100M16", "T4")


@st.composite
def clusters(draw):
    n = draw(st.integers(1, 9))
    counts = draw(st.lists(st.sampled_from([0, 1, 2, 4, 8]), min_size=n, max_size=n))
    if sum(counts) == 0:
        counts[0] = 2
    models = [draw(st.sampled_from(MODELS)) if c else "" for c in counts]
    cpu = draw(st.lists(st.sampled_from([4000, 16000, 64000]), min_size=n, max_size=n))
    mem = draw(st.lists(st.sampled_from([8192, 65536, 262144]), min_size=n, max_size=n))
    inv = build_inventory([f"node-{i}" for i in range(n)], cpu, mem, counts, models)
    p = draw(st.integers(1, 14))
    shapes = draw(st.lists(st.tuples(
        st.sampled_from([0, 500, 2000, 8000]), st.sampled_from([0, 1024, 30000]),
        st.sampled_from([(0, 0), (1, 250), (1, 500), (1, 1000), (2, 1000), (4, 1000)]),
        st.sampled_from(["", "A10", "T4|V100M16", "P100"])), min_size=p, max_size=p))
    if not any(s[2][0] for s in shapes):
        shapes[0] = (shapes[0][0], shapes[0][1], (1, 500), shapes[0][3])
    pods = R.TracePods([f"pod-{j:03d}" for j in range(p)],
                       np.array([s[0] for s in shapes], np.int64),
                       np.array([s[1] for s in shapes], np.int64),
                       np.array([s[2][0] for s in shapes], np.int64),
                       np.array([s[2][1] for s in shapes], np.int64),
                       [s[3] if s[2][0] else "" for s in shapes])
    return inv, pods


def _gpus(mask: int) -> tuple:
    return tuple(g for g in range(16) if (mask >> g) & 1)


def _assert_equal(res, want, what):
    assert (res.pods, res.scheduled) == (want.pods, want.scheduled), what
    for name in CURVES:
        np.testing.assert_array_equal(getattr(res, name), getattr(want, name),
                                      err_msg=f"{what}: {name}")


def _assert_simulation(res, inv, pods, seed, tune, **options):
    """``res`` is what ``simulate_replay`` computes: its Simulation's
    placements, then the curves and counts (as ``simulate_replay`` builds
    them from the same run); ``options`` the Scheduler's."""
    records, scheduled, seq, (where, gpu_idx, _milli) = T._experiment(
        inv, pods, res.policy, seed, tune, "numba", outcomes=True, **options)
    assert [p[1] for p in res.placements] == where.tolist(), res.policy
    assert [tuple(p[2]) for p in res.placements] == [tuple(g) for g in gpu_idx], res.policy
    want = R.ReplayResult(res.policy, seed, tune, inv.total_gpus, len(seq), scheduled, 0.0,
                          *R._curves(records, inv.total_gpus), [])
    _assert_equal(res, want, res.policy)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=clusters(), seed=st.integers(0, 2**20), tune=st.sampled_from([0.6, 1.3, 2.0]))
def test_batch_equals_the_simulation_per_run(case, seed, tune):
    inv, pods = case
    # the Simulation takes no empty trace (the draw may remove every pod)
    assume(len(B.arrival_and_ties(inv, pods, seed, tune)[0]) > 0)
    jobs = [(0, pol, seed) for pol in POLICIES]
    got = B.replay_batch(inv, [pods], jobs, tune=tune, record_placements=True)
    for res in got:
        _assert_simulation(res, inv, pods, seed, tune)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=clusters(), seed=st.integers(0, 2**20), tune=st.sampled_from([0.6, 1.3, 2.0]))
def test_random_equals_the_simulation_batch_on_and_off(case, seed, tune):
    """Random draws per pod in the Scheduler (GpuShareScore), not by ties:
    the engine equals the Simulation whether the Scheduler batches alike
    pods or not."""
    inv, pods = case
    assume(len(B.arrival_and_ties(inv, pods, seed, tune)[0]) > 0)
    res, = B.replay_batch(inv, [pods], [(0, "Random", seed)], tune=tune, record_placements=True)
    for batch in (True, False):
        _assert_simulation(res, inv, pods, seed, tune, batch=batch)


def test_batch_on_openb_slices_equals_the_simulation(tmp_path):
    """Runs of two traces in one call (interleaved, chunked in fives): each
    equals its own Simulation (Random's also with the Scheduler batching
    alike pods); the five policies that use the tie rank place like
    ``replay`` too."""
    inv, pods = read_openb_slice(tmp_path, "gpuspec10", 60, 300)
    inv2, pods2 = read_openb_slice(tmp_path, "multigpu20", 60, 200)
    assert inv2.names == inv.names
    jobs = [(t, pol, 7 + t) for pol in POLICIES for t in (0, 1)]
    got = B.replay_batch(inv, [pods, pods2], jobs, tune=1.3, chunk=5, record_placements=True)
    for (t, pol, sd), res in zip(jobs, got):
        trace_pods = (pods, pods2)[t]
        _assert_simulation(res, inv, trace_pods, sd, 1.3)
        if pol == "Random":
            _assert_simulation(res, inv, trace_pods, sd, 1.3, batch=True)
        else:
            rp = R.replay(inv, trace_pods, pol, sd, 1.3, record_placements=True)
            assert [p[:2] for p in rp.placements] == [p[:2] for p in res.placements]
            assert [list(p[2]) for p in rp.placements] == [p[2] for p in res.placements]


def test_batched_sweep_on_numba(tmp_path):
    """``openb.batch.sweep`` (``replay --sweep``): one batched call, the CSV
    written, each run its Simulation's."""
    from support.openb import openb_slice
    nodes, pods = openb_slice(tmp_path, "default", 40, 150)
    out = B.sweep(nodes, [pods], ["FGD", "Random"], [3, 4], workers=1, backend="numba",
                  output=str(tmp_path / "s.csv"))
    inv, tp = R.read_openb_nodes(nodes), R.read_openb_pods(pods)
    want = {(r.policy, r.seed): r for r in B.replay_batch(
        inv, [tp], [(0, p, s) for p in ("FGD", "Random") for s in (3, 4)])}
    for wl, res in out:
        assert wl == "pods"
        _assert_equal(res, want[(res.policy, res.seed)], res.policy)
    _assert_equal(out[0][1], T.simulate_replay(inv, tp, "FGD", 3, 1.3), "FGD")
    rows = (tmp_path / "s.csv").read_text().splitlines()
    assert len(rows) == 1 + 4 * 3


def _alike_pods_on_alike_nodes(n, p, seed):
    """The kernel's inputs of ``p`` alike one-GPU pods under Random on ``n``
    alike nodes (every pod fits every node)."""
    inv = build_inventory([f"node-{i}" for i in range(n)], [64000] * n, [65536] * n,
                          [8] * n, ["A10"] * n)
    pods = R.TracePods(["pod-000"], np.array([100]), np.array([64]), np.array([1]),
                       np.array([100]), [""])
    return B.batch_arrays(inv, [B.workload_of(inv, pods)],
                          [B.Run(0, "Random", seed, np.zeros(p, np.int64), np.zeros(n, np.int64))])


@settings(max_examples=10, deadline=None)
@given(n=st.integers(2, 7), p=st.integers(1, 30), seed=st.integers(0, 2**20))
def test_random_draws_a_feasible_row_per_attempt(n, p, seed):
    """Random (the Scheduler's GpuShareScore draw per pod): attempt k takes
    the ``draw_index(seed, k, feasible rows)``-th feasible row in row order,
    whatever the pods already on the rows."""
    got = cpu.run_batch(_alike_pods_on_alike_nodes(n, p, seed)).node
    assert got.tolist() == [draw_index(seed, k, n) for k in range(p)]


@settings(max_examples=10, deadline=None)
@given(n=st.integers(2, 7), p=st.integers(1, 30), seed=st.integers(0, 2**20))
def test_ties_go_to_the_highest_seeded_rank_of_row_and_pods(n, p, seed):
    """With every total alike (Random's score weighted 0): pod after pod,
    the engine takes the node of the highest ``tie_rank(seed, row, pods on
    it now)`` (the lower row on an equal rank), as ``fused.ties`` picks."""
    a = _alike_pods_on_alike_nodes(n, p, seed)
    a.gpu_weight[:] = 0
    got = cpu.run_batch(a).node
    held = np.zeros(n, np.int64)
    want = []
    for _ in range(p):
        row = pick_tied(seed_mix(seed), np.arange(n), held)
        held[row] += 1
        want.append(row)
    assert got.tolist() == want
    assert len(set(want)) > 1 or p == 1


#: sha256 of repr([(node, GPU indices), ...]) of Random's placements (a
#: failed attempt: node -1) on openb slices, as the engine computed them
#: before the tie rule changed (at fd885d3, the (seed, attempt)-th tie:
#: Random's draw was the tie then); both slices fail pods, so the draw's
#: attempt numbering counts failed attempts too.
RANDOM_BEFORE_THE_TIE_RULE = {
    ("default", 60, 300, 7, 1.3): "3c7c80282701115329927d88b4017e242bccee5706f74e0007035df90a8b18e7",
    ("multigpu20", 40, 250, 11, 2.0):
        "dfc545c251b456e45e1261c793f93f9865b9872e70619ede6633cca80c07afc0",
}


@pytest.mark.parametrize("case", sorted(RANDOM_BEFORE_THE_TIE_RULE))
def test_random_places_as_before_the_tie_rule(tmp_path, case):
    trace, n, p, seed, tune = case
    inv, pods = read_openb_slice(tmp_path, trace, n, p)
    res = B.replay_batch(inv, [pods], [(0, "Random", seed)], tune=tune,
                         record_placements=True)[0]
    placed = [(int(x[1]), tuple(int(g) for g in x[2])) for x in res.placements]
    assert any(x[0] < 0 for x in placed)
    digest = hashlib.sha256(repr(placed).encode()).hexdigest()
    assert digest == RANDOM_BEFORE_THE_TIE_RULE[case]


def test_bad_arguments_are_refused(tmp_path):
    inv, pods = read_openb_slice(tmp_path, "default", 20, 50)
    with pytest.raises(ValueError, match="no runs"):
        B.replay_batch(inv, [pods], [])
    with pytest.raises(ValueError, match="unknown policy 'Best'"):
        B.replay_batch(inv, [pods], [(0, "Best", 1)])
    with pytest.raises(ValueError, match="trace index 1"):
        B.replay_batch(inv, [pods], [(1, "FGD", 1)])
    with pytest.raises(ValueError, match="unknown backend 'numpy'"):
        B.replay_batch(inv, [pods], [(0, "FGD", 1)], backend="numpy")
    with pytest.raises(ValueError, match="seed must be"):
        B.replay_batch(inv, [pods], [(0, "FGD", -1)])
    wl = B.workload_of(inv, pods)
    seq, tie = B.arrival_and_ties(inv, pods, 1, 1.3)
    a = B.batch_arrays(inv, [wl], [B.Run(0, "FGD", 1, seq, tie)])
    a.static_total = a.static_total[:, :-1]
    with pytest.raises(ValueError, match="static_total: shape"):
        cpu.run_batch(a)
    a = B.batch_arrays(inv, [wl], [B.Run(0, "FGD", 1, seq, tie)])
    a.cls = a.cls.copy()
    a.cls[0] = 10**6
    with pytest.raises(ValueError, match="outside its workload"):
        cpu.run_batch(a)
    a = B.batch_arrays(inv, [wl], [B.Run(0, "FGD", 1, seq, tie)])
    a.policy = np.array([9])
    with pytest.raises(ValueError, match="policy: ids in 0..5"):
        cpu.run_batch(a)
    with pytest.raises(ValueError, match="no runs in the batch"):
        cpu.run_batch(a.runs([]))
    assert BA.MAX_GPUS == 16


@settings(max_examples=30, deadline=None)
@given(steps=st.lists(st.floats(0, 3), min_size=0, max_size=400), seed=st.integers(0, 99),
       shuffle=st.booleans())
def test_discrete_slices_equal_the_masked_means(steps, seed, shuffle):
    """The curves' per-k means over slices of the (growing) arrived demand
    are the masked means bit for bit; unsorted keys take the masked path."""
    arrive = np.cumsum(np.array(steps, np.float64))
    values = np.random.default_rng(seed).random(arrive.shape[0]) * 1e4
    if shuffle:
        arrive = arrive[::-1].copy()
    key = np.round(arrive)
    want = np.full(R.N_COLS, np.nan)
    for k in range(R.N_COLS):
        sel = key == k
        if not sel.any():
            sel = (key >= k - 1) & (key <= k + 1)
            if not sel.any():
                continue
        want[k] = values[sel].mean()
    np.testing.assert_array_equal(R._discrete(arrive, values), want)


def test_sweep_experiment_jobs_run_batched(tmp_path):
    """``tensorsched sweep``'s experiment jobs on one machine: the batched
    call's rows equal each job's own ``simulate_replay`` row (all six
    policies), ``wall_seconds`` aside."""
    from support.openb import openb_slice

    from tensorsched.experiments import sweep as S
    nodes, pods = openb_slice(tmp_path, "multigpu20", 30, 150)
    jobs = S.make_jobs([pods], [5], policies=list(POLICIES), experiment=True, nodes=nodes)
    table = S.run_sweep(jobs, workers=1)
    inputs = S.load_inputs(jobs)
    for job, row in zip(jobs, table.to_pylist()):
        want = S.run_job(job, inputs)
        for k in want:
            if k != "wall_seconds":
                assert row[k] == want[k], (job.policy, k)


def test_cuda_without_a_device_is_refused_before_any_run(tmp_path):
    from support.backends import cuda_available

    if cuda_available():
        pytest.skip("a CUDA device or the simulator is here")
    inv, pods = read_openb_slice(tmp_path, "default", 20, 50)
    with pytest.raises(BackendError, match="backend 'cuda' cannot run"):
        B.replay_batch(inv, [pods], [(0, "FGD", 1)], backend="cuda")
