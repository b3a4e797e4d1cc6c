"""``runtime.status``: status codes in upstream's order, statuses that know
whether they reject, rejected nodes held as columns that read as a
``{node: Status}`` mapping, and the FailedScheduling message built from
their reasons."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tensorsched.framework.runtime.status import SKIP, Code, Diagnosis, NodeStatuses, Status

NODES = [SimpleNamespace(name=f"n{i}") for i in range(4)]


def test_codes_follow_upstreams_order_and_names():
    assert [c.value for c in Code] == list(range(7))
    assert [c.wire_name for c in Code] == ["Success", "Error", "Unschedulable",
                                           "UnschedulableAndUnresolvable", "Wait", "Skip",
                                           "Pending"]


@pytest.mark.parametrize("code, ok, rejected", [
    (Code.SUCCESS, True, False), (Code.ERROR, False, False), (Code.UNSCHEDULABLE, False, True),
    (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, False, True), (Code.WAIT, False, False),
    (Code.SKIP, False, False), (Code.PENDING, False, False)])
def test_ok_and_rejected(code, ok, rejected):
    st = Status(code, ("why",))
    assert st.ok is ok and st.rejected is rejected


def test_status_values_and_plugin():
    assert Status.OK.ok and Status.OK == Status() and SKIP.code == Code.SKIP
    st = Status(Code.UNSCHEDULABLE, ("Insufficient cpu",))
    named = st.with_plugin("NodeResourcesFit")
    assert named.plugin == "NodeResourcesFit" and named.reasons == st.reasons
    assert st.plugin == "" and named != st
    assert Status(Code.ERROR, ("x",), "P") == Status(Code.ERROR, ("x",), "P")


def test_node_statuses_read_as_a_mapping_of_node_names():
    cpu = Status(Code.UNSCHEDULABLE, ("Insufficient cpu",), "NodeResourcesFit")
    taint = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("untolerated taint",), "TaintToleration")
    ns = NodeStatuses(np.array([0, 2, 3]), np.array([1, 0, 1]), [cpu, taint], NODES)
    assert len(ns) == 3
    assert dict(ns) == {"n0": taint, "n2": cpu, "n3": taint}
    assert ns["n2"] is cpu and "n1" not in ns
    assert ns.counts() == [(cpu, 1), (taint, 2)]
    assert ns.plugins() == {"NodeResourcesFit", "TaintToleration"}


def test_an_unused_status_in_the_table_is_not_counted():
    cpu = Status(Code.UNSCHEDULABLE, ("Insufficient cpu",), "")
    other = Status(Code.UNSCHEDULABLE, ("other",), "P")
    ns = NodeStatuses(np.array([1]), np.array([0]), [cpu, other], NODES)
    assert ns.counts() == [(cpu, 1)]
    assert ns.plugins() == set()                # a status without a plugin names none


def test_empty_node_statuses():
    ns = NodeStatuses()
    assert len(ns) == 0 and dict(ns) == {} and ns.counts() == [] and ns.plugins() == set()


def test_the_message_counts_reasons_sorted_as_text():
    # upstream sorts the "<count> <reason>" strings themselves
    cpu = Status(Code.UNSCHEDULABLE, ("Insufficient cpu",))
    both = Status(Code.UNSCHEDULABLE, ("Insufficient cpu", "Insufficient memory"))
    ns = NodeStatuses(np.array([0, 1, 2]), np.array([0, 1, 1]), [cpu, both], NODES)
    d = Diagnosis(4, ns)
    assert d.message() == "0/4 nodes are available: 2 Insufficient memory, 3 Insufficient cpu."
    # the PostFilter message as given: upstream appends " %v" (preemption's
    # own text ends with a period, an Error's "not found" with none)
    d.post_filter_msg = "preemption: 0/4 nodes are available."
    assert d.message().endswith("3 Insufficient cpu. preemption: 0/4 nodes are available.")
    d.post_filter_msg = "not found"
    assert d.message().endswith("3 Insufficient cpu. not found")
    many = [SimpleNamespace(name=f"m{i}") for i in range(12)]
    ten = NodeStatuses(np.arange(12), np.array([0] * 10 + [1] * 2),
                       [Status(Code.UNSCHEDULABLE, ("b",)), Status(Code.UNSCHEDULABLE, ("a",))],
                       many)
    assert Diagnosis(12, ten).message() == "0/12 nodes are available: 10 b, 2 a."


def test_a_prefilter_message_replaces_the_node_counts():
    cpu = Status(Code.UNSCHEDULABLE, ("Insufficient cpu",))
    ns = NodeStatuses(np.array([0]), np.array([0]), [cpu], NODES)
    d = Diagnosis(2, ns, pre_filter_msg="pod has unbound PVCs")
    assert d.message() == "0/2 nodes are available: pod has unbound PVCs."
    assert Diagnosis(0).message() == "0/0 nodes are available:"
