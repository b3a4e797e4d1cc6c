"""SelectVictimsOnNode with every filter of the profile, one node at a time.

The victim kernel (``tensorsched.kernels.victims.search``) re-runs only the fused
built-in filters, which read node columns alone.  Filters that run on the
host (PodTopologySpread, InterPodAffinity, GpuShareFit, user plugins) read
state that other pods make: per-domain pod counts (``state.domain_counts``), the GPU
table, any column a user function looks at.  For a preemptor that such a
filter applies to, upstream's rule is followed literally on the real state:

1. take every lower-priority pod off the node (``ClusterState.remove_pod``:
   the listeners update domain counts and GPU shares as upstream's
   RemovePod PreFilter extensions update CycleState);
2. run all of the pod's filters on that one row: the built-in ones (those
   pods do not change through the NumPy filter path once per node,
   NodePorts and NodeResourcesFit as scalar code at every step), then the
   host filters in profile order;
3. reprieve, PDB-violating pods first, each group most important first: put
   the pod back, keep it if the preemptor still fits, else take it off again
   and count it as a victim;
4. put everything back (``Suspension``): the state is exactly as before,
   down to the iteration order of the pod dict and the rows' pod sets (only
   the version counters moved on, so mirrors re-read the touched rows).

Only the nodes that the kernel pre-pass leaves open (the pod fits on the
built-in filters with all lower-priority pods gone) come here.

When PodTopologySpread and/or InterPodAffinity are the only host filters,
steps 1-4 are replayed on counts instead (``HostVictimSearch.batch``,
``kernels.victims.on_counts``): taking a node's pods off moves only its own
domains' sums, so each test is O(constraints) with the rest of the global
minimum from the baseline (``SpreadProbe``) and InterPodAffinity's
conditions (affinity terms with the first-pod-of-a-group rule, own and
bound pods' anti-affinity terms) from the baseline domain sums and counts
of positive domains (``AffinityProbe``); a whole batch of nodes is
searched in one compiled pass, the state untouched.  Which pods each
condition counts is decided per class of alike pods of the victim table
(``PodTable.cls``), not per pod.  Same victims, codes and Filter-call
counts (``tests/test_victims_spread_fast.py``,
``tests/test_victims_affinity_fast.py``).
"""

from __future__ import annotations

import dataclasses
import weakref
from operator import is_

import numpy as np

from tensorsched.framework.runtime.nominated_pods import NOMINATED_PODS, nominated_pods
from tensorsched.framework.runtime.plugin import (
    PROBE_AFFINITY,
    PROBE_SPREAD,
    CountProbePlugin,
    CycleContext,
    FusedFilter,
    PodIndependentWhen,
)
from tensorsched.kernels import layout as L
from tensorsched.kernels.fused import filters as KF
from tensorsched.kernels.victims import on_counts as VS
from tensorsched.kernels.victims import search as V

from .filter_hooks import VictimSearchHooks
from .probe_tables import Column, DomainColumn, ProbeTables


# id(plugin) -> (weak reference to it, fused, pod-independent-when, probe
# kind): what ``active_host_filters`` and ``HostVictimSearch`` ask of a
# plugin once per plugin object, not per preemptor (a ``runtime_checkable``
# Protocol test looks each member up on every call: microseconds a plugin).
# Weak, so a framework's plugins and what they hold die with it; a plugin
# that takes no weak reference is asked each time.
_TRAITS: dict = {}
_MAX_TRAITS = 1024


def _traits(plugin) -> tuple:
    """(fused filter, ``PodIndependentWhen``, probe kind or None) of
    ``plugin``, memoized per plugin object."""
    got = _TRAITS.get(id(plugin))
    if got is not None and got[0]() is plugin:
        return got[1:]
    out = (isinstance(plugin, FusedFilter), isinstance(plugin, PodIndependentWhen),
           plugin.probe_kind if isinstance(plugin, CountProbePlugin) else None)
    try:
        ref = weakref.ref(plugin)
    except TypeError:
        return out
    if len(_TRAITS) >= _MAX_TRAITS:
        _TRAITS.clear()
    _TRAITS[id(plugin)] = (ref, *out)
    return out


def _probe_kind(plugin) -> str | None:
    return _traits(plugin)[2]


# id(framework) -> (weak reference to it, its filters list, those plugins,
# {name: answer}): what ``filters_memo`` keeps per framework object.
_PER_FILTERS: dict = {}


class FiltersMemo:
    """Counts of ``filters_memo``'s answers built (tests)."""

    builds = 0


