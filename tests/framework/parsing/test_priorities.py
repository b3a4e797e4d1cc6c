"""``parsing.priorities``: a pod's priority and preemption policy resolved
as the Priority admission plugin does (its own value, else its class's,
else the global default's, else 0); an unknown class is an error naming
the pod and the field; the pod given is never changed."""

from __future__ import annotations

import pytest

from tensorsched.framework.errors import ManifestError
from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.parsing.meta import SourcedObject
from tensorsched.framework.parsing.priorities import (
    NEVER, PREEMPT_LOWER, SYSTEM_CLASSES, PriorityResolver, pod_priority)
from tensorsched.framework.records.records import PriorityClassRecord
from tensorsched.generators.clusters import pod_dict

HIGH = PriorityClassRecord("high", 1000, False, NEVER)
LOW_DEFAULT = PriorityClassRecord("low", 10, True, PREEMPT_LOWER)
OTHER_DEFAULT = PriorityClassRecord("later", 20, True, PREEMPT_LOWER)


def pod(**spec):
    return parse_pod(pod_dict("p", namespace="ns", spec=spec))


def test_no_class_no_value_is_zero_with_preempt_lower():
    got = PriorityResolver().resolve(pod())
    assert (got.priority, got.preemption_policy) == (0, PREEMPT_LOWER)


def test_the_named_class_gives_value_and_policy():
    original = pod(priorityClassName="high")
    got = PriorityResolver([HIGH]).resolve(original)
    assert (got.priority, got.preemption_policy) == (1000, NEVER)
    assert original.priority is None                       # the given pod is untouched
    assert got.key == "ns/p" and got is not original


def test_the_first_global_default_applies_to_pods_without_class_or_value():
    r = PriorityResolver([HIGH, LOW_DEFAULT, OTHER_DEFAULT])
    assert r.default is LOW_DEFAULT
    assert r.resolve(pod()).priority == 10
    # a written value wins over the default, and the policy stays the default one
    got = r.resolve(pod(priority=5))
    assert (got.priority, got.preemption_policy) == (5, PREEMPT_LOWER)


def test_a_written_value_and_policy_win_over_the_class():
    got = PriorityResolver([HIGH]).resolve(
        pod(priorityClassName="high", priority=7, preemptionPolicy=PREEMPT_LOWER))
    assert (got.priority, got.preemption_policy) == (7, PREEMPT_LOWER)


def test_system_classes_exist_without_being_loaded():
    for name, value in SYSTEM_CLASSES.items():
        assert PriorityResolver().resolve(pod(priorityClassName=name)).priority == value


def test_an_unknown_class_names_the_pod_field_and_file():
    rec = parse_pod(SourcedObject(pod_dict("p", namespace="ns",
                                           spec={"priorityClassName": "gold"}), "f.yaml#1"))
    with pytest.raises(ManifestError) as info:
        PriorityResolver([HIGH]).resolve(rec)
    err = info.value
    assert (err.obj, err.field, err.source) == ("Pod ns/p", "spec.priorityClassName", "f.yaml#1")
    assert "'gold'" in err.problem


def test_an_already_resolved_pod_comes_back_as_it_is():
    r = PriorityResolver([HIGH])
    once = r.resolve(pod(priorityClassName="high"))
    assert r.resolve(once) is once


def test_copies_resolved_alike_share_a_memo():
    r = PriorityResolver([HIGH])
    base = pod(priorityClassName="high")
    a, b = r.resolve(base), r.resolve(base)
    assert a is not b and a.memo is b.memo and a.memo is not base.memo


def test_pod_priority_defaults_to_zero():
    assert pod_priority(pod()) == 0
    assert pod_priority(pod(priority=-3)) == -3
