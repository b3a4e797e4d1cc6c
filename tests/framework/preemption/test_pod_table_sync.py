"""``PodTable.sync`` re-reads the rows the state wrote since the last sync,
found from the state's write log (O(writes), not a pass over N rows), and
falls back to a scan of ``row_version`` where the log no longer reaches
back; after any sequence of binds, evictions, batch binds and removals,
node removals and additions, the table equals one read afresh.  The
table's ``SyncJournal`` names the rows each sync wrote (the device
mirror's followers read it instead of ``row_stamp``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from reference.pod_table_rows import read_row, table_row
from support.backends import needs_cuda

from tensorsched.generators import clusters as synthetic
from tensorsched.bench.preemption import build as build_preemption
from tensorsched.bench.preemption import run_preemption
from tensorsched.framework.parsing.manifests import parse_node
from tensorsched.framework.preemption import evaluator as EV
from tensorsched.framework.preemption.evaluator import PodTable
from tensorsched.framework.records.records import HostPort, PodDisruptionBudgetRecord
from tensorsched.framework.state.cluster_state import add_pods, remove_pods
from tensorsched.kernels.fused.source import WriteLog
from tensorsched.kernels.victims.sync_journal import SyncJournal

_ARRAYS = ("count", "prio", "start", "req", "ports", "pdb", "shp", "dying", "order",
           "alike_from")


def _view(table, width: int) -> dict:
    """The table's used rows as arrays, slot columns cut to ``width``;
    ``cls`` as each slot's class (namespace, sorted labels), None for -1."""
    n = table.state.n_rows
    out = {a: getattr(table, a)[:n] for a in _ARRAYS}
    for a in _ARRAYS:           # slot widths may differ: compare the used part
        if a not in ("count", "alike_from"):
            out[a] = out[a][:, :width]
    named = np.empty(len(table.class_records) + 1, dtype=object)      # [-1]: no pod
    for i, r in enumerate(table.class_records):
        named[i] = (r.namespace, tuple(sorted((r.labels or {}).items())))
    out["cls"] = named[table.cls[:n, :width]]
    out["keys"] = [list(k) for k in table.keys[:n]]
    return out


def _assert_as_read_pod_by_pod(table, rows=None):
    """Every row of ``table`` (or of ``rows``) equals the scalar
    reference's pod-by-pod read."""
    st = table.state
    c, wp, wb = table.prio.shape[1], table.ports.shape[2], table.pdb.shape[2]
    for row in range(st.n_rows) if rows is None else rows:
        assert table_row(table, row) == read_row(st, table.pdbs, row, c, wp, wb), row


def _assert_as_read_afresh(table, rows=None):
    """``table`` equals a fresh table's sync in every row, and the scalar
    reference's read in every row (or in ``rows``: at 10,000 rows the
    reference reads the rows a test wrote and a sample; the fresh table
    holds the rest, and the smaller tests check fresh tables row by row)."""
    _assert_as_read_pod_by_pod(table, rows)
    fresh = PodTable(table.state, table.pdbs)
    fresh.sync()
    c = min(table.cls.shape[1], fresh.cls.shape[1])
    view, want = _view(table, c), _view(fresh, c)
    assert view.pop("keys") == want.pop("keys")
    for a in view:
        assert view[a].shape == want[a].shape and (view[a] == want[a]).all(), a


def _touched_and_sampled(state, *nodes: str) -> list[int]:
    """The rows of ``nodes`` and every 500th row."""
    return sorted({state.node_rows[n] for n in nodes} | set(range(0, state.n_rows, 500)))


def _cluster(nodes: int, variant: str = ""):
    cluster, pending = build_preemption(nodes, 4, 100, variant)
    return cluster, cluster.state, pending[0]


def _bind(state, template, name: str, node: str) -> None:
    state.add_pod(dataclasses.replace(template, name=name, uid=name, node_name=node), node)


def _pdbs():
    """PDBs over the table's pods: one selecting the low pods' labels (the
    spread variant's) or the labelled binds', one listing some bound pods
    as disrupted, one of another namespace, one with an empty selector
    (selects nothing)."""
    def pdb(name, selector, namespace="default", disrupted=()):
        return PodDisruptionBudgetRecord(namespace, name, selector, 1, None, None,
                                         tuple(disrupted))
    return [pdb("web", {"matchLabels": {"app": "web"}}),
            pdb("tagged", {"matchLabels": {"tag": "t1"}}, disrupted=("new-1", "new-4", "new-7")),
            pdb("elsewhere", {"matchLabels": {"app": "web"}}, namespace="other"),
            pdb("empty", {})]


