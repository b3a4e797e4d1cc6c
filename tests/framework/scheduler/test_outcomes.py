"""Scheduler.outcomes: a run's bindings kept as node names read back as
Bindings, through every dict read; schedule_pending's outcomes with runs on
and off are the same objects' values."""

import pytest

from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.events import Binding, Outcomes
from tensorsched.framework.scheduler.scheduler import Scheduler


def test_outcomes_reads_node_names_as_bindings():
    o = Outcomes()
    o.bound(["ns/a", "ns/b"], ["n1", "n2"])
    full = Binding("ns/c", None, "0/2 nodes are available", "n1", ["ns/v"])
    o["ns/c"] = full
    assert o["ns/a"] == Binding("ns/a", "n1")
    assert o.get("ns/b") == Binding("ns/b", "n2")
    assert o.get("ns/x") is None and o.get("ns/x", 7) == 7
    assert o["ns/c"] is full
    assert o.values() == [Binding("ns/a", "n1"), Binding("ns/b", "n2"), full]
    assert o.items()[0] == ("ns/a", Binding("ns/a", "n1"))
    assert list(o) == ["ns/a", "ns/b", "ns/c"] and "ns/b" in o and len(o) == 3
    assert o.pop("ns/a") == Binding("ns/a", "n1")
    assert o.pop("ns/a", None) is None
    with pytest.raises(KeyError):
        o.pop("ns/a")
    with pytest.raises(KeyError):
        o["ns/a"]
    o.bound(["ns/b"], ["n3"])                        # a later outcome replaces it
    assert o["ns/b"].node == "n3"


@pytest.mark.parametrize("subscribed", [False, True])
def test_run_outcomes_equal_one_by_one(subscribed):
    """The same Bindings (nodes, messages) from schedule_pending and in
    ``outcomes`` with runs on and off, with and without a Bound subscriber
    (which makes the run send its events per pod)."""
    def run(batch):
        nodes = [node_dict(f"n{i}", cpu="4", memory="8Gi") for i in range(5)]
        pods = [pod_dict(f"p{i}", cpu="1", memory="1Gi") for i in range(25)]
        sched = Scheduler(build_cluster(nodes), "numba", 3, batch=batch)
        seen = []
        if subscribed:
            sched.subscribe("Bound", lambda e: seen.append((e["pod"], e["node"])))
        out, _ = sched.schedule_pending(pods)
        return out, sched.outcomes.values(), seen, sched.run_lengths

    on, off = run(True), run(False)
    assert on[0] == off[0] and on[1] == off[1] and on[2] == off[2]
    assert sum(b.node is None for b in on[0]) == 5            # 20 fit, 5 do not
    assert on[3] and max(on[3]) > 1 and not off[3]
