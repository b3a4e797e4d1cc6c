"""kernels/fused/filters.py on its own: any_common_bit, term/program_matches,
fit_reasons and node_reasons on hand-built columns with hand-checked
answers, the NumPy twin against the Numba-compiled scalar core
(``fused._core``) row by row and against that core run as Python on one
row (``victims.search.row_reasons``), and the filters against the scalar oracle
(tests/reference/oracle.py) on random clusters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import oracle as O
from support import strategies as ST
from support.kernel_inputs import (
    ALL_FILTERS,
    cols,
    compiled,
    node_rows,
    program,
    query,
    req,
    resource_names,
    state_of,
)

from tensorsched.kernels import layout as L
from tensorsched.kernels.fused import _numba as FN
from tensorsched.kernels.fused import filters as KF
from tensorsched.kernels.victims.search import filter_args, pad_query, row_reasons

SETTINGS = {"max_examples": 25, "deadline": None, "derandomize": True,
                "suppress_health_check": list(HealthCheck)}

I64 = np.int64
SIGN = np.int64(-(1 << 63))          # bit 63 of a word


def core_reasons(c, rows, q):
    """The Numba scalar core's node_reasons on every row."""
    args = filter_args(c, pad_query(c, q))
    return np.array([FN.node_reasons(I64(i), *args) for i in rows], np.int64)


def core_program(c, rows, prog, t0, t1):
    p = prog
    return np.array([FN.core["program_matches"](
        I64(i), c.label_vals, c.label_nums, c.label_isnum, I64(t0), I64(t1), p.term_offsets,
        p.req_key, p.req_op, p.req_num, p.val_offsets, p.vals) for i in rows], bool)


def both(c, rows, q):
    """node_reasons from the NumPy twin, asserted equal to the Numba core."""
    rows = np.asarray(rows, np.int64)
    got = KF.node_reasons(c, rows, q, xp=np)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, core_reasons(c, rows, q))
    # the same core run as Python on one row (preemption's retry)
    padded = pad_query(c, q)
    assert [row_reasons(c, padded, int(i)) for i in rows] == got.tolist()
    return got


# ---------------------------------------------------------------------------
# any_common_bit
# ---------------------------------------------------------------------------

def test_any_common_bit_per_row():
    bits = np.array([[0b0101, 0], [0b1010, 0], [0, 1], [0, SIGN], [0, 0]], np.int64)
    mask = np.array([0b0100, SIGN], np.int64)
    # row 0 shares bit 2 of word 0; row 3 shares bit 63 of word 1 (the sign bit).
    np.testing.assert_array_equal(KF.any_common_bit(bits, mask, xp=np),
                                  [True, False, False, True, False])


def test_any_common_bit_empty_and_narrow_mask():
    bits = np.array([[1, 1], [0, 2]], np.int64)
    np.testing.assert_array_equal(KF.any_common_bit(bits, np.zeros(0, np.int64), xp=np),
                                  [False, False])
    # A mask narrower than the bitsets reads only its own words: word 1 is ignored.
    np.testing.assert_array_equal(KF.any_common_bit(bits, np.array([3], np.int64), xp=np),
                                  [True, False])
    np.testing.assert_array_equal(KF.any_common_bit(bits, np.array([0, 2], np.int64), xp=np),
                                  [False, True])


# ---------------------------------------------------------------------------
# term_matches / program_matches
# ---------------------------------------------------------------------------

# Two label keys.  key 0 ("zone"): value ids 0, 1, absent on row 3.
# key 1 ("num"): row 0 "5" (numeric), row 1 "12", row 2 "abc" (not numeric), row 3 absent.
LABELS = cols(4, labels=[[0, 0], [1, 1], [0, 2], [-1, -1]],
              nums=[[0, 5], [0, 12], [0, 0], [0, 0]],
              isnum=[[False, True], [False, True], [False, False], [False, False]])
ROWS4 = np.arange(4, dtype=np.int64)


