"""What a one-at-a-time cycle on the cuda backend sends and launches
(Numba's CUDA simulator in CI, the device on a GPU machine): once a query
has had its first cycle, a cycle is at most one host-to-device copy (the
rows written since, staged with their pack values: ``staged_rows``), one
launch (the pick, which writes and recomputes those rows first) and one
copy back of four numbers, across deleted pods and updated nodes; and its
placements are the numba backend's on random small clusters over many
cycles, nodes added, updated and removed between them."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from support.backends import needs_cuda
from support.launch_guard import device_arrays_only  # noqa: F401 (autouse)

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict, sample
from tensorsched.kernels.fused import cycle, staged_rows

pytestmark = [pytest.mark.cudasim, needs_cuda]

HALF = {"apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration", "percentageOfNodesToScore": 50}
PREFER = [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]
AFFINITY = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 5, "preference": {"matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["gold"]}]}}]}}}
KINDS = (dict(cpu="500m"), dict(cpu="1", spec=AFFINITY), dict(cpu="250m", memory="2Gi"))


def _node(i, cpu="4", gold=False, spot=False, unschedulable=False):
    return node_dict(f"n{i:02d}", cpu=cpu, labels={"tier": "gold"} if gold else None,
                     taints=PREFER if spot else None, unschedulable=unschedulable)


class _Transfers:
    """Host<->device copies the backend makes, per ``evaluate``: (launches,
    host-to-device copies, bytes sent, sizes copied back, node rows
    uploaded, whether the query had a row cache: False for its first cycle,
    and after a node update that compiled it anew)."""

    def __init__(self, be, monkeypatch):
        from numba import cuda
        self.calls = []
        device_type = type(cuda.device_array(1))
        up, back = [], []
        real_to_device, real_up, real_back = (cuda.to_device, device_type.copy_to_device,
                                              device_type.copy_to_host)

        def to_device(a, *args, **k):
            up.append(np.asarray(a).nbytes)
            return real_to_device(a, *args, **k)

        def copy_to_device(self, a, *args, **k):
            up.append(np.asarray(a).nbytes)
            return real_up(self, a, *args, **k)

        def copy_to_host(self, *a, **k):
            back.append(self.size)
            return real_back(self, *a, **k)
        from numba.cuda.cudadrv import driver
        real_h2d = driver.host_to_device

        def host_to_device(dst, src, size, *a, **k):     # a prefix of ``dst``
            up.append(size)
            return real_h2d(dst, src, size, *a, **k)
        monkeypatch.setattr(driver, "host_to_device", host_to_device)
        monkeypatch.setattr(cuda, "to_device", to_device)
        monkeypatch.setattr(device_type, "copy_to_device", copy_to_device)
        monkeypatch.setattr(device_type, "copy_to_host", copy_to_host)
        real_evaluate = be.evaluate

        def evaluate(source, rows, start, q, *a, **k):
            launches, ups, backs, sent = be.launches, len(up), len(back), be.rows_uploaded
            c = be._caches.get(id(q))
            cached = c is not None and c.q is q
            res = real_evaluate(source, rows, start, q, *a, **k)
            self.calls.append((be.launches - launches, len(up) - ups, sum(up[ups:]),
                               back[backs:], be.rows_uploaded - sent, cached))
            return res
        be.evaluate = evaluate


def _play(backend, nodes, steps, monkeypatch=None, seed=7, remember_failures=True):
    """Bindings of ``steps`` (("pods", [pod dicts]) | ("delete", k: the
    k-th bound pod) | ("update", node dict) | ("add", node dict) |
    ("remove", node name)) on ``nodes`` with batching off; the backend and
    (cuda, with ``monkeypatch``) its ``_Transfers``."""
    cluster = build_cluster(nodes, HALF)
    be = cluster.framework_for(parse_pod(pod_dict("probe")), backend).backend
    seen = _Transfers(be, monkeypatch) if monkeypatch is not None else None
    sched = Scheduler(cluster, backend, seed=seed, batch=False,
                      remember_failures=remember_failures)
    out = []
    for what, arg in steps:
        if what == "pods":
            out += [(b.pod, b.node) for b in sched.schedule_pending(arg)[0]]
        elif what == "delete":
            bound = [p for p, n in out if n is not None and p in cluster.state.pods]
            if bound:
                sched.delete_pod(bound[arg % len(bound)])
        elif what == "update":
            sched.update_node(arg)
        elif what == "add":
            sched.add_node(arg)
        else:
            sched.delete_node(arg)
    return out, be, seen, cluster


def test_a_device_cycle_sends_one_staged_copy_launches_two_and_reads_four_numbers(monkeypatch):
    nodes = [_node(i, cpu=("2", "4", "8")[i % 3], gold=i % 5 == 0, spot=i % 4 == 1)
             for i in range(16)]
    pods = [pod_dict(f"p{i:02d}", created=i, **KINDS[i % 3]) for i in range(21)]
    # a node update compiles the queries anew (their first cycles again)
    steps = [("pods", pods[:6]), ("delete", 2), ("pods", pods[6:9]),
             ("update", _node(3, cpu="16", gold=True)), ("pods", pods[9:15]),
             ("update", _node(5, unschedulable=True)), ("delete", 0), ("pods", pods[15:])]
    got, be, seen, cluster = _play("cuda", nodes, steps, monkeypatch)
    assert got == _play("numba", nodes, steps)[0]
    width = staged_rows.row_width(cluster.state.columns())
    assert len(seen.calls) == len(pods) and all(c[3] == [cycle.OUT_LEN] for c in seen.calls)
    steady = [c for c in seen.calls if c[5]]
    assert len(steady) >= 10, seen.calls
    for launches, ups, sent, back, rows, _ in steady:
        # the staged rows (one copy: their numbers and pack values), the
        # pick that writes and recomputes them first, four numbers back
        assert launches == 1 and ups <= 1 and back == [cycle.OUT_LEN], seen.calls
        assert sent == 8 * staged_rows.staged_size(rows, width), seen.calls
        # behind by the last placement of each kind (its own too) and a
        # deleted pod
        assert rows <= len(KINDS) + 1, seen.calls
    assert be.rows_downloaded == 0
    # the packs the staged rows were written into are the host's columns
    be._sync_columns(cluster.state)
    for f, host in zip(cluster.state.columns()._fields, cluster.state.columns()):
        assert (be.device_column(f) == host).all(), f


class _DeviceCalls:
    """The device API calls ``evaluate`` makes, per call: allocations
    (device and pinned arrays, ``to_device``), device array views (an
    object the driver's wrapper builds), copies each way, launches."""

    KINDS = ("alloc", "view", "up", "back")

    def __init__(self, be, monkeypatch):
        from numba import cuda
        self.calls = []
        device_type = type(cuda.device_array(1))
        got = dict.fromkeys(self.KINDS, 0)
        inside = [0]            # in a counted call or a simulated kernel

        def counted(fn, kind):
            def inner(*a, **k):
                if inside[0]:
                    return fn(*a, **k)
                got[kind] += 1
                inside[0] += 1          # what the call does inside is its own
                try:
                    return fn(*a, **k)
                finally:
                    inside[0] -= 1
            return inner
        if device_type.__name__ == "FakeCUDAArray":        # Numba's CUDA simulator
            from numba.cuda.simulator import kernel as sim
            launch = sim.FakeCUDAKernel.__call__

            def in_kernel(*a, **k):
                inside[0] += 1
                try:
                    return launch(*a, **k)
                finally:
                    inside[0] -= 1
            monkeypatch.setattr(sim.FakeCUDAKernel, "__call__", in_kernel)
        for name in ("device_array", "device_array_like", "pinned_array", "to_device"):
            monkeypatch.setattr(cuda, name, counted(getattr(cuda, name), "alloc"))
        for name, kind in (("__getitem__", "view"), ("copy_to_device", "up"),
                           ("copy_to_host", "back")):
            monkeypatch.setattr(device_type, name, counted(getattr(device_type, name), kind))
        from numba.cuda.cudadrv import driver
        for name, kind in (("host_to_device", "up"), ("device_to_host", "back")):
            monkeypatch.setattr(driver, name, counted(getattr(driver, name), kind))
        real_evaluate = be.evaluate

        def evaluate(source, rows, start, q, *a, **k):
            before, launches = dict(got), be.launches
            c = be._caches.get(id(q))
            cached = c is not None and c.q is q
            res = real_evaluate(source, rows, start, q, *a, **k)
            self.calls.append(({kind: got[kind] - before[kind] for kind in self.KINDS}
                               | {"launches": be.launches - launches}, cached))
            return res
        be.evaluate = evaluate


def test_a_steady_device_cycle_allocates_nothing_and_makes_no_device_views(monkeypatch):
    """Once its query has a row cache (the same steps played before), a
    placement cycle (alike pods and unlike ones,
    deleted pods between) allocates nothing on the device or pinned, makes
    no view of a device array, copies up at most once (the staged rows),
    launches at most twice and copies back once; the placements are the
    numba backend's."""
    nodes = [_node(i, cpu="16", gold=i % 5 == 0, spot=i % 4 == 1) for i in range(16)]

    def steps(tag):
        pods = [pod_dict(f"{tag}{i:02d}", created=i, **KINDS[(i // 4) % 3])
                for i in range(24)]
        return [("pods", pods[:8]), ("delete", 1), ("pods", pods[8:16]), ("delete", 3),
                ("pods", pods[16:])]
    played = steps("a") + steps("b")
    cluster = build_cluster(nodes, HALF)
    be = cluster.framework_for(parse_pod(pod_dict("probe")), "cuda").backend
    seen = _DeviceCalls(be, monkeypatch)
    sched = Scheduler(cluster, "cuda", seed=7, batch=False)
    out = []
    for what, arg in played:
        if what == "pods":
            out += [(b.pod, b.node) for b in sched.schedule_pending(arg)[0]]
        else:
            bound = [p for p, n in out if n is not None and p in cluster.state.pods]
            sched.delete_pod(bound[arg % len(bound)])
    assert out == _play("numba", nodes, played)[0]
    assert len(seen.calls) == 48 and all(cached for _, cached in seen.calls[24:])
    for got, _ in seen.calls[24:]:
        assert got["alloc"] == 0 and got["view"] == 0, seen.calls
        assert got["up"] <= 1 and got["launches"] <= 2 and got["back"] == 1, seen.calls
    assert sum(got["up"] for got, _ in seen.calls[24:]) >= 20, seen.calls


SOFT_SPREAD = {"topologySpreadConstraints": [{
    "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
    "labelSelector": {"matchLabels": {"app": "a"}}}]}


def test_a_host_ranked_cycle_sends_and_reads_back_only_the_rows_behind(monkeypatch):
    """A cycle with a host plugin (a soft topology spread) ranks on the
    host: once its query has a row cache, the rows written since (and those
    a node event's query change reaches) go up staged in one copy, one
    launch writes and recomputes them and gathers them, and one copy of
    those rows alone comes back (not the span between them, nor the
    packs' span copies), across placements, deleted pods and node events
    (an update, a node appended, a new label value the pods' affinity
    names, a node removed; the query compiled anew after each also sends
    its buffer).  The placements are the numba backend's."""
    affinity = {"affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": {
            "matchExpressions": [{"key": "tier", "operator": "In",
                                  "values": ["gold", "platinum"]}]}}]}}}

    def node(i, cpu="4", tier="silver"):
        return node_dict(f"n{i:02d}", cpu=cpu, labels={"zone": f"z{i % 3}", "tier": tier},
                         taints=PREFER if i % 4 == 1 else None)
    nodes = [node(i, cpu=("2", "4", "8")[i % 3], tier="gold" if i % 5 == 0 else "silver")
             for i in range(40)]
    pods = [pod_dict(f"p{i:02d}", created=i, cpu="250m", labels={"app": "a"},
                     spec={**SOFT_SPREAD, **affinity}) for i in range(14)]
    steps = [("pods", pods[:3]), ("update", node(37, cpu="16")), ("pods", pods[3:5]),
             ("add", node(40)), ("pods", pods[5:7]), ("delete", 1), ("pods", pods[7:9]),
             ("update", node(2, tier="platinum")), ("pods", pods[9:11]),
             ("remove", "n30"), ("pods", pods[11:])]
    got, be, seen, cluster = _play("cuda", nodes, steps, monkeypatch)
    assert got == _play("numba", nodes, steps)[0]
    assert len(seen.calls) == len(pods)
    width = staged_rows.row_width(cluster.state.columns())
    (n_slots,) = {c.raw.shape[1] for c in be._caches.values()}
    behind = [c for c in seen.calls[1:] if c[4]]
    assert len(behind) >= 10, seen.calls
    for launches, ups, sent, back, rows, cached in behind:
        # after a node event the query compiled anew also sends its buffer
        assert launches == 1 and ups == (1 if cached else 2), seen.calls
        if cached:
            assert sent == 8 * staged_rows.staged_size(rows, width), seen.calls
        assert back == [rows * (1 + n_slots)], seen.calls
        # the last placement's row and the event's (far apart: no span)
        assert rows <= 2, seen.calls


