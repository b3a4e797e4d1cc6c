"""PodTopologySpread's DoNotSchedule filter and InterPodAffinity's filter
answered by the cuda backend's one-at-a-time pick (``domain_rules_cycle``;
Numba's CUDA simulator in CI, the device on a GPU machine) and by the numba
backend's compiled scan (``cycle.pick_in_order``): the pick with
per-domain rules is the pick over the host filter's answers (the kernel,
its numba twin), placements are the numpy and numba backends' on random
clusters with random spread constraints and required pod (anti-)affinity
(batching on and off), and a cycle copies up the domain sums that moved
since the last one, not a pass of the filter over every node."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from support.backends import needs_cuda
from support.launch_guard import device_arrays_only  # noqa: F401 (autouse)

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels import domain_rules_cycle as DRC
from tensorsched.kernels.fused import cycle
from tensorsched.kernels.fused.ties import seed_mix


ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
HALF = {"apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration", "percentageOfNodesToScore": 50}


class _Sums:
    """A ``RuleSums`` kept by hand: sums [D] and the journal of moved domains."""

    serial = 0

    def __init__(self, sums):
        _Sums.serial += 1
        self.serial = _Sums.serial
        self.sums = np.asarray(sums, np.int64)
        self.version = 0
        self.log = []

    def bump(self, d, delta):
        self.sums[d] += delta
        self.version += 1
        self.log.append(d)

    def changed_since(self, version):
        return np.array(sorted(set(self.log[version:])), np.int64)


def _masked(reasons, rules):
    """The host filter's answer folded into the reasons (what the host path
    ranks): a row failing a rule gets a reason bit."""
    out = reasons.copy()
    for x in rules:
        d = x.domp1
        fails = d == 0 if x.fail_absent else np.zeros(d.shape[0], bool)
        has = d > 0
        above = x.counts.sums[d[has] - 1] > x.thresh
        fails[has] |= (above & x.fail_above) | (~above & x.fail_not_above)
        out[fails[: out.shape[0]]] |= 1 << 20
    return out


@st.composite
def _case(draw):
    n = draw(st.integers(1, 40))
    s = draw(st.integers(1, 3))
    reasons = np.array(draw(st.lists(st.sampled_from((0, 0, 0, 2)), min_size=n, max_size=n)),
                       np.int64)
    raw = np.array(draw(st.lists(st.integers(0, 50), min_size=n * s, max_size=n * s)),
                   np.int64).reshape(n, s)
    rules = []
    for _ in range(draw(st.integers(1, 3))):
        d = draw(st.integers(1, 5))
        domp1 = np.array(draw(st.lists(st.integers(0, d), min_size=n, max_size=n)), np.int64)
        sums = _Sums(draw(st.lists(st.integers(0, 4), min_size=d, max_size=d)))
        above = draw(st.booleans())
        rules.append(DRC.CycleRule(domp1, sums, draw(st.integers(0, 4)), draw(st.booleans()),
                                   above, draw(st.booleans()) if above else True))
    moves = draw(st.lists(st.tuples(st.integers(0, len(rules) - 1), st.integers(0, 4),
                                    st.sampled_from((-1, 1, 2))), max_size=6))
    active = np.array(draw(st.lists(st.booleans(), min_size=s, max_size=s)))
    norm = np.array(draw(st.lists(st.sampled_from((0, 1, 3)), min_size=s, max_size=s)))
    weights = np.array(draw(st.lists(st.integers(0, 3), min_size=s, max_size=s)))
    return (reasons, raw, rules, moves, cycle.slot_params(active, norm, weights, s),
            draw(st.integers(0, n - 1)), draw(st.integers(0, n)), draw(st.integers(0, 99)))


@pytest.mark.cudasim
@needs_cuda
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case())
def test_pick_with_rules_is_the_pick_over_the_filtered_rows(case):
    """The kernel (through a ``DeviceRuleTable`` following the sums' moves)
    and its numba twin, with rules, answer as the twin over reasons with
    the rules' failures folded in."""
    from numba import cuda

    from tensorsched.kernels.fused import _cuda_cycle as DCY
    reasons, raw, rules, moves, sp, start, to_find, seed = case
    n = reasons.shape[0]
    rows = np.arange(n, dtype=np.int64)
    pods = np.zeros((n, 1), np.int64)
    mix = seed_mix(seed)
    table = DRC.DeviceRuleTable(cuda, rules, n)
    packs = (cuda.to_device(pods), cuda.to_device(np.zeros((1, 1), np.int8)),
             cuda.to_device(np.zeros((1, 1), np.int32)))
    none = cuda.to_device(np.zeros(1, np.int64))
    d_reasons, d_raw, d_rows = cuda.to_device(reasons), cuda.to_device(raw), cuda.to_device(rows)
    for step in range(2):       # as built, then after the moves (the journal's domains)
        if step:
            for r, d, delta in moves:
                ds = rules[r].counts
                ds.bump(d % ds.sums.shape[0], delta)
        want = cycle.pick(rows, start, _masked(reasons, rules), raw, to_find, sp, mix, pods, 0, 3)
        twin = cycle.pick(rows, start, reasons, raw, to_find, sp, mix, pods, 0, 3,
                          rules=DRC.host_rules(rules))
        assert twin.tolist() == want.tolist()
        rbuf, k, _ = table.stage(rules)
        moved = {(r, d % rules[r].counts.sums.shape[0]) for r, d, _ in moves}
        assert k == (len(moved) if step else 0)
        out = cuda.to_device(np.zeros(cycle.OUT_LEN, np.int64))
        DCY.launch_cycle_pick(n, none, 0, packs, none, d_rows, d_reasons, d_raw,
                              cuda.to_device(sp), start, to_find, mix, 0, out,
                              rules=(table, rbuf, k))
        assert out.copy_to_host().tolist() == want.tolist()
        # the device's copy of the sums is level with the host's
        assert table.sums.copy_to_host().tolist() == DRC.host_rules(rules).sums.tolist()


# --------------------------------------------------------------- placements

@st.composite
def _spread_constraint(draw):
    c = {"maxSkew": draw(st.integers(1, 3)), "topologyKey": draw(st.sampled_from((ZONE, HOST))),
         "whenUnsatisfiable": draw(st.sampled_from(("DoNotSchedule", "DoNotSchedule",
                                                    "ScheduleAnyway"))),
         "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(("a", "b")))}}}
    if draw(st.booleans()):
        c["minDomains"] = draw(st.integers(1, 4))
    if c["whenUnsatisfiable"] != "DoNotSchedule":
        c.pop("minDomains", None)
    if draw(st.booleans()):
        c["nodeAffinityPolicy"] = draw(st.sampled_from(("Honor", "Ignore")))
    if draw(st.booleans()):
        c["nodeTaintsPolicy"] = draw(st.sampled_from(("Honor", "Ignore")))
    return c


TAINT = [{"key": "t", "value": "x", "effect": "NoSchedule"}]


@st.composite
def _scenario(draw):
    n = draw(st.integers(2, 12))
    nodes = []
    for i in range(n):
        labels = {}
        if draw(st.integers(0, 5)):
            labels[ZONE] = draw(st.sampled_from(("z1", "z2", "z3")))
        if draw(st.booleans()):
            labels["tier"] = "gold"
        nodes.append(node_dict(f"n{i:02d}", cpu=draw(st.sampled_from(("1", "2", "4"))),
                               labels=labels, taints=TAINT if draw(st.integers(0, 4)) == 0
                               else None))
    bound = [pod_dict(f"b{j}", cpu="100m", labels={"app": draw(st.sampled_from(("a", "b")))},
                      spec={"nodeName": f"n{draw(st.integers(0, n - 1)):02d}"})
             for j in range(draw(st.integers(0, 6)))]
    kinds = []
    for _ in range(draw(st.integers(1, 3))):
        spec = {"topologySpreadConstraints": draw(st.lists(
            _spread_constraint(), min_size=1, max_size=2,
            unique_by=lambda c: (c["topologyKey"], c["whenUnsatisfiable"])))}
        if draw(st.integers(0, 3)) == 0:
            spec["nodeSelector"] = {"tier": "gold"}
        if draw(st.integers(0, 3)) == 0:
            spec["tolerations"] = [{"key": "t", "operator": "Exists"}]
        if draw(st.integers(0, 2)) == 0:
            spec["affinity"] = {draw(st.sampled_from(("podAffinity", "podAntiAffinity"))): {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": draw(st.sampled_from(("a", "b")))}},
                     "topologyKey": draw(st.sampled_from((ZONE, HOST)))}]}}
            if draw(st.booleans()):
                spec.pop("topologySpreadConstraints")
        kinds.append((spec, {"app": draw(st.sampled_from(("a", "b")))},
                      draw(st.sampled_from(("250m", "500m", "1")))))
    count = draw(st.integers(1, 10))
    pods = [pod_dict(f"p{i:02d}", cpu=kinds[i % len(kinds)][2], created=i,
                     labels=kinds[i % len(kinds)][1], spec=kinds[i % len(kinds)][0])
            for i in range(count)]
    return nodes + bound, pods, draw(st.booleans()), draw(st.integers(0, 9))


