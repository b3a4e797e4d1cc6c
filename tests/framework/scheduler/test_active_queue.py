"""activeQ's entries: the heap and the lane blocks beside it, the head the
smallest live entry of both, dead entries (a token moved on) dropped."""

from types import SimpleNamespace

from tensorsched.framework.scheduler.active_queue import ActiveQueue
from tensorsched.framework.scheduler.queue_lane import QueueLane


def _block(keys, sort_keys, seq0, infos):
    block = QueueLane(SimpleNamespace(keys=list(keys)), list(sort_keys), seq0, 0.0)
    infos.update((k, block) for k in keys)
    return block


def test_head_is_the_smallest_of_heap_and_lane():
    infos, token = {}, {}
    aq = ActiveQueue(infos, token)
    assert aq.head() == (None, None)
    aq.push((5, 1, "h1"))
    token["h1"] = 1
    infos["h1"] = object()
    block = _block(["b1", "b2"], [3, 7], 2, infos)
    aq.add_block(block)
    assert aq.head() == ((3, 2, "b1"), block)
    aq.take((3, 2, "b1"), block)
    assert block.pos == 1
    assert aq.head() == ((5, 1, "h1"), None)
    aq.take((5, 1, "h1"), None)
    assert aq.heap == []
    assert aq.head() == ((7, 3, "b2"), block)


def test_dead_entries_are_dropped_on_the_way():
    infos, token = {}, {}
    aq = ActiveQueue(infos, token)
    aq.push((1, 1, "a"))            # dead: its token moved on
    aq.push((2, 3, "a"))
    aq.push((0, 2, "gone"))         # dead: no token at all
    token["a"] = 3
    assert aq.heap_head() == (2, 3, "a")
    assert aq.heap == [(2, 3, "a")]  # the dead entries below it were popped
    # a lane position stops being live once its key no longer maps to the block
    block = _block(["x", "y"], [0, 0], 10, infos)
    aq.add_block(block)
    del infos["x"]
    assert aq.head() == ((0, 11, "y"), block)
    # a position whose pod got an info stays live while the token is its seq
    infos["y"] = object()
    token["y"] = 11
    assert aq.head() == ((0, 11, "y"), block)
    token["y"] = 99
    assert aq.head() == ((2, 3, "a"), None)
    assert aq.lane == []            # spent blocks leave the lane


def test_bound_besides_and_put_back():
    infos, token = {}, {}
    aq = ActiveQueue(infos, token)
    first = _block(["a", "b"], [1, 4], 1, infos)
    second = _block(["c"], [2], 3, infos)
    aq.add_block(first)
    aq.add_block(second)
    assert aq.bound_besides(first) == (2, 3, "c")
    assert aq.bound_besides(second) == (1, 1, "a")
    aq.take((1, 1, "a"), first)
    aq.take((4, 2, "b"), first)
    assert aq.head() == ((2, 3, "c"), second)
    assert first not in aq.lane
    aq.put_back(first, 1)               # "b" is a head again
    assert first in aq.lane and aq.head() == ((2, 3, "c"), second)
    aq.take((2, 3, "c"), second)
    assert aq.head() == ((4, 2, "b"), first)
