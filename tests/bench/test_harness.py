"""``bench.harness``: placement hashes over the documented line format,
timed runs that leave the GC as they found it, memory readings, latency
percentiles and the JSON record written where asked."""

from __future__ import annotations

import gc
import hashlib
import json
import time
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorsched.bench import harness as H
from tensorsched.framework.scheduler.events import Binding, BindingList


def outcome(pod, node, victims=()):
    return SimpleNamespace(pod=pod, node=node, victims=list(victims))


def test_placement_hashes_follow_their_line_format():
    bindings = [outcome("ns/a", "n0"), outcome("ns/b", None, ["ns/x", "ns/y"])]
    assert H.placements_sha256(bindings) == hashlib.sha256(b"ns/a n0\nns/b -\n").hexdigest()
    assert H.preemption_sha256(bindings) == hashlib.sha256(
        b"ns/a n0 \nns/b - ns/x,ns/y\n").hexdigest()
    # the order is part of the hash
    assert H.placements_sha256(bindings[::-1]) != H.placements_sha256(bindings)
    assert H.placements_sha256([]) == hashlib.sha256(b"").hexdigest()


class FakeScheduler:
    def __init__(self):
        self.frozen_during = None

    def schedule_one(self, pod):
        self.frozen_during = gc.get_freeze_count()
        return outcome(pod, "n0")

    def schedule_pending(self, pods):
        self.frozen_during = gc.get_freeze_count()
        if pods == ["boom"]:
            raise RuntimeError("boom")
        return [outcome(p, "n0") for p in pods], None


def test_timed_runs_freeze_the_setup_then_unfreeze():
    gc.unfreeze()       # what the test process froze so far (tests/conftest.py)
    assert gc.get_freeze_count() == 0
    sched = FakeScheduler()
    bindings, seconds = H.timed_schedule(sched, ["a", "b"])
    assert [b.pod for b in bindings] == ["a", "b"] and seconds >= 0
    assert sched.frozen_during > 0 and gc.get_freeze_count() == 0
    outcomes, seconds = H.timed_pending(sched, ["c"])
    assert [o.pod for o in outcomes] == ["c"] and gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError):
        H.timed_pending(sched, ["boom"])
    assert gc.get_freeze_count() == 0                     # unfrozen on error too


def test_timed_pending_cpu_leaves_the_collection_out(monkeypatch):
    """The CPU seconds cover schedule_pending (schedule_one) only: a collection that
    burns CPU before the run is not counted in them (0.3 s burnt; the
    bound leaves room for CPU other threads of a loaded test process spend
    meanwhile: process time counts every thread)."""
    def slow_collect(*args):
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        return 0
    monkeypatch.setattr(H.gc, "collect", slow_collect)
    outcomes, seconds, cpu = H.timed_pending_cpu(FakeScheduler(), ["c"])
    assert [o.pod for o in outcomes] == ["c"]
    assert 0 <= cpu < 0.2 and seconds >= 0
    bindings, seconds, cpu = H.timed_schedule_cpu(FakeScheduler(), ["a", "b"])
    assert [b.pod for b in bindings] == ["a", "b"]
    assert 0 <= cpu < 0.2 and seconds >= 0


def test_memory_readings():
    rss = H.rss_bytes()
    # the kernel's per-thread RSS counters lag by a few dozen pages: the
    # peak may read slightly below the current resident size
    assert rss > 0 and H.peak_rss_bytes() >= 0.9 * rss


def test_state_bytes_per_pod_counts_what_add_pod_keeps_and_the_names():
    kept = []
    pods = [SimpleNamespace(key=f"ns/pod-{i}") for i in range(50)]
    got = H.state_bytes_per_pod(lambda p: kept.append(bytearray(1000)), pods)
    names = sum(len(p.key) + 49 for p in pods) / len(pods)      # a str's header is 49 bytes
    assert 1000 + names <= got < 1000 + names + 200
    assert H.state_bytes_per_pod(lambda p: None, []) == 0.0


def test_latency_fields_in_microseconds():
    got = H.latency_fields([0.001] * 98 + [0.002, 0.1])
    assert got["p50_us"] == 1000.0 and 1000.0 < got["p99_us"] <= 100000.0
    assert H.latency_fields([]) == {"p50_us": None, "p99_us": None}