def test_a_cycle_with_nothing_written_sends_nothing(monkeypatch):
    """A pod that fits nowhere leaves the state as it was: the next cycle
    of its kind has no row to stage, so no copy up, one launch (the
    failures not remembered: each pod takes its cycle)."""
    nodes = [_node(i) for i in range(6)]
    huge = [pod_dict(f"h{i}", cpu="64", created=i) for i in range(3)]
    _got, _be, seen, _cluster = _play("cuda", nodes, [("pods", huge)], monkeypatch,
                                      remember_failures=False)
    assert len(seen.calls) == 3 and all(c[:3] == (1, 0, 0) for c in seen.calls[1:]), seen.calls


_node_st = st.builds(lambda cpu, gold, spot: (cpu, gold, spot), st.sampled_from(["1", "2", "4"]),
                     st.booleans(), st.booleans())
_step_st = st.one_of(
    st.tuples(st.just("pods"), st.lists(st.integers(0, len(KINDS) - 1), min_size=1,
                                        max_size=4)),
    st.tuples(st.just("delete"), st.integers(0, 20)),
    st.tuples(st.just("update"), st.tuples(st.integers(0, 5), _node_st)),
    st.tuples(st.just("add"), _node_st),
    st.tuples(st.just("remove"), st.integers(0, 5)))