def _play(objs, pods, backend, half, seed, batch, messages=False):
    cluster = build_cluster(objs, HALF if half else None)
    be = cluster.framework_for(parse_pod(pods[0]), backend).backend
    out = Scheduler(cluster, backend, seed=seed, batch=batch).schedule_pending(pods)[0]
    if messages:        # the FailedScheduling message of each pod that fits nowhere
        return [(b.pod, b.node, b.message if b.node is None else "") for b in out], be
    return [(b.pod, b.node) for b in out], be


@pytest.mark.cudasim
@needs_cuda
@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_scenario())
def test_spread_placements_equal_on_every_backend(scenario):
    """Random clusters (zones missing on some nodes, taints, a node label
    the pods may select) and random spread constraints (zone or hostname,
    maxSkew, minDomains, the node inclusion policies, DoNotSchedule or
    ScheduleAnyway) over pods already bound: numpy, numba and cuda place
    alike, one cycle a pod and in runs, and a pod that fits nowhere has
    the same FailedScheduling message (its reasons by node)."""
    objs, pods, half, seed = scenario
    for batch in (False, True):
        want, _ = _play(objs, pods, "numpy", half, seed, batch, messages=True)
        assert _play(objs, pods, "numba", half, seed, batch, messages=True)[0] == want
        got, be = _play(objs, pods, "cuda", half, seed, batch, messages=True)
        assert got == want


