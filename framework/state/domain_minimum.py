"""The least per-domain sums of a ``DomainSums``, kept by the domains each
update moved.

PodTopologySpread's global minimum is the least matching-pod count over the
present domains (``kernels.domains.min_match``), and preemption's probe of
one node row also needs the second least and how many domains hold the
least (``SpreadProbe``).  Recomputed, that is a pass over every domain: for
a hostname constraint, one per node, every preemptor.

:class:`PresentMinimum` follows one ``DomainSums`` instead.  It keeps how
many present domains hold each sum (``hist``, indexed by the sum) and a
copy of the sums it has counted; ``read()`` re-counts only the domains
``DomainSums.changed_since`` names (the least can then only be the old
least or one of their new sums, so the search for it starts there), and
counts everything again when the journal no longer reaches back or a sum
is negative (the histogram then is not used: the least is found over the
domains each time).  A few domains (a zone key: at most ``SMALL``) are
read whole as Python integers instead: fewer steps than the histogram's,
whose sums there are large and far apart (its search for the second least
crosses the gap).  ``domains_read`` counts the domains read (tests and
benches: a bound pod moved between two reads re-reads its node's domain,
not N).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["INF", "Least", "PresentMinimum", "least_of"]

INF = 1 << 62       # "no such sum" (no present domain, or none above the least)


class Least(NamedTuple):
    """``n_present`` present domains; ``m1`` their least sum, held by
    ``n_m1`` of them; ``m2`` the least sum above ``m1`` (INF: none)."""

    n_present: int
    m1: int
    n_m1: int
    m2: int


def least_of(sums: np.ndarray, present: np.ndarray) -> Least:
    """``Least`` of ``sums`` [D] int64 over ``present`` [D] bool, computed
    whole (O(D))."""
    vals = sums[present]
    if not vals.shape[0]:
        return Least(0, INF, 0, INF)
    m1 = int(vals.min())
    n_m1 = int(np.count_nonzero(vals == m1))
    rest = vals[vals > m1]
    return Least(int(vals.shape[0]), m1, n_m1, int(rest.min()) if rest.shape[0] else INF)


def _first_held(hist: np.ndarray, lo: int) -> int:
    """The least index >= ``lo`` where ``hist`` is positive, -1 if none
    (a few steps, then windows doubling in size: few NumPy calls even
    across a wide gap)."""
    n = hist.shape[0]
    for i in range(lo, min(lo + 8, n)):     # most often it is right there
        if hist[i] > 0:
            return i
    lo += 8
    step = 64
    while lo < n:
        hi = min(n, lo + step)
        nz = np.flatnonzero(hist[lo:hi])
        if nz.shape[0]:
            return lo + int(nz[0])
        lo = hi
        step *= 2
    return -1


class PresentMinimum:
    """``Least`` of one ``DomainSums`` (``ds``) kept in step with it
    (module doc).  ``read()`` -> ``Least`` as ``least_of(ds.sums,
    ds.present)`` gives it."""

    __slots__ = ("domains_read", "ds", "hist", "last", "least", "present_at", "rebuilds",
                 "version")

    # Up to this many domains, ``read`` takes the present sums whole as
    # Python integers (``_read_small``), no histogram kept.
    SMALL = 64

    def __init__(self, ds):
        self.ds = ds
        self.domains_read = 0
        self.rebuilds = 0
        # the present domains ([P] ints) where they are few; None: the
        # histogram (``present`` is fixed for a DomainSums)
        self.present_at = (np.flatnonzero(ds.present).tolist()
                           if ds.sums.shape[0] <= self.SMALL else None)
        self._rebuild()

    def _rebuild(self) -> None:
        ds = self.ds
        self.rebuilds += 1
        self.version = ds.version
        if self.present_at is not None:
            self.hist = self.last = None
            self.least = self._read_small()
            return
        self.last = ds.sums.copy()      # the sums ``hist`` counts
        self.domains_read += ds.sums.shape[0]
        vals = ds.sums[ds.present]
        if vals.shape[0] and int(vals.min()) < 0:
            self.hist = None            # counts are never negative; do not index by them
        else:
            self.hist = np.bincount(vals, minlength=1).astype(np.int64)
        self.least = least_of(ds.sums, ds.present)

    # Up to this many domains moved, ``read`` updates element by element in
    # Python (a few NumPy calls cost more than a handful of integer steps);
    # beyond, with array operations.
    FEW = 32

    def read(self) -> Least:
        """The ``Least`` of the sums as they are now."""
        ds = self.ds
        if ds.version == self.version:
            return self.least
        if self.present_at is not None:
            self.version = ds.version
            self.least = self._read_small()
            return self.least
        moved = ds.moved_since(self.version)
        if moved is None or self.hist is None:
            self._rebuild()
            return self.least
        self.version = ds.version
        self.domains_read += len(set(moved)) if type(moved) is list else moved.shape[0]
        prev = self.least
        lo = self._few(moved) if len(moved) <= self.FEW else self._many(np.unique(moved))
        if lo is None:                  # a negative sum: counted whole
            self._rebuild()
            return self.least
        if lo == INF:
            return self.least           # no present sum moved
        hist = self.hist
        # Every present sum is unchanged (>= the old least) or one of the new
        # ones (>= lo): the least is at or above the smaller of the two.
        m1 = _first_held(hist, min(prev.m1, lo))
        m2 = _first_held(hist, m1 + 1)
        self.least = Least(prev.n_present, m1, int(hist[m1]), INF if m2 < 0 else m2)
        return self.least

    def _read_small(self) -> Least:
        """``least_of`` over the few present domains (``present_at``), their
        sums read as Python integers."""
        sums = self.ds.sums.tolist()
        self.domains_read += len(sums)
        vals = [sums[d] for d in self.present_at]
        if not vals:
            return Least(0, INF, 0, INF)
        m1 = min(vals)
        m2 = min((v for v in vals if v > m1), default=INF)
        return Least(len(vals), m1, vals.count(m1), m2)

    def _few(self, moved) -> int | None:
        """Re-count the present domains of ``moved`` (ints or [k] int64;
        repeats are harmless: a domain counted is level with its sum) one
        by one: the least new sum (INF: none moved), None for a negative
        one."""
        sums, present, last = self.ds.sums, self.ds.present, self.last
        n = last.shape[0]
        lo = INF
        for d in (moved if type(moved) is list else moved.tolist()):
            if d >= n or not present[d]:
                continue                # absent domains never hold a count
            new = int(sums[d])
            old = int(last[d])
            if new == old:
                continue
            if new < 0:
                return None
            if new >= self.hist.shape[0]:
                self._grow(new)
            self.hist[old] -= 1
            self.hist[new] += 1
            last[d] = new
            if new < lo:
                lo = new
        return lo

    def _many(self, moved) -> int | None:
        """``_few`` with array operations."""
        ds = self.ds
        moved = moved[moved < self.last.shape[0]]
        moved = moved[ds.present[moved]]
        old = self.last[moved]
        new = ds.sums[moved]
        keep = old != new
        if not keep.any():
            return INF
        old, new, moved = old[keep], new[keep], moved[keep]
        if int(new.min()) < 0:
            return None
        self._grow(int(new.max()))
        np.subtract.at(self.hist, old, 1)
        np.add.at(self.hist, new, 1)
        self.last[moved] = new
        return int(new.min())

    def _grow(self, top: int) -> None:
        """``hist`` long enough to count a sum of ``top``."""
        hist = self.hist
        if top >= hist.shape[0]:
            grown = np.zeros(max(top + 1, 2 * hist.shape[0]), np.int64)
            grown[: hist.shape[0]] = hist
            self.hist = grown
