"""``evaluator.status_codes`` (one compiled pass) and the rows where
preemption might help give, on random reason bits and profiles, what the
plain rules give: per node the code of the first rejecting filter in
profile order (PreFilter's node set unresolvable, always-unresolvable
filters, host filters asked per node), Error for unknown bits, -1 for free
rows; rotated from evaluation order to row order by ``start``; a host
filter is asked about the rows it rejects first only."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.framework.preemption import evaluator as EV
from tensorsched.framework.preemption.evaluator import (
    helpful_rows_of_reasons,
    nodes_where_preemption_might_help,
    rows_where_preemption_might_help,
    status_codes,
    status_codes_and_helpful,
)
from tensorsched.framework.runtime.plugin import FusedFilter
from tensorsched.framework.runtime.status import Code
from tensorsched.kernels import layout as L

UNRES, UNSCHED = int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), int(Code.UNSCHEDULABLE)


class _Fused(FusedFilter):
    def __init__(self, bits, always):
        self.reason_bits = bits
        self.always_unresolvable = always

    def explain_reasons(self, ctx, row, bits):
        raise AssertionError("not asked")


class _Host:
    """A host filter whose missing-key nodes (``unres_rows``) are unresolvable."""

    def __init__(self, bits, unres_rows):
        self.reason_bits = bits
        self.unres_rows = set(unres_rows)
        self.asked: list = []

    def unresolvable(self, ctx, rows):
        rows = np.asarray(rows).tolist()
        self.asked += rows
        return np.array([r in self.unres_rows for r in rows], bool)


class _Fw:
    def __init__(self, filters):
        self.filters = filters


def _plain(fw, reasons, ctx, rows):
    """The rules, node by node."""
    out = []
    for r, row in zip(reasons.tolist(), rows.tolist()):
        if r == int(L.R_INVALID_ROW):
            out.append(-1)
        elif r == 0:
            out.append(0)
        elif r & int(L.R_PREFILTER_NAMES):
            out.append(UNRES)
        else:
            code = int(Code.ERROR)
            for p in fw.filters:
                if r & p.reason_bits:
                    if isinstance(p, FusedFilter) and p.always_unresolvable:
                        code = UNRES
                    elif ctx is not None and hasattr(p, "unresolvable"):
                        code = UNRES if row in p.unres_rows else UNSCHED
                    else:
                        code = UNSCHED
                    break
            out.append(code)
    return out


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_codes_follow_the_first_rejecting_filter(data):
    m = data.draw(st.integers(0, 40), label="nodes")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    # bit 5 is PreFilter's, bit 15 a free row; the filters own other bits
    own = [b for b in range(20) if b not in (5, 15)]
    rng.shuffle(own)
    filters = []
    for k in range(data.draw(st.integers(0, 6), label="filters")):
        bits = (1 << own[2 * k]) | (1 << own[2 * k + 1])
        kind = data.draw(st.sampled_from(["fused", "always", "host"]))
        filters.append(_Host(bits, rng.integers(0, 40, 10).tolist()) if kind == "host"
                       else _Fused(bits, kind == "always"))
    fw = _Fw(filters)
    pick = np.array([0, 1 << 5, 1 << 15] + [1 << b for b in own[:16]], np.int64)
    reasons = np.bitwise_or.reduce(
        pick[rng.integers(0, pick.shape[0], (m, 2))], axis=1) if m else np.zeros(0, np.int64)
    # runs of like reasons (a full cluster's nodes share theirs)
    runs = rng.random(m) < data.draw(st.sampled_from([0.0, 0.7]), label="runs")
    for j in np.flatnonzero(runs).tolist():
        if j:
            reasons[j] = reasons[j - 1]
    reasons[rng.random(m) < 0.2] = 0
    reasons[rng.random(m) < 0.1] = int(L.R_INVALID_ROW)
    all_rows = np.sort(rng.choice(60, m, replace=False)).astype(np.int64)
    start = data.draw(st.integers(0, max(m - 1, 0)), label="start")
    ctx = data.draw(st.sampled_from([None, object()]), label="ctx")
    # evaluation order: position j is row-order position (start + j) % m
    eval_rows = np.roll(all_rows, -start) if m else all_rows
    want_eval = _plain(fw, reasons, ctx, eval_rows)
    assert status_codes(fw, reasons, ctx, eval_rows).tolist() == want_eval
    asked = sorted(r for p in filters if isinstance(p, _Host) for r in p.asked)
    for p in filters:
        if isinstance(p, _Host):
            p.asked = []
    got = status_codes(fw, reasons, ctx, all_rows, start=start)
    want_rows = np.roll(np.array(want_eval, np.int64), start) if m else np.zeros(0, np.int64)
    assert got.tolist() == want_rows.tolist()
    # a host filter is asked about the rows it rejects first, once each
    assert sorted(r for p in filters if isinstance(p, _Host) for r in p.asked) == asked
    assert len(asked) == len(set(asked))
    helps = nodes_where_preemption_might_help(got)
    rows, unhelpful = rows_where_preemption_might_help(got, all_rows)
    assert rows.tolist() == all_rows[helps].tolist()
    assert unhelpful == int((~helps & (got >= 0)).sum())
    # the codes and the rows in one call: the same, the host filters asked
    # about the same rows again
    codes, rows_once, unhelpful_once = status_codes_and_helpful(fw, reasons, ctx, all_rows,
                                                                start=start)
    assert codes.tolist() == got.tolist() and rows_once.tolist() == rows.tolist()
    assert unhelpful_once == unhelpful
    assert sorted(r for p in filters if isinstance(p, _Host) for r in p.asked) == sorted(
        asked * 2)
    # the rows without the codes (one pass): the same, the host filters
    # asked about the same rows in the same order, whichever way
    asked_by = {}
    for one_pass in (True, False):
        EV.ONE_PASS_HELPFUL = one_pass
        for p in filters:
            if isinstance(p, _Host):
                p.asked = []
        try:
            rows_only, unhelpful_only = helpful_rows_of_reasons(fw, reasons, ctx, all_rows,
                                                                start=start)
        finally:
            EV.ONE_PASS_HELPFUL = True
        assert rows_only.tolist() == rows.tolist() and unhelpful_only == unhelpful
        asked_by[one_pass] = [list(p.asked) for p in filters if isinstance(p, _Host)]
    assert asked_by[True] == asked_by[False]


def test_where_every_row_helps_the_rows_come_back_uncopied():
    """Every node rejected by an Unschedulable filter (a full cluster's
    failed cycle): the one-pass rows where preemption might help are the
    given rows array itself (the pass writes no copy), equal to the
    two-pass answer at every start.  One node left out (first, inside,
    last) and the answer is a copy without it."""
    fw = _Fw([_Fused(1 << 3, False), _Fused(1 << 4, True)])
    m = 9
    all_rows = np.arange(2, 2 + 2 * m, 2, dtype=np.int64)
    for start in (0, 4, m - 1):
        reasons = np.full(m, 1 << 3, np.int64)
        got, unhelpful = helpful_rows_of_reasons(fw, reasons, None, all_rows, start=start)
        assert got is all_rows and unhelpful == 0
        _, want, _ = status_codes_and_helpful(fw, reasons, None, all_rows, start=start)
        assert want.tolist() == all_rows.tolist()
        for out_at in (0, 5, m - 1):        # row-order position left out
            reasons = np.full(m, 1 << 3, np.int64)
            reasons[(out_at - start) % m] = 1 << 4      # unresolvable there
            got, unhelpful = helpful_rows_of_reasons(fw, reasons, None, all_rows, start=start)
            _, want, _ = status_codes_and_helpful(fw, reasons, None, all_rows, start=start)
            assert got is not all_rows and unhelpful == 1
            assert got.tolist() == want.tolist() == np.delete(all_rows, out_at).tolist()