@pytest.mark.cudasim
@needs_cuda
def test_device_rules_are_taken_and_answer_as_numba():
    """DoNotSchedule-only spread pods one at a time: the cuda backend picks
    with the rules on the device (``rule_picks``), nothing of its row cache
    copied back while a node is found, and places as numba; a pod that
    fits nowhere falls back to the host filter and keeps its reasons."""
    spec = {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "a"}}, "minDomains": 2},
        {"maxSkew": 2, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "a"}}}]}
    nodes = [node_dict(f"n{i:02d}", cpu="2", labels={ZONE: f"z{i % 3}"} if i % 5 else None)
             for i in range(15)]
    pods = [pod_dict(f"p{i:02d}", cpu="500m", created=i, labels={"app": "a"}, spec=spec)
            for i in range(14)]
    pods.append(pod_dict("huge", cpu="64", created=99, labels={"app": "a"}, spec=spec))
    want, _ = _play(nodes, pods, "numba", True, 3, False)
    got, be = _play(nodes, pods, "cuda", True, 3, False)
    assert got == want
    assert want[-1][1] is None and all(node for _, node in want[:-1])
    assert be.rule_picks == len(pods), be.rule_picks
    assert be.rows_downloaded == len(nodes)       # the pod that fits nowhere, once


def _misfits(n_nodes=30):
    """Nodes in three zones (every fifth but the first without the zone),
    one pod bound to the large first node and spread pods placed, then a
    pod too large for any node and two (of other sizes) that only the
    large node holds, which the spread rule keeps off it (its host's skew)."""
    spec = {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "a"}}},
        {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "a"}}}]}
    nodes = [node_dict(f"n{i:02d}", cpu="2" if i else "64",
                       labels={ZONE: f"z{i % 3}"} if i % 5 or not i else None)
             for i in range(n_nodes)]
    bound = pod_dict("b0", cpu="100m", labels={"app": "a"}, spec={"nodeName": "n00"})
    pods = [pod_dict(f"p{i:02d}", cpu="500m", created=i, labels={"app": "a"}, spec=spec)
            for i in range(6)]
    pods += [pod_dict(f"huge{i}", cpu=cpu, created=10 + i, labels={"app": "a"}, spec=spec)
             for i, cpu in enumerate(("128", "32", "48"))]
    return nodes + [bound], pods


