"""InterPodAffinity: mirrors plugins/interpodaffinity (v1.32 semantics).

Terms: a term without namespaces and namespaceSelector applies to its
owner's namespace; a namespaceSelector is matched against the labels of the
namespace's loaded Namespace object (``ClusterState.namespace_labels``),
only ``kubernetes.io/metadata.name`` for a namespace without one
(``parsing.selectors.namespace_labels_of``); ``labelSelector: null``
matches no pod.  matchLabelKeys /
mismatchLabelKeys of pod affinity terms are merged into the selector by the
API server at pod creation (KEP-3633), not by the scheduler: manifests are
taken as the API server stores them.

PreFilter skips when the pod has no required (anti-)affinity terms and no
bound pod's required anti-affinity term matches it (on a node that has the
term's key).  Filter, in upstream's order:
1. required affinity: the node must have every term's key and, in each
   term's domain, a pod matching all the terms -- unless no such pod exists
   anywhere and the pod matches all its own terms (first pod of a group);
   otherwise UnschedulableAndUnresolvable;
2. required anti-affinity: no pod matching a term in the term's domain;
3. bound pods' required anti-affinity terms that match the pod: the node
   must not share the owner's domain.

Score: per topology domain, the weights of the pod's preferred terms
matched by bound pods (+ affinity, - anti-affinity), plus the bound pods'
required affinity terms matching the pod (hardPodAffinityWeight) and their
preferred terms matching the pod; PreScore skips when nothing contributes
(or with ignorePreferredTermsOfExistingPods and no preferred terms of its
own).  NormalizeScore: int64(100 * (s - min) / (max - min)).
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.config.plugin_args import InterPodAffinityArgs
from tensorsched.framework.parsing.selectors import pod_terms
from tensorsched.framework.runtime.cluster_events import (
    NODE_ADD,
    NODE_UPDATE,
    POD_ADD,
    POD_DELETE,
    POD_UPDATE,
)
from tensorsched.framework.records.records import MemoKey
from tensorsched.framework.runtime.plugin import (
    NORMALIZE_NONE,
    PROBE_AFFINITY,
    Plugin,
    sign_value,
)
from tensorsched.framework.runtime.status import SKIP, Code, Status
from tensorsched.framework.state.derived import StateKey
from tensorsched.framework.state.domain_counts import (
    node_domains,
    node_domains_p1,
    pod_count_index,
)
from tensorsched.kernels import domains as D
from tensorsched.kernels import layout as L
from tensorsched.kernels.domain_rules import AffinityScore, DomainRule
from tensorsched.kernels.domain_rules import AffinityTerm as AffinityScoreTerm
from tensorsched.kernels.domain_rules_cycle import CycleRule


NAME = names.INTER_POD_AFFINITY
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"


def _has_labels(state, rows):
    lv = state.label_vals[rows]
    keep = np.ones(lv.shape[1], bool)
    keep[L.LABEL_KEY_NAME] = False
    return (lv[:, keep] >= 0).any(axis=1)


LABELLED_BY_ROW = StateKey("labelled_by_row", __name__,
                           "'rows' -> [n_rows] bool live node with some label")


def _labelled_by_row(state) -> np.ndarray:
    """[n_rows] bool: live node with some label (memoized per structure)."""
    cache = state.derived.memo(LABELLED_BY_ROW, state.structure_tag())
    got = cache.get("rows")
    if got is None:
        got = np.zeros(state.n_rows, bool)
        rows = state.valid_rows()
        got[rows] = _has_labels(state, rows)
        cache["rows"] = got
    return got


LABELLED_DOMAINS = StateKey("labelled_domains", __name__,
                            "key column k -> node_domains where the node has some label")


def _labelled_domains(state, k) -> np.ndarray:
    """``node_domains`` of key column k where the node has some label, -1
    elsewhere (memoized per structure, read-only)."""
    cache = state.derived.memo(LABELLED_DOMAINS, state.structure_tag())
    got = cache.get(k)
    if got is None:
        got = np.where(_labelled_by_row(state), node_domains(state, k), -1)
        got.flags.writeable = False
        cache[k] = got
    return got


def _n_domains(state, k) -> int:
    return max(len(state.label_values[k]), 1)


def _all_sums(state, index, key, pred, k):
    """DomainSums of count ``key`` per value of key column k over live nodes."""
    return index.domain_sums(key, pred, (state.structure_tag(), k, "all"),
                             lambda: node_domains(state, k), _n_domains(state, k))


class InterPodAffinity(Plugin):
    name = NAME
    # EventsToRegister: any assigned pod; a node added or relabelled
    events = frozenset({POD_ADD, POD_UPDATE, POD_DELETE, NODE_ADD, NODE_UPDATE})

    def sign(self, pod) -> tuple:
        """What its answers read of a pod: namespace, labels (bound pods'
        anti-affinity may match them) and its own affinity terms."""
        return (pod.namespace, tuple(sorted(pod.labels.items())), sign_value(pod.pod_affinity),
                sign_value(pod.pod_anti_affinity))
    normalize = NORMALIZE_NONE
    score_slot = -1
    reason_bits = 0

    def __init__(self, args: InterPodAffinityArgs | None = None):
        self.args = args or InterPodAffinityArgs()
        self._codes = None          # (pod, state, its version, codes by row) of the last filter
        self._by_row = None         # (state, signature, codes by row, fits by row)
        self._scores = None         # (state, signature, raw score by row)
        # node rows the filter's codes were computed for (whole passes over
        # the rows and one-row checks: tests and benches)
        self.rows_evaluated = 0

    # ----------------------------------------------------------- filter
    def _existing_anti(self, state, pod):
        """[(key column, DomainSums)] of bound pods' required anti-affinity
        terms that match ``pod`` and block some domain (sum > 0)."""
        index = pod_count_index(state)
        out = []
        tag = None
        nsl = _ns_labels(state)
        for term in index.group_counts("req_anti"):
            if not term.matches(pod.namespace, pod.labels, nsl):
                continue
            k = state.label_keys.get(term.topology_key)
            if k < 0:
                continue
            if tag is None:
                tag = state.structure_tag()
            ds = index.group_domain_sums("req_anti", term, (tag, k, "all"),
                                         lambda k=k: node_domains(state, k),
                                         _n_domains(state, k))
            if ds.positive:
                out.append((k, ds))
        return out

    def pre_filter(self, ctx):
        terms = pod_terms(ctx.pod)
        existing = self._existing_anti(ctx.state, ctx.pod)
        ctx.data[NAME] = existing
        if not existing and not terms["req_aff"] and not terms["req_anti"]:
            return SKIP, None
        return Status.OK, None

    def filter_codes(self, state, pod, rows, existing=None) -> np.ndarray:
        """[M] int: 0 fits, 1 affinity, 2 anti-affinity, 3 existing pods'
        anti-affinity."""
        return np.take(self.codes_by_row(state, pod, existing), rows)

    def _filter_parts(self, state, pod, existing=None) -> tuple[list, bool]:
        """(parts, first of its group): per condition in upstream's order,
        (code, key column or -1, DomainSums or None, whether the pod itself
        counts in it): 1 each required affinity term (counting pods that
        match all the terms), 2 each required anti-affinity term, 3 each
        bound pod's anti-affinity term matching the pod."""
        if existing is None:
            existing = self._existing_anti(state, pod)
        terms = pod_terms(pod)
        index = pod_count_index(state)
        parts = []
        req_aff = terms["req_aff"]
        first_of_group = False
        nsl = _ns_labels(state)
        if req_aff:
            key = ("all-terms", req_aff)
            pred = lambda r: all(t.matches(r.namespace, r.labels, nsl) for t in req_aff)  # noqa: E731
            counts_self = bool(pred(pod))
            any_pair = False
            for t in req_aff:
                k = state.label_keys.get(t.topology_key)
                if k < 0:
                    parts.append((1, -1, None, counts_self))
                    continue
                ds = _all_sums(state, index, key, pred, k)
                any_pair = any_pair or ds.positive > 0
                parts.append((1, k, ds, counts_self))
            first_of_group = not any_pair and counts_self
        for t in terms["req_anti"]:
            k = state.label_keys.get(t.topology_key)
            if k < 0:
                continue
            ds = _all_sums(state, index, ("term", t),
                           lambda r, t=t: t.matches(r.namespace, r.labels, nsl), k)
            parts.append((2, k, ds, t.matches(pod.namespace, pod.labels, nsl)))
        for k, ds in existing:
            parts.append((3, k, ds, False))
        return parts, first_of_group

    def codes_by_row(self, state, pod, existing=None) -> np.ndarray:
        """``filter_codes`` of every node row ([n_rows] int64; read-only,
        reused while no count it depends on changed)."""
        full, first_of_group = self._filter_parts(state, pod, existing)
        parts = [(code, k, ds) for code, k, ds, _ in full]
        sig = (state.structure_tag(), first_of_group) + tuple(
            (code, k, ds.serial, ds.version) if ds is not None else (code, k)
            for code, k, ds in parts)
        got = self._by_row
        if got is not None and got[0] is state and got[1] == sig:
            return got[2]
        codes = np.zeros(state.n_rows, np.int64)
        for code, k, ds in parts:
            if code == 1:
                if ds is None:
                    codes[codes == 0] = 1
                else:
                    # Nodes lacking the key fail; others need a matching pod
                    # in their domain (unless first of the group).
                    D.host.domain_rule(codes, node_domains_p1(state, k), ds.sums, 0, 1, 0,
                                       0 if first_of_group else 1)
            elif ds.positive:
                D.host.domain_rule(codes, node_domains_p1(state, k), ds.sums, 0, 0, code, 0)
        codes.flags.writeable = False
        self.rows_evaluated += codes.shape[0]
        self._by_row = (state, sig, codes, codes == 0)
        return codes

    def run_keeps_skip(self, ctx, point: str) -> bool:
        """``RunSkipPlugin``: a pod without required terms that PreFilter
        skipped stays skipped (alike pods add no anti-affinity term); a pod
        that PreScore skipped stays skipped unless it carries terms that
        score (preferred ones, or required affinity with
        hardPodAffinityWeight): once one such pod is placed, the next see
        it."""
        if point == "preFilter":
            return True
        terms = pod_terms(ctx.pod)
        return not (terms["pref_aff"] or terms["pref_anti"]
                    or (terms["req_aff"] and self.args.hard_pod_affinity_weight > 0))

    def run_rules(self, ctx) -> list | None:
        """The filter as per-domain rules for a compiled run of pods alike to
        ``ctx.pod`` (the run counts placed pods that match a term): a node
        fails without a pod matching all the required affinity terms in
        each term's domain (unless the group has no pod yet and this one
        matches them: until the run places it), or while a pod matching one
        of its required anti-affinity terms is in the domain, or a bound pod
        whose anti-affinity matches it.  None when a required affinity
        term's key is on no node."""
        state = ctx.state
        parts, first = self._filter_parts(state, ctx.pod, ctx.data.get(NAME))
        out = []
        for code, k, ds, counts_self in parts:
            if code == 1 and ds is None:
                return None                 # no node has the key: every node fails
            if code == 1:
                # the first pod of the group passes every domain with the key
                # until the run places it
                out.append(DomainRule(bit=self.reason_bits, domp1=node_domains_p1(state, k),
                                      count_dom=node_domains(state, k), sums=ds.sums,
                                      present=None, thresh=0, track_min=False,
                                      fail_absent=True, fail_above=False, fail_not_above=True,
                                      increment=counts_self, first_group=first))
            elif counts_self or ds.positive:
                # A placed pod of the run owning a term that matches the next
                # pods is counted by the term's own rule (same key and domain).
                out.append(DomainRule(bit=self.reason_bits, domp1=node_domains_p1(state, k),
                                      count_dom=node_domains(state, k), sums=ds.sums,
                                      present=None, thresh=0, track_min=False,
                                      fail_absent=False, fail_above=True, fail_not_above=False,
                                      increment=counts_self))
        return out

    def cycle_rules(self, ctx) -> list | None:
        """The filter of one cycle as per-domain rules that the cuda
        backend's pick tests on the device
        (``kernels.domain_rules_cycle.CycleRule``; ``codes_by_row``'s rules,
        O(conditions) here): per required affinity term, a row lacking the
        key fails and so does a domain without a matching pod (unless the
        pod is the first of its group); per required anti-affinity term
        and per bound pod's anti-affinity term matching the pod, a domain
        holding a matching pod.  None (the filter runs on the host) when a
        required affinity term's key is on no node."""
        state = ctx.state
        parts, first = self._filter_parts(state, ctx.pod, ctx.data.get(NAME))
        out = []
        for code, k, ds, _ in parts:
            if ds is None:
                return None
            if code == 1:
                out.append(CycleRule(node_domains_p1(state, k), ds, 0, fail_absent=True,
                                     fail_above=False, fail_not_above=not first))
            else:
                out.append(CycleRule(node_domains_p1(state, k), ds, 0, fail_absent=False))
        return out

    def filter(self, ctx, rows):
        codes = self.codes_by_row(ctx.state, ctx.pod, ctx.data.get(NAME))
        self._codes = (ctx.pod, ctx.state, ctx.state.version, codes)
        return np.take(self._by_row[3], rows)

    def filter_row(self, ctx, row: int) -> bool:
        """``filter(ctx, [row])[0]`` in O(conditions): the one node row
        preemption's retry checks (``evaluator.fits_on_row``), read from
        the domain sums (``codes_by_row``'s rules on that row alone)."""
        state = ctx.state
        self.rows_evaluated += 1
        parts, first_of_group = self._filter_parts(state, ctx.pod, ctx.data.get(NAME))
        for code, k, ds, _ in parts:
            if code == 1:
                if ds is None:
                    return False
                d = int(node_domains(state, k)[row])
                # lacking the key fails; else a matching pod in the domain,
                # unless the pod is the first of its group
                if d < 0 or (ds.sums[d] <= 0 and not first_of_group):
                    return False
            elif ds.positive:
                d = int(node_domains(state, k)[row])
                if d >= 0 and ds.sums[d] > 0:
                    return False
        return True

    def unresolvable(self, ctx, rows):
        """[M] bool: rows failing the pod's required affinity (a status
        preemption cannot change: UnschedulableAndUnresolvable)."""
        return self.filter_codes(ctx.state, ctx.pod, rows, ctx.data.get(NAME)) == 1

    def _explained_codes(self, ctx) -> np.ndarray:
        """[n_rows] the filter codes of ``ctx.pod`` on the state as it is
        (the last filter's, while nothing changed)."""
        c = self._codes
        # the state too: one plugin serves several states (capacity probes,
        # a probe group's state), whose version numbers can coincide
        if c is None or c[0] is not ctx.pod or c[1] is not ctx.state \
                or c[2] != ctx.state.version:
            c = (ctx.pod, ctx.state, ctx.state.version, self.codes_by_row(ctx.state, ctx.pod))
            self._codes = c
        return c[3]

    @staticmethod
    def _status_of_code(code: int) -> Status:
        if code == 1:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_AFFINITY,), NAME)
        if code == 2:
            return Status(Code.UNSCHEDULABLE, (REASON_ANTI,), NAME)
        return Status(Code.UNSCHEDULABLE, (REASON_EXISTING,), NAME)

    def explain_status(self, ctx, row: int) -> Status:
        codes = self._explained_codes(ctx)
        return self._status_of_code(int(codes[row]) if 0 <= row < codes.shape[0] else 0)

    def explain_many(self, ctx, rows: np.ndarray):
        """(ids [K], statuses): ``explain_status`` of the node rows ``rows``
        [K] at once (a pod that fits nowhere in 10,000 nodes: one pass over
        arrays, not 10,000 calls)."""
        codes = self._explained_codes(ctx)
        rows = np.asarray(rows, np.int64)
        n = codes.shape[0]
        if not rows.shape[0]:
            return np.zeros(0, np.int64), []
        if n and 0 <= rows.min() and rows.max() < n:
            c = codes[rows]
        else:
            inside = (rows >= 0) & (rows < n)
            c = np.where(inside, codes[np.where(inside, rows, 0)], 0) if n else \
                np.zeros(rows.shape[0], np.int64)
        # codes are 0..3: the distinct ones by a count, not a sort
        uniq = np.flatnonzero(np.bincount(c, minlength=4))
        if uniq.shape[0] == 1:
            ids = np.zeros(rows.shape[0], np.int64)
        else:
            remap = np.zeros(4, np.int64)
            remap[uniq] = np.arange(uniq.shape[0])
            ids = remap[c]
        return ids, [self._status_of_code(int(u)) for u in uniq.tolist()]

    def explain_reasons(self, ctx, row):
        return list(self.explain_status(ctx, row).reasons)

    # Victim search on counts (``preemption.host_search``): the probe's codes
    # 1.. map to these rejections.
    probe_kind = PROBE_AFFINITY
    probe_reasons = ((REASON_AFFINITY,), (REASON_ANTI,), (REASON_EXISTING,))

    def victim_probe(self, state, pod):
        """An :class:`AffinityProbe` of ``pod``'s filter on ``state`` as it
        is now (the preemption victim search's baseline)."""
        return _victim_probe(state, pod)

    # ------------------------------------------------------------ score
    def topology_scores(self, state, pod):
        """[(key column, weight, DomainSums over labelled nodes)] and whether
        anything contributed (upstream's non-empty topologyScore): a node's
        raw score is the sum of weight x its domain's count."""
        terms = pod_terms(pod)
        index = pod_count_index(state)
        tag = state.structure_tag()
        contrib = []
        any_event = False
        nsl = _ns_labels(state)

        def dom_fn(k):
            return _labelled_domains(state, k)

        def add(src, term, weight):
            nonlocal any_event
            k = state.label_keys.get(term.topology_key)
            if k < 0:
                return
            if src is None:
                ds = index.domain_sums(("term", term),
                                       lambda r: term.matches(r.namespace, r.labels, nsl),
                                       (tag, k, "labelled"), lambda: dom_fn(k),
                                       _n_domains(state, k))
            else:
                ds = index.group_domain_sums(src, term, (tag, k, "labelled"),
                                             lambda: dom_fn(k), _n_domains(state, k))
            if ds.positive:
                any_event = True
                contrib.append((k, int(weight), ds))

        for t in terms["pref_aff"]:
            add(None, t, t.weight)
        for t in terms["pref_anti"]:
            add(None, t, -t.weight)
        hard = self.args.hard_pod_affinity_weight
        for kind, sign in (("req_aff", 1), ("pref_aff", 1), ("pref_anti", -1)):
            if kind == "req_aff" and hard <= 0:
                continue
            for t in list(index.group_counts(kind)):
                if t.matches(pod.namespace, pod.labels, nsl):
                    add(kind, t, sign * (hard if kind == "req_aff" else t.weight))
        return None, contrib, any_event

    def pre_score(self, ctx):
        terms = pod_terms(ctx.pod)
        has_own = bool(terms["pref_aff"] or terms["pref_anti"])
        if self.args.ignore_preferred_terms_of_existing_pods and not has_own:
            return SKIP
        if not has_own and pod_count_index(ctx.state).pods_with_affinity == 0:
            return SKIP                 # nothing can contribute
        _, contrib, any_event = self.topology_scores(ctx.state, ctx.pod)
        if not any_event:
            return SKIP
        ctx.data[NAME + "/score"] = contrib
        return Status.OK

    def scores_by_row(self, state, contrib) -> np.ndarray:
        """[n_rows] int64 raw scores (read-only; reused while unchanged)."""
        sig = (state.structure_tag(),) + tuple((k, w, ds.serial, ds.version)
                                              for k, w, ds in contrib)
        got = self._scores
        if got is not None and got[0] is state and got[1] == sig:
            return got[2]
        out = np.zeros(state.n_rows, np.int64)
        for k, w, ds in contrib:
            D.host.add_domain_scores(out, node_domains_p1(state, k), ds.sums, w)
        out.flags.writeable = False
        self._scores = (state, sig, out)
        return out

    def score(self, ctx, rows):
        contrib = ctx.data.get(NAME + "/score")
        if contrib is None:
            _, contrib, _ = self.topology_scores(ctx.state, ctx.pod)
        return np.take(self.scores_by_row(ctx.state, contrib), rows)

    def run_score(self, ctx) -> AffinityScore | None:
        """The score (``topology_scores``) as arrays for a compiled run of
        pods alike to ``ctx.pod``: every contribution, plus those the run's
        own pods add once placed (a preferred term matching the pod itself
        counts them twice, as incoming and as existing pod, as upstream
        does; a required affinity term matching it counts with
        hardPodAffinityWeight once such pods are bound)."""
        state, pod = ctx.state, ctx.pod
        terms = pod_terms(pod)
        index = pod_count_index(state)
        tag = state.structure_tag()
        nsl = _ns_labels(state)
        out = []

        def add(src, term, weight, increment):
            k = state.label_keys.get(term.topology_key)
            if k < 0:
                return
            dom = _labelled_domains(state, k)
            if src is None:
                ds = index.domain_sums(("term", term),
                                       lambda r: term.matches(r.namespace, r.labels, nsl),
                                       (tag, k, "labelled"), lambda: dom, _n_domains(state, k))
            else:
                ds = index.group_domain_sums(src, term, (tag, k, "labelled"), lambda: dom,
                                             _n_domains(state, k))
            if ds.positive or increment:
                out.append(AffinityScoreTerm(domp1=dom + 1, count_dom=dom, sums=ds.sums,
                                             weight=int(weight), increment=increment))

        def own_match(t):
            return t.matches(pod.namespace, pod.labels, nsl)
        for t in terms["pref_aff"]:
            add(None, t, t.weight, own_match(t))
        for t in terms["pref_anti"]:
            add(None, t, -t.weight, own_match(t))
        hard = self.args.hard_pod_affinity_weight
        for kind, sign in (("req_aff", 1), ("pref_aff", 1), ("pref_anti", -1)):
            if kind == "req_aff" and hard <= 0:
                continue
            groups = index.group_counts(kind)
            own = set(terms[kind])
            for t in list(groups):
                if own_match(t):
                    add(kind, t, sign * (hard if kind == "req_aff" else t.weight), t in own)
            # terms no bound pod carries yet, which the run's pods will
            for t in terms[kind]:
                if t not in groups and own_match(t):
                    add(kind, t, sign * (hard if kind == "req_aff" else t.weight), True)
        return AffinityScore(self.score_slot, out)

    def normalize_scores(self, ctx, rows, raw, scored):
        return D.minmax_normalize_host(raw, scored)


