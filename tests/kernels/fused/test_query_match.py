"""Row caches kept across node events (``fused.query_match``): a node added,
relabelled, tainted, cordoned or removed recompiles every query; a query
that compiles to the same arrays keeps its row cache, only the rows the
event wrote recomputed, and one whose arrays changed (a label value or key
first seen, a new taint, an image's spread) keeps it too, recomputing also
the rows its changes reach (``changed_rows``).  Random sequences of node
events and placements give the same placements on numba and cuda
(simulator) as on numpy, which keeps no row cache (every cycle reads every
row afresh); the rows recomputed after each kind of event are counted."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.backends import needs_cuda

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.framework.state.query import QueryOptions, compile_query
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels.fused import query_match as QM

ZONES = ("z0", "z1", "z2")
# node zones and taints drawn from more values than the first nodes have:
# values first seen later give the queries new ids (their arrays change)
NODE_ZONES = ZONES + ("z3", "z4")
TAINT_VALUES = ("x", "y", "w")
IMAGES = {"reg/a:1": 300 << 20, "reg/b:1": 600 << 20}


def _taint(value, effect="NoSchedule"):
    return {"key": "dedicated", "value": value, "effect": effect}


def _node(name, zone, cpu, taint=False, cordon=False, team=None, images=()):
    """``taint``: False, True (dedicated=x NoSchedule), or a (value,
    effect) pair; ``team``: a label of a key the first nodes lack."""
    if taint is True:
        taint = ("x", "NoSchedule")
    labels = {"zone": zone} | ({"team": team} if team else {})
    d = node_dict(name, cpu=str(cpu), memory="8Gi", labels=labels,
                  taints=[_taint(*taint)] if taint else None,
                  images=[{"names": [i], "sizeBytes": IMAGES[i]} for i in images] or None)
    if cordon:
        d["spec"]["unschedulable"] = True
    return d


def _pod(i, kind):
    spec, image = None, "registry.k8s.io/pause:3.10"
    if kind == "zone":
        spec = {"nodeSelector": {"zone": ZONES[i % 3]}}
    elif kind == "tolerates":
        spec = {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}
    elif kind == "prefers":         # values and a key the first nodes may lack
        spec = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "preference": {"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["z3", "z4"]}]}},
            {"weight": 3, "preference": {"matchExpressions": [
                {"key": "team", "operator": "NotIn", "values": ["t1"]}]}}]}}}
    elif kind == "image":
        image = "reg/a:1"
    return pod_dict(f"p{i}", cpu=f"{100 * (1 + i % 2)}m", memory="200Mi", created=i,
                    spec=spec, image=image)


NODE = st.tuples(st.sampled_from(NODE_ZONES), st.integers(1, 4),
                 st.one_of(st.booleans(), st.tuples(st.sampled_from(TAINT_VALUES),
                                                    st.sampled_from(["NoSchedule",
                                                                     "PreferNoSchedule"]))),
                 st.booleans(), st.sampled_from([None, "t1", "t2"]),
                 st.sampled_from([(), ("reg/a:1",), ("reg/b:1",), ("reg/a:1", "reg/b:1")]))
EVENT = st.one_of(
    st.tuples(st.just("place"), st.sampled_from(["plain", "plain", "zone", "tolerates",
                                                 "prefers", "image"]),
              st.integers(1, 3)),
    st.tuples(st.just("update"), st.integers(0, 7), NODE),
    st.tuples(st.just("remove"), st.integers(0, 7), st.none()),
    st.tuples(st.just("add"), st.integers(0, 7), NODE),
)


def _play(backend, nodes, events):
    """Placements [(pod, node)] of ``events`` over the nodes ``nodes``, and
    the backend (its counters)."""
    names = [f"n{i}" for i in range(len(nodes))]
    sched = Scheduler(build_cluster([_node(n, *spec) for n, spec in zip(names, nodes)]),
                      backend, 5)
    live = set(names)
    out = []
    k = 0
    for what, arg, spec in events:
        if what == "place":
            for _ in range(spec):           # (kind of pod, how many)
                sched.add_pod(_pod(k, arg))
                b = sched.schedule_one()
                out.append((b.pod, b.node))
                k += 1
        elif what == "update" and f"n{arg}" in live:
            sched.update_node(_node(f"n{arg}", *spec))
        elif what == "remove" and f"n{arg}" in live and len(live) > 1:
            sched.delete_node(f"n{arg}")
            live.discard(f"n{arg}")
        elif what == "add" and f"n{arg}" not in live:
            sched.add_node(_node(f"n{arg}", *spec))
            live.add(f"n{arg}")
    (fw,) = sched.cluster.frameworks.values()
    return out, fw.backend


CASES = dict(nodes=st.lists(NODE, min_size=2, max_size=6),
             events=st.lists(EVENT, min_size=1, max_size=14))
# a node appended between pods of one shape (the grown cache must keep the
# rows before it: their scores decide p4)
APPENDED = dict(nodes=[("z0", 1, False, False, None, ()), ("z1", 3, False, False, None, ())],
                events=[("place", "plain", 2), ("add", 5, ("z2", 2, False, False, None, ())),
                        ("place", "plain", 3)])
# a new taint word, a new label value and key, an image's spread changed,
# between pods of one shape
CHANGED = dict(nodes=[("z0", 2, False, False, None, ("reg/a:1",)),
                      ("z1", 2, False, False, None, ()), ("z2", 4, False, False, None, ())],
               events=[("place", "prefers", 1), ("place", "image", 1), ("place", "plain", 1),
                       ("update", 1, ("z3", 2, ("w", "NoSchedule"), False, "t1", ("reg/a:1",))),
                       ("place", "prefers", 2), ("place", "image", 2), ("place", "plain", 2),
                       ("update", 2, ("z4", 4, ("y", "PreferNoSchedule"), False, None, ())),
                       ("place", "prefers", 2), ("place", "image", 2), ("place", "plain", 2)])


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(**CASES)
@example(**APPENDED)
@example(**CHANGED)
def test_node_events_place_as_a_cacheless_backend(nodes, events):
    want, _ = _play("numpy", nodes, events)
    got, _ = _play("numba", nodes, events)
    assert got == want


@pytest.mark.cudasim
@needs_cuda
@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(**CASES)
@example(**APPENDED)
@example(**CHANGED)
def test_node_events_place_alike_on_cuda(nodes, events):
    want, _ = _play("numpy", nodes, events)
    got, _ = _play("cuda", nodes, events)
    assert got == want


@pytest.mark.parametrize("backend", ["numba", pytest.param(
    "cuda", marks=[pytest.mark.cudasim, needs_cuda])])
def test_a_relabel_recomputes_the_written_rows_only(backend):
    # 40 nodes, one pod placed; after a relabel, a cordon and a removal the
    # next pod of the same shape recomputes the rows written since its
    # query last ran (the placement's and the three events'), not 40.
    sched = Scheduler(build_cluster([_node(f"n{i}", "z0", 2) for i in range(40)]), backend, 5)
    (fw,) = sched.cluster.frameworks.values()
    be = fw.backend
    sched.add_pod(_pod(0, "plain"))
    first = sched.schedule_one().node
    sched.update_node(_node("n5", "z1", 2))
    sched.update_node(_node("n6", "z0", 2, cordon=True))
    sched.delete_node("n7")
    rows, adopted = be.rows_recomputed, be.caches_adopted
    sched.add_pod(_pod(4, "plain"))                 # the same requests as p0
    assert sched.schedule_one().node not in (None, "n6", "n7")
    assert be.caches_adopted == adopted + 1
    assert be.rows_recomputed - rows == len({first, "n5", "n6", "n7"})


def _appended(backend):
    """40 nodes of 1 cpu, the first 100m pod placed, the state's arrays
    filled with nodes, a second pod placed; then a node appended in a new
    row (the arrays reallocated: a new layout) with 4 cpus, where the next
    100m pod goes (LeastAllocated).  (placements, caches adopted and rows
    recomputed by that last cycle)."""
    sched = Scheduler(build_cluster([_node(f"n{i}", "z0", 1) for i in range(40)]), backend, 5)
    state = sched.cluster.state
    be = sched.cluster.framework_for(sched.cluster.resolve(_pod(0, "plain")), backend).backend
    sched.add_pod(_pod(0, "plain"))
    first = sched.schedule_one().node
    while state.n_rows < state.allocatable.shape[0]:
        sched.add_node(_node(f"m{state.n_rows}", "z0", 1))
    sched.add_pod(_pod(2, "plain"))
    filled = sched.schedule_one().node
    layout = state.layout_version
    sched.add_node(_node("big", "z1", 4))
    assert state.layout_version > layout
    rows, adopted = getattr(be, "rows_recomputed", 0), getattr(be, "caches_adopted", 0)
    sched.add_pod(_pod(4, "plain"))                 # the same requests as p0
    last = sched.schedule_one().node
    return ((first, filled, last), getattr(be, "caches_adopted", 0) - adopted,
            getattr(be, "rows_recomputed", 0) - rows)


@pytest.mark.parametrize("backend", ["numba", pytest.param(
    "cuda", marks=[pytest.mark.cudasim, needs_cuda])])
def test_an_appended_node_keeps_the_rows_before_it(backend):
    # the cache grows: only the last placement's row and the new one are
    # recomputed, and the placements are numpy's
    want, _, _ = _appended("numpy")
    got, adopted, rows = _appended(backend)
    assert got == want and got[2] == "big"
    assert adopted == 1 and rows == 2


def test_equal_queries_match_and_unequal_do_not():
    sched = Scheduler(build_cluster([_node("n0", "z0", 2), _node("n1", "z1", 2)]))
    state = sched.cluster.state
    pod = sched.cluster.resolve(parse_pod(_pod(0, "zone")))      # selects z0
    a = compile_query(state, pod, QueryOptions())
    sched.update_node(_node("n1", "z1", 3))        # the epoch moves, the same arrays
    b = compile_query(state, pod, QueryOptions())
    assert a is not b and QM.same_query(a, b) and QM.fingerprint(a) == QM.fingerprint(b)
    other = sched.cluster.resolve(parse_pod(_pod(1, "zone")))    # selects z1
    assert not QM.same_query(b, compile_query(state, other, QueryOptions()))
    assert not QM.same_query(b, b._replace(request=b.request + 1))
    # n0 relabelled away from z0: the value keeps its id (dictionaries only
    # append), so the arrays stay; n0's own row is a written row
    sched.update_node(_node("n0", "z2", 2))
    assert QM.same_query(b, compile_query(state, pod, QueryOptions()))
    # a value first seen now (z3) gets an id the selector now names
    late = sched.cluster.resolve(parse_pod(pod_dict("late", spec={"nodeSelector": {"zone": "z3"}})))
    before = compile_query(state, late, QueryOptions())
    sched.update_node(_node("n1", "z3", 3))
    assert not QM.same_query(before, compile_query(state, late, QueryOptions()))


# (pod kind, the event, the rows it reaches besides the written ones): 40
# nodes in z0, n0..n9 holding image reg/a:1
_CHANGES = {
    "new taint": ("plain", lambda s: s.update_node(_node("n5", "z0", 2, ("w", "NoSchedule"))),
                  {5}),
    "new preferred taint": ("plain", lambda s: s.update_node(
        _node("n5", "z0", 2, ("y", "PreferNoSchedule"))), {5}),
    "new label value": ("prefers", lambda s: s.update_node(_node("n5", "z3", 2)), {5}),
    "new label key": ("prefers", lambda s: s.update_node(_node("n5", "z0", 2, team="t2")), {5}),
    # the image's spread 10 -> 11 nodes: every holder's score moves
    "image gained": ("image", lambda s: s.update_node(
        _node("n20", "z0", 2, images=("reg/a:1",))), set(range(10)) | {20}),
    # the node count moves every image's spread: the holders (and the row)
    "node appended": ("image", lambda s: s.add_node(_node("late", "z0", 2)),
                      set(range(10)) | {40}),
    "node removed": ("image", lambda s: s.delete_node("n30"), set(range(10)) | {30}),
}


def _after_change(backend, change):
    """The placements of two pods of one shape around the event of
    ``_CHANGES[change]``, the rows the second cycle recomputed, the caches
    it adopted, whether the pod's query arrays changed, the rows it
    should recompute (the first placement's, the event's and those the
    change reaches), and whether the node columns were reallocated or
    widened."""
    kind, event, reached = _CHANGES[change]
    sched = Scheduler(build_cluster([
        _node(f"n{i}", "z0", 2, images=("reg/a:1",) if i < 10 else ())
        for i in range(40)]), backend, 5)
    state = sched.cluster.state
    (fw,) = sched.cluster.frameworks.values()
    be = fw.backend
    sched.add_pod(_pod(0, kind))
    first = sched.schedule_one().node
    pod = sched.cluster.resolve(parse_pod(_pod(2, kind)))
    before = compile_query(state, pod, QueryOptions(score_flags=-1))
    form = (state.layout_version, tuple(a.shape[1:] for a in state.columns()))
    event(sched)
    after = compile_query(state, pod, QueryOptions(score_flags=-1))
    reshaped = form != (state.layout_version, tuple(a.shape[1:] for a in state.columns()))
    rows, adopted = getattr(be, "rows_recomputed", 0), getattr(be, "caches_adopted", 0)
    whole, launches = getattr(be, "full_uploads", 0), getattr(be, "launches", 0)
    sched.add_pod(_pod(2, kind))                    # the same shape as p0
    second = sched.schedule_one().node
    want = reached | {state.node_rows.get(first, -1)}
    return ((first, second), getattr(be, "rows_recomputed", 0) - rows,
            getattr(be, "caches_adopted", 0) - adopted, not QM.same_query(before, after),
            sorted(want - {-1}), reshaped,
            (getattr(be, "full_uploads", 0) - whole, getattr(be, "launches", 0) - launches))


@pytest.mark.parametrize("change", sorted(_CHANGES))
@pytest.mark.parametrize("backend", ["numba", pytest.param(
    "cuda", marks=[pytest.mark.cudasim, needs_cuda])])
def test_changed_arrays_recompute_the_rows_they_reach(backend, change):
    want = _after_change("numpy", change)[0]
    got, rows, adopted, changed, reached, reshaped, (whole, launches) = _after_change(
        backend, change)
    assert changed                                  # the query's arrays differ
    assert got == want and adopted == 1
    assert len(reached) < 40
    # staged with the written rows (cuda: the pick's one launch), new
    # column widths or reallocated arrays too (the packs keep spare room:
    # no whole upload, no by-row pass)
    assert rows == len(reached)
    if backend == "cuda":
        assert whole == 0 and launches == 1, (reshaped, whole, launches)


def test_changed_rows_are_the_rows_carrying_a_changed_id():
    sched = Scheduler(build_cluster([_node(f"n{i}", "z0", 2, images=("reg/a:1",) if i < 3
                                           else ()) for i in range(8)]))
    state = sched.cluster.state
    opts = QueryOptions(score_flags=-1)
    pods = {k: sched.cluster.resolve(parse_pod(_pod(0, k))) for k in ("prefers", "image")}
    old = {k: compile_query(state, p, opts) for k, p in pods.items()}
    sched.update_node(_node("n6", "z3", 2, ("w", "NoSchedule"), team="t1"))
    cols = state.columns()
    new = {k: compile_query(state, p, opts) for k, p in pods.items()}
    # z3, the team key and the taint are carried by n6 alone
    assert QM.changed_rows(old["prefers"], new["prefers"], cols, 8).tolist() == [6]
    assert QM.form_fingerprint(old["prefers"]) == QM.form_fingerprint(new["prefers"])
    # the image's spread is unchanged (3 of 8): only the taint moved, on n6
    assert QM.changed_rows(old["image"], new["image"], cols, 8).tolist() == [6]
    sched.delete_node("n7")                         # the node count: every holder
    cols = state.columns()
    newer = compile_query(state, pods["image"], opts)
    assert QM.changed_rows(new["image"], newer, cols, 8).tolist() == [0, 1, 2]
    # a different request is a different form; a changed request: no rows bound
    other = new["image"]._replace(request=new["image"].request + 1)
    assert QM.changed_rows(new["image"], other, cols, 8) is None


@pytest.mark.parametrize("backend", ["numba", pytest.param(
    "cuda", marks=[pytest.mark.cudasim, needs_cuda])])
def test_a_live_query_keeps_its_cache(backend):
    # pods selecting z0, z1 and z2 compile to queries of one form; within
    # one epoch none takes another's cache (each would then pay for the
    # other's rows every cycle): the third shape gets a cache of its own
    sched = Scheduler(build_cluster([_node(f"n{i}", ZONES[i % 3], 4) for i in range(30)]),
                      backend, 5)
    (fw,) = sched.cluster.frameworks.values()
    be = fw.backend
    for i in (0, 1):                                # z0, z1
        sched.add_pod(_pod(3 * i, "zone"))
        sched.schedule_one()
    adopted, rows = be.caches_adopted, be.rows_recomputed
    sched.add_pod(_pod(8, "zone"))                  # z2: a new shape
    assert sched.schedule_one().node is not None
    assert be.caches_adopted == adopted and be.rows_recomputed - rows == 30
    rows = be.rows_recomputed
    sched.add_pod(_pod(6, "zone"))                  # z0 again: its own cache
    assert sched.schedule_one().node is not None
    # the rows the three placements wrote
    assert be.caches_adopted == adopted and be.rows_recomputed - rows <= 3
