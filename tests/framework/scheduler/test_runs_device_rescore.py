"""Device runs (``_cuda_run``) recompute only the rows a placement changed,
and still place every pod as numba and numpy do: random small clusters with
several spread constraints, anti-affinity, per-domain rules, normalized
scores (TaintToleration, NodeAffinity preferences) and partial scoring under
Numba's CUDA simulator, and the kernel's own count of rows rescored."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda

from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict

HOST = "kubernetes.io/hostname"
PREFER_NOT = [{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]
TOLERATE_SPOT = [{"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}]


def _config(percentage: int) -> dict:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration", "percentageOfNodesToScore": percentage}


def _spread(key, skew, app, action):
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": action,
            "labelSelector": {"matchLabels": {"app": app}}}


def _term(key, app):
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


def _spec(kind: str, key: str, app: str, tolerate: bool, prefer_zone: bool) -> dict:
    """A pod spec of one template kind (the run's pods share it)."""
    spec: dict = {}
    if kind == "soft2":             # two ScheduleAnyway constraints and a rule
        spec["topologySpreadConstraints"] = [
            _spread("zone", 1, app, "ScheduleAnyway"), _spread(HOST, 2, app, "ScheduleAnyway"),
            _spread("zone", 3, app, "DoNotSchedule")]
    elif kind == "soft":
        spec["topologySpreadConstraints"] = [_spread(key, 1, app, "ScheduleAnyway")]
    elif kind == "hard":            # a rule whose threshold follows the least domain
        spec["topologySpreadConstraints"] = [_spread(key, 1, app, "DoNotSchedule")]
    elif kind == "anti":
        spec["affinity"] = {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term(key, app)]}}
    elif kind == "affine":          # required affinity: the group's first pod opens it
        spec["affinity"] = {"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term(key, app)]}}
    elif kind in ("prefer", "avoid"):
        spec["affinity"] = {"podAffinity" if kind == "prefer" else "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 20, "podAffinityTerm": _term(key, app)}]}}
    if tolerate:
        spec["tolerations"] = TOLERATE_SPOT
    if prefer_zone:                 # NodeAffinity's score: normalized by its maximum
        spec.setdefault("affinity", {})["nodeAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "preference": {"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["z1"]}]}}]}
    return spec


@st.composite
def clusters(draw):
    """(nodes, pods, percentage, seed): up to 40 nodes (the simulator's
    blocks have 16 threads, so chunks hold a few rows each), or 104 with
    percentageOfNodesToScore 50 (each pod's scan starts where the last
    stopped); nodes in zones (some without one), some with a
    PreferNoSchedule taint (TaintToleration's score, normalized); runs of
    alike pods of up to three templates."""
    partial = draw(st.integers(0, 5)) == 0
    n = 104 if partial else draw(st.integers(2, 40))
    nodes = []
    for i in range(n):
        labels = {HOST: f"n{i}"}
        if draw(st.integers(0, 6)):
            labels["zone"] = f"z{draw(st.integers(0, 2))}"
        nodes.append(node_dict(f"n{i}", cpu=str(draw(st.sampled_from([1, 2, 4]))),
                               labels=labels,
                               taints=PREFER_NOT if draw(st.integers(0, 3)) == 0 else None))
    templates = draw(st.lists(st.tuples(
        st.sampled_from(["plain", "soft", "soft2", "hard", "anti", "affine", "prefer",
                         "avoid"]),
        st.sampled_from(["zone", HOST]), st.sampled_from(["web", "db"]), st.booleans(),
        st.booleans(), st.sampled_from(["200m", "500m"])), min_size=1, max_size=3))
    pods = []
    t = 0
    for i in range(draw(st.integers(1, 12 if partial else 30))):
        if draw(st.integers(0, 5)) == 0:
            t = draw(st.integers(0, len(templates) - 1))
        kind, key, app, tolerate, prefer_zone, cpu = templates[t]
        pods.append(pod_dict(f"p{i}", cpu=cpu, labels={"app": app}, created=i,
                             spec=_spec(kind, key, app, tolerate, prefer_zone)))
    return nodes, pods, 50 if partial else 100, draw(st.integers(0, 2**32))


