"""Property tests: the project's ``explain`` on every backend against the
scalar oracle (tests/reference/oracle.py) on random clusters, pods and
profiles, and the backends against each other.

The oracle's profile format is turned into a KubeSchedulerConfiguration by
``golden.golden_profile_to_config`` so both sides see the same profile; a
``None`` profile is the default configuration (``config=None``) for the
project and ``strategies.DEFAULT_PROFILE`` for the oracle.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from support import strategies as ST
from support.backends import backend_params
from support.parity import _oracle, _view, check_against_oracle

from tensorsched.framework.scheduler.explain import explain

_SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
                 print_blob=True)


@settings(max_examples=150, **_SETTINGS)
@given(ST.scenarios(3, 40))
def test_numpy_and_numba_match_oracle(scenario):
    check_against_oracle(scenario, ("numpy", "numba"))


@pytest.mark.parametrize("backend", [p for p in backend_params() if p.values[0] == "cuda"])
@settings(max_examples=10, **_SETTINGS)
@given(ST.scenarios(3, 5))
def test_cudasim_matches_oracle(backend, scenario):
    check_against_oracle(scenario, ("numpy", backend))


def test_default_profile_matches_oracle_profile():
    """DEFAULT_PROFILE is what config=None runs (weights and filter order)."""
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n", "labels": {"zone": "z1"}},
            "spec": {"taints": [{"key": "k", "effect": "PreferNoSchedule"}]},
            "status": {"allocatable": {"cpu": "2", "memory": "2Gi", "pods": "10"}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "nginx",
                                    "resources": {"requests": {"cpu": "1"}}}],
                    "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 5, "preference": {"matchExpressions": [
                            {"key": "zone", "operator": "In", "values": ["z1"]}]}}]}}}}
    got = explain([node], pod, None, backend="numpy")
    # PodTopologySpread / InterPodAffinity Skip PreScore for this pod.
    assert set(got["scores"]["n"]) == set(ST.DEFAULT_PROFILE["scores"]) - {
        "PodTopologySpread", "InterPodAffinity"}
    assert _view(got) == _view(_oracle([node], pod, None, 0))
