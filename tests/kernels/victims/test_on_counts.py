"""kernels/victims/on_counts.py: the victim search on counts with the visit
and the pick in the same pass.  On the built-in filters it gives, for every
visited position, the stats of ``search.select_victims`` (NumPy), and the
visit's length, Filter calls and chosen candidate of ``pick.visit_and_pick``,
batch after batch, with and without the alike tails; ``alike_tail`` against a
plain loop (and ``index_rows``, their compiled twin).  (With PodTopologySpread / InterPodAffinity on counts:
tests/framework/preemption/test_victims_*_on_counts.py and test_visit.py.)"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.victim_tables import victim_case

from tensorsched.kernels import layout as L
from tensorsched.kernels.victims import on_counts as VS
from tensorsched.kernels.victims import pick as VP
from tensorsched.kernels.victims import search as V

SETTINGS = {"deadline": None, "derandomize": True, "suppress_health_check": list(HealthCheck)}


def _alike_loop(order, shape, cls, special, count):
    out = []
    for i in range(order.shape[0]):
        t = int(count[i])
        last = None
        while t > 0:
            s = order[i, t - 1]
            key = (shape[i, s], cls[i, s])
            if special[i, s] or (last is not None and key != last):
                break
            last = key
            t -= 1
        out.append(t)
    return out


def _tails(pods):
    """(order, alike_from) of a table: shapes = distinct request rows."""
    n, c = pods.pod_prio.shape
    flat = pods.pod_req.reshape(n * c, pods.pod_req.shape[2])
    shape = np.unique(flat, axis=0, return_inverse=True)[1].reshape(n, c) if c else \
        np.zeros((n, 0), np.int64)
    special = pods.pod_ports.any(axis=2) | pods.pod_pdb.any(axis=2)
    order = VS.importance_order(pods.pod_prio, pods.pod_start, pods.pod_count)
    cls = np.zeros((n, c), np.int64)
    return order, VS.alike_tail(order, shape, cls, special, pods.pod_count), shape, special


@settings(max_examples=40, **SETTINGS)
@given(victim_case(alike=True))
def test_alike_tail_and_order(case):
    _, _, _, _, pods = case
    order, alike, shape, special = _tails(pods)
    cls = np.zeros_like(shape)
    assert alike.tolist() == _alike_loop(order, shape, cls, special, pods.pod_count)
    for i in range(order.shape[0]):
        k = int(pods.pod_count[i])
        want = sorted(range(k), key=lambda s: (-pods.pod_prio[i, s], pods.pod_start[i, s], s))
        assert order[i, :k].tolist() == want
    # The compiled twin the victim table keeps its rows with.
    got_order = np.full_like(order, -7)
    got_alike = np.full(order.shape[0], -7, np.int64)
    rows = np.arange(order.shape[0])
    dying = np.zeros_like(special)
    VS.index_rows(rows, pods.pod_count, pods.pod_prio, pods.pod_start, shape, cls,
                  pods.pod_ports, pods.pod_pdb, dying, got_order, got_alike)
    assert got_order.tolist() == order.tolist()
    assert got_alike.tolist() == alike.tolist()
    # A terminating pod ends the alike tail as a special one does.
    dying[:, ::2] = True
    VS.index_rows(rows, pods.pod_count, pods.pod_prio, pods.pod_start, shape, cls,
                  pods.pod_ports, pods.pod_pdb, dying, got_order, got_alike)
    want = VS.alike_tail(order, shape, cls, special | dying, pods.pod_count)
    assert got_alike.tolist() == want.tolist()


@settings(max_examples=60, **SETTINGS)
@given(victim_case(max_nodes=8, alike=True), st.integers(1, 8), st.integers(0, 8),
       st.booleans())
def test_visit_equals_search_then_pick(case, cap, split, tails):
    c, q, rows, prio, pods = case
    rows = np.asarray(rows, np.int64)
    want = V.select_victims("numpy", c, q, rows, prio, pods)
    pk = VP.visit_and_pick(want.stats, cap)
    order, alike, _, _ = _tails(pods)
    state = VS.VisitState(cap, pods.pod_prio.shape[1])
    q2 = V.pad_query(c, q)
    parts = []
    for base, part in ((0, rows[:split]), (min(split, rows.shape[0]), rows[split:])):
        if part.shape[0] and not state.stopped:
            parts.append(VS.visit(c, q2, prio, pods, order, part, base, state,
                                  keep_victims=True, alike_from=alike if tails else None))
    assert state.visited == pk.visited
    assert state.calls == pk.calls
    assert state.chosen == pk.chosen
    stats = np.concatenate([p.stats for p in parts])[: pk.visited]
    kinds = np.concatenate([p.kind for p in parts])[: pk.visited]
    victims = np.concatenate([p.victims for p in parts])[: pk.visited]
    assert stats.tolist() == want.stats[: pk.visited].tolist()
    assert ((kinds == VS.KIND_OK) == (stats[:, V.STAT_CODE] == 0)).all()
    for j in np.flatnonzero(kinds == VS.KIND_OK):
        n = int(stats[j, V.STAT_N_VICTIMS])
        assert victims[j, :n].tolist() == want.victims[j, :n].tolist()
    if pk.chosen >= 0:
        n = int(want.stats[pk.chosen, V.STAT_N_VICTIMS])
        assert state.victims().tolist() == want.victims[pk.chosen, :n].tolist()
        assert state.best_stats.tolist() == want.stats[pk.chosen].tolist()


def _strided(a):
    """A copy of ``a`` as a strided view (what ``ClusterState.columns``
    hands out: rows of a wider table), the same values."""
    if not isinstance(a, np.ndarray) or a.ndim == 0:
        return a
    wide = np.zeros(a.shape[:-1] + (a.shape[-1] + 1,), a.dtype)
    wide[..., : a.shape[-1]] = a
    return wide[..., : a.shape[-1]]


@settings(max_examples=10, **SETTINGS)
@given(victim_case(max_nodes=6, alike=True))
def test_visit_one_compile_for_any_layout(case):
    """C-contiguous inputs (a test's) and strided views (the state's node
    columns) give the same visit through the same compiled signature."""
    from tensorsched.kernels.victims import _numba as VN

    c, q, rows, prio, pods = case
    rows = np.asarray(rows, np.int64)
    order, alike, _, _ = _tails(pods)
    q2 = V.pad_query(c, q)
    got = []
    for cols, table in ((c, pods), (c._replace(**{f: _strided(getattr(c, f)) for f in c._fields}),
                                    pods._replace(**{f: _strided(getattr(pods, f))
                                                     for f in pods._fields}))):
        state = VS.VisitState(3, pods.pod_prio.shape[1])
        out = VS.visit(cols, q2, prio, table, order, rows, 0, state, keep_victims=True,
                       alike_from=alike)
        got.append((out.stats.tolist(), out.victims.tolist(), state.chosen))
        if len(got) == 1:
            compiled = list(VN.visit_rows.signatures)
    assert got[0] == got[1]
    assert VN.visit_rows.signatures == compiled


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_fit_columns_are_the_requested_resources_fit_compares(data):
    """``fit_columns``: the resources the query asks for (a positive
    request), neither the pod count nor one NodeResourcesFit ignores, in
    column order, with their amounts; none when it requests nothing."""
    r = data.draw(st.integers(0, 8), label="resources")
    request = data.draw(st.lists(st.integers(-1, 3), min_size=r, max_size=r), label="request")
    ignored = data.draw(st.lists(st.booleans(), min_size=r, max_size=r + 2), label="ignored")
    anything = data.draw(st.booleans(), label="requests_anything")
    q = SimpleNamespace(request=np.array(request, np.int64), fit_ignored=np.array(ignored, bool),
                        requests_anything=anything)
    cols, want = VS.fit_columns(q)
    keep = [k for k in range(r) if anything and request[k] > 0 and k != L.RES_PODS
            and not ignored[k]]
    assert cols.dtype == np.int64 and want.dtype == np.int64
    assert cols.tolist() == keep and want.tolist() == [request[k] for k in keep]
