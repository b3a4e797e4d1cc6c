"""queue_lane: a lane's positions as activeQ entries, sort keys kept as
columns (read, order check and stable order as Python's tuples give), and a
QueueRun's pods, keys and initial timestamps in order for both of its
forms."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.records.pod_columns import PodColumns
from tensorsched.framework.scheduler.queue_lane import (
    ColumnKeys,
    QueueLane,
    QueueRun,
    column_order,
    columns_in_order,
)
from tensorsched.generators.clusters import pod_dict


def _records(names):
    return [parse_pod(pod_dict(n, cpu="100m")) for n in names]


def _info(rec, ts):
    return SimpleNamespace(pod=rec, key=rec.key, initial_timestamp=ts)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 3), st.integers(-2**62, 2**62)),
                min_size=1, max_size=12), st.integers(1, 3))
def test_column_keys_order_as_tuples(rows, width):
    keys = [r[:width] for r in rows]
    columns = tuple(np.array([k[c] for k in keys], np.int64) for c in range(width))
    got = ColumnKeys(columns)
    assert len(got) == len(keys) and [got[i] for i in range(len(keys))] == keys
    assert all(type(v) is int for v in got[0])
    assert columns_in_order(columns) == (sorted(keys) == keys)
    assert column_order(columns).tolist() == sorted(range(len(keys)), key=keys.__getitem__)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(-2**62, 2**62)), min_size=1,
                max_size=40), st.lists(st.integers(0, 39), max_size=80))
def test_column_keys_read_many_times_answer_as_read_once(rows, reads):
    """Past ``ROWS_AFTER`` reads the keys come from rows made at once: the
    same Python int tuples, at any position (negative ones too)."""
    columns = tuple(np.array([r[c] for r in rows], np.int64) for c in range(2))
    keys = ColumnKeys(columns)
    n = len(rows)
    before = [j % n for j in reads] + [-1, -n]
    past = [0] * ColumnKeys.ROWS_AFTER + before + list(range(n))
    for i in before + past:
        got = keys[i]
        assert got == rows[i] and all(type(v) is int for v in got)


def test_lane_with_column_keys_reads_entries_from_the_columns():
    recs = _records(["a", "b", "c"])
    keys = ColumnKeys((np.array([-1, 0, 0], np.int64), np.array([7, 5, 6], np.int64)))
    lane = QueueLane(PodColumns.from_records(recs), keys, 10, 42.0)
    assert lane.entry(1) == ((0, 5), 11, recs[1].key)
    assert lane.stretch_end(0, 3, ((0, 5), 20)) == 2      # (0, 6) comes after (0, 5)


def test_lane_entries_and_index():
    recs = _records(["a", "b", "c"])
    lane = QueueLane(PodColumns.from_records(recs), [(0, 5), (0, 6), (1, 0)], 10, 42.0)
    assert len(lane) == 3
    assert lane.keys == [r.key for r in recs]
    assert lane.entry(2) == ((1, 0), 12, recs[2].key)
    assert lane.index(recs[1].key) == 1
    with pytest.raises(KeyError):
        lane.index("default/missing")


def test_lane_records_read_from_arrays_then_lists_are_the_pods():
    """A lane's records come from its arrays for the first asks (the
    first pod of each run) and from Python lists after: both equal the
    pods, with per-pod fields (a uid, a creation time) and a class apart."""
    objs = [pod_dict(f"p{i}", cpu="100m" if i % 5 else "200m", created=i)
            for i in range(3 * QueueLane.LISTS_AFTER)]
    objs[7]["metadata"]["uid"] = "u-7"
    recs = [parse_pod(o) for o in objs]
    cols = PodColumns.from_records(recs)
    lane = QueueLane(cols, list(range(len(recs))), 0, 0.0)
    for i in list(range(len(recs)))[::-1] + [7, 0]:
        got = lane.record(i)
        assert got == recs[i] and got.uid == recs[i].uid and got.key == recs[i].key
        assert got.creation_ns == recs[i].creation_ns and type(got.creation_ns) is int


def test_run_over_lane_positions():
    head, *rest = _records(["h", "a", "b", "c"])
    lane = QueueLane(PodColumns.from_records(rest), [0, 1, 2], 0, 7.5)
    run = QueueRun(_info(head, 1.0), (0, 0, head.key), block=lane, start=1, stop=3)
    assert len(run) == 3
    assert run.keys == [head.key, rest[1].key, rest[2].key]
    assert [p.key for p in run.pods] == run.keys
    assert run.initial_timestamps() == [1.0, 7.5, 7.5]


def test_run_of_infos():
    head, a, b = _records(["h", "a", "b"])
    run = QueueRun(_info(head, 1.0), (0, 0, head.key), rest=[_info(a, 2.0), _info(b, 3.0)])
    assert len(run) == 3
    assert run.keys == [head.key, a.key, b.key]
    assert [p.key for p in run.pods] == run.keys
    assert run.initial_timestamps() == [1.0, 2.0, 3.0]
    alone = QueueRun(_info(head, 1.0), (0, 0, head.key))
    assert len(alone) == 1 and alone.rest == [] and alone.entries == []


def _scan_oracle(lane, start, stop, bound, detached, joins):
    """The stretch's end looked up position by position."""
    i = start
    while i < stop and i not in detached:
        if bound is not None and (lane.sort_keys[i], lane.seq0 + i) > bound[:2]:
            break
        if not joins(i):
            break
        i += 1
    return i


@pytest.mark.parametrize("seed", range(6))
def test_stretch_ends_equal_a_look_at_each_position(seed):
    """stretch_end (detached positions, the activeQ bound) and
    class_stretch_end (pod classes, across its growing chunks) end a
    stretch where a position-by-position scan does."""
    import random

    import numpy as np
    rng = random.Random(seed)
    n = 300
    lane = QueueLane(PodColumns.from_records(_records(["x"])), [], 100, 0.0)
    lane.keys = [f"k{i}" for i in range(n)]
    lane.sort_keys = sorted((rng.randrange(4), rng.randrange(50)) for _ in range(n))
    class_id = np.repeat(np.array([rng.randrange(3) for _ in range(6)]), n // 6)
    lane.pods = SimpleNamespace(class_id=class_id)
    detached = set(rng.sample(range(n), rng.randrange(4)))
    for i in sorted(detached, key=lambda _: rng.random()):
        lane.detach(i)
        lane.detach(i)                  # twice: recorded once
    refused = rng.randrange(3)
    asked = []

    def joins(i):
        asked.append(int(class_id[i]))
        return int(class_id[i]) != refused

    for _ in range(20):
        start = rng.randrange(n)
        stop = rng.randrange(start, n + 1)
        j = rng.randrange(n)
        bound = rng.choice([None, (lane.sort_keys[j], lane.seq0 + j + rng.choice([-1, 0]), "b")])
        want = _scan_oracle(lane, start, stop, bound, detached, joins)
        asked.clear()
        end = lane.stretch_end(start, stop, bound)
        got = lane.class_stretch_end(start, end, joins)
        assert got == want
        assert len(asked) == len(set(asked))        # each class asked once
