"""The cuda backend's one-at-a-time cycles decided on the device (Numba's
CUDA simulator in CI, the device on a GPU machine): the numba backend's
placements through a Scheduler with batching off, percentageOfNodesToScore
below every node (the scan stops early and the start rotates), normalized
scores and ties; at most two launches a cycle and, while a node is found,
nothing of the row cache copied back (four numbers a cycle)."""

import pytest
from support.backends import needs_cuda
from support.launch_guard import device_arrays_only  # noqa: F401 (autouse)

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels.fused import cycle

pytestmark = [pytest.mark.cudasim, needs_cuda]

HALF = {"apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration", "percentageOfNodesToScore": 50}
PREFER = [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]
BLOCK = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
AFFINITY = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 5, "preference": {"matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["gold"]}]}}]}}}


def _nodes(n=120):
    """Alike nodes (ties) among bigger ones, tainted ones (infeasible or
    scored lower: TaintToleration normalizes) and labelled ones
    (NodeAffinity's preferred weights normalize)."""
    return [node_dict(f"n{i:03d}", cpu=("2", "2", "4", "8")[i % 4],
                      labels={"tier": "gold"} if i % 7 == 0 else None,
                      taints=BLOCK if i % 10 == 1 else PREFER if i % 6 == 2 else None)
            for i in range(n)]


def _pods():
    """Three kinds of pods (their caches are shared), one that fits nowhere."""
    kinds = [dict(cpu="500m"), dict(cpu="1", spec=AFFINITY), dict(cpu="250m", memory="2Gi")]
    pods = [pod_dict(f"p{i:02d}", created=i, **kinds[i % 3]) for i in range(12)]
    return pods + [pod_dict("huge", cpu="64", created=99)]


def _play(backend, calls=None, pods=None, nodes=None):
    """(bindings, the backend, the cluster); ``calls`` (cuda) gets per
    evaluate: (launches, row cache rows copied back, sizes of the arrays
    copied back, tied positions, rows processed, sizes of the new arrays
    sent to the device)."""
    pods = pods or _pods()
    cluster = build_cluster(nodes or _nodes(), HALF)
    be = cluster.framework_for(parse_pod(pods[0]), backend).backend
    if calls is not None:
        from numba import cuda
        device_type = type(cuda.device_array(1))
        copied = []
        real_copy, real_evaluate = device_type.copy_to_host, be.evaluate

        def copy_to_host(self, *a, **k):
            copied.append(self.size)
            return real_copy(self, *a, **k)

        sent = []
        real_to_device = cuda.to_device

        def to_device(a, *args, **k):
            sent.append(a.size)
            return real_to_device(a, *args, **k)

        def evaluate(*a, **k):
            launches, rows_back, copies = be.launches, be.rows_downloaded, len(copied)
            uploads = len(sent)
            res = real_evaluate(*a, **k)
            calls.append((be.launches - launches, be.rows_downloaded - rows_back,
                          copied[copies:], len(res.ties), res.processed, sent[uploads:]))
            return res
        be.evaluate = evaluate
        device_type.copy_to_host = copy_to_host
        cuda.to_device = to_device
        try:
            out = Scheduler(cluster, backend, seed=7, batch=False).schedule_pending(pods)[0]
        finally:
            device_type.copy_to_host = real_copy
            cuda.to_device = real_to_device
    else:
        out = Scheduler(cluster, backend, seed=7, batch=False).schedule_pending(pods)[0]
    return [(b.pod, b.node) for b in out], be, cluster


def test_device_cycles_place_as_numba_with_two_launches_and_no_rows_back():
    calls = []
    got, be, cluster = _play("cuda", calls)
    assert got == _play("numba")[0]
    n = cluster.state.columns().allocatable.shape[0]
    placed = [c for c in calls if c[3]]
    assert len(placed) == 12 and any(c[4] < n for c in placed), calls
    for launches, rows_back, copies, _ties, _processed, _sent in placed:
        # the pick (writing the rows written since first), a query's first
        # cycle the by-row pass too; four numbers back
        assert launches <= 2 and rows_back == 0 and copies == [cycle.OUT_LEN], calls
    # after a query's first cycle what goes to the device (besides the
    # written node rows, into the packs: not counted here) is at most the
    # numbers of the rows written since its last cycle (one placement per
    # kind of pod in between, far apart), and nothing when they lie close
    kinds = 3
    assert all(len(c[5]) <= 1 and sum(c[5]) <= kinds for c in placed[kinds:]), calls
    # the pod that fits nowhere: its reasons by row come back for the diagnosis
    failed = [c for c in calls if not c[3]]
    assert failed and all(c[1] == n for c in failed), calls
    assert be.rows_downloaded == n * len(failed)


def test_alike_pods_cycles_send_nothing_after_the_first():
    """One kind of pod: each cycle's pick launch recomputes the one row
    written since (staged with its columns: one copy, not counted here):
    after the first cycle one launch a cycle and no new device array."""
    pods = [pod_dict(f"a{i}", cpu="500m", created=i) for i in range(5)]
    calls = []
    got, _be, _cluster = _play("cuda", calls, pods, _nodes(12))
    assert got == _play("numba", None, pods, _nodes(12))[0]
    assert all(c[0] == 1 and not c[5] for c in calls[1:]), calls


def test_host_ranked_cycles_copy_back_only_the_rows_written_since():
    """A cycle that wants every node's scores (explain) ranks on the host:
    its copy of the row cache is taken whole once, then only the span of
    rows written since (the placements in between), and it answers as the
    numba backend's."""
    pods = _pods()
    answers = {}
    for backend in ("numba", "cuda"):
        cluster = build_cluster(_nodes(40), HALF)
        probe = parse_pod(pods[1])
        fw = cluster.framework_for(probe, backend)
        sched = Scheduler(cluster, backend, seed=7, batch=False)
        got, back = [], []
        for batch in (pods[0:3], pods[3:5]):
            before = getattr(fw.backend, "rows_downloaded", 0)
            res = fw.run_cycle(cluster.state, probe, seed=7, want_scores=True)
            back.append(getattr(fw.backend, "rows_downloaded", 0) - before)
            got.append((res.selected_row, res.processed, res.found, res.total.tolist(),
                        res.scores.tolist(), res.reasons.tolist()))
            sched.schedule_pending(batch)
        answers[backend] = got
    assert answers["cuda"] == answers["numba"]
    n = 40
    # whole once; then the span of the three rows written since
    assert back[0] == n and 0 < back[1] < n, back


def test_host_ranked_cycles_after_node_events_copy_back_only_those_rows():
    """After a node is appended (the row cache grown) and after a node
    takes a label value the pod's preferred affinity names and no node had
    (the query compiled anew, its cache adopted with the rows that value
    reaches), a host-ranked cycle copies back those rows, not the whole
    row cache; its answers are the numba backend's."""
    affinity = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "preference": {"matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["gold", "platinum"]}]}}]}}}
    probe_dict = pod_dict("probe", cpu="500m", spec=affinity)
    n = 40
    answers, backs = {}, {}
    for backend in ("numba", "cuda"):
        cluster = build_cluster(_nodes(n), HALF)
        probe = parse_pod(probe_dict)
        fw = cluster.framework_for(probe, backend)
        sched = Scheduler(cluster, backend, seed=7, batch=False)
        got, back = [], []

        def cycle():
            before = getattr(fw.backend, "rows_downloaded", 0)
            res = fw.run_cycle(cluster.state, probe, seed=7, want_scores=True)
            back.append(getattr(fw.backend, "rows_downloaded", 0) - before)
            got.append((res.selected_row, res.processed, res.found, res.total.tolist(),
                        res.scores.tolist(), res.reasons.tolist()))
        cycle()
        sched.add_node(node_dict(f"n{n:03d}", cpu="8", labels={"tier": "gold"}))
        cycle()
        sched.update_node(node_dict("n005", cpu="8", labels={"tier": "platinum"}))
        cycle()
        answers[backend], backs[backend] = got, back
    assert answers["cuda"] == answers["numba"]
    adopted = fw.backend.caches_adopted
    # whole once; then the appended row, then the relabelled row
    assert backs["cuda"] == [n, 1, 1] and adopted >= 2, (backs["cuda"], adopted)
