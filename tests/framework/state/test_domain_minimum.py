"""``state.domain_minimum.PresentMinimum``: the least sums over the present
domains kept by the domains each update moved equal the ones computed
whole after any sequence of binds and evictions (single bumps, batches,
a journal outrun), and one bound pod moved costs its domain, not D."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.framework.state.domain_counts import DomainSums
from tensorsched.framework.state.domain_minimum import INF, PresentMinimum, least_of


class ByHistogram(PresentMinimum):
    """The histogram's path at any number of domains (no small path)."""

    SMALL = 0


@pytest.mark.parametrize("kind", [PresentMinimum, ByHistogram])
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_kept_least_equals_a_fresh_one_after_binds_and_evictions(kind, data):
    n = data.draw(st.integers(1, 40), label="rows")
    d = data.draw(st.integers(1, 12), label="domains")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    dom = rng.integers(-1, d, n).astype(np.int64)
    counts = rng.integers(0, 5, n).astype(np.int64)
    ds = DomainSums(dom, counts.copy(), d)
    kept = kind(ds)
    assert (kept.present_at is None) == (kind is ByHistogram)
    assert kept.read() == least_of(ds.sums, ds.present)
    for _ in range(data.draw(st.integers(0, 30), label="steps")):
        kind = data.draw(st.sampled_from(("bind", "evict", "batch", "read")))
        if kind == "read":
            assert kept.read() == least_of(ds.sums, ds.present)
            continue
        if kind == "batch":
            rows = rng.integers(0, n, rng.integers(1, 6)).astype(np.int64)
            delta = int(rng.choice((1, -1)))
            if delta < 0:       # counts never go below zero: evict only bound pods
                rows = np.unique(rows)
                rows = rows[counts[rows] > 0]
                if not rows.shape[0]:
                    continue
            np.add.at(counts, rows, delta)
            ds.bump_many(rows, delta)
            continue
        row = int(rng.integers(0, n))
        if kind == "evict" and counts[row] == 0:
            continue
        delta = 1 if kind == "bind" else -1
        counts[row] += delta
        ds.bump(row, delta)
    assert kept.read() == least_of(ds.sums, ds.present)
    fresh = DomainSums(dom, counts, d)
    assert np.array_equal(fresh.sums, ds.sums)      # the bumps did follow the counts
    assert kept.read() == least_of(fresh.sums, fresh.present)


def test_one_pod_moved_reads_its_domain_not_every_domain():
    d = 10_000
    dom = np.arange(d, dtype=np.int64)              # hostname: a domain per node
    counts = np.full(d, 30, np.int64)
    ds = DomainSums(dom, counts, d)
    kept = PresentMinimum(ds)
    assert kept.read() == (d, 30, d, INF)
    read = kept.domains_read
    for _ in range(4):
        ds.bump(1234, -1)
    ds.bump(77, 1)
    assert kept.read() == (d, 26, 1, 30)
    assert kept.domains_read - read == 2            # two domains moved
    assert kept.rebuilds == 1
    ds.bump(1234, 4)
    assert kept.read() == least_of(ds.sums, ds.present) == (d, 30, d - 1, 31)


def test_a_few_domains_are_read_whole_without_the_journal(monkeypatch):
    """A zone key's three domains: each read after a move takes the three
    sums (no histogram, no journal read, no rebuild), and answers as the
    whole count, however far apart the sums."""
    dom = np.array([0, 1, 2, 0, 1, 2, -1], np.int64)
    ds = DomainSums(dom, np.array([4000, 7, 9000, 1, 2, 3, 5], np.int64), 3)
    kept = PresentMinimum(ds)
    assert kept.read() == (3, 9, 1, 4001) and kept.hist is None

    def no_journal(self, version):
        raise AssertionError("the journal read for a few domains")
    monkeypatch.setattr(DomainSums, "moved_since", no_journal)
    monkeypatch.setattr(DomainSums, "changed_since", no_journal)
    read = kept.domains_read
    ds.bump(1, -9)
    ds.bump(4, 4001)
    assert kept.read() == least_of(ds.sums, ds.present) == (3, 4001, 2, 9003)
    assert kept.domains_read - read == 3 and kept.rebuilds == 1


def test_repeated_single_bumps_come_back_as_a_list_of_their_domains():
    ds = DomainSums(np.arange(5, dtype=np.int64), np.ones(5, np.int64), 5)
    ds.bump(3, 1)
    ds.bump(1, 1)
    ds.bump(3, -1)
    assert ds.moved_since(0) == [3, 1, 3]
    ds.bump_many(np.array([4, 2], np.int64), 1)
    assert ds.moved_since(0).tolist() == [1, 2, 3, 4]
    assert ds.moved_since(-1) is None


def test_a_journal_outrun_counts_everything_again():
    dom = np.array([0, 1, 2, -1], np.int64)
    ds = DomainSums(dom, np.array([2, 3, 5, 9], np.int64), 4)
    kept = ByHistogram(ds)
    for _ in range(ds.JOURNAL + 3):
        ds.bump(0, 1)
        ds.bump(0, -1)
    ds.bump(1, -3)
    assert kept.read() == least_of(ds.sums, ds.present) == (3, 0, 1, 2)
    assert kept.rebuilds == 2
