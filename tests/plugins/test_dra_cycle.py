"""framework/plugins/dra_cycle.py: a pod's claims resolved from the claim
state (generated template claims first, with the controller on), the
reasons a claim cannot be used, the device-class check of PreFilter, and
the sub-cycle for nodes lacking extended requests made once."""

from __future__ import annotations

import pytest

from tensorsched.generators import dra_clusters as DC
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.plugins.dra_cycle import (
    ClaimProblem,
    Cycle,
    check_class,
    claims_of,
    cycle_of,
    generate,
    resolve,
)
from tensorsched.framework.runtime.status import Code
from tensorsched.framework.scheduler.cluster import build_cluster


def _store_and_pod():
    objs, pods = DC.dra(1, 1)
    cluster = build_cluster(objs)
    return claims_of(cluster.state), pods[0]


def test_template_claims_resolve_once_generated():
    store, pod = _store_and_pod()
    pod = parse_pod(pod)
    with pytest.raises(ClaimProblem, match="not created yet"):
        resolve(store, pod)
    assert generate(store, pod) is None
    got = resolve(store, pod)
    assert [e.owner[0] for e in got] == [pod.name]
    assert claims_of(store.state) is store          # one claim state per cluster state


def test_device_class_check():
    store, _ = _store_and_pod()
    cls = next(iter(store.classes))
    assert check_class(store, cls, "r") is None
    st = check_class(store, "nope", "r")
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and "does not exist" in st.reasons[0]
    assert check_class(store, "", "r").code == Code.ERROR


def test_a_cycle_without_lacking_requests_is_itself():
    cyc = Cycle([], [], [])
    assert cycle_of(cyc, None, ()) is cyc