def filters_memo(fw, name, build):
    """``build(fw)`` (an answer that depends only on ``fw.filters``'
    plugins), kept per framework object and ``name`` while ``fw.filters``
    is the same list holding the same plugin objects (a framework's filters
    are set when it is built): a preemptor looks its profile's filters up
    once per framework, not once each.  Built answers are counted in
    ``FiltersMemo.builds``.  Weak, like ``_TRAITS``; a framework that takes
    no weak reference is answered afresh each time."""
    filters = fw.filters
    got = _PER_FILTERS.get(id(fw))
    if got is None or got[0]() is not fw or got[1] is not filters \
            or len(got[2]) != len(filters) or not all(map(is_, got[2], filters)):
        try:
            ref = weakref.ref(fw)
        except TypeError:
            FiltersMemo.builds += 1
            return build(fw)
        if len(_PER_FILTERS) >= _MAX_TRAITS:
            _PER_FILTERS.clear()
        got = _PER_FILTERS[id(fw)] = (ref, filters, tuple(filters), {})
    answers = got[3]
    out = answers.get(name)
    if out is None:
        FiltersMemo.builds += 1
        out = answers[name] = build(fw)
    return out


def _host_filters_of(fw) -> tuple:
    """((plugin, ``PodIndependentWhen``), ...) of ``fw``'s non-fused
    filters, profile order."""
    out = []
    for p in fw.filters:
        fused, independent_when, _ = _traits(p)
        if not fused:
            out.append((p, independent_when))
    return tuple(out)


def active_host_filters(fw, ctx, skipped) -> list:
    """The profile's non-fused filters that run for ``ctx.pod``, profile order.

    ``skipped``: plugin names whose PreFilter returned Skip this cycle
    (their Filter does not run, during preemption neither).  A filter that
    says it ignores the pods on a node for this pod (``PodIndependentWhen``,
    e.g. GpuShareFit for a pod without GPUs) is left out: its answer cannot
    change whoever is evicted.  The non-fused filters come from
    ``filters_memo`` (no pass over the fused ones a preemptor)."""
    out = []
    for p, independent_when in filters_memo(fw, "host filters", _host_filters_of):
        if p.name in skipped:
            continue
        if independent_when and p.ignores_pods(ctx):
            continue
        out.append(p)
    return out


class Suspension:
    """Bound pods taken off their nodes for a while, then put back exactly.

    Numeric columns (requested, ports, pod counts, domain sums, GPU shares)
    return through the symmetric ``remove_pod`` / ``restore_pod`` (the pod's
    own PodRow goes back: nothing is re-interned).  Containers
    whose iteration order a remove/add pair could change are swapped for
    copies on first touch and the untouched originals reinstalled by
    ``restore``: the bind order of ``state.pods`` (its pods return to their
    own slots) and, per touched row, ``pods_on_node`` and ``port_counts``.
    Derived state that a remove/restore pair could change
    (``state.restorers``, e.g. which GPUs a pod holds) is checkpointed and
    put back exactly."""

    def __init__(self, state):
        self.state = state
        self.held_order = None
        self.rows: dict = {}            # row -> (pods_on_node dict, port_counts dict)
        self.gone: dict = {}            # key -> PodRow (as it was)
        self.restorers = list(state.restorers)
        self.marks = [r.checkpoint() for r in self.restorers]
        self.held: dict = {}            # key -> what each restorer held for it

    def remove(self, key: str) -> None:
        st = self.state
        if self.held_order is None:
            self.held_order = st.pods.hold_order()
        row = st.pods.row_of(key)
        if row not in self.rows:
            self.rows[row] = (st.pods_on_node[row], st.port_counts[row])
            st.pods_on_node[row] = dict(st.pods_on_node[row])
            st.port_counts[row] = dict(st.port_counts[row])
        if self.restorers and key not in self.held:
            self.held[key] = [r.hold(key) for r in self.restorers]
        self.gone[key] = st.remove_pod(key)     # its PodRow, slot included

    def add(self, key: str) -> None:
        entry = self.gone.pop(key)
        self.state.restore_pod(entry)
        for r, held in zip(self.restorers, self.held.get(key, ())):
            r.regain(key, entry.record, entry.node_row, held)

    def put_back(self) -> None:
        """Every suspended pod back on its node."""
        for key in list(self.gone):
            self.add(key)

    def restore(self) -> None:
        """``put_back`` plus the original containers (call once, at the end)."""
        self.put_back()
        st = self.state
        if self.held_order is not None:
            st.pods.restore_order(self.held_order)
            self.held_order = None
        for row, (pods, ports) in self.rows.items():
            st.pods_on_node[row] = pods
            st.port_counts[row] = ports
        self.rows.clear()
        for r, mark in zip(self.restorers, self.marks):
            r.rollback(mark)


