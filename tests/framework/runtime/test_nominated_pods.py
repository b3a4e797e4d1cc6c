"""NominatedPods: the pods a cycle counts per node row, read from the
cycle's data."""

from tensorsched.framework.runtime.nominated_pods import (
    NOMINATED_PODS,
    NominatedPods,
    nominated_pods,
)
from tensorsched.framework.runtime.plugin import CycleContext


def test_rows_and_context():
    nom = NominatedPods({3: ("a", "b")})
    assert nom and nom.on_row(3) == ("a", "b") and nom.on_row(4) == ()
    assert not NominatedPods({})
    ctx = CycleContext(None, None, None)
    assert nominated_pods(ctx) is None
    ctx.data[NOMINATED_PODS] = nom
    assert nominated_pods(ctx) is nom


def test_gathered_on_first_use_only():
    calls = []

    def make():
        calls.append(1)
        return {1: ("x",)}

    nom = NominatedPods(make=make)
    assert calls == []
    assert nom.on_row(1) == ("x",) and nom and nom.by_row == {1: ("x",)}
    assert calls == [1]