@pytest.mark.parametrize("requirement, want", [
    (req(0, L.OP_IN, [1]), [False, True, False, False]),
    (req(0, L.OP_IN, [0, 1]), [True, True, True, False]),
    (req(0, L.OP_IN, []), [False, False, False, False]),          # no value any node has
    (req(0, L.OP_NOT_IN, [0]), [False, True, False, True]),       # absent key: NotIn holds
    (req(0, L.OP_NOT_IN, []), [True, True, True, True]),
    (req(0, L.OP_EXISTS), [True, True, True, False]),
    (req(0, L.OP_DOES_NOT_EXIST), [False, False, False, True]),
    (req(1, L.OP_GT, num=5), [False, True, False, False]),         # strict: 5 > 5 is false
    (req(1, L.OP_GT, num=4), [True, True, False, False]),          # "abc" and absent never
    (req(1, L.OP_LT, num=12), [True, False, False, False]),
    (req(1, L.OP_LT, num=100), [True, True, False, False]),
    (req(0, L.OP_INVALID), [False, False, False, False]),          # failed to parse
    # key -1: a key no node has.
    (req(-1, L.OP_IN, [0]), [False] * 4),
    (req(-1, L.OP_NOT_IN, [0]), [True] * 4),
    (req(-1, L.OP_EXISTS), [False] * 4),
    (req(-1, L.OP_DOES_NOT_EXIST), [True] * 4),
    (req(-1, L.OP_GT, num=-1), [False] * 4),
])
def test_single_requirement(requirement, want):
    prog, _ = program(required=[[requirement]])
    got = KF.term_matches(LABELS.label_vals, LABELS.label_nums, LABELS.label_isnum, prog, 0,
                         xp=np)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(core_program(LABELS, ROWS4, prog, 0, 1), want)


def test_terms_and_within_or_across():
    prog, _terms = program(required=[
        [req(0, L.OP_IN, [0]), req(1, L.OP_GT, num=4)],      # rows 0 only (row 2 is "abc")
        [req(0, L.OP_DOES_NOT_EXIST)],                        # row 3
        [],                                                   # an empty term matches nothing
    ])
    lv, ln, li = LABELS.label_vals, LABELS.label_nums, LABELS.label_isnum
    np.testing.assert_array_equal(KF.term_matches(lv, ln, li, prog, 0, xp=np),
                                  [True, False, False, False])
    np.testing.assert_array_equal(KF.term_matches(lv, ln, li, prog, 2, xp=np), [False] * 4)
    want = [True, False, False, True]
    np.testing.assert_array_equal(KF.program_matches(lv, ln, li, prog, 0, 3, xp=np), want)
    np.testing.assert_array_equal(core_program(LABELS, ROWS4, prog, 0, 3), want)
    # Zero terms: nothing matches.
    np.testing.assert_array_equal(KF.program_matches(lv, ln, li, prog, 1, 1, xp=np), [False] * 4)
    np.testing.assert_array_equal(core_program(LABELS, ROWS4, prog, 1, 1), [False] * 4)


# ---------------------------------------------------------------------------
# fit_reasons
# ---------------------------------------------------------------------------

def test_fit_reasons_bits():
    # cpu, memory, ephemeral, pods, gpu (R = 5)
    alloc = np.array([[4000, 1000, 0, 3, 2],
                      [4000, 1000, 0, 3, 2],
                      [1000, 1000, 50, 3, 0],
                      [4000, 1000, 0, 2, 2]], np.int64)
    used = np.array([[1000, 500, 0, 1, 0],       # free 3000 cpu, 500 mem: fits exactly
                     [1001, 500, 0, 1, 1],       # free 2999 cpu, 1 gpu
                     [0, 0, 0, 0, 0],
                     [0, 0, 0, 2, 0]], np.int64)  # 2 pods of 2 allowed
    q = query(n_res=5, request=[3000, 500, 40, 0, 2])
    got = KF.fit_reasons(alloc, used, q, xp=np)
    ins = lambda r: 1 << (L.INSUFFICIENT_SHIFT + r)
    np.testing.assert_array_equal(got, [
        ins(2),                                   # 40 ephemeral > 0 free; cpu/mem/gpu fit exactly
        ins(0) | ins(2) | ins(4),                 # 3000 > 2999 cpu; ephemeral; 2 gpu > 1 free
        ins(0) | ins(4),                          # 3000 > 1000 cpu; ephemeral 40 <= 50; 0 gpu
        int(L.R_TOO_MANY_PODS) | ins(2),          # 2 + 1 > 2 pods; ephemeral
    ])


def test_fit_reasons_ignored_zero_and_nothing_requested():
    alloc = np.array([[1000, 1000, 0, 1, 0]], np.int64)
    used = np.array([[0, 0, 0, 1, 0]], np.int64)                  # pod slots full
    ins = lambda r: 1 << (L.INSUFFICIENT_SHIFT + r)
    # gpu ignored (ignoredResources), memory requested at 0: only cpu is checked.
    q = query(n_res=5, request=[2000, 0, 0, 0, 3], ignored=[False] * 4 + [True])
    np.testing.assert_array_equal(KF.fit_reasons(alloc, used, q, xp=np),
                                  [int(L.R_TOO_MANY_PODS) | ins(0)])
    # A pod requesting nothing is checked for the pod count only, even when
    # ``request`` holds numbers (requests_anything False short-cuts).
    q = query(n_res=5, request=[2000, 0, 0, 0, 0], anything=False)
    np.testing.assert_array_equal(KF.fit_reasons(alloc, used, q, xp=np), [L.R_TOO_MANY_PODS])
    # An over-committed node (requested > allocatable) lacks any positive amount.
    np.testing.assert_array_equal(
        KF.fit_reasons(alloc, np.array([[1500, 0, 0, 0, 0]], np.int64),
                      query(n_res=5, request=[1, 0, 0, 0, 0]), xp=np), [ins(0)])


