"""``parsing.pdb``: which pods a PodDisruptionBudget covers (an empty or
missing selector covers none, disrupted pods are not counted) and how many
disruptions it allows, as the disruption controller computes it."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.parsing.pdb import applies, disruptions_allowed, pdb_selects
from tensorsched.framework.records.records import PodDisruptionBudgetRecord
from tensorsched.generators.clusters import pod_dict

APP = {"matchLabels": {"app": "web"}}


def pdb(selector=APP, min_available=None, max_unavailable=None, allowed=None,
        disrupted=(), namespace="ns"):
    return PodDisruptionBudgetRecord(namespace, "b", selector, min_available, max_unavailable,
                                     allowed, tuple(disrupted))


def pod(name, labels=None, namespace="ns", deleting=False):
    d = pod_dict(name, namespace=namespace, labels={"app": "web"} if labels is None else labels)
    if deleting:
        d["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return parse_pod(d)


def test_an_empty_or_missing_selector_selects_nothing():
    assert not pdb_selects(None, {"app": "web"})
    assert not pdb_selects({}, {"app": "web"})
    assert pdb_selects(APP, {"app": "web", "x": "y"})
    assert not pdb_selects(APP, {"app": "db"})


def test_applies_needs_namespace_selector_and_a_pod_not_yet_disrupted():
    assert applies(pdb(), pod("a"))
    assert not applies(pdb(), pod("a", namespace="other"))
    assert not applies(pdb(), pod("a", labels={"app": "db"}))
    assert not applies(pdb(disrupted=["a"]), pod("a"))
    assert applies(pdb(disrupted=["b"]), pod("a"))


def test_the_published_status_wins():
    assert disruptions_allowed(pdb(min_available=10, allowed=3), []) == 3


def test_min_available_and_max_unavailable_counts():
    pods = [pod(f"p{i}") for i in range(5)] + [pod("other", labels={"app": "db"})]
    assert disruptions_allowed(pdb(min_available=3), pods) == 2
    assert disruptions_allowed(pdb(min_available=7), pods) == 0          # never negative
    assert disruptions_allowed(pdb(max_unavailable=2), pods) == 2
    assert disruptions_allowed(pdb(max_unavailable=9), pods) == 5
    assert disruptions_allowed(pdb(), pods) == 0                          # neither set
    assert disruptions_allowed(pdb(min_available=0), []) == 0             # nothing expected


def test_percentages_round_up():
    pods = [pod(f"p{i}") for i in range(3)]
    # minAvailable 50% of 3 = 1.5 -> 2 must stay: 1 may go
    assert disruptions_allowed(pdb(min_available="50%"), pods) == 1
    # maxUnavailable 50% of 3 -> 2 may be unavailable: 3 - (3 - 2) = 2
    assert disruptions_allowed(pdb(max_unavailable="50%"), pods) == 2
    assert disruptions_allowed(pdb(max_unavailable="0%"), pods) == 0


def test_terminating_and_disrupted_pods_are_not_healthy():
    pods = [pod("a"), pod("b", deleting=True), pod("c")]
    assert disruptions_allowed(pdb(min_available=1), pods) == 1
    assert disruptions_allowed(pdb(min_available=1, disrupted=["a"]), pods) == 0


@settings(max_examples=30)
@given(st.integers(0, 8), st.integers(0, 8), st.integers(0, 100), st.booleans())
def test_min_available_percent_follows_the_controller_rule(n, deleting, pct, use_max):
    deleting = min(deleting, n)
    pods = [pod(f"p{i}", deleting=i < deleting) for i in range(n)]
    healthy = n - deleting
    if use_max:
        desired = max(0, n - math.ceil(pct * n / 100))
        got = disruptions_allowed(pdb(max_unavailable=f"{pct}%"), pods)
    else:
        desired = math.ceil(pct * n / 100)
        got = disruptions_allowed(pdb(min_available=f"{pct}%"), pods)
    assert got == (max(0, healthy - desired) if n > 0 else 0)
