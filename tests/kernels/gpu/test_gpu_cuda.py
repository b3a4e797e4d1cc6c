"""GPU sharing / topology kernels on the cuda backend (Numba's CUDA
simulator in CI, the device on a GPU machine): the same answers as numba
and numpy, kernel by kernel on random small GPU clusters and through
explain / schedule on the GPU profile; a clear refusal with neither."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import cuda_available

from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.explain import explain_pod
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.kernels.gpu import share as K
from tensorsched.kernels.gpu import subsets as KT
from tensorsched.topology.gpu_table import binding_gpus
from tensorsched.generators.gpu_clusters import gpu, gpu_config

needs_cuda = pytest.mark.skipif(not cuda_available(),
                                reason="needs a GPU or NUMBA_ENABLE_CUDASIM=1")

TOPOS = [(8, [0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1, 1, 1]),
         (8, [0, 0, 1, 1, 2, 2, 3, 3], [0, 0, 0, 0, 1, 1, 1, 1]),
         (4, [-1] * 4, [-1] * 4),
         (2, [0, 0], [0, 0])]


@st.composite
def gpu_nodes(draw):
    """Columns of 1..6 nodes (GpuTable layout, G = 8) and a topology id each."""
    n = draw(st.integers(1, 6))
    topo = np.array(draw(st.lists(st.integers(-1, len(TOPOS) - 1), min_size=n, max_size=n)),
                    np.int64)
    count = np.array([TOPOS[t][0] if t >= 0 else 0 for t in topo], np.int64)
    left = np.zeros((n, 8), np.int64)
    for i in range(n):
        left[i, :count[i]] = draw(st.lists(st.sampled_from([0, 100, 250, 500, 750, 1000]),
                                           min_size=int(count[i]), max_size=int(count[i])))
    model = np.where(count > 0, np.array(draw(st.lists(st.integers(0, 2), min_size=n,
                                                       max_size=n))), -1).astype(np.int64)
    cpu_left = np.array(draw(st.lists(st.integers(0, 64000), min_size=n, max_size=n)), np.int64)
    aff = np.array(draw(st.lists(st.lists(st.integers(0, 2), min_size=18, max_size=18),
                                 min_size=n, max_size=n)), np.int64)
    return topo, count, model, left, cpu_left, aff


ASKS = [(0, 0), (1, 250), (1, 500), (1, 1000), (2, 1000), (4, 1000)]
TYPICAL = (np.array([1000, 4000], np.int64), np.array([1, 2], np.int64),
           np.array([500, 1000], np.int64), np.array([0, 0], np.int64), np.array([0.6, 0.4]))


def _score(fn, policy, cols, ask, cpu_nz, mask):
    _, count, model, left, cpu_left, aff = cols
    n = count.shape[0]
    cache = (np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, -1, np.int64))
    out_gpu = np.empty(n, np.int64)
    s = fn(policy, count, model, left, cpu_left, np.zeros(n, np.int64), aff, 0, cpu_nz, 0,
           ask[0], ask[1], mask, *TYPICAL, *cache, np.arange(n, dtype=np.int64), out_gpu)
    return s.tolist(), out_gpu.tolist(), [c.tolist() for c in cache]


@pytest.mark.cudasim
@needs_cuda
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cols=gpu_nodes(), ask=st.sampled_from(ASKS), cpu_nz=st.sampled_from([100, 2000, 20000]),
       mask=st.sampled_from([0, 1, 6]), cons=st.integers(0, 3))
def test_gpu_kernels_cuda_match_numba_and_numpy(cols, ask, cpu_nz, mask, cons):
    for policy in range(len(K.POLICIES)):
        got = _score(K.score_nodes_cuda, policy, cols, ask, cpu_nz, mask)
        assert got == _score(K.score_nodes, policy, cols, ask, cpu_nz, mask), policy
        assert got[:2] == _score(K.score_nodes_np, policy, cols, ask, cpu_nz, mask)[:2], policy
    topo, count, model, left, _, _ = cols
    num, milli = max(ask[0], 1), max(ask[1], 1)
    fit = [f(count, model, left, num, milli, mask).tolist()
           for f in (KT.gpu_fit_nodes_cuda, KT.gpu_fit_nodes, KT.gpu_fit_nodes_np)]
    assert fit[0] == fit[1] == fit[2]
    # the topology subset search, with NUMA CPU/memory room on some zones
    n = count.shape[0]
    tables = KT.stack_tables([KT.topology_table(c, i, m, num) for c, i, m in TOPOS])
    numa = np.full((n, 8), -1, np.int64)
    for i, t in enumerate(topo):
        if t >= 0:
            numa[i, :TOPOS[t][0]] = TOPOS[t][2]
    zc = np.tile(np.array([8000, 2000] + [0] * 6, np.int64), (n, 1))
    zm = np.full((n, 8), 1 << 30, np.int64)
    consv = np.full(n, cons, np.int64)
    res = []
    for f in (KT.subset_costs_cuda, KT.subset_costs, KT.subset_costs_np):
        oc, oi = np.empty(n, np.int64), np.empty(n, np.int64)
        f(count, left, numa, zc, zm, topo, consv, 4000, 1 << 20, milli, *tables, oc, oi)
        res.append((oc.tolist(), oi.tolist()))
    assert res[0] == res[1] == res[2]


@pytest.mark.cudasim
@needs_cuda
@pytest.mark.parametrize("policy", ["FGD", "GpuPacking"])
def test_gpu_profile_explain_and_schedule_cuda_match_numpy(policy, monkeypatch):
    from tensorsched.kernels.gpu import _cuda as _gpu_cuda
    launched = {"score_nodes": 0, "gpu_fit_nodes": 0, "subset_costs": 0}

    def counting(name):
        inner = getattr(_gpu_cuda, name)

        def counted(*a):
            launched[name] += 1
            return inner(*a)
        return counted
    for name in launched:
        monkeypatch.setattr(_gpu_cuda, name, counting(name))
    nodes, pods = gpu(3, 8, seed=1)          # DGX-like nodes (islands, NUMA), mixed GPU pods
    cfg = gpu_config(policy=policy)
    cl = build_cluster(nodes, cfg)
    for pod in pods[:3]:
        assert explain_pod(cl, pod, backend="cuda") == {
            **explain_pod(cl, pod, backend="numpy"), "backend": "cuda"}
    res = {}
    for backend in ("numpy", "cuda"):
        cl = build_cluster(nodes + pods, cfg)
        bs = Scheduler(cl, backend, 3).run(cl.pending)
        res[backend] = ([(b.pod, b.node) for b in bs], binding_gpus(cl.state))
    assert res["numpy"] == res["cuda"]
    assert sum(1 for _, n in res["cuda"][0] if n) == len(pods)
    assert all(launched.values()), launched        # every GPU kernel ran on cuda


def test_gpu_cuda_kernels_refuse_without_device():
    if cuda_available():
        pytest.skip("the cuda backend can run here")
    from tensorsched.kernels._errors import BackendUnavailable
    z = np.zeros(2, np.int64)
    with pytest.raises(BackendUnavailable, match="NUMBA_ENABLE_CUDASIM"):
        KT.gpu_fit_nodes_cuda(z, z, np.zeros((2, 1), np.int64), 1, 1000, 0)