# ---------------------------------------------------------------------------
# node_reasons
# ---------------------------------------------------------------------------

def test_each_filter_flag_alone():
    c = cols(4, unsched=[False, True, False, False],
             taints=[[0], [0b01], [0b10], [0b11]], ports=[[0], [0], [0b100], [0b001]],
             labels=[[0], [1], [0], [-1]])
    rows = ROWS4
    # NodeUnschedulable: row 1; tolerated -> nothing.
    assert list(both(c, rows, query(filter_flags=L.F_UNSCHEDULABLE))) == [0, 1, 0, 0]
    assert list(both(c, rows, query(filter_flags=L.F_UNSCHEDULABLE,
                                    tolerates_unschedulable=True))) == [0] * 4
    # TaintToleration: the pod does not tolerate taint 1 (bit 1): rows 2, 3.
    assert list(both(c, rows, query(filter_flags=L.F_TAINT, taint_reject=[0b10]))) == \
        [0, 0, 4, 4]
    # NodePorts: conflicts with port entries 0 and 2: rows 2, 3.
    assert list(both(c, rows, query(filter_flags=L.F_PORTS, port_conflicts=[0b101]))) == \
        [0, 0, 64, 64]
    # NodeName: -1 none; row 2 named; -2 a node not in the cluster rejects every row.
    assert list(both(c, rows, query(filter_flags=L.F_NODE_NAME))) == [0] * 4
    assert list(both(c, rows, query(filter_flags=L.F_NODE_NAME, node_name_row=2))) == \
        [2, 2, 0, 2]
    assert list(both(c, rows, query(filter_flags=L.F_NODE_NAME, node_name_row=-2))) == [2] * 4
    # Disabled checks report nothing, whatever the query holds.
    assert list(both(c, rows, query(filter_flags=0, taint_reject=[0b11], node_name_row=-2,
                                    port_conflicts=[0b111]))) == [0] * 4


def test_node_affinity_bits():
    c = cols(4, labels=[[0, 0], [1, 0], [0, 1], [-1, -1]])
    # nodeSelector zone=0 (rows 0, 2); required: key 1 In {0} (rows 0, 1);
    # scheduler-enforced: zone Exists (rows 0-2).
    progs = program(selector=[[req(0, L.OP_IN, [0])]], required=[[req(1, L.OP_IN, [0])]],
                    added=[[req(0, L.OP_EXISTS)]])
    na, add = int(L.R_NODE_AFFINITY), int(L.R_ADDED_AFFINITY)
    q = query(filter_flags=L.F_NODE_AFFINITY, programs=progs, has_node_selector=True,
              has_required=True, has_added_required=True)
    # selector AND required -> only row 0; added rejects row 3 on its own bit.
    assert list(both(c, ROWS4, q)) == [0, na, na, na | add]
    # has_* False: that program is not a constraint.
    q = q._replace(has_node_selector=False, has_added_required=False)
    assert list(both(c, ROWS4, q)) == [0, 0, na, na]
    q = q._replace(has_required=False)
    assert list(both(c, ROWS4, q)) == [0] * 4
    # An empty required program (zero terms) with has_required rejects every node.
    progs = program(selector=[[req(0, L.OP_IN, [0])]])
    q = query(filter_flags=L.F_NODE_AFFINITY, programs=progs, has_required=True)
    assert list(both(c, ROWS4, q)) == [na] * 4


def test_prefilter_invalid_rows_and_row_order():
    c = cols(3, valid=[True, False, True], unsched=[True, True, False])
    q = query(filter_flags=L.F_UNSCHEDULABLE | L.F_NODE_NAME, node_name_row=0,
              prefilter=[False, True, True])
    # row 0: outside the PreFilter set (32) + unschedulable (1);
    # row 1: a free row reports R_INVALID_ROW alone; row 2: not the named node (2).
    pf = int(L.R_PREFILTER_NAMES)
    assert list(both(c, [0, 1, 2], q)) == [pf | 1, int(L.R_INVALID_ROW), 2]
    # Results follow the given rows, in the given order (and repeats).
    assert list(both(c, [2, 0, 2], q)) == [2, pf | 1, 2]
    # The prefilter set is applied even with no filter flag enabled.
    assert list(both(c, [0, 2], q._replace(filter_flags=0))) == [pf, 0]