@pytest.mark.cudasim
@needs_cuda
def test_a_pod_that_fits_nowhere_is_not_ranked_on_the_host(monkeypatch):
    """A rules cycle whose pick finds no row answers with its reasons alone:
    the host filter runs once for them (the diagnosis reads them), and the
    host's gather and ranking (``_host_finalize``, which ran its filter
    again over a gathered copy) never runs; the FailedScheduling messages
    are numpy's and numba's."""
    from tensorsched.kernels.fused.backends import CudaBackend
    nodes, pods = _misfits()
    want, _ = _play(nodes, pods, "numpy", False, 3, False, messages=True)
    assert _play(nodes, pods, "numba", False, 3, False, messages=True)[0] == want
    assert [node for _, node, _ in want].count(None) == 3
    assert all("topology spread" in msg for _, node, msg in want[-2:]), want
    calls = []
    real = CudaBackend._host_finalize
    monkeypatch.setattr(CudaBackend, "_host_finalize",
                        lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    got, be = _play(nodes, pods, "cuda", False, 3, False, messages=True)
    assert got == want
    assert be.rule_picks == len(pods)
    assert calls == [] and be.host_finalizes == 0
    assert be.fits_nowhere == 3


def test_numba_pod_that_fits_nowhere_is_not_ranked_after_the_scan():
    """The numba backend's rules scan that finds no row: the reasons with
    the host filters' bits, no ranking after it; numpy's messages."""
    nodes, pods = _misfits()
    want, _ = _play(nodes, pods, "numpy", False, 3, False, messages=True)
    got, be = _play(nodes, pods, "numba", False, 3, False, messages=True)
    assert got == want
    assert be.rule_picks == len(pods) and be.fits_nowhere == 3


@pytest.mark.cudasim
@needs_cuda
def test_a_cycle_uploads_the_domains_that_moved_and_runs_no_host_filter():
    """After the first cycle, a spread cycle copies up exactly the domain
    sums that moved since the last (the placed pod's zone, and its host,
    per constraint), and the plugin evaluates no node row on the host (the
    host path ran its filter over every row each cycle)."""
    spec = {"topologySpreadConstraints": [
        {"maxSkew": 3, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "a"}}},
        {"maxSkew": 2, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "a"}}}]}
    n = 60
    nodes = [node_dict(f"n{i:02d}", cpu="8", labels={ZONE: f"z{i % 4}"}) for i in range(n)]
    cluster = build_cluster(nodes, None)
    pods = [pod_dict(f"p{i:02d}", cpu="100m", created=i, labels={"app": "a"}, spec=spec)
            for i in range(8)]
    fw = cluster.framework_for(parse_pod(pods[0]), "cuda")
    be = fw.backend
    spread = fw.plugins["PodTopologySpread"]
    sched = Scheduler(cluster, "cuda", seed=5, batch=False)
    sched.schedule_pending(pods[:1])
    per_cycle = []
    evaluated = spread.rows_evaluated
    for p in pods[1:]:
        before = be.domain_sums_uploaded
        sched.schedule_pending([p])
        per_cycle.append(be.domain_sums_uploaded - before)
    # the pod placed in the cycle before moved one zone and one host
    assert per_cycle == [2] * (len(pods) - 1), per_cycle
    assert spread.rows_evaluated == evaluated
    assert be.rule_picks == len(pods) and be.rows_downloaded == 0