def test_record_stamp_and_machine():
    stamp = H.record_stamp(7)
    assert stamp["seed"] == 7 and len(stamp["load"]) == 3
    assert stamp["timestamp"].endswith("Z") and stamp["commit"]
    assert {"machine", "cpus", "python", "numpy", "numba"} <= set(stamp["machine"])


def test_write_record_prints_and_writes_sorted_json(tmp_path, capsys):
    path = tmp_path / "deep" / "r.json"
    H.write_record({"b": 1, "a": [1, 2]}, str(path))
    assert json.loads(path.read_text()) == {"a": [1, 2], "b": 1}
    assert path.read_text().endswith("\n")
    printed = capsys.readouterr().out
    assert json.loads(printed) == {"a": [1, 2], "b": 1} and printed.index('"a"') < printed.index('"b"')
    H.write_record({"c": 3}, None)
    assert json.loads(capsys.readouterr().out) == {"c": 3}


def test_timed_pending_clocks_bracket_the_run():
    """The end clocks are read before the GC is unfrozen: an instant taken
    inside the run (a FailedScheduling event) is never after them."""
    inside = []

    class Marking(FakeScheduler):
        def schedule_pending(self, pods):
            inside.append(time.perf_counter())
            return super().schedule_pending(pods)

    outcomes, start, end = H.timed_pending_clocks(Marking(), ["c"])
    assert [o.pod for o in outcomes] == ["c"]
    assert start[0] <= inside[0] <= end[0] and start[1] <= end[1]
    assert gc.get_freeze_count() == 0


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 99), st.integers(0, 9)), max_size=40,
                unique_by=lambda t: t[0]),
       st.lists(st.tuples(st.integers(100, 199), st.one_of(st.none(), st.integers(0, 9))),
                max_size=5, unique_by=lambda t: t[0]),
       st.booleans())
def test_placement_hash_of_a_binding_list_equals_one_line_per_binding(bound, tail, read):
    """A ``BindingList`` whose bound pods are still a key -> node dict is
    hashed from that dict in joined chunks (3 pairs here, so chunks end
    anywhere): the digest equals one line per Binding, the Bindings read
    first or not, the failed ones ('-') after."""
    pairs = {f"ns/p{i}": f"n{n}" for i, n in bound}
    rest = [Binding(f"ns/p{i}", None if n is None else f"n{n}",
                    "" if n is not None else "0/10 nodes are available") for i, n in tail]
    lines = [f"{k} {v}\n" for k, v in pairs.items()]
    lines += [f"{b.pod} {b.node if b.node is not None else '-'}\n" for b in rest]
    want = hashlib.sha256("".join(lines).encode()).hexdigest()
    keep = H._HASH_CHUNK
    H._HASH_CHUNK = 3
    try:
        got = BindingList.of_nodes(dict(pairs), list(rest))
        if read:
            assert [b.pod for b in got] == list(pairs) + [b.pod for b in rest]
        assert H.placements_sha256(got) == want
        assert H.placements_sha256(list(got)) == want
    finally:
        H._HASH_CHUNK = keep


def test_alternated_reverses_the_order_every_other_round():
    calls = []

    def measure(path):
        calls.append(path)
        return len(calls)

    got = H.alternated([("this", None), ("base", "/b")], 4, measure)
    assert calls == [None, "/b", "/b", None, None, "/b", "/b", None]
    assert got == {"this": [1, 4, 5, 8], "base": [2, 3, 6, 7]}


def test_cpu_seconds_counts_this_process_work():
    c0 = H.cpu_seconds()
    t0 = time.process_time()
    while time.process_time() - t0 < 0.05:
        pass
    assert H.cpu_seconds() - c0 >= 0.04


def test_base_tree_lays_a_commit_out_as_an_importable_package(tmp_path):
    dest = H.base_tree("HEAD", str(tmp_path / "base"))
    pkg = tmp_path / "base" / "tensorsched"
    assert dest == str(tmp_path / "base")
    for sub in ("kernels", "framework", "topology", "experiments", "bench"):
        assert (pkg / sub).is_dir(), sub
    assert (pkg / "__init__.py").is_file()
    assert not (pkg / "bench" / "results").exists()
