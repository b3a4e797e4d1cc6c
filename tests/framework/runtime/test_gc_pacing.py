"""``runtime.gc_pacing``: young collections paced out while passes run,
the collector's thresholds restored when the last of nested or concurrent
passes ends (also on error), and never lowered."""

from __future__ import annotations

import gc
import threading

import pytest

from tensorsched.framework.runtime.gc_pacing import YOUNG_THRESHOLD, few_collections


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_thresholds_inside_and_after(thresholds):
    with few_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        assert gc.isenabled()                       # paced, never disabled
    assert gc.get_threshold() == (700, 10, 10)


def test_nested_passes_restore_once_at_the_end(thresholds):
    with few_collections():
        with few_collections():
            pass
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    assert gc.get_threshold() == (700, 10, 10)


def test_restored_on_error(thresholds):
    with pytest.raises(KeyError):
        with few_collections():
            raise KeyError
    assert gc.get_threshold() == (700, 10, 10)


def test_a_higher_threshold_is_kept(thresholds):
    gc.set_threshold(10 * YOUNG_THRESHOLD, 10, 10)
    with few_collections():
        assert gc.get_threshold()[0] == 10 * YOUNG_THRESHOLD
    assert gc.get_threshold()[0] == 10 * YOUNG_THRESHOLD


def test_concurrent_passes(thresholds):
    inside, leave = threading.Event(), threading.Event()

    def other():
        with few_collections():
            inside.set()
            leave.wait(5)

    t = threading.Thread(target=other)
    with few_collections():
        t.start()
        inside.wait(5)
    # this pass ended first: the other still runs paced
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    leave.set()
    t.join(5)
    assert gc.get_threshold() == (700, 10, 10)