@pytest.mark.cudasim
@needs_cuda
# (4 examples: every other cuda test of this module stages by the driver
# copy, the default; this one compares it with the array copies)
@settings(max_examples=4, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_scenario())
def test_rule_stagings_go_up_by_one_driver_copy(scenario):
    """A rules cycle's staging (thresholds and moved sums) goes up by one
    driver copy into the device buffer, no device array ``copy_to_device``
    (``DeviceRuleTable.DRIVER_COPY``): each staging the array copies sent
    goes by the driver, and placements and the messages of pods that fit
    nowhere are those of the array copies."""
    objs, pods, half, seed = scenario
    sent = []               # per staging: (array copies, driver copies)
    real, flag = DRC.DeviceRuleTable.stage, DRC.DeviceRuleTable.DRIVER_COPY

    def stage(self, rules):
        dev_type, calls, driver = type(self._dev), [], self.driver_copies
        orig = dev_type.copy_to_device

        def counted(arr, *a, **k):
            calls.append(1)
            return orig(arr, *a, **k)
        dev_type.copy_to_device = counted
        try:
            return real(self, rules)
        finally:
            dev_type.copy_to_device = orig
            sent.append((len(calls), self.driver_copies - driver))
    DRC.DeviceRuleTable.stage = stage
    try:
        for batch in (False, True):
            runs = {}
            for driver in (False, True):
                DRC.DeviceRuleTable.DRIVER_COPY = driver
                sent.clear()
                runs[driver] = (_play(objs, pods, "cuda", half, seed, batch, messages=True)[0],
                                list(sent))
            (want, old), (got, new) = runs[False], runs[True]
            assert got == want
            assert [d for _, d in old] == [0] * len(old)
            assert new == [(0, n) for n, _ in old]
    finally:
        DRC.DeviceRuleTable.stage, DRC.DeviceRuleTable.DRIVER_COPY = real, flag


