"""``bench.many_selectors``: every pending pod placed, numpy and numba
agreeing, with more apps than the count index's LRU holds keys for."""

from __future__ import annotations

from tensorsched.bench import many_selectors
from tensorsched.framework.state.domain_counts import PodCountIndex


def test_more_apps_than_the_index_keeps_place_alike_on_both_backends(monkeypatch):
    monkeypatch.setattr(PodCountIndex, "MAX_KEYS", 4)      # 6 apps: 12 keys, 4 kept
    numba = many_selectors.run(8, 6, 12, "numba")
    numpy = many_selectors.run(8, 6, 12, "numpy")
    assert numba["placed"] == numpy["placed"] == 12
    assert numba["placements_sha256"] == numpy["placements_sha256"]
    assert numba["bound_pods"] == 8 * 20 and numba["ms_per_pod"] > 0
