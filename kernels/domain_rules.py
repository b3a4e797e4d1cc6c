"""Per-domain filter rules that a compiled run keeps current as it places pods.

A pod-to-pod filter (PodTopologySpread's DoNotSchedule, InterPodAffinity's
required anti-affinity) answers per topology domain: whether the matching
pods counted in a node's domain exceed a threshold.  Within a run every pod
is alike, so a placed pod either counts in a rule (it matches the rule's
selector) or never does; the run adds one to the placed node's domain and
re-tests only the nodes of domains whose answer moved.

``DomainRule`` is one such rule as arrays (no pods, no selectors);
``stack_rules`` packs rules into the fixed-shape arrays the run kernel takes
(``_numba.build_place_run``).  The pod-to-pod scores (``SpreadScore``,
``AffinityScore``) are packed the same way; with every node scored the
run keeps them over score classes (``class_keys``: how each term and each
rule of few domains enters a node's class), else it recomputes them over
the scanned nodes for each pod.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# Columns of ``RuleArrays.params`` (one row per rule).
P_BIT = 0               # reason bit a failing node gets
P_THRESH = 1            # fails "above" when count > threshold (+ the minimum, see P_TRACK_MIN)
P_TRACK_MIN = 2         # 1: threshold + least count over present domains (spread skew)
P_FAIL_ABSENT = 3       # 1: a node lacking the key fails
P_FAIL_ABOVE = 4        # 1: a node whose domain count is above the threshold fails
P_FAIL_NOT_ABOVE = 5    # 1: a node whose domain count is not above it fails
P_INCREMENT = 6         # 1: a pod of the run counts in this rule
P_N_DOMAINS = 7         # D of this rule (its domain table's length)
P_FIRST_GROUP = 8       # 1: "not above" passes until the run counts its first pod
N_PARAMS = 9


class DomainRule(NamedTuple):
    """One filter rule over per-domain counts.

    domp1 [N] int64: the node row's domain id plus one under the rule's key
    (0 = the node lacks the key); count_dom [N] int64: the domain a pod
    placed on the row counts in (-1: not counted); sums [D] int64: the
    counts now; present [D] bool: domains the minimum is taken over (used
    with ``track_min``).  A node fails when it lacks the key and
    ``fail_absent``, else by whether its domain's count exceeds
    ``thresh`` (+ the minimum over present domains with ``track_min``).
    ``first_group`` (required pod affinity, the first pod of a group): no
    matching pod exists yet, so a domain without one passes until the run
    places the first (then ``fail_not_above`` holds for every such rule)."""

    bit: int
    domp1: np.ndarray
    count_dom: np.ndarray
    sums: np.ndarray
    present: np.ndarray
    thresh: int
    track_min: bool
    fail_absent: bool
    fail_above: bool
    fail_not_above: bool
    increment: bool
    first_group: bool = False


class RuleArrays(NamedTuple):
    """Rules stacked for the run kernel (R rules, N rows, D the largest
    domain table): domp1 / count_dom [R, N] int64, sums [R, D] int64 (the
    kernel's own copy: it counts placed pods in it), present [R, D] bool,
    params [R, N_PARAMS] int64, and each rule's rows grouped by domain
    (dom_ptr [R, D + 1], dom_rows [R, N]: the rows of domain d are
    dom_rows[r, dom_ptr[r, d]:dom_ptr[r, d + 1]])."""

    domp1: np.ndarray
    count_dom: np.ndarray
    sums: np.ndarray
    present: np.ndarray
    params: np.ndarray
    dom_ptr: np.ndarray
    dom_rows: np.ndarray


def rows_by_domain(domp1: np.ndarray, n_domains: int) -> tuple[np.ndarray, np.ndarray]:
    """(ptr [D + 1], rows [N]) grouping the rows that have the key by domain,
    rows ascending within a domain (rows lacking the key come last, outside
    every domain's range)."""
    order = np.argsort(domp1 == 0, kind="stable")       # rows with the key first
    with_key = order[: int(np.count_nonzero(domp1))]
    order = with_key[np.argsort(domp1[with_key], kind="stable")]
    counts = np.bincount(domp1[order] - 1, minlength=n_domains)[:n_domains]
    ptr = np.zeros(n_domains + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    rows = np.full(domp1.shape[0], -1, np.int64)
    rows[: order.shape[0]] = order
    return ptr, rows


def stack_rules(rules: list[DomainRule], n_rows: int, grouped=None) -> RuleArrays:
    """``RuleArrays`` of ``rules`` over ``n_rows`` node rows (no rules: every
    array with R = 0).  ``grouped(rule) -> (ptr, rows)`` may supply memoized
    ``rows_by_domain`` answers."""
    r = len(rules)
    d = max([max(int(x.sums.shape[0]), 1) for x in rules] or [1])
    domp1 = np.zeros((r, n_rows), np.int64)
    count_dom = np.full((r, n_rows), -1, np.int64)
    sums = np.zeros((r, d), np.int64)
    present = np.zeros((r, d), np.bool_)
    params = np.zeros((r, N_PARAMS), np.int64)
    dom_ptr = np.zeros((r, d + 1), np.int64)
    dom_rows = np.full((r, n_rows), -1, np.int64)
    for i, x in enumerate(rules):
        n = min(n_rows, x.domp1.shape[0])
        domp1[i, :n] = x.domp1[:n]
        m = min(n_rows, x.count_dom.shape[0])
        count_dom[i, :m] = x.count_dom[:m]
        nd = int(x.sums.shape[0])
        # The kernel indexes sums by these ids unchecked.
        if (n and int(domp1[i].max()) > nd) or (m and int(count_dom[i].max()) >= nd):
            raise ValueError(f"domain rule {i}: a node's domain id is outside its "
                             f"{nd} domains")
        sums[i, :nd] = x.sums
        if x.present is not None:
            present[i, : x.present.shape[0]] = x.present
        params[i] = (x.bit, x.thresh, int(x.track_min), int(x.fail_absent),
                     int(x.fail_above), int(x.fail_not_above and not x.first_group),
                     int(x.increment), nd, int(x.first_group))
        ptr, rows = grouped(x) if grouped is not None else rows_by_domain(domp1[i], nd)
        dom_ptr[i, : nd + 1] = ptr[: nd + 1]
        dom_ptr[i, nd + 1:] = ptr[nd]
        dom_rows[i, : min(n_rows, rows.shape[0])] = rows[:n_rows]
    return RuleArrays(domp1, count_dom, sums, present, params, dom_ptr, dom_rows)


NO_RULES_CACHE: dict = {}


def no_rules(n_rows: int) -> RuleArrays:
    """The empty ``RuleArrays`` for ``n_rows`` rows (shared, never written)."""
    got = NO_RULES_CACHE.get(n_rows)
    if got is None:
        got = stack_rules([], n_rows)
        NO_RULES_CACHE.clear()
        NO_RULES_CACHE[n_rows] = got
    return got


# ---------------------------------------------------------------------------
# PodTopologySpread's ScheduleAnyway score inside a run.  Unlike a filter it
# cannot be kept per row: the weight of a constraint is ln(domains among the
# scored nodes + 2) and the score is normalized over the scored nodes, so
# the run computes it per score class (every node scored) or over every
# scanned position for each pod.

# Columns of ``SpreadArrays.params`` (one row per constraint).
S_HOSTNAME = 0          # 1: counted per node; the size is the number of counted nodes
S_SKEW_MINUS_ONE = 1    # maxSkew - 1, added to each term
S_INCREMENT = 2         # 1: a pod of the run counts in this constraint
S_SIZE_DOMAINS = 3      # entries of this constraint's size_dom ids (distinct-domain count)
N_SPREAD_PARAMS = 4


class SpreadTerm(NamedTuple):
    """One ScheduleAnyway constraint: domp1 [N] int64 index + 1 into sums of
    the node's count (0: the node lacks the key, its term is left out where
    the constraint set does not require every key); count_dom [N] int64
    where a pod placed on the row counts (-1: nowhere); sums [D] int64;
    size_dom [N] int64 the value a counted node adds to the distinct
    domains (non-hostname keys; every id < size_domains)."""

    domp1: np.ndarray
    count_dom: np.ndarray
    sums: np.ndarray
    size_dom: np.ndarray
    size_domains: int
    hostname: bool
    max_skew: int
    increment: bool


class SpreadScore(NamedTuple):
    """The score of one pod's ScheduleAnyway constraints: its score slot,
    whether counted nodes need every key (``require_all``; then ``has_all``
    [N] bool marks them) and the terms."""

    slot: int
    require_all: bool
    has_all: np.ndarray
    terms: list


class SpreadArrays(NamedTuple):
    """``SpreadScore`` packed for the run kernel (C constraints, N rows):
    domp1 / count_dom / size_dom [C, N] int64, sums [C, D] int64 (the
    kernel's own copy), params [C, N_SPREAD_PARAMS] int64, has_all [N] bool,
    meta [3] int64 (slot, require_all, C), marks [C, K] int64 scratch for
    the distinct-domain count."""

    domp1: np.ndarray
    count_dom: np.ndarray
    size_dom: np.ndarray
    sums: np.ndarray
    params: np.ndarray
    has_all: np.ndarray
    meta: np.ndarray
    marks: np.ndarray


def stack_spread(score: SpreadScore | None, n_rows: int) -> SpreadArrays:
    """``SpreadArrays`` of ``score`` (None: no constraint, C = 0)."""
    terms = list(score.terms) if score is not None else []
    c = len(terms)
    d = max([max(int(t.sums.shape[0]), 1) for t in terms] or [1])
    k = max([max(int(t.size_domains), 1) for t in terms] or [1])
    domp1 = np.zeros((c, n_rows), np.int64)
    count_dom = np.full((c, n_rows), -1, np.int64)
    size_dom = np.zeros((c, n_rows), np.int64)
    sums = np.zeros((c, d), np.int64)
    params = np.zeros((c, N_SPREAD_PARAMS), np.int64)
    for i, t in enumerate(terms):
        nd = int(t.sums.shape[0])
        for name, dst, src in (("domp1", domp1, t.domp1), ("count_dom", count_dom, t.count_dom),
                               ("size_dom", size_dom, t.size_dom)):
            n = min(n_rows, src.shape[0])
            dst[i, :n] = src[:n]
        # The kernel indexes by these ids unchecked.
        if (n_rows and (int(domp1[i].max()) > nd or int(count_dom[i].max()) >= nd
                        or int(size_dom[i].max()) >= max(int(t.size_domains), 1)
                        or int(size_dom[i].min()) < 0)):
            raise ValueError(f"spread term {i}: a node's domain id is outside its counts")
        sums[i, :nd] = t.sums
        params[i] = (int(t.hostname), t.max_skew - 1, int(t.increment), t.size_domains)
    has_all = np.ones(n_rows, np.bool_)
    meta = np.array([-1, 0, 0], np.int64)
    if score is not None:
        m = min(n_rows, score.has_all.shape[0])
        has_all[:m] = score.has_all[:m]
        has_all[m:] = False
        meta[:] = (score.slot, int(score.require_all), c)
    return SpreadArrays(domp1, count_dom, size_dom, sums, params, has_all, meta,
                        np.zeros((c, k), np.int64))


# ---------------------------------------------------------------------------
# InterPodAffinity's score inside a run: per node, the sum over terms of
# weight x the matching pods in the node's domain, min-max normalized over
# the scanned feasible nodes for each pod (per score class with every node
# scored).


class AffinityTerm(NamedTuple):
    """One term of the score: domp1 [N] int64 index + 1 into sums (0: the
    node has no domain, no contribution); count_dom [N] int64 where a pod
    placed on the row counts (-1: nowhere); sums [D] int64; weight (signed);
    increment: a pod of the run counts in it."""

    domp1: np.ndarray
    count_dom: np.ndarray
    sums: np.ndarray
    weight: int
    increment: bool


class AffinityScore(NamedTuple):
    """A pod's InterPodAffinity score for a run: its score slot and terms."""

    slot: int
    terms: list


class AffinityArrays(NamedTuple):
    """``AffinityScore`` packed for the run kernel (C terms, N rows):
    domp1 / count_dom [C, N] int64, sums [C, D] int64 (the kernel's own
    copy), params [C, 2] int64 (weight, increment), meta [3] int64 (slot,
    C, the plugin's weight in the profile)."""

    domp1: np.ndarray
    count_dom: np.ndarray
    sums: np.ndarray
    params: np.ndarray
    meta: np.ndarray


def stack_affinity(score: AffinityScore | None, n_rows: int,
                   plugin_weight: int = 0) -> AffinityArrays:
    """``AffinityArrays`` of ``score`` (None: C = 0) scoring with the
    plugin's profile weight."""
    terms = list(score.terms) if score is not None else []
    c = len(terms)
    d = max([max(int(t.sums.shape[0]), 1) for t in terms] or [1])
    domp1 = np.zeros((c, n_rows), np.int64)
    count_dom = np.full((c, n_rows), -1, np.int64)
    sums = np.zeros((c, d), np.int64)
    params = np.zeros((c, 2), np.int64)
    for i, t in enumerate(terms):
        nd = int(t.sums.shape[0])
        for dst, src in ((domp1, t.domp1), (count_dom, t.count_dom)):
            n = min(n_rows, src.shape[0])
            dst[i, :n] = src[:n]
        # The kernel indexes by these ids unchecked.
        if n_rows and (int(domp1[i].max()) > nd or int(count_dom[i].max()) >= nd):
            raise ValueError(f"affinity term {i}: a node's domain id is outside its counts")
        sums[i, :nd] = t.sums
        params[i] = (t.weight, int(t.increment))
    meta = np.array([score.slot if score is not None else -1, c, plugin_weight], np.int64)
    return AffinityArrays(domp1, count_dom, sums, params, meta)


# ---------------------------------------------------------------------------
# Score classes of a run (``_core``'s score-class section): how each spread
# and affinity term enters a row's class key.

# Fewer distinct domains than this: a term keys its classes by domain id.
CLASS_BY_DOMAIN_MAX = 16


class ClassKeys(NamedTuple):
    """mode [K] int64 per key column (the C spread terms, the A affinity
    terms, has_all, then the class rules): 0 keyed by the row's domain id,
    1 by the count of the row's own domain (every domain of the term holds
    at most one row, and there are many: hostname); dom_row [K, D] int64,
    for mode 1 the row of each domain (-1 none); r_col [R] int64 each
    rule's key column, -1 for a rule answered per row."""

    mode: np.ndarray
    dom_row: np.ndarray
    r_col: np.ndarray


def _distinct(domp1: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows with the key, rows per domain [width])."""
    rows = np.flatnonzero(domp1)
    return rows, np.bincount(domp1[rows] - 1, minlength=width)


def class_keys(spread: SpreadArrays, affinity: AffinityArrays, rules: RuleArrays,
               n_rows: int) -> ClassKeys:
    """``ClassKeys`` for the packed terms and rules over the first
    ``n_rows`` rows.  A rule of few domains is a class rule where the run
    has no spread terms (their sizes are counted over leaf-feasible rows)."""
    terms = [spread.domp1[c, :n_rows] for c in range(spread.params.shape[0])]
    terms += [affinity.domp1[c, :n_rows] for c in range(affinity.params.shape[0])]
    width = max(spread.sums.shape[1], affinity.sums.shape[1], 1)
    by_rule = []
    if not spread.params.shape[0]:
        for r in range(rules.params.shape[0]):
            _, per = _distinct(rules.domp1[r, :n_rows], rules.sums.shape[1])
            if np.count_nonzero(per) <= CLASS_BY_DOMAIN_MAX:
                by_rule.append(r)
    n_key = len(terms) + 1 + len(by_rule)
    mode = np.zeros(n_key, np.int64)
    dom_row = np.full((n_key, width), -1, np.int64)
    for x, domp1 in enumerate(terms):
        rows, per = _distinct(domp1, width)
        if np.count_nonzero(per) > CLASS_BY_DOMAIN_MAX and per.max(initial=0) <= 1:
            mode[x] = 1
            dom_row[x, domp1[rows] - 1] = rows
    r_col = np.full(rules.params.shape[0], -1, np.int64)
    r_col[by_rule] = len(terms) + 1 + np.arange(len(by_rule), dtype=np.int64)
    return ClassKeys(mode, dom_row, r_col)
