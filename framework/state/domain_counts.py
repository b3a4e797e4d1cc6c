"""Per-node counts of bound pods, kept incrementally for the pod-to-pod plugins.

``pod_count_index(state)`` attaches one :class:`PodCountIndex` to a
ClusterState (one of its ``listeners``, a ``PodBatchListener``).  It keeps:

* ``counts(key, predicate)``: [rows] int64, how many bound pods on each node
  satisfy ``predicate(record)``; built once from the bound pods, the
  predicate asked once per class and deletion mark,
  then updated by +-1 on the pod's node row when a pod is bound or removed
  (an LRU of the most recently used keys is kept);
* ``groups[kind]``: the affinity terms that bound pods carry (kind is
  req_aff, req_anti, pref_aff or pref_anti) -> [rows] int64 count of pods
  carrying that term on each node, so "existing pods' terms" are evaluated
  once per distinct term, not once per pod.

* ``domain_sums(...)`` / ``group_domain_sums(...)``: a count array summed
  per topology domain over a fixed set of nodes (:class:`DomainSums`), kept
  current by the same +-1 updates, so a cycle reads per-domain counts
  without a pass over the nodes.  Each is tagged by what its node -> domain
  map depends on (state layout and epoch, the key column, the node mask);
  a different tag builds a new one.

The kernels (``tensorsched.kernels.domains``) turn these counts into the
per-node answers of each cycle.
"""

from __future__ import annotations

import itertools
import operator
from collections import OrderedDict
from typing import Protocol

import numpy as np

from tensorsched.framework.records.pod_columns import (
    EXTRA_FIELDS,
    NO_EXTRAS,
    PodColumns,
    build_record,
)
from tensorsched.framework.parsing.selectors import pod_terms
from tensorsched.framework.records.records import PodRecord
from tensorsched.kernels.domain_rules import rows_by_domain

from .derived import StateKey

KINDS = ("req_aff", "req_anti", "pref_aff", "pref_anti")
# the per-pod fields of a terminating pod's record with nothing else set
_TERMINATING = tuple(True if f == "deleting" else v for f, v in zip(EXTRA_FIELDS, NO_EXTRAS))
_AFFINITY = operator.attrgetter("pod_affinity")
_ANTI_AFFINITY = operator.attrgetter("pod_anti_affinity")

POD_COUNT_INDEX = StateKey("pod_count_index", __name__,
                           "the state's PodCountIndex (``pod_count_index``)")
NODE_DOMAINS = StateKey("node_domains", __name__,
                        "key column k -> [n_rows] int64 label value id per row (``node_domains``)")
NODE_DOMAINS_P1 = StateKey("node_domains_p1", __name__,
                           "key column k -> ``node_domains`` + 1 (``node_domains_p1``)")
ROWS_BY_DOMAIN = StateKey("rows_by_domain", __name__,
                          "(id(domp1), D) -> (domp1, (ptr, rows)) per domain (``grouped_rows``)")


