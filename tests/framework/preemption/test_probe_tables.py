"""``preemption.probe_tables.ProbeTables``: the probes' tables kept between
preemptors equal the tables built afresh after every update, whatever
the sequence (sources kept, moved in place through DomainSums updates,
replaced, sparse rows moving, shapes changing); the rows it reports
changed are exactly the rows that differ from the tables before; and a
source kept between updates costs only the rows its journal names (one
bound pod moved: its domains, not N)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.framework.preemption.probe_tables import Column, DomainColumn, ProbeTables
from tensorsched.framework.state.domain_counts import DomainSums


def _fresh(n, node_cols, dom_cols) -> ProbeTables:
    t = ProbeTables()
    t.update(n, node_cols, dom_cols)
    return t


def _diff_rows(before: np.ndarray, after: np.ndarray) -> list:
    if before.shape != after.shape:
        return None
    return np.flatnonzero((before != after).any(axis=1)).tolist()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_updates_equal_a_fresh_build_and_name_the_changed_rows(data):
    n = data.draw(st.integers(1, 40), label="rows")
    d = data.draw(st.integers(1, 24), label="domains")
    # the domains a journal names compared one by one (a few) or as arrays
    scalar_rows = data.draw(st.sampled_from([0, 2, ProbeTables.SCALAR_ROWS]),
                            label="scalar rows")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))

    def new_sums():
        dom = rng.integers(-1, d, n).astype(np.int64)
        return DomainSums(dom, rng.integers(0, 4, n).astype(np.int64), d)

    sums = [new_sums(), new_sums()]
    arrays = [rng.integers(-1, d, n).astype(np.int64) for _ in range(2)]
    tables = ProbeTables()
    tables.SCALAR_ROWS = scalar_rows
    before_n = before_d = None
    for _ in range(data.draw(st.integers(1, 8), label="updates")):
        # move pods: DomainSums updated in place (one row or many)
        for _ in range(data.draw(st.integers(0, 3))):
            ds = sums[data.draw(st.integers(0, 1))]
            if data.draw(st.booleans()):
                ds.bump(int(rng.integers(0, n)), int(rng.choice([-1, 1])))
            else:           # binds and evictions that cancel out included
                k = data.draw(st.sampled_from([3, 3, 30]))
                ds.bump_many(rng.integers(0, n, k).astype(np.int64),
                             int(rng.choice([-1, 1])))
        if data.draw(st.booleans()):            # another source (another preemptor)
            k = data.draw(st.integers(0, 1))
            sums[k] = new_sums() if data.draw(st.booleans()) else sums[k]
            arrays[k] = rng.integers(-1, d, n).astype(np.int64)
        rows = np.unique(rng.integers(0, n, data.draw(st.integers(0, 3)))).astype(np.int64)
        node_cols = [Column(-1, arrays[0]), Column(-1, sums[0].dom), Column(-1),
                     Column(0, rng.integers(0, 3, rows.shape[0]).astype(np.int64), rows),
                     Column(-1, arrays[1][: n - 1])]
        dom_cols = [DomainColumn(sums[0]), DomainColumn(values=sums[0].present),
                    DomainColumn(sums[1]), DomainColumn()]
        if data.draw(st.integers(0, 5)) == 0:   # fewer columns: another shape
            node_cols, dom_cols = node_cols[:2], dom_cols[:1]
        tables.update(n, node_cols, dom_cols)
        want = _fresh(n, node_cols, dom_cols)
        assert tables.nodes.tolist() == want.nodes.tolist()
        assert tables.doms.tolist() == want.doms.tolist()
        for before, after, changed in ((before_n, tables.nodes, tables.nodes_changed),
                                       (before_d, tables.doms, tables.doms_changed)):
            rows_differing = None if before is None else _diff_rows(before, after)
            if changed is None:
                continue                        # rebuilt: everything goes
            assert rows_differing is not None
            assert changed.tolist() == rows_differing
        before_n, before_d = tables.nodes.copy(), tables.doms.copy()


def test_one_pod_moved_reads_its_domains_only():
    """Kept sources between two updates: a pod bound on one row re-reads
    that row's domain of each DomainSums (its journal), no node row."""
    n, d = 10_000, 3
    rows = np.arange(n, dtype=np.int64)
    host = DomainSums(rows, np.ones(n, np.int64), n)               # hostname: N domains
    zone = DomainSums(rows % d, np.ones(n, np.int64), d)
    node_cols = [Column(-1, rows), Column(-1, host.dom), Column(-1, rows % d),
                 Column(-1, zone.dom), Column(0, np.zeros(0, np.int64), np.zeros(0, np.int64))]
    dom_cols = [DomainColumn(host), DomainColumn(zone), DomainColumn(values=host.present),
                DomainColumn(values=zone.present)]
    t = ProbeTables()
    t.update(n, node_cols, dom_cols)
    assert t.nodes_changed is None and t.rows_read == n + n
    read = t.rows_read
    host.bump(4321, 1)
    zone.bump(4321, 1)
    t.update(n, node_cols, dom_cols)
    assert t.rows_read - read == 2                  # domain 4321 of one, 1 of the other
    assert t.nodes_changed.tolist() == [] and t.doms_changed.tolist() == [1, 4321]
    assert t.doms[4321, 0] == 2 and t.doms[1, 1] == np.count_nonzero(rows % d == 1) + 1
    read = t.rows_read
    t.update(n, node_cols, dom_cols)                # nothing moved: nothing read
    assert t.rows_read == read and t.doms_changed.tolist() == []