_OPS = hs.lists(hs.tuples(hs.sampled_from(["bind", "evict", "bind_many", "evict_many",
                                           "restore", "remove_node", "add_node", "sync",
                                           "bind_ports", "bind_labeled", "bind_dying",
                                           "evict_newest"]),
                          hs.integers(0, 1 << 30)), min_size=1, max_size=25)


@settings(max_examples=40, deadline=None)
@given(variant=hs.sampled_from(["", "spread", "antiaffinity"]), ops=_OPS,
       log_limit=hs.sampled_from([None, 16]), journal_limit=hs.sampled_from([None, 3]),
       with_pdbs=hs.booleans())
def test_incremental_sync_equals_a_fresh_table(variant, ops, log_limit, journal_limit,
                                               with_pdbs):
    """Random binds (plain, with host ports, with other labels, terminating),
    evictions (one and many, the newest bind's: its class may leave and its
    id serve the next class), pods taken out and put back, node removals
    and additions, with syncs between, with PDBs or without: after each
    sync the table (its rows written as one batch) is as read afresh and
    as the scalar reference reads it pod by pod, and the rows its journal
    names since any earlier sync are exactly those whose ``row_stamp``
    moved (a short state log and a short journal: the scan fallbacks)."""
    cluster, state, template = _cluster(5, variant)
    if log_limit:
        state.write_log = WriteLog(log_limit)
    table = PodTable(state, _pdbs() if with_pdbs else ())
    if journal_limit:
        table.written = SyncJournal(limit=journal_limit, max_syncs=journal_limit)
    table.sync()
    stamps = [(table.syncs, table.layout, table.row_stamp.copy())]
    made = 0
    for op, r in ops:
        names = sorted(state.node_rows)
        keys = sorted(state.pods)
        if op == "bind" and names:
            _bind(state, template, f"new-{made}", names[r % len(names)])
            made += 1
        elif op == "evict" and keys:
            state.remove_pod(keys[r % len(keys)])
        elif op == "bind_many" and names:
            k = 1 + r % 4
            pods = [dataclasses.replace(template, name=f"new-{made + j}", uid=f"new-{made + j}")
                    for j in range(k)]
            add_pods(state, pods, [names[(r + j) % len(names)] for j in range(k)])
            made += k
        elif op == "evict_many" and keys:
            remove_pods(state, keys[r % len(keys):][:3])
        elif op == "evict_newest" and made and f"default/new-{made - 1}" in state.pods:
            # a labelled class's only pod leaving frees its class id for the
            # next new class (the table maps ids again)
            state.remove_pod(f"default/new-{made - 1}")
        elif op == "restore" and keys:
            state.restore_pod(state.remove_pod(keys[r % len(keys)]))
        elif op == "remove_node" and len(names) > 1:
            state.remove_node(names[r % len(names)])
        elif op == "add_node":
            state.add_node(parse_node(synthetic.node_dict(
                f"extra-{made}", labels={synthetic.ZONE: f"zone-{r % 3}"})))
            made += 1
        elif op in ("bind_ports", "bind_labeled", "bind_dying") and names:
            extra = {"bind_ports": {"host_ports": [HostPort("TCP", "0.0.0.0", 8000 + r % 70)]},
                     "bind_labeled": {"labels": {"tag": f"t{r % 2}", "app": "web"}},
                     "bind_dying": {"deleting": True}}[op]
            pod = dataclasses.replace(template, name=f"new-{made}", uid=f"new-{made}",
                                      node_name=names[r % len(names)], **extra)
            state.add_pod(pod, names[r % len(names)])
            made += 1
        elif op == "sync":
            table.sync()
            _assert_as_read_afresh(table)
            stamps.append((table.syncs, table.layout, table.row_stamp.copy()))
    table.sync()
    _assert_as_read_afresh(table)
    for syncs, layout, before in stamps:
        got = table.written.rows_since(syncs)
        if layout != table.layout or got is None:
            continue            # a new layout (followers upload whole) or past the journal
        n = before.shape[0]
        want = np.flatnonzero(table.row_stamp[:n] > syncs)
        assert got.tolist() == want.tolist()


