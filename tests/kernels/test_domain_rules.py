"""The arrays a compiled run's per-domain rules are packed into."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.kernels import domain_rules as DR
from tensorsched.kernels.domain_rules import (
    P_INCREMENT,
    P_N_DOMAINS,
    P_THRESH,
    AffinityScore,
    AffinityTerm,
    DomainRule,
    SpreadScore,
    SpreadTerm,
    class_keys,
    rows_by_domain,
    stack_affinity,
    stack_rules,
    stack_spread,
)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=60))
def test_rows_by_domain_lists_each_domains_rows_ascending(domp1):
    domp1 = np.array(domp1, np.int64)
    ptr, rows = rows_by_domain(domp1, 5)
    for d in range(5):
        assert rows[ptr[d]:ptr[d + 1]].tolist() == np.flatnonzero(domp1 == d + 1).tolist()
    assert ptr[5] == np.count_nonzero(domp1)


def _rule(domp1, sums, **kw):
    args = dict(bit=1 << 16, domp1=np.array(domp1, np.int64),
                count_dom=np.array(domp1, np.int64) - 1, sums=np.array(sums, np.int64),
                present=None, thresh=0, track_min=False, fail_absent=False, fail_above=True,
                fail_not_above=False, increment=True)
    args.update(kw)
    return DomainRule(**args)


def test_stack_rules_pads_to_the_widest_rule_and_copies_the_counts():
    a = _rule([1, 2, 0, 2], [3, 1])
    b = _rule([1, 1, 1, 0], [7], thresh=4, increment=False)
    got = stack_rules([a, b], 4)
    assert got.sums.shape == (2, 2) and got.sums[0].tolist() == [3, 1]
    assert got.sums[1].tolist() == [7, 0]
    assert got.params[:, P_N_DOMAINS].tolist() == [2, 1]
    assert got.params[:, P_THRESH].tolist() == [0, 4]
    assert got.params[:, P_INCREMENT].tolist() == [1, 0]
    assert got.dom_rows[1, got.dom_ptr[1, 0]:got.dom_ptr[1, 1]].tolist() == [0, 1, 2]
    got.sums[0, 0] = 99                       # the kernel counts in its own copy
    assert a.sums[0] == 3
    empty = stack_rules([], 4)
    assert empty.params.shape[0] == 0 and empty.domp1.shape == (0, 4)


def test_stack_rules_refuses_domain_ids_outside_the_counts():
    with pytest.raises(ValueError, match="rule 0"):
        stack_rules([_rule([1, 3], [1, 1])], 2)


def _spread_term(domp1, n_domains, hostname):
    domp1 = np.array(domp1, np.int64)
    return SpreadTerm(domp1, domp1 - 1, np.zeros(n_domains, np.int64),
                      np.maximum(domp1 - 1, 0), n_domains, hostname, 1, True)


def test_class_keys_key_hostname_terms_by_count_and_the_rest_by_domain(monkeypatch):
    """Many one-row domains (hostname): keyed by the row's own count, with
    each domain's row; few domains (zone), or domains sharing rows: by id.
    Rules of few domains become class rules only without spread terms."""
    monkeypatch.setattr(DR, "CLASS_BY_DOMAIN_MAX", 3)
    n = 6
    host = _spread_term([1, 2, 3, 4, 5, 0], 6, True)
    zone = _spread_term([1, 2, 1, 2, 1, 2], 2, False)
    shared = AffinityTerm(np.array([1, 1, 2, 3, 4, 5]), np.array([0, 0, 1, 2, 3, 4]),
                          np.zeros(5, np.int64), 3, True)
    spread = stack_spread(SpreadScore(2, False, np.ones(n, np.bool_), [host, zone]), n)
    affinity = stack_affinity(AffinityScore(3, [shared]), n, 1)
    zone_rule = _rule([1, 2, 1, 2, 1, 2], [0, 0])
    host_rule = _rule([1, 2, 3, 4, 5, 6], [0] * 6)
    rules = stack_rules([zone_rule, host_rule], n)
    got = class_keys(spread, affinity, rules, n)
    assert got.mode.tolist() == [1, 0, 0, 0]      # host, zone, shared, has_all
    assert got.dom_row[0, :6].tolist() == [0, 1, 2, 3, 4, -1]
    assert got.r_col.tolist() == [-1, -1]         # spread terms: rules stay per row
    no_spread = stack_spread(None, n)
    got = class_keys(no_spread, affinity, rules, n)
    assert got.r_col.tolist() == [2, -1] and got.mode.shape[0] == 3
