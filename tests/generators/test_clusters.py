"""``generators.clusters``: every seeded workload is valid Kubernetes input
(it parses and builds a cluster), the same seed gives the same objects, and
sizes out of bounds are refused in the generator's name."""

from __future__ import annotations

import pytest

from tensorsched.framework.arguments import ArgumentError
from tensorsched.framework.parsing.manifests import parse_objects
from tensorsched.generators import clusters as GC

WORKLOADS = {
    "basic": lambda seed: GC.basic(4, 6, seed),
    "sample": lambda seed: GC.sample(seed),
    "spread": lambda seed: GC.pod_to_pod("spread", 4, 6, seed),
    "replicaset": lambda seed: GC.pod_to_pod("replicaset", 4, 6, seed),
    "unschedulable": lambda seed: GC.unschedulable(4, 6, seed),
    "preemption": lambda seed: GC.preemption(4, 6, seed),
    "statefulsets": lambda seed: GC.statefulsets(4, 6, seed),
}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_parses_and_repeats_with_its_seed(name):
    nodes, pods = WORKLOADS[name](7)
    objs = parse_objects(nodes + pods)
    assert len(objs.nodes) == sum(o["kind"] == "Node" for o in nodes)
    assert len(objs.pods) >= sum(o["kind"] == "Pod" for o in pods) > 0
    assert WORKLOADS[name](7) == (nodes, pods)


def test_the_sample_is_drawn_from_its_seed():
    # the scheduler_perf-like workloads are identical pods (the seed only
    # breaks ties when scheduling); the sample's sizes are drawn
    assert GC.sample(1) != GC.sample(2)
    assert GC.pod_to_pod("spread", 4, 20, 1) == GC.pod_to_pod("spread", 4, 20, 2)


@pytest.mark.parametrize("nodes, pods, seed, field", [
    (0, 5, 0, "nodes"), (3, -1, 0, "pods"), (GC.MAX_NODES + 1, 5, 0, "nodes"),
    (3, 5, "x", "seed")])
def test_sizes_out_of_bounds_are_refused_in_the_generators_name(nodes, pods, seed, field):
    with pytest.raises(ArgumentError, match=rf"^synthetic\.basic: {field}: "):
        GC.basic(nodes, pods, seed)