class DomainSums:
    """Per-domain sums of one per-node count array over a node mask.

    ``dom`` [rows] int64: the domain id of each node row, -1 for rows not
    counted (masked out, lacking the key, or not live); ``sums`` [D] int64;
    ``present`` [D] bool: some counted node is in the domain; ``positive``:
    how many domains have a positive sum; ``version`` counts the updates and
    ``serial`` names the object (a derived per-node answer can be reused
    while both are unchanged).  The domains each update moved are kept for
    the last ``JOURNAL`` updates (``changed_since``), so a copy of ``sums``
    elsewhere (the device search's domain table) follows by those rows."""

    __slots__ = ("_journal", "_journal_from", "dom", "positive", "present", "serial", "sums",
                 "version")
    _serials = itertools.count()
    JOURNAL = 512       # updates remembered (older readers compare the whole column)

    def __init__(self, dom, counts, n_domains: int):
        self.serial = next(DomainSums._serials)    # unique per object, never reused
        n = max(int(n_domains), 1)
        self.dom = dom
        m = dom >= 0
        d = dom[m]
        self.present = np.bincount(d, minlength=n) > 0
        w = counts[: dom.shape[0]][m]
        if w.shape[0]:
            # Exact in float64 for any realistic count (< 2**53).
            self.sums = np.rint(np.bincount(d, weights=w.astype(np.float64),
                                            minlength=n)).astype(np.int64)
        else:
            self.sums = np.zeros(n, np.int64)
        self.positive = int(np.count_nonzero(self.sums > 0))
        self.version = 0
        self._journal: list = []        # the domain(s) of updates _journal_from + 1, ...
        self._journal_from = 0

    def _log(self, domains) -> None:
        """Remember the domains (an int or [k] int64) of the update that
        made ``version``; the older half goes once ``JOURNAL`` are held."""
        j = self._journal
        j.append(domains)
        if len(j) > self.JOURNAL:
            cut = len(j) // 2
            del j[:cut]
            self._journal_from += cut

    def changed_since(self, version: int) -> np.ndarray | None:
        """[k] int64 the domains whose sum an update after ``version``
        moved (sorted, distinct; a domain may hold its old sum again), or
        None when those updates are no longer remembered."""
        if version < self._journal_from or version > self.version:
            return None
        parts = self._journal[version - self._journal_from:]
        if all(type(p) is int for p in parts):      # single bumps: no array per entry
            return np.array(sorted(set(parts)), np.int64)
        return np.unique(np.concatenate([np.atleast_1d(np.asarray(p, np.int64))
                                         for p in parts]))

    def moved_since(self, version: int):
        """``changed_since`` without its sort: a list of ints (repeats
        possible) when the updates after ``version`` were single bumps (no
        array made), else the sorted [k] int64; None when they are no
        longer remembered."""
        if version < self._journal_from or version > self.version:
            return None
        parts = self._journal[version - self._journal_from:]
        if all(type(p) is int for p in parts):
            return parts
        return self.changed_since(version)

    def bump(self, row: int, delta: int) -> None:
        if row >= self.dom.shape[0]:
            return              # a row added after this was built: its tag is stale
        d = self.dom[row]
        if d < 0:
            return
        old = int(self.sums[d])
        new = old + delta
        self.sums[d] = new
        if old <= 0 < new:
            self.positive += 1
        elif new <= 0 < old:
            self.positive -= 1
        self.version += 1
        self._log(int(d))

    def bump_many(self, rows: np.ndarray, delta: int) -> None:
        """``bump`` of each row of ``rows`` ([k] int64), one version step."""
        rows = rows[rows < self.dom.shape[0]]
        d = self.dom[rows]
        d = d[d >= 0]
        if d.shape[0] == 0:
            return
        np.add.at(self.sums, d, delta)
        self.positive = int(np.count_nonzero(self.sums > 0))
        self.version += 1
        self._log(d)


def _split_by(keys: np.ndarray, rows: np.ndarray):
    """(key, first position, its rows) for each distinct value of ``keys``
    ([k]) over ``rows`` ([k] int64): one stable sort, not a pass per key,
    unless the keys are few (a run's pods: one or two classes), where a
    pass per key is cheaper than the sort."""
    if not keys.shape[0]:
        return
    lo = int(keys.min())
    if int(keys.max()) - lo < 64:
        present = np.flatnonzero(np.bincount(keys - lo))
        if present.shape[0] <= 4:
            for v in (present + lo).tolist():
                at = np.flatnonzero(keys == v)
                yield v, int(at[0]), rows[at]
            return
    order = np.argsort(keys, kind="stable")
    values, starts = np.unique(keys[order], return_index=True)
    bounds = np.append(starts, order.shape[0]).tolist()
    for j, v in enumerate(values.tolist()):
        at = order[bounds[j]:bounds[j + 1]]
        yield v, int(at[0]), rows[at]


class PodPredicate(Protocol):
    """What a count of ``PodCountIndex.counts`` counts: the bound pods for
    which it is true.  The owner (a plugin) passes it with the count's key
    and the index calls it as pods come and go, so it must read only a
    pod's namespace, labels and deletion mark: the index asks it once for
    a stretch of pods alike in those (``on_pods``)."""

    def __call__(self, record: PodRecord) -> bool: ...