def test_every_reason_is_reported_together():
    # One node failing all six checks gets every bit (explain names them all).
    c = cols(2, alloc=[[1000, 100, 0, 1], [1000, 100, 0, 1]],
             req=[[0, 0, 0, 1], [0, 0, 0, 0]], unsched=[True, False],
             taints=[[1], [0]], ports=[[1], [0]], labels=[[1], [0]])
    progs = program(required=[[req(0, L.OP_IN, [0])]], added=[[req(0, L.OP_IN, [0])]])
    q = query(filter_flags=ALL_FILTERS, request=[2000, 0, 0, 0], node_name_row=1,
              taint_reject=[1], port_conflicts=[1], programs=progs, has_required=True,
              has_added_required=True)
    want0 = (L.R_UNSCHEDULABLE | L.R_NODE_NAME | L.R_TAINT | L.R_ADDED_AFFINITY
             | L.R_NODE_AFFINITY | L.R_PORTS | L.R_TOO_MANY_PODS
             | (1 << L.INSUFFICIENT_SHIFT))       # 2000 > 1000 cpu
    assert list(both(c, [0, 1], q)) == [int(want0), 1 << L.INSUFFICIENT_SHIFT]


def test_query_bitsets_narrower_than_columns():
    # Tables grew after the query was compiled: the query's words cover
    # only the first taint word; the second never rejects.
    c = cols(2, taints=[[1, 0], [0, 1]])
    assert list(both(c, [0, 1], query(filter_flags=L.F_TAINT, taint_reject=[1]))) == [4, 0]


# ---------------------------------------------------------------------------
# Random clusters: NumPy twin == Numba core, and each filter == the oracle
# ---------------------------------------------------------------------------

FILTER_FLAG = {"NodeUnschedulable": (L.F_UNSCHEDULABLE, L.R_UNSCHEDULABLE),
               "NodeName": (L.F_NODE_NAME, L.R_NODE_NAME),
               "TaintToleration": (L.F_TAINT, L.R_TAINT),
               "NodeAffinity": (L.F_NODE_AFFINITY, L.R_NODE_AFFINITY),
               "NodePorts": (L.F_PORTS, L.R_PORTS)}


@st.composite
def scenario(draw):
    objs = draw(ST.clusters(2, 8))
    names = [o["metadata"]["name"] for o in objs if o["kind"] == "Node"]
    pod = draw(ST.pods(names))
    ignored = draw(st.sampled_from([{}, {"ignoredResources": [ST.GPU]},
                                    {"ignoredResourceGroups": ["example.com"]}]))
    return objs, pod, ignored


def _options(ignored):
    return {"ignored_resources": frozenset(ignored.get("ignoredResources", ())),
                "ignored_groups": frozenset(ignored.get("ignoredResourceGroups", ()))}


@settings(**SETTINGS)
@given(scenario())
def test_random_clusters_numpy_equals_numba_core(case):
    objs, pod, ignored = case
    state = state_of(objs)
    q = compiled(state, pod, filter_flags=ALL_FILTERS, **_options(ignored))
    c = state.columns()
    rows = np.arange(c.allocatable.shape[0], dtype=np.int64)
    both(c, rows, q)
    both(c, rows[::-1].copy(), q)


@settings(**SETTINGS)
@given(scenario())
def test_random_clusters_match_oracle_filters(case):
    objs, pod, ignored = case
    state = state_of(objs)
    rows_by_name = node_rows(state, objs)
    for plugin, (flag, bit) in FILTER_FLAG.items():
        q = compiled(state, pod, filter_flags=flag)
        c = state.columns()
        got = both(c, np.arange(c.allocatable.shape[0], dtype=np.int64), q)
        want = O.oracle_raw_filter(objs, pod, plugin, None)
        for name, row in rows_by_name.items():
            assert (got[row] == int(bit)) == (want[name]["code"] != O.SUCCESS), (plugin, name)
            assert got[row] in (0, int(bit))
    # NodeResourcesFit: the reasons by name ("Insufficient <r>", "Too many pods").
    q = compiled(state, pod, filter_flags=L.F_FIT, **_options(ignored))
    c = state.columns()
    got = both(c, np.arange(c.allocatable.shape[0], dtype=np.int64), q)
    names = resource_names(state)
    want = O.oracle_raw_filter(objs, pod, "NodeResourcesFit", ignored or None)
    for name, row in rows_by_name.items():
        reasons = set()
        if got[row] & L.R_TOO_MANY_PODS:
            reasons.add("Too many pods")
        for r, rname in names.items():
            if got[row] >> (L.INSUFFICIENT_SHIFT + r) & 1:
                reasons.add(f"Insufficient {rname}")
        assert reasons == set(want[name]["reasons"]), name