def test_one_bound_pod_moved_at_10000_rows_reads_o1_rows():
    """One bound pod leaves a node and one comes to another between two
    syncs of a 10,000-node table: the sync looks at the few write-log
    entries since (not 10,000 ``row_version`` cells) and re-reads the two
    rows; the journal names the same two rows."""
    cluster, state, template = _cluster(10_000)
    state.remove_pod("default/low-9001-0")      # room on node-9001 in the table's slots
    table = PodTable(state)
    table.sync()
    scanned, read, scans = table.rows_scanned, table.rows_read, table.scans
    state.remove_pod("default/low-17-0")
    _bind(state, template, "moved", "node-9001")
    table.sync()
    assert table.scans == scans
    assert table.rows_scanned - scanned <= 4
    assert table.rows_read - read == 2
    assert table.written.rows_since(table.syncs - 1).tolist() == [
        state.node_rows["node-17"], state.node_rows["node-9001"]]
    _assert_as_read_afresh(table, _touched_and_sampled(state, "node-17", "node-9001"))


def test_a_sync_starts_reading_the_log_where_the_last_one_stopped():
    """The first sync after a fresh table searches the state's write log
    for the entries after its version; the next ones start where the last
    stopped, the entries either side of it checked (``log_searches``
    stays), and read the same rows; a log started over (another log) is
    searched again."""
    cluster, state, template = _cluster(40)
    state.remove_pod("default/low-31-0")
    table = PodTable(state)
    table.sync()
    state.remove_pod("default/low-3-0")
    table.sync()
    assert table.log_searches == 1
    for i, node in enumerate(("node-31", "node-3", "node-20")):
        state.remove_pod(f"default/low-{20 + i}-1")
        _bind(state, template, f"moved-{i}", node)
        read = table.rows_read
        table.sync()
        assert table.log_searches == 1 and table.rows_read - read == 2
        assert table.written.rows_since(table.syncs - 1).tolist() == sorted(
            [state.node_rows[f"node-{20 + i}"], state.node_rows[node]])
    table.sync()                                # nothing written: nothing read
    assert table.log_searches == 1 and table.written.rows_since(table.syncs - 1).tolist() == []
    _assert_as_read_afresh(table)
    state.write_log = WriteLog(16)
    state.remove_pod("default/low-9-0")
    table.sync()
    assert table.scans == 0 and table.log_searches == 2
    _assert_as_read_afresh(table)


def test_a_state_log_that_no_longer_reaches_back_falls_back_to_a_scan():
    """More writes than the state's log holds between two syncs: the sync
    scans ``row_version`` (counted in ``scans``) and the table is as read
    afresh."""
    cluster, state, template = _cluster(40)
    state.write_log = WriteLog(16)
    table = PodTable(state)
    table.sync()
    scans = table.scans
    for i in range(30):         # 30 rows written, one entry each: over the limit of 16
        state.remove_pod(f"default/low-{i}-0")
    table.sync()
    assert table.scans == scans + 1
    _assert_as_read_afresh(table)
    state.remove_pod("default/low-35-1")        # a few writes: the log again
    table.sync()
    assert table.scans == scans + 1 and table.rows_read > 0
    _assert_as_read_afresh(table)


def test_sync_journal_bounds_and_floor():
    """The journal keeps the last syncs up to its limits; a follower behind
    the oldest sync it holds gets None (and scans ``row_stamp``)."""
    j = SyncJournal(limit=5, max_syncs=3)
    j.add(1, np.array([3, 7]))
    j.add(2, np.array([7, 9]))
    assert j.rows_since(0).tolist() == [3, 7, 9]
    assert j.rows_since(1).tolist() == [7, 9]
    assert j.rows_since(2).tolist() == []
    j.add(3, np.array([1, 2]))              # 6 rows held > 5: sync 1 leaves
    assert j.floor == 1 and j.rows_since(0) is None
    assert j.rows_since(1).tolist() == [1, 2, 7, 9]
    j.add(4, np.zeros(0, np.int64))
    j.add(5, np.array([4]))                 # 4 syncs > 3: sync 2 leaves
    assert j.rows_since(1) is None and j.rows_since(2).tolist() == [1, 2, 4]
    j.add(6, np.arange(6))                  # one sync over the limit: all gone
    assert j.rows_since(5) is None and j.rows_since(6).tolist() == []
    j.reset(9)
    assert j.rows_since(8) is None and j.rows_since(9).tolist() == []