class PodCountIndex:
    """Per-node counts of bound pods (see the module doc): a
    ``PodBatchListener`` of its state."""

    MAX_KEYS = 128
    MAX_SUMS = 256

    def __init__(self, state):
        self.state = state
        self._entries: OrderedDict = OrderedDict()   # key -> (predicate, counts)
        self._sums: OrderedDict = OrderedDict()      # (source, tag) -> DomainSums
        self._sums_by_source: dict = {}              # source -> {tag: DomainSums}
        # Moves whenever a DomainSums joins or leaves the index (a caller
        # holding ones it got may keep them while this is unchanged: they
        # are the ones the index keeps current).
        self.generation = 0
        self.groups: dict = {k: {} for k in KINDS}   # kind -> {term: counts}
        self.pods_with_affinity = 0
        self._reps: dict = {}       # bound class id -> (prototype, records ``_standing_for``)
        self._group_bound_terms()

    def _group_bound_terms(self) -> None:
        """The bound pods' own affinity terms (class fields) grouped once
        per class that carries any: its pods' rows added in one scatter,
        no record a pod."""
        bound = self.state.pods
        carries = np.fromiter((c is not None and bool(c.pod_affinity or c.pod_anti_affinity)
                               for c in bound.classes), np.bool_, len(bound.classes))
        if not carries.any():
            return
        slots = bound.slots_of_classes(carries)
        for c, _, rows in _split_by(bound.class_id[slots].astype(np.int64),
                                    bound.node_row[slots].astype(np.int64)):
            self._group_rows(bound.classes[c], rows, 1)

    def _fresh_counts(self, predicate: PodPredicate) -> np.ndarray:
        """[cap] int64 bound pods per node row satisfying ``predicate``,
        from the bound-pod columns: the predicate asked once per class (and
        once more for a class with terminating pods, on a record marked
        so), then the chosen pods' rows counted in one pass.  A new key
        costs O(classes) predicate calls and O(slots) array work, whatever
        the pods; the LRU's keys come and go at that price."""
        bound = self.state.pods
        classes = bound.classes
        live = np.zeros(len(classes), np.bool_)
        dying = np.zeros(len(classes), np.bool_)
        _, terminating = bound.class_counts()
        for c, proto in enumerate(classes):
            if proto is not None:
                as_live, as_dying = self._standing_for(c, proto)
                live[c] = predicate(as_live)
                dying[c] = terminating[c] > 0 and predicate(as_dying)
        cap = self._cap()
        arr = np.zeros(cap, np.int64)
        for chosen, mark in ((live, False), (dying, True)):
            if chosen.any():
                slots = bound.slots_of_classes(chosen)
                slots = slots[bound.deleting[slots] == mark]
                arr += np.bincount(bound.node_row[slots], minlength=cap)[:cap]
        return arr

    def _standing_for(self, c: int, proto) -> tuple:
        """Two records of bound class ``c`` (prototype ``proto``), one not
        terminating and one terminating: all a count predicate reads of
        the class's pods (kept while the id holds that prototype)."""
        got = self._reps.get(c)
        if got is None or got[0] is not proto:
            got = self._reps[c] = (proto, build_record(proto, proto.key, 0, None, NO_EXTRAS),
                                   build_record(proto, proto.key, 0, None, _TERMINATING))
        return got[1], got[2]

    def _cap(self) -> int:
        return max(self.state.allocatable.shape[0], self.state.n_rows, 1)

    def _grown(self, arr):
        cap = self._cap()
        if arr.shape[0] >= cap:
            return arr
        out = np.zeros(cap, np.int64)
        out[: arr.shape[0]] = arr
        return out

    def on_pod(self, record, row: int, delta: int) -> None:
        by_source = self._sums_by_source
        for key, (pred, arr) in list(self._entries.items()):
            if pred(record):
                if row >= arr.shape[0]:
                    arr = self._grown(arr)
                    self._entries[key] = (pred, arr)
                arr[row] += delta
                if by_source:
                    for ds in by_source.get(("e", key), {}).values():
                        ds.bump(row, delta)
        self._group(record, row, delta)

    def on_pods(self, records: list, rows: np.ndarray, delta: int) -> None:
        """``on_pod`` for many pods at once (a compiled run's): ``rows`` [k]
        int64.  The count predicates read a pod's namespace, labels and
        deletion mark only, so they are asked once per stretch of pods
        sharing those (pods of one template share their labels object); a
        pod's own affinity terms are grouped pod by pod."""
        if isinstance(records, PodColumns):
            self._on_columns(records, rows, delta)
            return
        entries = list(self._entries.items())
        with_terms = any(map(_AFFINITY, records)) or any(map(_ANTI_AFFINITY, records))
        if with_terms:      # the pods' own terms, pod by pod (labels do not tell them)
            for k, r in enumerate(records):
                if r.pod_affinity or r.pod_anti_affinity:
                    self._group(r, int(rows[k]), delta)
        if not entries:
            return
        n = len(records)
        alike = len({(id(r.labels), r.namespace, r.deleting) for r in records}) == 1
        i = 0
        while i < n:
            first = records[i]
            j = n if alike else i + 1
            while (j < n and records[j].labels is first.labels
                   and records[j].namespace == first.namespace
                   and records[j].deleting == first.deleting):
                j += 1
            self._count_matching(entries, first, rows[i:j], delta)
            i = j

    def _on_columns(self, cols: PodColumns, rows: np.ndarray, delta: int) -> None:
        """``on_pods`` for pods as columns: the predicates are asked once per
        class and deletion mark (what they read is the class's but for that
        mark), and a pod's own terms (its class's) grouped once per class."""
        cid = cols.class_id
        for c, _, part in _split_by(cid, rows):     # the classes the pods use
            proto = cols.classes[c]
            if proto.pod_affinity or proto.pod_anti_affinity:
                self._group_rows(proto, part, delta)
        entries = list(self._entries.items())
        if not entries:
            return
        group = cid.astype(np.int64) * 2
        at = EXTRA_FIELDS.index("deleting")
        for k, extra in cols.extras.items():
            if extra[at]:
                group[k] += 1
        for _, k, part in _split_by(group, rows):
            self._count_matching(entries, cols[k], part, delta)

    def _count_matching(self, entries, rep, part: np.ndarray, delta: int) -> None:
        """Add ``delta`` on rows ``part`` ([k] int64, pods alike in what the
        predicates read, ``rep`` one of them) to every count whose predicate
        ``rep`` satisfies."""
        for key, (pred, arr) in entries:
            if pred(rep):
                if int(part.max()) >= arr.shape[0]:
                    arr = self._grown(arr)
                    self._entries[key] = (pred, arr)
                np.add.at(arr, part, delta)
                for ds in self._sums_by_source.get(("e", key), {}).values():
                    ds.bump_many(part, delta)

    def _group(self, record, row, delta):
        if not (record.pod_affinity or record.pod_anti_affinity):
            return
        self.pods_with_affinity += delta
        for kind, t, table, arr in self._term_counts(record, row):
            arr[row] += delta
            for ds in self._sums_by_source.get(("g", kind, t), {}).values():
                ds.bump(row, delta)
            self._keep_term(table, t, arr, delta)

    def _group_rows(self, record, rows: np.ndarray, delta: int) -> None:
        """``_group`` for pods alike in their terms on ``rows`` ([k] int64)."""
        self.pods_with_affinity += delta * rows.shape[0]
        for kind, t, table, arr in self._term_counts(record, int(rows.max())):
            np.add.at(arr, rows, delta)
            for ds in self._sums_by_source.get(("g", kind, t), {}).values():
                ds.bump_many(rows, delta)
            self._keep_term(table, t, arr, delta)

    def _term_counts(self, record, top: int):
        """(kind, term, its table, its per-row counts reaching row ``top``)
        for each of the pod's own affinity terms."""
        terms = pod_terms(record)
        for kind in KINDS:
            table = self.groups[kind]
            for t in terms[kind]:
                arr = table.get(t)
                if arr is None:
                    arr = np.zeros(self._cap(), np.int64)
                elif top >= arr.shape[0]:
                    arr = self._grown(arr)
                yield kind, t, table, arr

    @staticmethod
    def _keep_term(table: dict, t, arr: np.ndarray, delta: int) -> None:
        if delta < 0 and not arr.any():
            table.pop(t, None)
        else:
            table[t] = arr

    def counts(self, key, predicate: PodPredicate) -> np.ndarray:
        """[>= n_rows] int64 pods per node row satisfying ``predicate``."""
        got = self._entries.get(key)
        if got is None:
            arr = self._fresh_counts(predicate)
            self._entries[key] = (predicate, arr)
            while len(self._entries) > self.MAX_KEYS:
                old, _ = self._entries.popitem(last=False)
                # No longer updated: drop the domain sums built on it.
                for tag in self._sums_by_source.pop(("e", old), {}):
                    self._sums.pop((("e", old), tag), None)
                    self.generation += 1
            return arr
        self._entries.move_to_end(key)
        arr = got[1]
        if arr.shape[0] < self.state.n_rows:
            arr = self._grown(arr)
            self._entries[key] = (got[0], arr)
        return arr

    def group_counts(self, kind: str) -> dict:
        """{term: [>= n_rows] int64} for one kind of existing pods' terms."""
        table = self.groups[kind]
        for t, arr in list(table.items()):
            if arr.shape[0] < self.state.n_rows:
                table[t] = self._grown(arr)
        return table


    # ------------------------------------------------------ domain sums
    def domain_sums(self, key, predicate: PodPredicate, tag, dom_fn,
                    n_domains: int) -> DomainSums:
        """Per-domain sums of ``counts(key, predicate)``; ``dom_fn()`` -> [rows]
        domain ids (-1 = not counted) is called only to build, and ``tag``
        must change whenever its answer could."""
        source = ("e", key)
        got = self._sums.get((source, tag))
        if got is not None:
            self._sums.move_to_end((source, tag))
            self._entries.move_to_end(key)      # keep the counts it follows alive
            return got
        counts = self.counts(key, predicate)
        return self._add_sums(source, tag, DomainSums(dom_fn(), counts, n_domains))

    def group_domain_sums(self, kind: str, term, tag, dom_fn, n_domains: int) -> DomainSums:
        """``domain_sums`` over ``groups[kind][term]`` (zeros when no bound
        pod carries the term)."""
        source = ("g", kind, term)
        got = self._sums.get((source, tag))
        if got is not None:
            self._sums.move_to_end((source, tag))
            return got
        dom = dom_fn()
        counts = self.groups[kind].get(term)
        if counts is None:
            counts = np.zeros(dom.shape[0], np.int64)
        elif counts.shape[0] < dom.shape[0]:
            counts = self._grown(counts)
        return self._add_sums(source, tag, DomainSums(dom, counts, n_domains))

    def _add_sums(self, source, tag, ds: DomainSums) -> DomainSums:
        self.generation += 1
        self._sums[(source, tag)] = ds
        self._sums_by_source.setdefault(source, {})[tag] = ds
        while len(self._sums) > self.MAX_SUMS:
            (src, tg), _ = self._sums.popitem(last=False)
            tags = self._sums_by_source.get(src)
            if tags is not None:
                tags.pop(tg, None)
                if not tags:
                    del self._sums_by_source[src]
        return ds


