"""``HostVictimSearch``'s per-preemptor set-up: a search on counts moves no
pod, so it makes no ``Suspension`` (one made per preemptor was fixed host
work), and leaves the state as it was; the plugins' traits (fused,
PodIndependentWhen, probe kind) are asked once per plugin object and kept
weakly."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from support.preemption import HOST, PREEMPTION_CONFIG, preemption_node, preemption_pod

from tensorsched.framework.preemption import host_search as HS
from tensorsched.framework.runtime.plugin import PROBE_SPREAD, CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster


def _cluster():
    objs = []
    for i in range(4):
        objs.append(preemption_node(f"n{i}", 400, 8, f"z{i % 2}"))
        for k in range(3):
            objs.append(preemption_pod(f"p{i}-{k}", f"n{i}", prio=0, cpu=120, start=k))
    pre = preemption_pod("preemptor", prio=10, cpu=200,
                         spread=((HOST, 1, "a"), ("zone", 1, "a")))
    return build_cluster(objs, PREEMPTION_CONFIG), pre


def _preempt(backend, monkeypatch):
    made = []

    class Counted(HS.Suspension):
        def __init__(self, state):
            made.append(1)
            super().__init__(state)
    monkeypatch.setattr(HS, "Suspension", Counted)
    cluster, pre = _cluster()
    pod = cluster.resolve(pre)
    fw = cluster.framework_for(pod, backend)
    before = sorted((k, cluster.state.pods.row_of(k)) for k, _ in
                    ((r.key, row) for r, row in cluster.state.pods.bound()))
    result = fw.run_cycle(cluster.state, pod, all_nodes=True)
    plugin = fw.plugins_at("postFilter")[0]
    got = plugin.post_filter(CycleContext(cluster.state, pod, fw), result,
                             cluster.pod_table(), offset=0)
    after = sorted((r.key, cluster.state.pods.row_of(r.key))
                   for r, _ in cluster.state.pods.bound())
    assert after == before                      # the state as it was
    return got, len(made)


def test_a_search_on_counts_makes_no_suspension(monkeypatch):
    counts, made_counts = _preempt("numba", monkeypatch)
    state, made_state = _preempt("numpy", monkeypatch)
    assert counts.nominated_node is not None
    assert (counts.nominated_node, counts.victims) == (state.nominated_node, state.victims)
    assert made_counts == made_state == 0       # both searched on counts


class _Host:
    name = "Host"

    def filter(self, ctx, rows):
        return np.ones(rows.shape[0], bool)


class _Independent(_Host):
    name = "Independent"

    def __init__(self, ignores):
        self.ignores = ignores
        self.asked = 0

    def ignores_pods(self, ctx):
        self.asked += 1
        return self.ignores


class _Probe(_Host):
    name = "Probe"
    probe_kind = PROBE_SPREAD
    probe_reasons = ()

    def victim_probe(self, state, pod, nominated=None):
        return None


class _Fw:
    def __init__(self, filters):
        self.filters = filters


@pytest.mark.parametrize("ignores", [True, False])
def test_active_host_filters_ask_each_pod_and_remember_the_plugin(ignores):
    indep, host, probe = _Independent(ignores), _Host(), _Probe()
    fw = _Fw([host, indep, probe])
    for _ in range(3):
        got = HS.active_host_filters(fw, None, skipped=())
        assert got == ([host, probe] if ignores else [host, indep, probe])
        assert HS.active_host_filters(fw, None, skipped=("Host",))[0] is not host
    assert indep.asked == 6                     # ignores_pods: per call (per pod)
    assert HS._probe_kind(probe) == PROBE_SPREAD and HS._probe_kind(host) is None
    assert HS._TRAITS[id(indep)][0]() is indep  # remembered, weakly


def test_remembered_traits_do_not_keep_a_plugin_alive():
    plugin = _Probe()
    assert HS._probe_kind(plugin) == PROBE_SPREAD
    ref = HS._TRAITS[id(plugin)][0]
    del plugin
    gc.collect()
    assert ref() is None
    other = _Host()                             # may reuse the id: not taken for the old one
    assert HS._probe_kind(other) is None


def test_a_frameworks_filter_answers_are_built_once_while_its_filters_stay():
    """``filters_memo`` builds an answer once per framework object and name
    (``active_host_filters``' non-fused filters, the evaluator's
    rejectors), again when the framework's filter list is replaced or one
    of its plugins is, and keeps no framework alive."""
    indep, host, probe = _Independent(False), _Host(), _Probe()
    fw = _Fw([host, indep, probe])
    builds = HS.FiltersMemo.builds
    for _ in range(3):
        assert HS.active_host_filters(fw, None, skipped=()) == [host, indep, probe]
    assert HS.FiltersMemo.builds == builds + 1
    other = _Host()
    fw.filters[0] = other                       # a plugin replaced in the same list
    assert HS.active_host_filters(fw, None, skipped=()) == [other, indep, probe]
    fw.filters = [probe]                        # another list
    assert HS.active_host_filters(fw, None, skipped=()) == [probe]
    assert HS.FiltersMemo.builds == builds + 3
    ref = HS._PER_FILTERS[id(fw)][0]
    del fw
    gc.collect()
    assert ref() is None