@pytest.mark.cudasim
@needs_cuda
@pytest.mark.parametrize("variant", ["", "spread"])
def test_device_preemptors_follow_by_journal_and_keyed_visit(variant):
    """Preemptors on the cuda backend (simulator): after the warm-up, the
    device tables find their rows from the table's journal (no pass over
    ``row_stamp``) and the visiting order (every node helps) is kept by its
    key; the placements are the numba backend's."""
    got = run_preemption(24, 4, "cuda", variant=variant)
    want = run_preemption(24, 4, "numba", variant=variant)
    assert got["placements_sha256"] == want["placements_sha256"]
    counted = got["victim_device_counters"]
    assert counted["stamp_scans"] == 0 and counted["journal_reads"] >= 4
    assert counted["visit_keyed"] >= 3 and counted["visit_searched"] == 0


def test_a_sync_writes_its_rows_in_one_batch_with_no_step_per_pod():
    """Between two syncs of a 10,000-node table a bound pod moves: the
    sync writes its two rows in one batch (``row_writes``) and reads no pod
    on its own (``pods_stepped``: every column comes by array gathers and
    C-level passes); a pod with a host port is the one pod read on its own
    for its bits.  With PDBs no pod is either: their bits come by class
    (``PdbMembership``), each class's selectors evaluated once."""
    cluster, state, template = _cluster(10_000)
    state.remove_pod("default/low-9001-0")
    table = PodTable(state)
    table.sync()
    writes, stepped = table.row_writes, table.pods_stepped
    state.remove_pod("default/low-17-0")
    _bind(state, template, "moved", "node-9001")
    table.sync()
    assert table.row_writes - writes == 1 and table.rows_read - (10_000 + 0) == 2
    assert table.pods_stepped == stepped
    state.add_pod(dataclasses.replace(template, name="ported", uid="ported",
                                      node_name="node-17",
                                      host_ports=[HostPort("TCP", "0.0.0.0", 8080)]), "node-17")
    table.sync()
    assert table.pods_stepped - stepped == 1
    _assert_as_read_afresh(table, _touched_and_sampled(state, "node-17", "node-9001"))
    with_pdbs = PodTable(state, _pdbs())
    with_pdbs.sync()
    stepped = with_pdbs.pods_stepped
    state.remove_pod("default/low-5-3")
    with_pdbs.sync()
    assert with_pdbs.pods_stepped == stepped
    assert with_pdbs.membership.classes_matched == len(state.pods.classes)
    _assert_as_read_afresh(with_pdbs, _touched_and_sampled(state, "node-5", "node-17"))


def test_rows_written_are_indexed_when_the_index_is_next_read():
    """A sync leaves the importance order and alike tails of the rows it
    wrote to the next read of ``order`` / ``alike_from`` (a device search
    without host filters reads neither): two syncs with moves between
    index nothing; the next read indexes the rows both wrote in one pass,
    a second read none, and the table is as read afresh."""
    cluster, state, template = _cluster(40)
    state.remove_pod("default/low-31-0")
    table = PodTable(state)
    table.sync()
    assert (table.index_passes, table.rows_indexed) == (0, 0)
    assert table.order.shape[0] == 40 and table.rows_indexed == 40
    state.remove_pod("default/low-17-0")
    _bind(state, template, "moved", "node-31")
    table.sync()
    state.remove_pod("default/low-5-1")
    table.sync()
    assert (table.index_passes, table.rows_indexed) == (1, 40)
    table.alike_from
    assert (table.index_passes, table.rows_indexed) == (2, 43)
    table.order
    assert table.index_passes == 2
    _assert_as_read_afresh(table)


