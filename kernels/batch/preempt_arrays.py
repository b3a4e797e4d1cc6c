"""DefaultPreemption's inputs to the batched openb engine (``cpu.run_batch``
/ ``cuda.run_batch`` with ``preempt``; the rules: ``_gpu_preempt``), beside
a ``BatchArrays`` ``a``:

- per run [B] int64: ``pct`` minCandidateNodesPercentage (-1: the run
  does not preempt; its profile has no DefaultPreemption) and ``least``
  minCandidateNodesAbsolute;
- per event [E] int64 (``a``'s pods): ``prio`` the pod's priority and
  ``krank`` its key's rank among its run's pods (``default/<name>``: the
  order the victim search breaks ties of priority in).

The output is ``victim`` [E] int64: the times a pod was evicted (0 never;
above 1 where a terminating victim was chosen again; its eviction is in
the change log as a departure, ``-1 - k``, when it leaves: at once, or its
first eviction's time + the run's termination grace).

The no-scenario engine (``cpu`` / ``cuda``) also takes ``grace`` [B]
float64, each run's termination grace in seconds (``termination_grace``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class BatchPreempt(NamedTuple):
    """DefaultPreemption's arrays (module doc)."""

    pct: np.ndarray
    least: np.ndarray
    prio: np.ndarray
    krank: np.ndarray

    @staticmethod
    def off(n_runs: int) -> BatchPreempt:
        """No run preempts (the per-pod arrays empty)."""
        return BatchPreempt(np.full(n_runs, -1, np.int64), np.zeros(n_runs, np.int64),
                            np.zeros(0, np.int64), np.zeros(0, np.int64))

    def check(self, n_runs: int, n_events: int) -> None:
        """Shapes and ranges for a batch of ``n_runs`` runs and ``n_events``
        pods; a ValueError naming the array."""
        for name, want in (("pct", (n_runs,)), ("least", (n_runs,))):
            if np.shape(getattr(self, name)) != want:
                raise ValueError(f"BatchPreempt.{name}: shape {np.shape(getattr(self, name))}, "
                                 f"expected {want}")
        on = (np.asarray(self.pct) >= 0).any()
        for name in ("prio", "krank"):
            got = np.shape(getattr(self, name))
            # (off, both may be empty; ``krank`` given orders a drain's pods)
            if got != (n_events,) and (on or got != (0,)):
                raise ValueError(f"BatchPreempt.{name}: shape {got}, expected ({n_events},)"
                                 + ("" if on else " or (0,)"))
        if (np.asarray(self.pct) > 100).any():
            raise ValueError("BatchPreempt.pct: a percentage (0 to 100, -1 off)")
        if (np.asarray(self.least) < 0).any():
            raise ValueError("BatchPreempt.least: >= 0")

    def runs(self, idx, ev: np.ndarray) -> BatchPreempt:
        """Runs ``idx`` only, their pods ``ev`` (``BatchArrays.runs``'s chunk)."""
        idx = np.asarray(idx, np.int64)
        per_pod = self.prio.shape[0] > 0
        return BatchPreempt(self.pct[idx], self.least[idx],
                            self.prio[ev] if per_pod else self.prio,
                            self.krank[ev] if per_pod else self.krank)

    def inputs(self) -> tuple:
        """The kernels' arguments (contiguous int64)."""
        return tuple(np.ascontiguousarray(x, np.int64) for x in self)


def termination_grace(grace, n_runs: int) -> np.ndarray:
    """[B] float64 each run's termination grace (seconds, >= 0, finite;
    None: 0 for all); a ValueError naming it otherwise."""
    if grace is None:
        return np.zeros(n_runs, np.float64)
    g = np.ascontiguousarray(grace, np.float64)
    if g.shape != (n_runs,):
        raise ValueError(f"termination grace: shape {g.shape}, expected ({n_runs},)")
    if not (np.isfinite(g) & (g >= 0)).all():
        raise ValueError("termination grace: seconds >= 0 and finite expected, got "
                         f"{g[~(np.isfinite(g) & (g >= 0))][0]!r}")
    return g


def check_terminating(over: np.ndarray, engine: str = "the batched engine") -> None:
    """A RuntimeError where a run's pending termination deadlines outgrew
    their ring (``over`` [B] nonzero): its results would not be the
    Simulation's.  ``engine`` names the engine in the message."""
    bad = np.flatnonzero(np.asarray(over))
    if bad.shape[0]:
        raise RuntimeError(f"run {int(bad[0])}: more victims' termination deadlines pending at "
                           f"once than {engine} holds (twice the run's pods); "
                           "ts.Simulation runs it per cluster")