def node_domains(state, k: int) -> np.ndarray:
    """[n_rows] int64 label value id of key column ``k`` per node row (-1
    where the node lacks the key or the row is not live), memoized per
    structure; callers must not modify it."""
    cache = state.derived.memo(NODE_DOMAINS, state.structure_tag())
    got = cache.get(k)
    if got is None:
        n = state.n_rows
        got = np.where(state.valid[:n], state.label_vals[:n, k], -1).astype(np.int64)
        got.flags.writeable = False
        cache[k] = got
    return got


def node_domains_p1(state, k: int) -> np.ndarray:
    """``node_domains`` plus one ([n_rows] int64, 0 = lacks the key): an index
    into a [D + 1] per-domain table (memoized per structure, read-only)."""
    cache = state.derived.memo(NODE_DOMAINS_P1, state.structure_tag())
    got = cache.get(k)
    if got is None:
        got = node_domains(state, k) + 1
        got.flags.writeable = False
        cache[k] = got
    return got


def grouped_rows(state):
    """``grouped(rule) -> (ptr, rows)`` for ``kernels.domain_rules.stack_rules``:
    the node rows of each domain of a rule's key, memoized per structure
    for the memoized ``node_domains_p1`` maps (a rule built on another map
    is grouped afresh)."""
    cache = state.derived.memo(ROWS_BY_DOMAIN, state.structure_tag())

    def grouped(rule):
        key = (id(rule.domp1), int(rule.sums.shape[0]))
        got = cache.get(key)
        if got is None or got[0] is not rule.domp1:
            got = (rule.domp1, rows_by_domain(rule.domp1, int(rule.sums.shape[0])))
            if rule.domp1.flags.writeable:      # not a memoized map: do not keep it
                return got[1]
            cache[key] = got
        return got[1]
    return grouped


def _new_pod_count_index(state) -> PodCountIndex:
    idx = PodCountIndex(state)
    state.listeners.add(idx)
    return idx


def pod_count_index(state) -> PodCountIndex:
    """The state's PodCountIndex (built on first use, then kept in step by
    the state's listeners)."""
    return state.derived.extension(POD_COUNT_INDEX, _new_pod_count_index)