def test_a_bound_class_id_reused_by_another_class_is_mapped_again():
    """A labelled pod's class leaves with its only pod and the bound-pod
    table gives its id to the next new class: the victim table's kept map
    from bound class ids finds the id's record changed and maps it to the
    new class (its namespace and labels), as a fresh table reads it."""
    cluster, state, template = _cluster(6)
    table = PodTable(state)
    table.sync()

    def bind(name, labels):
        pod = dataclasses.replace(template, name=name, uid=name, node_name="node-2",
                                  labels=labels)
        state.add_pod(pod, "node-2")
        return state.pods.class_id[state.pods.slots_of([f"default/{name}"])[0]]
    first = bind("first", {"tag": "a"})
    table.sync()
    state.remove_pod("default/first")
    assert bind("second", {"tag": "b"}) == first       # the freed id, another class
    table.sync()
    row = state.node_rows["node-2"]
    slot = table.keys[row].index("default/second")
    assert table.class_records[table.cls[row, slot]].labels == {"tag": "b"}
    _assert_as_read_afresh(table)


def test_a_row_whose_classes_are_all_mapped_looks_at_none_one_by_one():
    """With more bound classes than the table checks whole: a sync whose
    rows hold only classes already mapped from the records they still
    hold looks at none of them one by one (one C-level pass:
    ``class_entries_mapped`` stays); a row with a new class looks at that
    one alone and maps it, as a fresh table reads it (the
    rows' classes are each one pod's here: a pod bound again has a new
    class record)."""
    cluster, state, template = _cluster(100)
    # the bench's low pods share their template's class: rebind three a
    # node each as a copy (``dataclasses.replace`` starts a class)
    for i in range(100):
        for k in range(3):
            key = f"default/low-{i}-{k}"
            rec = state.pods.record(key)
            state.remove_pod(key)
            state.add_pod(dataclasses.replace(rec), f"node-{i}")
    assert len(state.pods.classes) > 64
    state.remove_pod("default/low-90-0")
    table = PodTable(state)
    table.sync()
    mapped = table.class_entries_mapped
    state.remove_pod("default/low-17-0")                # evictions: the rows' other
    state.remove_pod("default/low-18-2")                # pods keep their classes
    table.sync()
    assert table.rows_read == 100 + 2
    assert table.class_entries_mapped == mapped
    _assert_as_read_afresh(table)
    state.add_pod(dataclasses.replace(template, name="new", uid="new", node_name="node-17",
                                      labels={"tag": "new"}), "node-17")
    table.sync()
    assert table.class_entries_mapped == mapped + 1
    _assert_as_read_afresh(table)


@pytest.mark.parametrize("from_bound_pods", [True, False])
def test_a_few_rows_take_their_slots_from_the_rows_pods_not_the_key_index(
        from_bound_pods, monkeypatch):
    """A sync of a few rows reads each row's pods with their slots
    (``BoundPods.pods_on_rows``, kept by binds and removals): no key is
    looked up in the whole cluster's key index (``slots_looked_up``), only
    the first, whole write does.  A pod taken out, its slot given to
    another pod, then put back (a fresh slot), and a run of pods bound
    between two syncs: the table is as read afresh, the same with
    ``ROWS_FROM_BOUND_PODS`` False (every row's slots from the key index)."""
    monkeypatch.setattr(EV, "ROWS_FROM_BOUND_PODS", from_bound_pods)
    cluster, state, template = _cluster(40)
    for key in ("low-31-0", "low-5-3", "low-2-0"):  # room on node-31, -5, -2: the
        state.remove_pod(f"default/{key}")          # table keeps its width
    table = PodTable(state)
    table.sync()
    whole = len(state.pods)
    assert table.slots_looked_up == whole
    state.remove_pod("default/low-17-0")
    _bind(state, template, "moved", "node-31")
    table.sync()
    assert (table.slots_looked_up == whole) == from_bound_pods   # none since the whole write
    _assert_as_read_afresh(table)
    entry = state.remove_pod("default/low-5-1")
    _bind(state, template, "other", "node-5")       # takes low-5-1's freed slot
    state.add_pod(entry.record, "node-5")           # back, in a fresh slot
    assert state.pods._slot["default/other"] == entry.slot
    table.sync()
    _assert_as_read_afresh(table)
    state.remove_pod("default/low-9-0")
    add_pods(state, [dataclasses.replace(template, name=f"run-{j}", uid=f"run-{j}")
                     for j in range(2)], ["node-2", "node-9"])
    table.sync()
    _assert_as_read_afresh(table)
    assert (table.slots_looked_up == whole) == from_bound_pods