def test_a_journal_past_its_length_compares_the_column():
    ds = DomainSums(np.arange(4, dtype=np.int64), np.zeros(4, np.int64), 4)
    v = ds.version
    for _ in range(DomainSums.JOURNAL + 2):
        ds.bump(1, 1)
    assert ds.changed_since(v) is None
    assert ds.changed_since(ds.version - 1).tolist() == [1]
    assert ds.changed_since(ds.version).tolist() == []
    t = ProbeTables()
    t.update(4, [Column(-1)], [DomainColumn(ds)])
    ds.bump(2, 5)
    ds.bump_many(np.array([3, 3], np.int64), 1)
    assert ds.changed_since(ds.version - 2).tolist() == [2, 3]
    t.update(4, [Column(-1)], [DomainColumn(ds)])
    assert t.doms[:, 0].tolist() == ds.sums.tolist() and t.doms_changed.tolist() == [2, 3]


def test_a_few_moved_domains_are_compared_one_by_one_with_the_same_answer():
    """A journal naming a few domains (one preemptor's victims and its own
    node) is compared without array passes, many domains as arrays: the
    same tables, the same changed rows, the same rows read."""
    n = 64
    got = []
    for scalar_rows in (0, ProbeTables.SCALAR_ROWS):
        rows = np.arange(n, dtype=np.int64)
        host = DomainSums(rows, np.ones(n, np.int64), n)
        t = ProbeTables()
        t.SCALAR_ROWS = scalar_rows
        cols = ([Column(-1, host.dom)], [DomainColumn(host), DomainColumn(values=host.present)])
        t.update(n, *cols)
        steps = []
        for moved in ([5], [5, 9, 9], list(range(0, 40, 2)), [7]):
            host.bump_many(np.array(moved, np.int64), 1)
            host.bump_many(np.array(moved[:1], np.int64), -1)   # one back: no net change
            read = t.rows_read
            t.update(n, *cols)
            assert t.doms[:, 0].tolist() == host.sums.tolist()
            steps.append((t.doms_changed.tolist(), t.rows_read - read))
        got.append(steps)
    assert got[0] == got[1]
    assert got[1][0] == ([], 1) and got[1][1] == ([9], 2)
