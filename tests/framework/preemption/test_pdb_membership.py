"""``PdbMembership``: which PDBs cover each bound pod and every PDB's
disruptionsAllowed, answered by pod class, equal to the scalar rule
(``parsing.pdb.applies`` / ``disruptions_allowed`` over every bound
record) after any sequence of binds and removals (class ids freed and
given to new classes), with terminating pods and pods a PDB names as
disrupted."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as hs

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.parsing.pdb import applies, disruptions_allowed
from tensorsched.framework.preemption.pdb_membership import PdbMembership
from tensorsched.framework.records.records import PodDisruptionBudgetRecord
from tensorsched.framework.state.bound_pods import BoundPods
from tensorsched.generators.clusters import pod_dict

_NAMESPACES = ("a", "b")
_NAMES = [f"p{i}" for i in range(12)]


def _template(namespace: str, labels: dict):
    return parse_pod(pod_dict("template", namespace=namespace, labels=labels))


def _alike(template, name: str, deleting: bool):
    pod = dataclasses.replace(template, name=name, uid=name, deleting=deleting)
    pod.pod_class = template.pod_class        # one class per template, as parsed workloads
    return pod


_labels = hs.fixed_dictionaries({}, optional={"app": hs.sampled_from(["web", "db"]),
                                              "tier": hs.sampled_from(["x", "y"])})
_templates = hs.lists(hs.tuples(hs.sampled_from(_NAMESPACES), _labels), min_size=1, max_size=4)
_selector = hs.one_of(
    hs.none(), hs.just({}),
    hs.builds(lambda v: {"matchLabels": {"app": v}}, hs.sampled_from(["web", "db"])),
    hs.builds(lambda op, vals: {"matchExpressions": [
        {"key": "tier", "operator": op, **({"values": vals} if op in ("In", "NotIn") else {})}]},
        hs.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
        hs.lists(hs.sampled_from(["x", "y"]), min_size=1, max_size=2)))
_bound = hs.one_of(hs.none(), hs.integers(0, 6),
                   hs.builds(lambda p: f"{p}%", hs.integers(0, 100)))
_pdb = hs.builds(
    lambda ns, sel, how, value, status, disrupted: PodDisruptionBudgetRecord(
        ns, "budget", sel, value if how == "min" else None, value if how == "max" else None,
        status, tuple(disrupted)),
    hs.sampled_from(_NAMESPACES), _selector, hs.sampled_from(["min", "max", "neither"]),
    _bound, hs.one_of(hs.none(), hs.integers(0, 3)),
    hs.lists(hs.sampled_from(_NAMES), max_size=3))
# an operation: bind a pod of template t (terminating or not), or remove one
_op = hs.tuples(hs.sampled_from(["bind", "remove"]), hs.integers(0, 3), hs.booleans(),
                hs.sampled_from(_NAMES))


def _assert_as_scalar(members: PdbMembership, bound: BoundPods, pdbs) -> None:
    records = [record for record, _ in bound.bound()]
    assert members.allowed(bound).tolist() == [disruptions_allowed(p, records) for p in pdbs]
    keys = list(bound)
    words = members.slot_words(bound, bound.slots_of(keys), keys, 2)
    for j, key in enumerate(keys):
        record = bound.record(key)
        got = [bool(words[j, p >> 6] >> (p & 63) & 1) for p in range(len(pdbs))]
        assert got == [applies(p, record) for p in pdbs], key


@settings(max_examples=80, deadline=None)
@given(_templates, hs.lists(_pdb, min_size=1, max_size=5), hs.lists(_op, max_size=40))
def test_by_class_equals_the_scalar_rule_after_any_binds_and_removals(templates, pdbs, ops):
    parsed = [_template(ns, labels) for ns, labels in templates]
    bound = BoundPods(4)
    shape = bound.shape_of(np.zeros(2, np.int64), 0, 0)
    members = PdbMembership(pdbs)
    for i, (kind, t, deleting, name) in enumerate(ops):
        template = parsed[t % len(parsed)]
        key = f"{template.namespace}/{name}"
        if kind == "bind" and key not in bound:
            bound.add(_alike(template, name, deleting), i % 3, shape)
        elif kind == "remove" and key in bound:
            bound.pop(key)
        if i % 4 == 3:       # the kept class rows met again after the changes
            _assert_as_scalar(members, bound, pdbs)
    _assert_as_scalar(members, bound, pdbs)


def test_classes_are_matched_once_and_again_only_when_an_id_changes_hands():
    """Binding more pods of known classes matches no class again; a class
    that leaves and a new one given its id is matched once more."""
    web, db = _template("a", {"app": "web"}), _template("a", {"app": "db"})
    pdbs = [PodDisruptionBudgetRecord("a", "web", {"matchLabels": {"app": "web"}}, 1, None,
                                      None, ())]
    bound = BoundPods(4)
    shape = bound.shape_of(np.zeros(2, np.int64), 0, 0)
    members = PdbMembership(pdbs)
    for i in range(6):
        bound.add(_alike(web, f"w{i}", False), 0, shape)
    assert members.allowed(bound).tolist() == [5] and members.classes_matched == 1
    for i in range(6, 9):
        bound.add(_alike(web, f"w{i}", i == 8), 0, shape)
    assert members.allowed(bound).tolist() == [7] and members.classes_matched == 1
    for i in range(9):
        bound.pop(f"a/w{i}")
    bound.add(_alike(db, "d0", False), 0, shape)      # the freed id, another class
    assert members.allowed(bound).tolist() == [0] and members.classes_matched == 2


def test_more_than_64_budgets_fill_the_second_word():
    """PDB 70 of 71 sets bit 6 of word 1 of the pods it covers."""
    web = _template("a", {"app": "web"})
    other = PodDisruptionBudgetRecord("a", "o", {"matchLabels": {"app": "db"}}, 1, None,
                                      None, ())
    last = PodDisruptionBudgetRecord("a", "w", {"matchLabels": {"app": "web"}}, 1, None,
                                     None, ("w1",))
    bound = BoundPods(4)
    shape = bound.shape_of(np.zeros(2, np.int64), 0, 0)
    for i in range(3):
        bound.add(_alike(web, f"w{i}", False), 0, shape)
    members = PdbMembership([other] * 70 + [last])
    keys = ["a/w0", "a/w1", "a/w2"]
    words = members.slot_words(bound, bound.slots_of(keys), keys, 2)
    assert words[:, 0].tolist() == [0, 0, 0]
    assert words[:, 1].tolist() == [1 << 6, 0, 1 << 6]     # w1 is named disrupted
    # 3 matching, 2 healthy (w1 disrupted), minAvailable 1
    assert members.allowed(bound).tolist() == [0] * 70 + [1]