def new(args, handle):
    return InterPodAffinity(args)


def _ns_labels(state):
    """The state's namespace name -> labels (``namespaceSelector``)."""
    return getattr(state, "namespace_labels", None)


NS_TAG = StateKey("ipa_ns_tag", __name__,
                  "'tag' -> hashable stand-in for the namespace labels")


def _ns_tag(state):
    """A hashable stand-in for the state's namespace labels (memoized)."""
    table = _ns_labels(state) or {}
    cache = state.derived.memo(NS_TAG, (id(table), len(table)))
    got = cache.get("tag")
    if got is None:
        got = cache["tag"] = tuple(sorted((ns, tuple(sorted(labels.items())))
                                          for ns, labels in table.items()))
    return got


MATCHES = MemoKey("ipa_matches", __name__,
                  "term or selector key -> whether the pod matches it")


def _record_matches(rec, key, fn) -> bool:
    """``fn(rec)`` memoized on the record under ``key`` (a term or the
    all-terms key: a record's namespace and labels do not change)."""
    memo = rec.memo.setdefault(MATCHES, {})
    got = memo.get(key)
    if got is None:
        got = memo[key] = bool(fn(rec))
    return got


class AffinityProbe:
    """InterPodAffinity's filter on one node row while only that row's pods
    change (preemption's SelectVictimsOnNode), in O(conditions) per test.

    Built on a baseline state (``InterPodAffinity.victim_probe``): the
    conditions of ``codes_by_row`` in its order (code 1 per required
    affinity term, 2 per own anti-affinity term, 3 per bound pods'
    anti-affinity term matching the pod), each with its per-domain sums.
    With ``taken[j]`` pods counted by condition j gone from the row, only
    the row's own domain sum moves (base - taken); the first-of-group rule
    needs "some affinity pair is positive anywhere": a term's count of
    positive domains moves by the row's domain alone, so it is
    ``positive - (base > 0) + (base - taken > 0)``.  Bound pods'
    anti-affinity terms carried only by pods taken off leave no positive
    domain, as the filter on the state (which recomputes them) sees.

    ``arrays(rows)`` per batch (``kernels.victims.on_counts``), ``matches(rec)``
    per pod, ``code(row_arrays, taken)`` in Python."""

    def __init__(self, parts, self_all: bool):
        # (code, domain ids [rows] or None, DomainSums or None, per-node
        # counts fn or None, match key, record -> int)
        self.parts = parts
        self.self_all = bool(self_all)
        self.codes = np.array([p[0] for p in parts], np.int64)
        self.pos = np.array([p[2].positive if p[2] is not None else -1 for p in parts],
                            np.int64)

    def arrays(self, rows):
        """[M, P] valid (the row has the condition's key) and base (the
        baseline sum of the row's domain)."""
        m, n = rows.shape[0], len(self.parts)
        valid = np.zeros((m, n), np.bool_)
        base = np.zeros((m, n), np.int64)
        for j, (_, dom, ds, _, _, _) in enumerate(self.parts):
            if dom is None:
                continue
            d = np.where(rows < dom.shape[0], dom[np.minimum(rows, dom.shape[0] - 1)], -1)
            ok = d >= 0
            valid[:, j] = ok
            base[:, j] = np.where(ok, ds.sums[np.where(ok, d, 0)], 0)
        return valid, base

    def matches(self, rec) -> list:
        """Per condition, how many times the pod ``rec`` is counted by it."""
        return [fn(rec) for (_, _, _, _, _, fn) in self.parts]

    def code(self, valid, base, taken) -> int:
        """``filter_codes`` of the row (valid/base: one row of ``arrays``)
        with ``taken[j]`` pods of condition j off the row."""
        any_pair = False
        for j, c in enumerate(self.codes.tolist()):
            if c == 1 and self.parts[j][1] is not None:
                p = int(self.pos[j])
                if valid[j]:
                    p += (1 if base[j] - taken[j] > 0 else 0) - (1 if base[j] > 0 else 0)
                any_pair = any_pair or p > 0
        first = not any_pair and self.self_all
        for j, c in enumerate(self.codes.tolist()):
            if c == 1:
                if not valid[j]:
                    return 1
                if base[j] - taken[j] <= 0 and not first:
                    return 1
            elif valid[j] and base[j] - taken[j] > 0:
                return c
        return 0