@settings(max_examples=15, deadline=None)
@given(shapes=st.lists(_node_st, min_size=2, max_size=6), plan=st.lists(_step_st, max_size=6),
       seed=st.integers(0, 3))
def test_random_clusters_place_as_numba_cycle_by_cycle(shapes, plan, seed):
    nodes = [_node(i, *s) for i, s in enumerate(shapes)]
    steps, made, added, removed = [], 0, 0, set()
    for what, arg in [("pods", [0, 1, 2])] + plan:
        if what == "pods":
            steps.append((what, [pod_dict(f"p{made + j:02d}", created=made + j, **KINDS[k])
                                 for j, k in enumerate(arg)]))
            made += len(arg)
        elif what == "update":
            # a removed node is not updated (the state refuses it on every backend)
            if arg[0] % len(nodes) not in removed:
                steps.append((what, _node(arg[0] % len(nodes), *arg[1])))
        elif what == "add":
            steps.append((what, _node(len(nodes) + added, *arg)))
            added += 1
        elif what == "remove":
            if arg % len(nodes) not in removed:
                removed.add(arg % len(nodes))
                steps.append((what, f"n{arg % len(nodes):02d}"))
        else:
            steps.append((what, arg))
    got = _play("cuda", nodes, steps, seed=seed)[0]
    assert got == _play("numba", nodes, steps, seed=seed)[0]


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 3), writes=st.lists(st.tuples(
    st.integers(0, 11), st.sampled_from(["unschedulable", "label", "requested", "taint"]),
    st.integers(0, 10)), min_size=1, max_size=12), start=st.integers(0, 11))