@pytest.mark.cudasim
@needs_cuda
def test_required_anti_affinity_cycles_pick_on_the_device():
    """Pods with a required hostname anti-affinity to their own kind, one at
    a time: the pick answers InterPodAffinity's filter on the device (the
    pod's own term and the bound pods' terms matching it), a cycle copies
    up the hosts that moved, and the placements are numba's (one pod a
    node, then none)."""
    term = {"labelSelector": {"matchLabels": {"app": "g"}}, "topologyKey": HOST}
    spec = {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    nodes = [node_dict(f"n{i:02d}", cpu="8", labels={ZONE: f"z{i % 2}"}) for i in range(6)]
    pods = [pod_dict(f"p{i:02d}", cpu="100m", created=i, labels={"app": "g"}, spec=spec)
            for i in range(8)]
    want, _ = _play(nodes, pods, "numba", False, 4, False)
    got, be = _play(nodes, pods, "cuda", False, 4, False)
    assert got == want
    assert [node for _, node in want].count(None) == 2
    assert be.rule_picks >= 6


@pytest.mark.cudasim
@needs_cuda
def test_a_journal_no_longer_reaching_the_table_sends_every_domain():
    """Counts whose journal lost the table's version (``changed_since`` None)
    go up whole, as (domain, sum) pairs, and the device's copy is level;
    thresholds alone moving send R numbers and no sum; nothing moving
    sends nothing."""
    from numba import cuda

    class Forgetful(_Sums):
        def changed_since(self, version):
            return None
    sums = Forgetful([3, 0, 5, 1])
    kept = _Sums([1, 1])
    rules = [DRC.CycleRule(np.array([1, 2, 3, 4, 0], np.int64), sums, 2),
             DRC.CycleRule(np.array([1, 1, 2, 2, 2], np.int64), kept, 0)]
    table = DRC.DeviceRuleTable(cuda, rules, 5)
    assert table.stage(rules)[1:] == (0, 0)
    rules[1] = rules[1]._replace(thresh=1)
    _, k, sent = table.stage(rules)
    assert k == 0 and sent > 0          # the thresholds went up
    sums.bump(2, 1)
    kept.bump(0, 1)
    rbuf, k, _ = table.stage(rules)
    assert k == 4 + 1
    # what the pick's launch writes (its step 0), here by hand
    flat = table.sums.copy_to_host().reshape(-1)
    got = rbuf.copy_to_host()
    for j in range(k):
        flat[got[2 + j]] = got[2 + k + j]
    assert flat.reshape(2, -1).tolist() == DRC.host_rules(rules).sums.tolist()
    assert got[:2].tolist() == [2, 1]


# ------------------------------------------------------------ numba's scan

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case())
def test_numba_scan_with_rules_is_the_pick_over_the_filtered_rows(case):
    """``pick_in_order`` (one scan stopping at the ``num_to_find``-th
    feasible row, a ``HostRuleTable`` following the sums' moves) answers as
    the chunked twin over reasons with the rules' failures folded in."""
    reasons, raw, rules, moves, sp, start, to_find, seed = case
    n = reasons.shape[0]
    rows = np.arange(n, dtype=np.int64)
    pods = np.zeros((n, 1), np.int64)
    mix = seed_mix(seed)
    table = DRC.HostRuleTable(rules, n)
    for step in range(2):       # as built, then after the moves (the journal's domains)
        if step:
            for r, d, delta in moves:
                ds = rules[r].counts
                ds.bump(d % ds.sums.shape[0], delta)
        want = cycle.pick(rows, start, _masked(reasons, rules), raw, to_find, sp, mix, pods, 0, 3)
        assert table.holds(rules, n)
        host, k = table.current(rules)
        moved = {(r, d % rules[r].counts.sums.shape[0]) for r, d, _ in moves}
        assert k == (len(moved) if step else 0)
        assert host.sums.tolist() == DRC.host_rules(rules).sums.tolist()
        got = cycle.pick_in_order(rows, start, reasons, raw, to_find, sp, mix, pods, 0, host)
        assert got.tolist() == want.tolist()


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_scenario())
def test_spread_placements_equal_on_numpy_and_numba(scenario):
    """The random clusters and constraints of the test above, without the
    cuda backend: numba's cycle with the rules in its scan (its totals
    from the row cache's) places as numpy, one cycle a pod and in runs."""
    objs, pods, half, seed = scenario
    for batch in (False, True):
        want, _ = _play(objs, pods, "numpy", half, seed, batch)
        assert _play(objs, pods, "numba", half, seed, batch)[0] == want