def _alive(rec):
    """``rec`` as if not terminating (a class's record may be)."""
    return dataclasses.replace(rec, deleting=False) if rec.deleting else rec


def _importance_order(prio, start, slots) -> list:
    """``slots`` most important first (priority desc, start asc, slot asc)."""
    return sorted(slots, key=lambda s: (-int(prio[s]), int(start[s]), s))


def _pdb_violating(pods: V.VictimPods, row: int, order) -> list:
    """filterPodsWithPDBViolation over ``order``: [len(order)] bool, on a
    running copy of disruptionsAllowed (as the kernel does)."""
    left = pods.pdb_allowed.copy()
    out = []
    for s in order:
        hit = False
        for w in range(pods.pod_pdb.shape[2]):
            word = int(pods.pod_pdb[row, s, w]) & ((1 << 64) - 1)
            while word:
                low = word & -word
                p = w * 64 + low.bit_length() - 1
                word ^= low
                left[p] -= 1
                hit = hit or left[p] < 0
        out.append(hit)
    return out


class _PodDependentFilters:
    """NodePorts and NodeResourcesFit of one query on one node row, as
    scalar code (``kernels.fused.filters.fit_reasons`` and the ports test of
    ``node_reasons`` for M = 1): these are the built-in filters whose answer
    changes while pods come and go, so they run at every reprieve step."""

    def __init__(self, q):
        flags = int(q.filter_flags)
        self.ports = bool(flags & L.F_PORTS)
        self.fit = bool(flags & L.F_FIT)
        self.conflicts = np.asarray(q.port_conflicts, np.int64)
        # (resource column, amount) the fit test compares; the pod count aside.
        self.asks = [(r, int(w)) for r, w in enumerate(q.request)
                     if r != L.RES_PODS and int(w) > 0 and not bool(q.fit_ignored[r])] \
            if q.requests_anything else []

    def bits(self, state, row: int) -> int:
        out = 0
        if self.ports and self.conflicts.shape[0]:
            w = min(self.conflicts.shape[0], state.port_bits.shape[1])
            if (state.port_bits[row, :w] & self.conflicts[:w]).any():
                out |= int(L.R_PORTS)
        if self.fit:
            alloc, used = state.allocatable[row], state.requested[row]
            if int(used[L.RES_PODS]) + 1 > int(alloc[L.RES_PODS]):
                out |= int(L.R_TOO_MANY_PODS)
            for r, want in self.asks:
                if want > int(alloc[r]) - int(used[r]):
                    out |= 1 << (L.INSUFFICIENT_SHIFT + r)
        return out