def _play(nodes, pods, percentage, seed, backend, batch):
    """(placements and messages, requested columns, the scheduler)."""
    sched = Scheduler(build_cluster(nodes, _config(percentage)), backend, seed, batch=batch)
    got = [(o.pod, o.node, o.message) for o in sched.schedule_pending(pods)[0]]
    return got, sched.cluster.state.requested.copy(), sched


def _run_backend(sched):
    (fw,) = sched.cluster.frameworks.values()
    return fw.backend


@pytest.mark.cudasim
@needs_cuda
@settings(max_examples=int(os.environ.get("CUDA_RUNS_EXAMPLES", "6")), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(clusters())
def test_device_runs_rescoring_changed_rows_place_as_numba_and_numpy(case):
    """Random clusters and runs: the device runs (only changed rows
    recomputed) place as numba's runs and numpy's one-by-one cycles, pod
    for pod, messages and requested columns too.  CUDA_RUNS_EXAMPLES=N
    checks more."""
    nodes, pods, percentage, seed = case
    device = _play(nodes, pods, percentage, seed, "cuda", True)
    runs = _play(nodes, pods, percentage, seed, "numba", True)
    one = _play(nodes, pods, percentage, seed, "numpy", False)
    assert device[0] == runs[0] == one[0]
    assert np.array_equal(device[1], one[1]) and np.array_equal(runs[1], one[1])


@pytest.mark.cudasim
@needs_cuda
def test_a_device_run_rescores_only_the_placed_row_under_hostname_anti_affinity():
    """Required anti-affinity by hostname: a placement changes its own row
    only (its columns, and the rule's answer for its domain, which holds
    that row alone), and no normalization maximum moves, so after a run's
    first pod (every position scanned) each pod recomputes one row, not
    the 40."""
    n, count = 40, 24
    nodes = [node_dict(f"n{i}", cpu="4", labels={HOST: f"n{i}", "zone": f"z{i % 3}"})
             for i in range(n)]
    spec = _spec("anti", HOST, "web", False, False)
    pods = [pod_dict(f"p{i}", cpu="300m", labels={"app": "web"}, created=i, spec=spec)
            for i in range(count)]
    got, _req, sched = _play(nodes, pods, 100, 3, "cuda", True)
    assert got == _play(nodes, pods, 100, 3, "numba", False)[0]
    be = _run_backend(sched)
    assert be.run_pods == count and sched.placed_by.get("device_run", 0) == count
    full = be.run_full_scans           # the first pod of each run
    assert full == len(sched.run_lengths)
    # a full scan re-tests every row and keys every feasible one; after it,
    # the placed row is re-tested (and, now failing the rule, not keyed)
    assert be.run_rows_recomputed == full * n + (count - full) * 1
    assert be.run_rows_rekeyed == full * n
    assert be.run_rows_recomputed < n * count / 4


@pytest.mark.cudasim
@needs_cuda
def test_a_device_run_with_soft_spread_rescores_the_changed_domains():
    """ScheduleAnyway spread by hostname and by zone, TaintToleration
    normalized over PreferNoSchedule taints: a placement changes the rows of
    the zone it counted in (a third of the nodes, holding the placed row), so
    after the first pod each pod re-tests and re-reads 12 rows of 36; every
    row's key is recomputed only on the pods where a spread extreme moved
    (a whole zone's scores move, so most), and the placements are numba's."""
    n, count = 36, 30
    nodes = [node_dict(f"n{i}", cpu="8", labels={HOST: f"n{i}", "zone": f"z{i % 3}"},
                       taints=PREFER_NOT if i % 4 == 0 else None) for i in range(n)]
    spec = {"topologySpreadConstraints": [_spread("zone", 1, "web", "ScheduleAnyway"),
                                          _spread(HOST, 1, "web", "ScheduleAnyway")]}
    pods = [pod_dict(f"p{i}", cpu="100m", labels={"app": "web"}, created=i, spec=spec)
            for i in range(count)]
    got, _req, sched = _play(nodes, pods, 100, 5, "cuda", True)
    assert got == _play(nodes, pods, 100, 5, "numba", False)[0]
    be = _run_backend(sched)
    assert be.run_pods == count and be.run_full_scans == 1
    assert be.run_rows_recomputed == n + (count - 1) * n // 3
    assert n + (count - 1) * n // 3 <= be.run_rows_rekeyed <= n * count