def test_host_table_copies_every_domain_when_the_journal_is_lost():
    """Counts whose journal lost the table's version (``changed_since``
    None) are copied whole; thresholds move with no sum copied; a table
    does not hold counts that grew past its width."""
    class Forgetful(_Sums):
        def changed_since(self, version):
            return None
    sums = Forgetful([3, 0, 5, 1])
    kept = _Sums([1, 1])
    rules = [DRC.CycleRule(np.array([1, 2, 3, 4, 0], np.int64), sums, 2),
             DRC.CycleRule(np.array([1, 1, 2, 2, 2], np.int64), kept, 0)]
    table = DRC.HostRuleTable(rules, 5)
    assert table.current(rules)[1] == 0
    rules[1] = rules[1]._replace(thresh=1)
    host, k = table.current(rules)
    assert k == 0 and host.thr.tolist() == [2, 1]
    sums.bump(2, 1)
    kept.bump(0, 1)
    host, k = table.current(rules)
    assert k == 4 + 1
    assert host.sums.tolist() == DRC.host_rules(rules).sums.tolist()
    assert table.holds(rules, 5) and not table.holds(rules, 6)
    sums.sums = np.zeros(9, np.int64)
    assert not table.holds(rules, 5)


def _spread_spec(zone_skew=3):
    return {"topologySpreadConstraints": [
        {"maxSkew": zone_skew, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "a"}}, "minDomains": 2},
        {"maxSkew": 2, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "a"}}}]}


def test_numba_cycles_test_the_rules_in_the_compiled_scan():
    """DoNotSchedule-only spread pods one at a time on numba: every cycle
    picks with the rules in the compiled scan (``rule_picks``), the plugin
    evaluates no node row on the host while a node is found, a cycle copies
    the domain sums that moved (one zone and one host per constraint), and
    the placements are numpy's; a pod that fits nowhere falls back to the
    host filter (its rows evaluated there) and stays unplaced."""
    nodes = [node_dict(f"n{i:02d}", cpu="2", labels={ZONE: f"z{i % 3}"} if i % 5 else None)
             for i in range(15)]
    pods = [pod_dict(f"p{i:02d}", cpu="500m", created=i, labels={"app": "a"},
                     spec=_spread_spec(1)) for i in range(14)]
    want, _ = _play(nodes, pods, "numpy", True, 3, False)
    cluster = build_cluster(nodes, HALF)
    fw = cluster.framework_for(parse_pod(pods[0]), "numba")
    be, spread = fw.backend, fw.plugins["PodTopologySpread"]
    sched = Scheduler(cluster, "numba", seed=3, batch=False)
    got = [(b.pod, b.node) for b in sched.schedule_pending(pods[:1])[0]]
    evaluated = spread.rows_evaluated
    per_cycle = []
    for p in pods[1:]:
        before = be.domain_sums_copied
        got += [(b.pod, b.node) for b in sched.schedule_pending([p])[0]]
        per_cycle.append(be.domain_sums_copied - before)
    assert spread.rows_evaluated == evaluated
    assert be.rule_picks == len(pods), be.rule_picks
    assert per_cycle == [2] * (len(pods) - 1), per_cycle
    assert got == want and all(node for _, node in got)
    huge = pod_dict("huge", cpu="64", created=99, labels={"app": "a"}, spec=_spread_spec(1))
    assert [b.node for b in sched.schedule_pending([huge])[0]] == [None]
    assert spread.rows_evaluated > evaluated
    assert be.rule_picks > len(pods)


def test_numba_required_anti_affinity_cycles_take_the_rules():
    """Required hostname anti-affinity to their own kind, one at a time on
    numba: the scan answers InterPodAffinity's filter (one pod a node,
    then none placed) and places as numpy."""
    term = {"labelSelector": {"matchLabels": {"app": "g"}}, "topologyKey": HOST}
    spec = {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    nodes = [node_dict(f"n{i:02d}", cpu="8", labels={ZONE: f"z{i % 2}"}) for i in range(6)]
    pods = [pod_dict(f"p{i:02d}", cpu="100m", created=i, labels={"app": "g"}, spec=spec)
            for i in range(8)]
    want, _ = _play(nodes, pods, "numpy", False, 4, False)
    got, be = _play(nodes, pods, "numba", False, 4, False)
    assert got == want
    assert [node for _, node in want].count(None) == 2
    assert be.rule_picks >= 6