def _victim_probe(state, pod) -> AffinityProbe:
    """An :class:`AffinityProbe` of ``pod`` on ``state`` as it is now."""
    terms = pod_terms(pod)
    index = pod_count_index(state)
    tag = state.structure_tag()
    parts = []
    req_aff = terms["req_aff"]
    nsl = _ns_labels(state)
    # the record memo outlives this state: its namespace labels are in the key
    ns_tag = _ns_tag(state)
    if req_aff:
        a_key = ("all-terms", req_aff)
        a_pred = lambda r: all(t.matches(r.namespace, r.labels, nsl) for t in req_aff)  # noqa: E731
        a_fn = lambda r: 1 if _record_matches(r, (a_key, ns_tag), a_pred) else 0  # noqa: E731
        for t in req_aff:
            k = state.label_keys.get(t.topology_key)
            if k < 0:
                parts.append((1, None, None, None, a_key, a_fn))
                continue
            ds = _all_sums(state, index, a_key, a_pred, k)
            parts.append((1, node_domains(state, k), ds,
                          lambda: index.counts(a_key, a_pred), a_key, a_fn))
    for t in terms["req_anti"]:
        k = state.label_keys.get(t.topology_key)
        if k < 0:
            continue
        key = ("term", t)
        pred = lambda r, t=t: t.matches(r.namespace, r.labels, nsl)  # noqa: E731
        ds = _all_sums(state, index, key, pred, k)
        parts.append((2, node_domains(state, k), ds,
                      lambda key=key, pred=pred: index.counts(key, pred), key,
                      lambda r, key=key, pred=pred: 1 if _record_matches(
                          r, (key, ns_tag), pred) else 0))
    for term in list(index.group_counts("req_anti")):
        if not term.matches(pod.namespace, pod.labels, nsl):
            continue
        k = state.label_keys.get(term.topology_key)
        if k < 0:
            continue
        ds = index.group_domain_sums("req_anti", term, (tag, k, "all"),
                                     lambda k=k: node_domains(state, k), _n_domains(state, k))
        if not ds.positive:
            continue
        parts.append((3, node_domains(state, k), ds,
                      lambda term=term: index.group_counts("req_anti").get(term),
                      ("carries", term),
                      lambda r, term=term: sum(1 for x in pod_terms(r)["req_anti"]
                                               if x == term)))
    return AffinityProbe(parts, bool(req_aff) and all(
        t.matches(pod.namespace, pod.labels, nsl) for t in req_aff))

