"""InterPodAffinity and PodTopologySpread keep the last filter's codes for
the reasons they explain; one framework serves several states (capacity
probes, a probe group's InterPodAffinity state), whose version numbers can
coincide, so the cached codes are those of the state asked about."""

from __future__ import annotations

import pytest
from support.builders import node, pod

from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.scheduler.cluster import build_cluster

RACK = "example.com/rack"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
ANTI = {"podAntiAffinity": {REQ: [{"labelSelector": {"matchLabels": {"app": "web"}},
                                   "topologyKey": RACK}]}}
SPREAD = [{"maxSkew": 1, "topologyKey": RACK, "whenUnsatisfiable": "DoNotSchedule",
           "labelSelector": {"matchLabels": {"app": "web"}}}]


def _two_states():
    # n2 lacks the topology key in a: its codes there differ from b's
    a = build_cluster([node("n1", labels={RACK: "r1"}), node("n2"),
                       pod("w1", on="n1", labels={"app": "web"})])
    b = build_cluster([node("n1", labels={RACK: "r1"}), node("n2", labels={RACK: "r2"}),
                       pod("w2", on="n2", labels={"app": "web"})])
    assert a.state.version == b.state.version      # what the cache used to key on
    return a, b


@pytest.mark.parametrize("spec,labels,reason", [
    ({"affinity": ANTI}, {"app": "x"}, "node(s) didn't match pod anti-affinity rules"),
    ({"topologySpreadConstraints": SPREAD}, {"app": "web"},
     "node(s) didn't match pod topology spread constraints"),
])
def test_the_reason_is_the_asked_states_after_a_filter_on_another(spec, labels, reason):
    a, b = _two_states()
    incoming = a.resolve(pod("x", labels=labels, spec=spec))
    fw = a.framework_for(incoming, "numpy")
    on_b = fw.run_cycle(b.state, incoming, all_nodes=True)
    fw.run_cycle(a.state, incoming, all_nodes=True)     # the last filter ran on a
    ctx = CycleContext(b.state, incoming, fw)
    names = [b.state.node_name(int(r)) for r in on_b.rows]
    statuses = dict(zip(names, (fw.node_status(ctx, on_b, j) for j in range(len(names)))))
    assert statuses["n1"] is None
    assert statuses["n2"] is not None and statuses["n2"].reasons == (reason,)