def test_staged_rows_land_in_the_packs_whatever_column_they_wrote(seed, writes, start):
    """Writes to any node column (flags, label values, int64 columns)
    between cycles of one compiled query reach the device packs through
    the staged upload, and the cycles answer as numba's on the same state:
    each write is stamped as a ``ColumnSource`` stamps one (``version``,
    ``row_version``, and the state's ``write_log``), with the node set and
    tables unchanged."""
    nodes, pods = sample(seed=seed, nodes=12, pods=12)
    cluster = build_cluster(nodes + pods[:6], HALF)
    st_ = cluster.state
    pod = parse_pod(pods[6])
    fws = {b: cluster.framework_for(pod, b) for b in ("cuda", "numba")}
    be = fws["cuda"].backend
    cols = st_.columns()

    def cycle_of(backend):
        res = fws[backend].run_cycle(st_, pod, seed=seed, start_index=start, want_scores=False)
        return res.selected_row, res.processed, res.found

    assert cycle_of("cuda") == cycle_of("numba")
    staged, launched = be.copies, be.launches
    for row, what, v in writes:
        if what == "unschedulable":
            cols.unschedulable[row] = not cols.unschedulable[row]
        elif what == "label":
            k = v % cols.label_vals.shape[1]
            cols.label_vals[row, k] = cols.label_vals[(row + v) % 12, k]
        elif what == "requested":
            cols.requested[row, 0] += 50 * v
        else:
            cols.taint_bits[row, 0] ^= v % 4
        st_.version += 1
        st_.row_version[row] = st_.version
        st_.write_log.add(row, st_.version)
        assert cycle_of("cuda") == cycle_of("numba")
    # one staged copy and one launch a cycle
    assert be.copies - staged <= len(writes) and be.launches - launched == len(writes)
    be._sync_columns(st_)
    for f, host in zip(cols._fields, cols):
        assert (be.device_column(f) == host).all(), f
