"""``kernels.domain_codes.rule_codes``: every rule in one pass gives the
codes and pass mask that applying the rules one after another
(``domains.domain_rule``, first failing rule's code standing) and then
comparing with zero give, for any rules (keys missing, thresholds below,
at and above the sums)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.kernels import domain_codes as DCODES
from tensorsched.kernels import domains as D


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_one_pass_equals_the_rules_one_after_another(data):
    n = data.draw(st.integers(0, 30), label="rows")
    c = data.draw(st.integers(1, 3), label="rules")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    domp1s, sums, thresh = [], [], []
    for _ in range(c):
        d = int(rng.integers(1, 6))
        domp1s.append(rng.integers(0, d + 1, n + int(rng.integers(0, 3))).astype(np.int64))
        sums.append(rng.integers(0, 6, d).astype(np.int64))
        thresh.append(int(rng.integers(-1, 7)))
    want = np.zeros(n, np.int64)
    for dp, s, t in zip(domp1s, sums, thresh):
        D.host.domain_rule(want, dp, s, t, 1, 2, 0)
    codes = np.full(n, 7, np.int64)
    ok = np.zeros(n, np.bool_)
    DCODES.host.rule_codes(codes, ok, tuple(domp1s), tuple(sums), np.array(thresh, np.int64))
    assert np.array_equal(codes, want)
    assert np.array_equal(ok, want == 0)
