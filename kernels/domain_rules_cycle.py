"""Per-domain filter rules of a one-at-a-time cycle, answered where the pick runs.

A host filter whose answer is per topology domain (PodTopologySpread's
DoNotSchedule skew: a node fails when it lacks the key, or when the
matching pods counted in its domain exceed maxSkew - self match + the
global minimum) need not be run over every node on the host each cycle:
the pick tests each row it scans against the rule (``_core.rule_fails_row``,
the run kernel's test, through ``fused._cycle_core.row_feasible``).  The
plugin hands over, per rule, the rows' domain ids, its live per-domain
counts and the threshold with the minimum already in it (``CycleRule``;
the host keeps that minimum by the domains that moved, O(moved)).

On the device (``DeviceRuleTable``) a rule set keeps the domain ids
(uploaded once per node structure) and a copy of the counts that follows
their journal (``RuleSums.changed_since``): a cycle sends the thresholds
(R numbers) and the sums of the domains that moved since the cycle before,
in one copy, and the pick's launch writes them before it scans.  So the
host's share of a cycle is O(R + changed domains), not O(N).  The numba
backend's cycle keeps the same on the host (``HostRuleTable``) for its
compiled scan of the row cache (``fused.cycle.scan_in_order``).

What has this form (a plugin's ``cycle_rules(ctx)``): PodTopologySpread's
DoNotSchedule constraints, every field of them (minDomains and the node
inclusion policies are in the counts and the minimum), and
InterPodAffinity's filter (the pod's required affinity terms, the first
pod of a group included, its required anti-affinity terms and the bound
pods' anti-affinity terms that match it).  The host filter stays the
fallback, and answers the cycle, where the form does not cover it: a
spread cycle that counts nominated pods, a constraint or required
affinity term whose key no node has, a cycle whose pod fits nowhere (the
host filter runs once for the reasons the diagnosis reads, nothing is
ranked: ``fused.backends.fits_nowhere``), a cycle that wants
scores (explain), a host score in the cycle (ScheduleAnyway spread,
preferred affinity), and every other host filter.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol

import numpy as np

from .domain_rules import (
    N_PARAMS,
    P_FAIL_ABOVE,
    P_FAIL_ABSENT,
    P_FAIL_NOT_ABOVE,
    P_N_DOMAINS,
    P_THRESH,
)


class RuleSums(Protocol):
    """Per-domain counts that remember which domains their updates moved
    (``framework.state.domain_counts.DomainSums``): ``sums`` [D] int64,
    ``serial`` names the object (never reused), ``version`` counts its
    updates, ``changed_since(v)`` the domains moved after ``v`` ([k] int64,
    or None when no longer remembered)."""

    sums: np.ndarray
    serial: int
    version: int

    def changed_since(self, version: int) -> np.ndarray | None: ...


class CycleRule(NamedTuple):
    """One rule of a cycle: ``domp1`` [N] int64 the row's domain id + 1
    (0: the row lacks the key, and fails when ``fail_absent``);
    ``counts`` the live per-domain counts (read, never written); a row
    with the key fails when its domain's count exceeds ``thresh`` and
    ``fail_above``, or does not exceed it and ``fail_not_above``."""

    domp1: np.ndarray
    counts: RuleSums
    thresh: int
    fail_absent: bool = True
    fail_above: bool = True
    fail_not_above: bool = False


class HostRules(NamedTuple):
    """Rules stacked for ``fused.cycle.pick`` (the kernels' ``rl``
    arguments): n_rules R, domp1 [R, N], sums [R, D], params
    [R, N_PARAMS] int64, thr [R] int64; at least one row each (R = 0:
    every array a row of zeros)."""

    n_rules: int
    domp1: np.ndarray
    sums: np.ndarray
    params: np.ndarray
    thr: np.ndarray


def rule_params(rules: Sequence[CycleRule]) -> np.ndarray:
    """[max(R, 1), N_PARAMS] int64: ``domain_rules.RuleArrays.params`` rows of
    the rules (which answers fail; the threshold itself comes per cycle)."""
    p = np.zeros((max(len(rules), 1), N_PARAMS), np.int64)
    for r, x in enumerate(rules):
        p[r, P_FAIL_ABSENT] = int(x.fail_absent)
        p[r, P_FAIL_ABOVE] = int(x.fail_above)
        p[r, P_FAIL_NOT_ABOVE] = int(x.fail_not_above)
        p[r, P_N_DOMAINS] = x.counts.sums.shape[0]
        p[r, P_THRESH] = x.thresh
    return p


def _width(rules: Sequence[CycleRule], what) -> int:
    return max([int(what(x).shape[0]) for x in rules] + [1])


def host_rules(rules: Sequence[CycleRule], n_rows: int = 0) -> HostRules:
    """``rules`` stacked (``HostRules``), the counts as they are now; domp1
    over at least ``n_rows`` rows (the rows past a rule's own ids lack
    the key)."""
    n = max(_width(rules, lambda x: x.domp1), n_rows)
    d = _width(rules, lambda x: x.counts.sums)
    r = max(len(rules), 1)
    domp1 = np.zeros((r, n), np.int64)
    sums = np.zeros((r, d), np.int64)
    thr = np.zeros(r, np.int64)
    for i, x in enumerate(rules):
        domp1[i, : x.domp1.shape[0]] = x.domp1
        sums[i, : x.counts.sums.shape[0]] = x.counts.sums
        thr[i] = x.thresh
    return HostRules(len(rules), domp1, sums, rule_params(rules), thr)


_NO_RULES: list = []


def no_rules() -> HostRules:
    """The empty ``HostRules`` (shared, never written)."""
    if not _NO_RULES:
        _NO_RULES.append(host_rules(()))
    return _NO_RULES[0]


def set_key(rules: Sequence[CycleRule]) -> tuple:
    """What a device copy of ``rules`` is kept by: each rule's domain-id
    array and counts object, and which answers fail."""
    return tuple((id(x.domp1), x.counts.serial, bool(x.fail_absent), bool(x.fail_above),
                  bool(x.fail_not_above)) for x in rules)


class KeptTables:
    """The rule tables a backend keeps, by rule set (``set_key``), the
    least recently used dropped past ``limit``: a table is built whole
    once for its rule set and then followed by the domains that move."""

    def __init__(self, limit: int):
        self.limit = limit
        self._tables: OrderedDict = OrderedDict()

    def get(self, rules: Sequence[CycleRule], n_rows: int, build: Callable) -> tuple:
        """(the table of ``rules`` over ``n_rows`` rows, whether it was
        built now: ``build()``, when none is kept or the kept one no
        longer holds them)."""
        key = set_key(rules)
        table = self._tables.get(key)
        if table is not None and table.holds(rules, n_rows):
            self._tables.move_to_end(key)
            return table, False
        table = build()
        self._tables[key] = table
        while len(self._tables) > self.limit:
            self._tables.popitem(last=False)
        return table, True


class HostRuleTable:
    """One rule set stacked for the numba backend's pick
    (``fused.cycle.pick_in_order``), kept between cycles: ``rules``
    (``HostRules``) holds the domain ids over at least ``n_rows`` rows
    (stacked once) and a copy of the counts that follows their journal as
    ``DeviceRuleTable``'s does (``current``: the sums of the domains that
    moved since the last cycle, and the thresholds), so a cycle costs the
    host O(R + changed domains), not a stack of [R, N] ids."""

    def __init__(self, rules: Sequence[CycleRule], n_rows: int):
        self.rules = host_rules(rules, n_rows)
        self.key = set_key(rules)
        self._held = tuple((x.domp1, x.counts) for x in rules)  # the ids in ``key`` stay theirs
        self.n_rows = self.rules.domp1.shape[1]
        self.width = self.rules.sums.shape[1]
        self.versions = [int(x.counts.version) for x in rules]
        self.sums_copied = int(sum(x.counts.sums.shape[0] for x in rules))

    def holds(self, rules: Sequence[CycleRule], n_rows: int) -> bool:
        """Whether this table is ``rules``' (the same arrays and counts, no
        more domains than it was built with) over at least ``n_rows`` rows."""
        return n_rows <= self.n_rows and len(rules) == len(self._held) and all(
            x.domp1 is a and x.counts is c and c.sums.shape[0] <= self.width
            for x, (a, c) in zip(rules, self._held))

    def current(self, rules: Sequence[CycleRule]) -> tuple:
        """(``rules`` as ``HostRules`` now, K domain sums copied): the
        thresholds written and the sums of the K domains that moved since
        the last call (every domain of a rule whose journal no longer
        reaches its last version).  ``rules`` must be ``holds``-equal."""
        host = self.rules
        k = 0
        for i, x in enumerate(rules):
            host.thr[i] = x.thresh
            ds = x.counts
            if ds.version == self.versions[i]:
                continue
            got = ds.changed_since(self.versions[i])
            self.versions[i] = int(ds.version)
            if got is None:
                d = ds.sums.shape[0]
                host.sums[i, :d] = ds.sums
                k += d
            elif got.shape[0]:
                host.sums[i, got] = ds.sums[got]
                k += got.shape[0]
        self.sums_copied += k
        return host, k


class DeviceRuleTable:
    """One rule set on the device, for a cycle's pick (``_cuda_cycle``).

    ``domp1`` [R, N], ``sums`` [R, D] and ``params`` [R, N_PARAMS] live on the
    device; ``stage`` fills one host buffer with the cycle's thresholds [R],
    then, for the K domains whose counts moved since the last ``stage``,
    their flat index r x D + d [K] and new sum [K], and copies it up (no
    copy when nothing changed), for the launch to write into ``sums``.
    ``cuda`` is numba's cuda module (the table holds device arrays); the
    domain ids cover ``n_rows`` rows at least (the row cache's: the pick
    reads them unchecked)."""

    WHOLE_COPY = 64             # a staging buffer this small goes up whole
    # A cycle's staging goes up by one driver copy into the start of the
    # device buffer (as the cycle's staged rows, ``_upload_staged``): no
    # device array view or ``copy_to_device`` checks a cycle; False: the
    # device array's ``copy_to_device`` (the tests' oracle).
    DRIVER_COPY = True

    def __init__(self, cuda, rules: Sequence[CycleRule], n_rows: int):
        from numba.cuda.cudadrv import driver   # numba-cuda: only with the cuda backend

        host = host_rules(rules, n_rows)
        self._cuda = cuda
        self._driver = driver
        self.key = set_key(rules)
        self._held = tuple((x.domp1, x.counts) for x in rules)  # the ids in ``key`` stay theirs
        self.n_rules = host.n_rules
        self.n_rows = host.domp1.shape[1]      # rows the pick may test
        self.width = host.sums.shape[1]
        self.domp1 = cuda.to_device(host.domp1)
        self.sums = cuda.to_device(host.sums)
        self.params = cuda.to_device(host.params)
        self.versions = [int(x.counts.version) for x in rules]
        self.sent_thr = None            # the thresholds the device buffer holds
        self._host = cuda.pinned_array(max(16, 2 * self.n_rules), np.int64)
        self._dev = cuda.device_array(self._host.shape[0], np.int64)
        self._dev[: self.n_rules].copy_to_device(host.thr[: self.n_rules])
        self.sent_thr = tuple(int(x.thresh) for x in rules)
        self.bytes_uploaded = host.domp1.nbytes + host.sums.nbytes + host.params.nbytes \
            + 8 * self.n_rules
        self.sums_uploaded = int(sum(x.counts.sums.shape[0] for x in rules))
        self.driver_copies = 0      # stagings sent by one driver copy (``DRIVER_COPY``)

    def holds(self, rules: Sequence[CycleRule], n_rows: int) -> bool:
        """Whether this table is ``rules``' (the same arrays and counts) over
        at least ``n_rows`` rows."""
        return n_rows <= self.n_rows and len(rules) == len(self._held) and all(
            x.domp1 is a and x.counts is c for x, (a, c) in zip(rules, self._held))
        # (the answers that fail are in ``key``, which the caller matched)

    def stage(self, rules: Sequence[CycleRule]) -> tuple:
        """(the device buffer, K, bytes copied up) for this cycle: the
        thresholds and the K moved domains' sums (see the class doc; a
        rule whose journal no longer reaches its last version sends every
        domain).  ``rules`` must be ``holds``-equal to the table's."""
        r = self.n_rules
        moved = []
        k = 0
        for i, x in enumerate(rules):
            ds = x.counts
            if ds.version != self.versions[i]:
                got = ds.changed_since(self.versions[i])
                if got is None:
                    got = np.arange(ds.sums.shape[0], dtype=np.int64)
                self.versions[i] = int(ds.version)
                if got.shape[0]:
                    moved.append((i, got))
                    k += got.shape[0]
        host = self._host
        if host.shape[0] < r + 2 * k:
            self._host = host = self._cuda.pinned_array(2 * (r + 2 * k), np.int64)
            self._dev = self._cuda.device_array(host.shape[0], np.int64)
            self.sent_thr = None
        thr = tuple(int(x.thresh) for x in rules)
        if k == 0 and thr == self.sent_thr:
            return self._dev, 0, 0
        host[:r] = thr
        at = r
        for i, d in moved:
            m = d.shape[0]
            host[at:at + m] = d + i * self.width
            host[at + k:at + k + m] = rules[i].counts.sums[d]
            at += m
        size = r + 2 * k
        if host.shape[0] <= self.WHOLE_COPY:
            size = host.shape[0]        # the whole small buffer: no views made
        if self.DRIVER_COPY:
            self._driver.host_to_device(self._dev, host, 8 * size)
            self.driver_copies += 1
        elif size == host.shape[0]:
            self._dev.copy_to_device(host)
        else:
            self._dev[:size].copy_to_device(host[:size])
        self.sent_thr = thr
        self.sums_uploaded += k
        return self._dev, k, 8 * size