class HostVictimSearch:
    """SelectVictimsOnNode with the built-in and the host filters.

    ``q`` the preemptor's compiled query (built-in filters), ``filters`` the
    active host filters (``active_host_filters``), ``pods`` / ``keys`` the
    victim table and its pod keys per row.  ``on_node(row)`` gives
    (code, stats [7] int64, victim slots [n] int64) as one kernel row would;
    ``code`` is a tuple of reason strings when a host filter rejects the node
    with every lower-priority pod gone."""

    def __init__(self, ctx, q, filters, prio: int, pods: V.VictimPods, keys, classes=None,
                 order=None, alike_from=None, columns=None):
        self.state = ctx.state
        # The node columns the search on counts reads (``PodTable.node_columns``:
        # the cycle's nominated pods counted in ``requested``); None: the
        # state's.
        self.columns = columns
        # A fresh cycle state: host filters recompute what they derived from
        # the pods (InterPodAffinity's existing anti-affinity terms).
        self.ctx = CycleContext(ctx.state, ctx.pod, ctx.framework)
        # the cycle's nominated pods, counted on their own nodes by the
        # filters that take them (``runtime.nominated_pods``)
        self.nominated = nominated_pods(ctx)
        if self.nominated is not None:
            self.ctx.data[NOMINATED_PODS] = self.nominated
        self.q = q
        self.filters = filters
        self.prio = int(prio)
        self.pods = pods
        self.keys = keys
        # (cls [rows, C] class id per slot, one record per class) of the
        # victim table (``PodTable``): pods alike in namespace, labels and
        # required anti-affinity, so ``batch`` matches classes, not pods.
        self.classes = classes
        # [N, C] per row the slots most important first (``PodTable.order``;
        # computed from ``pods`` when not given), and [N] where each row's
        # alike tail starts (``PodTable.alike_from``; None: no row has one).
        # Pods of one class count alike for the host filters, so the tail's
        # pods match alike (``counts``).
        self._order = order
        self.alike_from = alike_from
        # The pods taken off and the pod-dependent built-in filters, made on
        # first use (``susp``, ``dynamic``): the search on counts moves no
        # pod and never asks.  With restorers (DRA claims) the suspension
        # is made now: its checkpoints come before the hooks' beginning.
        self._susp = Suspension(ctx.state) if ctx.state.restorers else None
        # NodeResourcesFit's checks host filters take over on some nodes,
        # and their state following the pods taken off (``filter_hooks``)
        self.hooks = VictimSearchHooks(self.ctx, filters)
        self.static: dict = {}          # row -> reason bits of the pod-independent filters
        self._dynamic = None
        # Only count-probe filters on the host (PodTopologySpread and/or
        # InterPodAffinity): the search is simulated on counts (``batch``)
        # instead of moving pods.
        kinds = [_probe_kind(p) for p in filters]
        spread = [p for p, k in zip(filters, kinds) if k == PROBE_SPREAD]
        ipa = [p for p, k in zip(filters, kinds) if k == PROBE_AFFINITY]
        on_counts = bool(filters) and len(spread) + len(ipa) == len(filters) \
            and len(spread) <= 1 and len(ipa) <= 1
        # PodTopologySpread / InterPodAffinity searched by ``batch`` (None:
        # absent, or another host filter keeps the search on the state).
        self.spread = spread[0] if on_counts and spread else None
        self.affinity = ipa[0] if on_counts and ipa else None
        self.ipa_first = bool(on_counts and spread and ipa
                              and filters.index(ipa[0]) < filters.index(spread[0]))
        self.ia_probe = None            # AffinityProbe of the baseline state
        # Beside other host filters, ``_select`` moves pods in the state but
        # answers PodTopologySpread from a probe: (row, probe parts, matching
        # pods taken off per constraint) while a row is searched.
        self.spread_any = spread[0] if spread else None
        self.on_row = None
        # The same for InterPodAffinity: (row, AffinityProbe, valid [P],
        # base [P], matching pods taken off per condition, slot -> matches).
        self.affinity_any = ipa[0] if ipa else None
        self.on_row_ia = None
        self.probe = None               # SpreadProbe of the baseline state
        self.simulated = 0              # nodes searched by ``batch``
        self.ready: dict = {}           # row -> on_node's answer, from ``batch``

    @property
    def susp(self) -> Suspension:
        """The ``Suspension`` of the pods this search takes off (made on
        first use when the state has no restorers: it then holds nothing
        before its first removal)."""
        if self._susp is None:
            self._susp = Suspension(self.state)
        return self._susp

    @property
    def dynamic(self) -> _PodDependentFilters:
        """NodePorts and NodeResourcesFit of the query as scalar code."""
        if self._dynamic is None:
            self._dynamic = _PodDependentFilters(self.q)
        return self._dynamic

    def close(self) -> None:
        try:
            if self._susp is not None:
                self._susp.restore()
        finally:
            self.hooks.close()

    def misfit(self, row: int):
        """None when the pod passes every filter on ``row`` now; else the
        built-in reason bits (int) or the first rejecting host filter's
        reasons (tuple of str), profile order (built-ins come first)."""
        bits = self.builtin_bits(row)
        if bits:
            return bits
        one = np.array([row], np.int64)
        on_row = self.on_row
        for p in self.filters:
            if p is self.spread_any and on_row is not None and on_row[0] == row:
                code = on_row[3].code(on_row[1], on_row[2])
                if code:
                    return p.probe_reasons[code - 1]
                continue
            ia = self.on_row_ia
            if p is self.affinity_any and ia is not None and ia[0] == row:
                code = ia[1].code(ia[2], ia[3], ia[4])
                if code:
                    return p.probe_reasons[code - 1]
                continue
            if not bool(np.asarray(p.filter(self.ctx, one))[0]):
                if hasattr(p, "explain_status"):
                    return tuple(p.explain_status(self.ctx, row).reasons)
                return tuple(p.explain_reasons(self.ctx, row))
        return None

    def builtin_bits(self, row: int) -> int:
        """The fused built-in filters' reason bits on ``row`` now: the filters
        that pods do not change come from the NumPy filter path once per row,
        NodePorts and NodeResourcesFit are re-evaluated on every call."""
        static = self.static.get(row)
        if static is None:
            self.prefetch(np.array([row], np.int64))
            static = self.static[row]
        return (static | self.dynamic.bits(self.state, row)) & ~self.hooks.bits(row)

    def prefetch(self, rows) -> None:
        """The pod-independent filters' bits of ``rows`` in one NumPy pass
        (``builtin_bits`` reads them)."""
        rows = np.asarray([r for r in np.asarray(rows, np.int64).tolist()
                           if r not in self.static], np.int64)
        if rows.shape[0] == 0:
            return
        cols = self.state.columns()
        q = V.pad_query(cols, self.q)
        q = q._replace(filter_flags=int(q.filter_flags) & ~(L.F_PORTS | L.F_FIT))
        bits = KF.node_reasons(cols, rows, q, xp=np)
        for r, b in zip(rows.tolist(), np.asarray(bits).tolist()):
            self.static[r] = int(b)

    @property
    def on_counts(self) -> bool:
        """``batch`` searches the nodes (PodTopologySpread and/or
        InterPodAffinity are the only host filters)."""
        return self.spread is not None or self.affinity is not None

    def on_node(self, row: int):
        if self.on_counts:
            if row not in self.ready:
                self.batch(np.array([row], np.int64))
            got = self.ready.pop(row, None)
            if got is not None:
                self.simulated += 1
                return got
        pods, keys = self.pods, self.keys[row]
        prio, start = pods.pod_prio[row], pods.pod_start[row]
        stats = np.zeros(V.N_STATS, np.int64)
        lower = [s for s in range(int(pods.pod_count[row])) if prio[s] < self.prio]
        if not lower:
            stats[V.STAT_CODE] = V.CODE_NO_VICTIMS
            return V.CODE_NO_VICTIMS, stats, np.zeros(0, np.int64)
        self.probe = self.ia_probe = None   # the state moves: rebuild after
        try:
            return self._select(row, lower, keys, prio, start, stats)
        finally:
            self.susp.put_back()

    def batch(self, rows) -> None:
        """Search ``rows`` now, when PodTopologySpread and/or InterPodAffinity
        are the only host filters: ``kernels.victims.on_counts`` replays
        ``_select`` on counts (nothing in the state moves) for all of them in
        one compiled pass; ``on_node`` then hands out the stored answers.
        The state must be the baseline (every pod in place) and stay so
        until those rows are read."""
        rows = np.asarray(rows, np.int64)
        rows = rows[[int(r) not in self.ready for r in rows.tolist()]] if self.ready else rows
        if not self.on_counts or rows.shape[0] == 0:
            return
        # A visit that never stops (cap beyond the batch): every row searched.
        state = VS.VisitState(rows.shape[0] + 1, self.pods.pod_prio.shape[1])
        got = self.visit(rows, 0, state, keep_victims=True)
        self._store(rows, got.kind, got.stats, got.victims)

    def visit(self, rows, base: int, state, keep_victims: bool = False, any_pdb: bool = True):
        """``kernels.victims.on_counts.visit`` of ``rows`` (visit positions
        ``base``...) with the host filters on counts (``on_counts`` holds)."""
        cols = self.columns if self.columns is not None else self.state.columns()
        pods = V.fit_pods(cols, self.pods)
        return VS.visit(cols, V.pad_query(cols, self.q), self.prio, pods, self.order, rows,
                        base, state, self.counts(rows), keep_victims, any_pdb,
                        self.alike_from)

    @property
    def order(self) -> np.ndarray:
        """[N, C] the victim table's slots most important first per row."""
        if self._order is None:
            pods = self.pods
            self._order = VS.importance_order(pods.pod_prio, pods.pod_start, pods.pod_count)
        return self._order

    def counts(self, rows) -> VS.Counts:
        """The host filters on counts for ``rows`` (the baseline probes are
        built on first use)."""
        st, pods = self.state, self.pods
        if self.probe is None and self.spread is not None:
            self.probe = self.spread.victim_probe(st, self.ctx.pod, self.nominated)
        if self.ia_probe is None and self.affinity is not None:
            self.ia_probe = self.affinity.victim_probe(st, self.ctx.pod)
        m, c_max = rows.shape[0], pods.pod_prio.shape[1]
        spread_arrays = self._spread_arrays(rows)
        ia_code, ia_valid, ia_base, ia_pos, ia_self = self._affinity_arrays(rows)
        n_spread = len(self.probe.parts) if self.probe is not None else 0
        n_ia = len(self.ia_probe.parts) if self.ia_probe is not None else 0
        match = np.zeros((n_spread + n_ia, m, c_max), np.int64)
        self._spread_matches(rows, match[:n_spread])
        self._affinity_matches(rows, match[n_spread:])
        return VS.Counts(match, *spread_arrays, ia_code, ia_valid, ia_base, ia_pos,
                         bool(ia_self), bool(self.ipa_first))

    def device_counts(self, n_rows: int, tables: ProbeTables | None = None):
        """The inputs of the device search on counts
        (``DeviceVictims.counts_search_and_pick``), the probes as tables the
        device keeps and updates by the rows that change, not as per-row
        arrays (``SpreadProbe.arrays`` / ``AffinityProbe.arrays`` are
        computed from them by each node's thread).  A ``DeviceCounts``
        over ``n_rows`` node rows whose ``nodes`` / ``doms`` are
        ``tables``' (a ``probe_tables.ProbeTables`` kept between
        preemptors, updated here by the rows that changed; a fresh one
        when None)."""
        st = self.state
        if self.probe is None and self.spread is not None:
            self.probe = self.spread.victim_probe(st, self.ctx.pod, self.nominated)
        if self.ia_probe is None and self.affinity is not None:
            self.ia_probe = self.affinity.victim_probe(st, self.ctx.pod)
        sp = self.probe.parts if self.probe is not None else []
        ia = self.ia_probe.parts if self.ia_probe is not None else []
        s, p = len(sp), len(ia)
        # nodes: each constraint's domain id, its counted domain id, its
        # nominated pods (sparse: on the nominated rows), each condition's
        # domain id; doms: each constraint's sums and presence, each
        # condition's sums
        dom_ids = [Column(-1)] * s
        counted = [Column(-1)] * s
        extras = [Column(0)] * s
        conds = [Column(-1)] * p
        sums = [DomainColumn()] * s
        present = [DomainColumn()] * s
        scal = np.zeros((s, 5), np.int64)
        nominated_rows = None
        for c, part in enumerate(sp):
            if part is None:
                continue
            bound, dom, ds, _, there, enforce, m1, n_m1, m2, extra = part
            dom_ids[c] = Column(-1, dom)
            counted[c] = Column(-1, ds.dom)
            if extra is not None:
                if nominated_rows is None:
                    nominated_rows = np.array(sorted(
                        r for r in (self.nominated.by_row if self.nominated else ())
                        if 0 <= r < extra.shape[0]), np.int64)
                extras[c] = Column(0, extra[nominated_rows], nominated_rows)
            sums[c], present[c] = DomainColumn(ds), DomainColumn(values=there)
            scal[c] = (bound, enforce, m1, n_m1, m2)
        ia_sums = [DomainColumn()] * p
        for j, part in enumerate(ia):
            if part[1] is not None:
                conds[j] = Column(-1, part[1])
                ia_sums[j] = DomainColumn(part[2])
        tables = tables if tables is not None else ProbeTables()
        tables.update(n_rows, dom_ids + counted + extras + conds, sums + present + ia_sums)
        ia_code = self.ia_probe.codes if self.ia_probe is not None else np.zeros(0, np.int64)
        ia_pos = self.ia_probe.pos if self.ia_probe is not None else np.zeros(0, np.int64)
        ia_self = self.ia_probe.self_all if self.ia_probe is not None else False
        return VS.DeviceCounts(tables.nodes, tables.doms, scal, ia_code, ia_pos, bool(ia_self),
                               bool(self.ipa_first), self._class_matches(s, ia), tables)

    def _class_matches(self, s: int, ia) -> np.ndarray:
        """[S + P, K] int64 what a pod of victim-table class k counts for
        each spread constraint, then each affinity condition.  A spread
        constraint counts a pod by its namespace and labels unless it is
        terminating, which the device reads from the table's own flags, so
        a class is judged on its record as if not terminating."""
        recs = self.classes[1]
        out = np.zeros((s + len(ia), max(len(recs), 1)), np.int64)
        probe = self.probe
        j = 0
        for ci, p in enumerate(probe.parts if probe is not None else ()):
            if p is None:
                continue
            pred = probe.preds[j]
            j += 1
            out[ci, :len(recs)] = [1 if pred(_alive(r)) else 0 for r in recs]
        for j, part in enumerate(ia):
            if part[1] is not None:         # else the row fails whatever its pods
                out[s + j, :len(recs)] = [part[5](r) for r in recs]
        return out

    def answer(self, kind: int, bits: int):
        """``on_node``'s code for a kernel kind: the built-in reason bits, a
        kernel code, or the host filter's reasons (tuple of str)."""
        if kind == VS.KIND_BITS:
            return bits
        if kind in (VS.KIND_MISSING, VS.KIND_SKEW):
            return self.spread.probe_reasons[kind - VS.KIND_MISSING]
        if kind in (VS.KIND_AFFINITY, VS.KIND_ANTI, VS.KIND_EXISTING):
            return self.affinity.probe_reasons[kind - VS.KIND_AFFINITY]
        if kind == VS.KIND_NONE_LEFT:
            return V.CODE_NONE_LEFT
        if kind == VS.KIND_NO_VICTIMS:
            return V.CODE_NO_VICTIMS
        return 0

    def _spread_arrays(self, rows) -> tuple:
        """(valid, counted, base, bound, other, here), each [m, constraints],
        of the spread probe on ``rows`` (zero columns without one)."""
        if self.probe is not None:
            return self.probe.arrays(rows)
        m = rows.shape[0]
        none_b, none_i = np.zeros((m, 0), np.bool_), np.zeros((m, 0), np.int64)
        return none_b, none_b, none_i, none_i, none_i, none_b

    def _affinity_arrays(self, rows) -> tuple:
        """(codes [P], valid [m, P], base [m, P], positive [P], self_all) of the
        affinity probe on ``rows`` (P = 0 without one)."""
        ia = self.ia_probe
        if ia is None:
            m = rows.shape[0]
            none = np.zeros(0, np.int64)
            return none, np.zeros((m, 0), np.bool_), np.zeros((m, 0), np.int64), none, False
        ia_valid, ia_base = ia.arrays(rows)
        return ia.codes, ia_valid, ia_base, ia.pos, ia.self_all

    def _spread_matches(self, rows, match) -> None:
        """Fill ``match`` [constraints, m, slots]: 1 where the pod in a slot
        matches a spread constraint's selector."""
        probe, st = self.probe, self.state
        if probe is None or not probe.preds:
            return
        n_on = self.pods.pod_count[rows]
        # [m, C] 1 on the occupied slots: once for every constraint
        occupied = (np.arange(match.shape[2])[None, :] < n_on[:, None]).view(np.int8)
        j = 0
        for ci, p in enumerate(probe.parts):
            if p is None:
                continue
            got = probe.counts[j]()[rows]
            pred = probe.preds[j]
            j += 1
            # Every pod on the row matches, or none does: no per-pod test.
            match[ci] = occupied
            partial = got != n_on       # not every pod on the row matches
            if partial.any():
                match[ci, partial] = 0
            for i in np.flatnonzero(partial & (got != 0)).tolist():
                for s_, key in enumerate(self.keys[int(rows[i])]):
                    match[ci, i, s_] = 1 if pred(st.pods.record(key)) else 0

    def _affinity_matches(self, rows, out) -> None:
        """Fill ``out`` [conditions, m, slots] (zeros): what the pod in a slot
        counts for each InterPodAffinity condition (by class of alike pods
        when the victim table has them)."""
        ia, st = self.ia_probe, self.state
        if ia is None:
            return
        c_max = out.shape[2]
        n_on = self.pods.pod_count[rows]
        slot = np.arange(c_max)
        cls = recs = None
        if self.classes is not None:
            cls = self.classes[0][rows][:, :c_max]
            recs = self.classes[1]
        for j, (_, dom, _, counts_fn, _, fn) in enumerate(ia.parts):
            if dom is None:
                continue                # the key is nowhere: the row fails whatever its pods
            if cls is not None:
                per_class = np.array([fn(r) for r in recs] + [0], np.int64)
                out[j] = per_class[cls]         # -1 (no pod) -> the trailing 0
                continue
            got = counts_fn()
            if got is None:
                continue                # no bound pod counted: zeros
            got = got[rows]
            both = ia.codes[j] != 3     # 0/1 per pod: "all" needs no per-pod test
            if both:
                out[j] = (got == n_on)[:, None] & (slot[None, :] < n_on[:, None])
            mixed = (got != n_on) & (got != 0) if both else got != 0
            for i in np.flatnonzero(mixed).tolist():
                for s_, key in enumerate(self.keys[int(rows[i])]):
                    out[j, i, s_] = fn(st.pods.record(key))

    def _store(self, rows, kind, stats, victims) -> None:
        """``on_node``'s answers from the compiled pass."""
        empty = np.zeros(0, np.int64)
        for i, r in enumerate(rows.tolist()):
            k = int(kind[i])
            st_i = stats[i]
            n = int(st_i[V.STAT_N_VICTIMS]) if k == VS.KIND_OK else 0
            self.ready[r] = (self.answer(k, int(st_i[V.STAT_CODE])), st_i,
                             victims[i, :n].copy() if n else empty)

    def _select(self, row, lower, keys, prio, start, stats):
        gain = None
        if self.spread_any is not None:
            # A probe of the baseline (the previous row's pods are back).
            probe = self.spread_any.victim_probe(self.state, self.ctx.pod, self.nominated)
            parts = probe.at(row)
            idx = [i for i, p in enumerate(parts) if p is not None]
            taken = [0] * len(parts)
            gain = {}
            for s in lower:
                rec = self.state.pods.record(keys[s])
                gain[s] = [1 if pred(rec) else 0 for pred in probe.preds]
                for i, x in zip(idx, gain[s]):
                    taken[i] += x
            self.on_row = (row, parts, taken, probe)
        if self.affinity_any is not None:
            # InterPodAffinity from a probe of the baseline likewise.
            ia = self.affinity_any.victim_probe(self.state, self.ctx.pod)
            valid, base = ia.arrays(np.array([row], np.int64))
            ia_taken = [0] * len(ia.parts)
            ia_gain = {}
            for s in lower:
                ia_gain[s] = ia.matches(self.state.pods.record(keys[s]))
                for j, x in enumerate(ia_gain[s]):
                    ia_taken[j] += x
            self.on_row_ia = (row, ia, valid[0], base[0], ia_taken, ia_gain)
        try:
            return self._reprieve(row, lower, keys, prio, start, stats, gain)
        finally:
            self.on_row = self.on_row_ia = None

    def _shift_ia(self, s, sign: int) -> None:
        """Slot ``s`` taken off (+1) or put back (-1): the probe's counts."""
        ia = self.on_row_ia
        if ia is not None:
            for j, x in enumerate(ia[5][s]):
                ia[4][j] += sign * x

    def _reprieve(self, row, lower, keys, prio, start, stats, gain):
        """``_select`` proper; ``gain`` (slot -> matches per probe constraint)
        keeps ``self.on_row``'s counts in step when set."""
        if gain is not None:
            taken = self.on_row[2]
            idx = [i for i, p in enumerate(self.on_row[1]) if p is not None]
        for s in lower:
            self.susp.remove(keys[s])
        calls = 1
        why = self.misfit(row)
        if why is not None:
            stats[V.STAT_FILTER_CALLS] = calls
            stats[V.STAT_CODE] = why if isinstance(why, int) else 0
            return why, stats, np.zeros(0, np.int64)
        order = _importance_order(prio, start, lower)
        violating = _pdb_violating(self.pods, row, order)
        victims, n_viol = [], 0
        for want in (True, False):
            for s, v in zip(order, violating):
                if v != want:
                    continue
                self.susp.add(keys[s])
                if gain is not None:
                    for i, x in zip(idx, gain[s]):
                        taken[i] -= x
                self._shift_ia(s, -1)
                calls += 1
                if self.misfit(row) is not None:
                    self.susp.remove(keys[s])
                    if gain is not None:
                        for i, x in zip(idx, gain[s]):
                            taken[i] += x
                    self._shift_ia(s, 1)
                    victims.append(s)
                    n_viol += int(v)
        return self._finish(calls, victims, n_viol, prio, start, stats)

    @staticmethod
    def _finish(calls, victims, n_viol, prio, start, stats):
        stats[V.STAT_FILTER_CALLS] = calls
        if not victims:
            stats[V.STAT_CODE] = V.CODE_NONE_LEFT
            return V.CODE_NONE_LEFT, stats, np.zeros(0, np.int64)
        slots = np.array(_importance_order(prio, start, victims), np.int64)
        vp = prio[slots]
        top = int(vp[0])
        stats[V.STAT_N_VICTIMS] = slots.shape[0]
        stats[V.STAT_N_VIOLATIONS] = n_viol
        stats[V.STAT_TOP_PRIORITY] = top
        stats[V.STAT_PRIORITY_SUM] = int((vp + V.PRIORITY_OFFSET).sum())
        stats[V.STAT_EARLIEST_START] = int(start[slots][vp == top].min())
        return 0, stats, slots
