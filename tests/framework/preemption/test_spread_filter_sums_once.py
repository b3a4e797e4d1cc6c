"""A preemptor computes PodTopologySpread's filter sums (``_filter_sums``:
its DoNotSchedule constraints' count keys and the DomainSums the count
index keeps) once: its failed cycle's filter, the victim probe and the
retry's one-row check share them, since binds and evictions update those
DomainSums in place.  They are computed again when what they are made of
moves: the node set (a node added), or the index no longer keeping a
DomainSums they hold (``PodCountIndex.generation``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from tensorsched.bench.preemption import build as build_preemption
from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.parsing.manifests import parse_node
from tensorsched.framework.plugins import pod_topology_spread as spread_module
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.framework.state.domain_counts import pod_count_index
from tensorsched.generators import clusters as synthetic


def _counting(monkeypatch) -> list:
    """Spy on the per-constraint count key ``_filter_sums`` makes (one
    call per DoNotSchedule constraint each time the sums are computed)."""
    calls: list = []
    real = spread_module._count_key

    def counted(pod, c):
        calls.append(pod.key)
        return real(pod, c)
    monkeypatch.setattr(spread_module, "_count_key", counted)
    return calls


def _spread_plugin(sched, pod):
    fw = sched.cycle.profiles.of(pod)
    return next(p for p in fw.filters if p.name == names.POD_TOPOLOGY_SPREAD)


def test_a_preemptor_computes_its_filter_sums_once(monkeypatch):
    cluster, pending = build_preemption(12, 3, 100, "spread")
    sched = Scheduler(cluster, "numba", 0)
    calls = _counting(monkeypatch)
    for pod in pending:
        before = len(calls)
        binding = sched.schedule_one(pod)
        assert binding is not None          # placed by preemption: cycle, probe, retry
        cons = len(spread_module.pod_constraints(pod, "DoNotSchedule"))
        assert cons == 2
        # one computation (the old code: three, one per caller)
        assert calls[before:] == [pod.key] * cons


def test_filter_sums_follow_binds_and_are_recomputed_when_their_parts_move(monkeypatch):
    cluster, pending = build_preemption(12, 3, 100, "spread")
    sched = Scheduler(cluster, "numba", 0)
    state, pod = cluster.state, pending[0]
    plugin = _spread_plugin(sched, pod)
    calls = _counting(monkeypatch)
    first = plugin._filter_sums(state, pod)
    assert len(calls) == 2
    # A bind that moves a domain sum of both constraints: the same
    # DomainSums (updated in place), no recomputation, and the filter's
    # codes are those of the sums as they are now.
    low = state.pods.record("default/low-0-0")
    versions = [ds.version for *_, ds in first]
    zone_sum = int(first[0][4].sums[first[0][4].dom[0]])
    state.add_pod(dataclasses.replace(low, name="moved", uid="moved", node_name="node-0"),
                  "node-0")
    again = plugin._filter_sums(state, pod)
    assert len(calls) == 2 and again is first
    assert [ds.version for *_, ds in again] == [v + 1 for v in versions]
    assert int(again[0][4].sums[again[0][4].dom[0]]) == zone_sum + 1
    codes = plugin.codes_by_row(state, pod).copy()
    plugin._sums_memo = None                    # computed afresh: the same answer,
    plugin._by_row = None                       # the same DomainSums the index keeps
    assert np.array_equal(plugin.codes_by_row(state, pod), codes)
    assert len(calls) == 4
    assert all(a[4] is b[4] for a, b in zip(again, plugin._filter_sums(state, pod)))
    again = plugin._filter_sums(state, pod)
    # A node added (the node set moved): recomputed, over the new node too.
    state.add_node(parse_node(synthetic.node_dict(
        "extra", labels={synthetic.ZONE: "zone-1"})))
    grown = plugin._filter_sums(state, pod)
    assert len(calls) == 6 and grown is not again
    assert all(ds.dom.shape[0] == state.n_rows for *_, ds in grown)
    # The index dropping the DomainSums held (their counts left its LRU):
    # recomputed, on the ones it keeps now.
    index = pod_count_index(state)
    monkeypatch.setattr(index, "MAX_KEYS", 1)
    index.counts(("unrelated",), lambda record: False)
    fresh = plugin._filter_sums(state, pod)
    assert len(calls) == 8
    assert all(a[4] is not b[4] for a, b in zip(grown, fresh))
    plugin._filter_sums(state, pod)
    assert len(calls) == 8
