"""``kernels.batch.arrays``: node sets padded to [S, N] with their
summation trees, the batch's shape and range checks (a ValueError naming
the array), and a chunk of the runs with its events renumbered."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tensorsched.kernels.batch import arrays as BA
from tensorsched.kernels.batch.pairwise import pairwise_tree


def node_set(n, gpus=8):
    return {"gpu_count": np.full(n, gpus, np.int64), "model": np.zeros(n, np.int64),
            "cpu_cap": np.full(n, 64000, np.int64), "mem_cap": np.full(n, 256, np.int64),
            "pods_cap": np.full(n, 110, np.int64)}


def batch(ev_len=(2, 3, 1), n_classes=2) -> BA.BatchArrays:
    """Two node sets (3 and 5 nodes), one workload of ``n_classes`` classes
    and 2 typical pods, three runs with ``ev_len`` events each."""
    sets = BA.node_sets([node_set(3), node_set(5, gpus=4)])
    w, c, p = 1, n_classes, 2
    b = len(ev_len)
    e = int(sum(ev_len))
    z = lambda *shape: np.zeros(shape, np.int64)          # noqa: E731
    return BA.BatchArrays(
        **sets, n_classes=np.array([c], np.int64),
        c_cpu=z(w, c), c_mem=z(w, c), c_cpu_nz=z(w, c), c_num=np.ones((w, c), np.int64),
        c_milli=np.full((w, c), 500, np.int64), c_mask=z(w, c),
        n_typical=np.array([p], np.int64), tp_cpu=z(w, p), tp_num=z(w, p), tp_milli=z(w, p),
        tp_mask=z(w, p), tp_freq=np.full((w, p), 0.5),
        run_set=np.array([i % 2 for i in range(b)], np.int64), run_workload=z(b),
        policy=np.arange(b, dtype=np.int64) % BA.N_POLICIES, sel=z(b),
        seed_mix=np.arange(b, dtype=np.uint64), gpu_weight=np.ones(b, np.int64),
        static_total=np.arange(b * 5, dtype=np.int64).reshape(b, 5),
        ev_off=np.concatenate([[0], np.cumsum(ev_len)[:-1]]).astype(np.int64),
        ev_len=np.array(ev_len, np.int64),
        cls=np.arange(e, dtype=np.int64) % c, u=np.linspace(0, 0.9, e))


def test_node_sets_pad_to_the_largest_set_with_their_trees():
    sets = BA.node_sets([node_set(3), node_set(5, gpus=4)])
    assert sets["gpu_count"].shape == (2, 5) and sets["n_nodes"].tolist() == [3, 5]
    assert sets["gpu_count"][0].tolist() == [8, 8, 8, 0, 0]
    assert sets["model"][0, 3:].tolist() == [-1, -1]          # padding has no model
    for i, n in enumerate((3, 5)):
        lo, length, left, right, leaf_of = pairwise_tree(n)
        t = lo.shape[0]
        assert sets["n_tree"][i] == t
        assert sets["t_lo"][i, :t].tolist() == lo.tolist()
        assert (sets["t_lo"][i, t:] == -1).all()
        assert sets["leaf_of"][i, :n].tolist() == leaf_of.tolist()


def test_an_empty_node_set():
    sets = BA.node_sets([node_set(0)])
    assert sets["n_nodes"].tolist() == [0] and sets["gpu_count"].shape == (1, 1)


def test_a_consistent_batch_passes_its_check():
    a = batch()
    assert a.check() is a
    assert a.n_runs == 3 and a.gpu_slots == 8


@pytest.mark.parametrize("change, name", [
    (lambda a: dict(model=a.model[:, :4]), "model"),
    (lambda a: dict(n_nodes=np.array([3, 6], np.int64)), "n_nodes"),
    (lambda a: dict(gpu_count=np.where(a.gpu_count > 0, 17, 0)), "gpu_count"),
    (lambda a: dict(c_milli=a.c_milli[:, :1]), "c_milli"),
    (lambda a: dict(tp_freq=a.tp_freq[:, :1]), "tp_freq"),
    (lambda a: dict(policy=a.policy[:2]), "policy"),
    (lambda a: dict(static_total=a.static_total[:, :4]), "static_total"),
    (lambda a: dict(run_set=np.array([0, 2, 0], np.int64)), "run_set"),
    (lambda a: dict(run_workload=np.array([0, 1, 0], np.int64)), "run_workload"),
    (lambda a: dict(policy=np.array([0, 6, 0], np.int64)), "policy"),
    (lambda a: dict(sel=np.array([0, 3, 0], np.int64)), "sel"),
    (lambda a: dict(u=a.u[:-1]), "u"),
    (lambda a: dict(ev_len=np.array([2, 3, 2], np.int64)), "ev_off/ev_len"),
    (lambda a: dict(ev_off=np.array([-1, 2, 5], np.int64)), "ev_off/ev_len"),
    (lambda a: dict(cls=np.where(np.arange(6) == 4, 2, 0).astype(np.int64)), "cls"),
])
def test_an_inconsistent_batch_names_the_array(change, name):
    a = batch()
    bad = dataclasses.replace(a, **change(a))
    with pytest.raises(ValueError) as info:
        bad.check()
    assert str(info.value).startswith(f"{name}:")


def test_a_batch_without_runs_is_refused():
    a = batch(ev_len=())
    with pytest.raises(ValueError, match="no runs in the batch"):
        a.check()


def test_runs_takes_a_chunk_and_renumbers_its_events():
    a = batch(ev_len=(2, 3, 1))
    chunk = a.runs([2, 0])
    assert chunk.check() is chunk
    assert chunk.n_runs == 2
    assert chunk.ev_off.tolist() == [0, 1] and chunk.ev_len.tolist() == [1, 2]
    # run 2's event is event 5, run 0's events 0 and 1
    assert chunk.cls.tolist() == a.cls[[5, 0, 1]].tolist()
    assert chunk.u.tolist() == a.u[[5, 0, 1]].tolist()
    assert chunk.static_total.tolist() == a.static_total[[2, 0]].tolist()
    assert chunk.run_set.tolist() == [0, 0] and chunk.policy.tolist() == [2, 0]
    assert chunk.gpu_count is a.gpu_count                     # node sets shared, not copied


def test_an_empty_chunk():
    chunk = batch().runs([])
    assert chunk.n_runs == 0 and chunk.cls.shape == (0,) and chunk.ev_off.shape == (0,)


def test_departures_are_checked():
    """The default: one pod a second, nobody leaves; out-of-order arrivals
    and a departure before its arrival are refused; a chunk keeps its runs'
    departures."""
    a = batch()
    assert a.arrive.tolist() == [1, 2, 1, 2, 3, 1] and np.isinf(a.depart).all()
    a = dataclasses.replace(batch(), depart=np.array([9.0, 5, 7, 3, 7, 1]))
    a.check()
    assert a.runs([1]).depart.tolist() == [7.0, 3.0, 7.0]
    with pytest.raises(ValueError, match="arrive: run 0"):
        dataclasses.replace(a, arrive=np.array([2.0, 1, 1, 2, 3, 1])).check()
    with pytest.raises(ValueError, match="arrive/depart"):
        dataclasses.replace(a, arrive=np.array([1.0, 2, 8, 8, 8, 8])).check()


def test_durations_are_checked():
    """The default: no pod has one; a chunk keeps its runs' durations;
    NaN, negative, or a duration beside an absolute departure refused."""
    assert np.isinf(batch().duration).all()
    dur = np.array([0.0, np.inf, 5, 2.5, np.inf, 1])
    a = dataclasses.replace(batch(), duration=dur)
    a.check()
    assert a.runs([1, 2]).duration.tolist() == [5.0, 2.5, np.inf, 1.0]
    for bad in (np.where(np.arange(6) == 3, np.nan, dur), np.where(np.arange(6) == 3, -1, dur)):
        with pytest.raises(ValueError, match="duration: seconds >= 0"):
            dataclasses.replace(a, duration=bad).check()
    with pytest.raises(ValueError, match="duration: shape"):
        dataclasses.replace(a, duration=dur[:5]).check()
    both = dataclasses.replace(a, depart=np.where(np.arange(6) == 2, 9.0, np.inf))
    with pytest.raises(ValueError, match="not both"):
        both.check()


def test_ranks_are_checked():
    """The default: empty (activeQ first in first out); [E] ranks in
    [0, 2^30) kept by a chunk; anything else refused."""
    assert batch().rank.shape == (0,)
    rank = np.array([2, 0, 1, 1, 0, 5])
    a = dataclasses.replace(batch(), rank=rank)
    a.check()
    assert a.runs([1, 2]).rank.tolist() == [1, 1, 0, 5]
    assert batch().runs([1]).rank.shape == (0,)
    for bad in (rank[:5], np.where(np.arange(6) == 1, -1, rank), rank + (1 << 30)):
        with pytest.raises(ValueError, match="rank: "):
            dataclasses.replace(a, rank=bad).check()
