"""PodTopologySpread: mirrors plugins/podtopologyspread (v1.32 semantics,
feature gates at their defaults: NodeInclusionPolicy and MatchLabelKeys on).

Constraints come from the pod's ``topologySpreadConstraints``; a pod without
any gets the cluster defaults (``defaultConstraints`` with defaultingType
List, or the System ones: hostname maxSkew 3 and zone maxSkew 5,
ScheduleAnyway) of the action, all with one selector built from the loaded
Services, ReplicationControllers, ReplicaSets and StatefulSets selecting the
pod (``workloads.WorkloadIndex.default_selector``, upstream
``buildDefaultConstraints`` + ``helper.DefaultSelector``).  When that
selector is empty the pod has no constraints and Skips PreFilter / PreScore.
A default constraint's minDomains and node inclusion policies apply; its
matchLabelKeys do not (upstream replaces the merged selector).  With System
defaulting, Score does not ignore nodes lacking one of the keys: they score
by the constraints whose key they have (upstream ``requireAllTopologies``),
and for a non-hostname key the nodes lacking it form the domain of the
empty value.  Counting by owner reference (newer upstream) is not used:
pods are counted by selector, as in v1.32.

Filter (DoNotSchedule): a node lacking a constraint's key is
UnschedulableAndUnresolvable; otherwise the matching pods in its domain
(counted over eligible nodes: every constraint key present, node affinity
honoured unless ``nodeAffinityPolicy: Ignore``, taints honoured only with
``nodeTaintsPolicy: Honor``) plus one when the pod matches its own selector,
minus the global minimum (0 when fewer domains than minDomains), must not
exceed maxSkew.

Score (ScheduleAnyway): sum over constraints of count * ln(size + 2) +
(maxSkew - 1), rounded; size = distinct domains among the scored nodes (for
kubernetes.io/hostname: the scored nodes, counted per node); nodes lacking a
key are ignored (score 0); then 100 * (max + min - s) / max.

Counts per node come from ``state.domain_counts`` (incremental); the kernels in
``tensorsched.kernels.domains`` turn them into domain counts each cycle.

Nominated pods (``runtime.nominated_pods``), as upstream's
RunFilterPluginsWithNominatedPods with this plugin's AddPod: on node N only
the pods nominated to N that the cycle counts are added, to N's domain when
N is counted for the constraint and the pod matches its selector (the
global minimum then sees N's domain with them); the filter's answer is the
pass with them.  The pass without them changes nothing: more pods in N's
domain never lower its skew.  Score reads the state without them, as
upstream scores.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.config.plugin_args import (
    SYSTEM_DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULTING,
    PodTopologySpreadArgs,
)
from tensorsched.framework.parsing.selectors import compile_selector, selector_matches
from tensorsched.framework.parsing.workloads import controller_of
from tensorsched.framework.runtime.cluster_events import (
    NODE_ADD,
    NODE_DELETE,
    NODE_UPDATE,
    POD_ADD,
    POD_DELETE,
    POD_UPDATE,
)
from tensorsched.framework.records.records import MemoKey
from tensorsched.framework.runtime.nominated_pods import nominated_pods
from tensorsched.framework.runtime.plugin import (
    NORMALIZE_NONE,
    PROBE_SPREAD,
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
from tensorsched.framework.state.domain_minimum import INF, Least, PresentMinimum, least_of
from tensorsched.framework.state.query import QueryOptions, compile_query, pod_signature
from tensorsched.kernels import domains as D
from tensorsched.kernels import layout as L
from tensorsched.kernels.domain_rules import DomainRule, SpreadScore, SpreadTerm
from tensorsched.kernels.domain_rules_cycle import CycleRule
from tensorsched.kernels.fused import filters as KF


NAME = names.POD_TOPOLOGY_SPREAD
HOSTNAME = "kubernetes.io/hostname"
REASON_MISSING = "node(s) didn't match pod topology spread constraints (missing required label)"
REASON_SKEW = "node(s) didn't match pod topology spread constraints"


@dataclass(frozen=True)
class Constraint:
    max_skew: int
    key: str
    selector: tuple
    min_domains: int
    honor_affinity: bool
    honor_taints: bool


SPREAD_CONSTRAINTS = MemoKey("spread_constraints", __name__,
                             "the pod's constraints with matchLabelKeys merged, by args")


def pod_constraints(pod, action: str) -> tuple:
    """The pod's constraints for ``action`` (DoNotSchedule / ScheduleAnyway),
    with matchLabelKeys merged into the selector (memoized on the record)."""
    cache = pod.memo.setdefault(SPREAD_CONSTRAINTS, {})
    got = cache.get(action)
    if got is None:
        out = []
        for c in pod.topology_spread or ():
            if c.get("whenUnsatisfiable") != action:
                continue
            extra = tuple((k, "In", (pod.labels[k],)) for k in c.get("matchLabelKeys") or ()
                          if k in pod.labels)
            # A null selector is labels.Nothing(); merged with matchLabelKeys
            # it becomes just those requirements, as upstream merges them.
            sel = (compile_selector(c.get("labelSelector") or {}, extra) if extra
                   else compile_selector(c.get("labelSelector")))
            out.append(Constraint(int(c.get("maxSkew", 1)), c.get("topologyKey", ""), sel,
                                  int(c.get("minDomains") or 1),
                                  c.get("nodeAffinityPolicy", "Honor") != "Ignore",
                                  c.get("nodeTaintsPolicy", "Ignore") == "Honor"))
        got = tuple(out)
        cache[action] = got
    return got


SPREAD_POLICY_MASKS = StateKey("spread_policy_masks", __name__,
                               "(pod signature, node set) -> policy masks (``node_policy_masks``)")


def node_policy_masks(state, pod, rows):
    """([N] node affinity matches, [N] all NoSchedule/NoExecute taints
    tolerated) over ``rows``, memoized per pod shape and node set."""
    key = (pod_signature(pod), state.epoch, state.layout_version, state.n_rows)
    cache = state.derived.memo(SPREAD_POLICY_MASKS)
    got = cache.get(key)
    if got is None:
        if len(cache) > 64:
            cache.clear()
        q = compile_query(state, pod, QueryOptions(filter_flags=L.F_NODE_AFFINITY | L.F_TAINT))
        bits = KF.node_reasons(state.columns(), rows, q, xp=np)
        got = ((bits & (L.R_NODE_AFFINITY | L.R_INVALID_ROW)) == 0,
               (bits & (L.R_TAINT | L.R_INVALID_ROW)) == 0)
        cache[key] = got
    return got


def _count_key(pod, c: Constraint):
    ns = pod.namespace
    sel = c.selector
    return ("spread", ns, sel), (
        lambda r: not r.deleting and r.namespace == ns and selector_matches(sel, r.labels))


SPREAD_ELIGIBLE_DOMS = StateKey("spread_eligible_doms", __name__,
                                "constraints and policy -> eligible domains per key")


class PodTopologySpread(Plugin):
    name = NAME
    # EventsToRegister: any assigned pod; a node added, relabelled or removed
    events = frozenset({POD_ADD, POD_UPDATE, POD_DELETE, NODE_ADD, NODE_UPDATE, NODE_DELETE})

    def sign(self, pod) -> tuple:
        """What its answers read of a pod: namespace, labels, constraints
        and (for the default constraints) the owning controller."""
        return (pod.namespace, tuple(sorted(pod.labels.items())),
                sign_value(pod.topology_spread),
                controller_of(pod))
    normalize = NORMALIZE_NONE
    score_slot = -1
    reason_bits = 0

    def __init__(self, args: PodTopologySpreadArgs | None = None):
        self.args = args or PodTopologySpreadArgs()
        self._codes = None          # (pod, state, its version, codes by row, nominated) of
        #                             the last filter
        self._probe = None          # (state, version, pod, nominated, SpreadProbe) last built
        self._by_row = None         # (state, signature, codes by row, fits by row)
        # (state, pod, index, workloads, (structure, index generation), parts)
        # of the last ``_filter_sums``, and how many times it was computed
        self._sums_memo = None
        self.filter_sums_built = 0
        self._system = self.args.defaulting_type == SYSTEM_DEFAULTING
        defaults = SYSTEM_DEFAULT_CONSTRAINTS if self._system else self.args.default_constraints
        # action -> (maxSkew, key, minDomains, honor affinity, honor taints) per default
        # constraint (upstream filterTopologySpreadConstraints; the selector comes later).
        self._defaults = {a: tuple(
            (int(d.max_skew), d.topology_key, int(d.min_domains or 1),
             d.node_affinity_policy != "Ignore", d.node_taints_policy == "Honor")
            for d in defaults if d.when_unsatisfiable == a)
            for a in ("DoNotSchedule", "ScheduleAnyway")}
        self._default_memo: dict = {}   # (action, selector) -> constraints
        # DomainSums serial -> PresentMinimum: the least sums of each filter
        # count, kept by the domains its updates moved (``least``)
        self._minima: OrderedDict = OrderedDict()
        # node rows the filter's codes were computed for (whole passes over
        # the rows and one-row checks: tests and benches)
        self.rows_evaluated = 0
        # the filter as per-domain rules of one cycle, for a backend that
        # tests them where it picks (``SpreadCycleRules``)
        self.cycle_rules = SpreadCycleRules(self)

    # ----------------------------------------------------------- helpers
    def constraints(self, state, pod, action: str) -> tuple[tuple, bool]:
        """(constraints, require_all) of ``pod`` for ``action``: its own, or
        the default ones (upstream ``buildDefaultConstraints``).
        ``require_all`` is False only for System defaults: Score then keeps
        nodes lacking some topology key (upstream ``requireAllTopologies``)."""
        if pod.topology_spread:
            return pod_constraints(pod, action), True
        shapes = self._defaults[action]
        if not shapes:
            return (), True
        wl = state.workloads
        sel = wl.default_selector(pod) if wl else ()
        if not sel:
            return (), True
        got = self._default_memo.get((action, sel))
        if got is None:
            if len(self._default_memo) > 256:
                self._default_memo.clear()
            got = tuple(Constraint(ms, key, sel, md, ha, ht) for ms, key, md, ha, ht in shapes)
            self._default_memo[(action, sel)] = got
        return got, not self._system

    MAX_MINIMA = 64

    def least(self, ds) -> Least:
        """The least sums over the present domains of ``ds`` (a DomainSums)
        now, kept between calls by the domains its updates moved
        (``state.domain_minimum``): O(domains moved), not O(domains)."""
        got = self._minima.get(ds.serial)
        if got is None:
            got = self._minima[ds.serial] = PresentMinimum(ds)
            while len(self._minima) > self.MAX_MINIMA:
                self._minima.popitem(last=False)
        else:
            self._minima.move_to_end(ds.serial)
        return got.read()

    def _global_min(self, ds, c: Constraint) -> int:
        """``kernels.domains.min_match`` of ``ds`` for constraint ``c``."""
        lst = self.least(ds)
        if lst.n_present < c.min_domains or lst.n_present == 0:
            return 0
        return lst.m1

    def _key_col(self, state, key: str) -> int:
        return state.label_keys.get(key)

    def _eligible(self, state, pod, cons, rows, lv, require_all: bool = True):
        """Per constraint, [N] bool over ``rows``: counted nodes (those with
        every constraint key, unless not ``require_all``)."""
        has_all = np.ones(rows.shape[0], bool)
        for c in cons if require_all else ():
            k = self._key_col(state, c.key)
            has_all &= (lv[:, k] >= 0) if k >= 0 else False
        aff = taint = None
        out = []
        for c in cons:
            e = has_all.copy()
            if c.honor_affinity or c.honor_taints:
                if aff is None:
                    aff, taint = node_policy_masks(state, pod, rows)
                if c.honor_affinity:
                    e &= aff
                if c.honor_taints:
                    e &= taint
            out.append(e)
        return has_all, out

    # ------------------------------------------------------------ filter
    def pre_filter(self, ctx):
        if not self.constraints(ctx.state, ctx.pod, "DoNotSchedule")[0]:
            return SKIP, None
        return Status.OK, None

    def filter_codes(self, state, pod, rows) -> np.ndarray:
        """[M] int: 0 fits, 1 missing key (unresolvable), 2 skew too large."""
        return np.take(self.codes_by_row(state, pod), rows)

    def _eligible_doms(self, state, pod, cons, require_all: bool = True):
        """Per constraint, [n_rows] domain ids of the counted nodes (-1 for
        the others), memoized per structure and policy-relevant pod shape.
        Not ``require_all`` (System defaults): a node lacking the key counts
        in the domain of the empty value (upstream reads ``labels[key]``)."""
        honor = any(c.honor_affinity or c.honor_taints for c in cons)
        key = (state.structure_tag(), tuple((c.key, c.honor_affinity, c.honor_taints)
                                           for c in cons),
               pod_signature(pod) if honor else None, require_all)
        cache = state.derived.memo(SPREAD_ELIGIBLE_DOMS)
        got = cache.get(key)
        if got is None:
            if len(cache) > 64:
                cache.clear()
            all_rows = state.valid_rows()
            _, elig = self._eligible(state, pod, cons, all_rows, state.label_vals[all_rows],
                                     require_all)
            got = []
            for c, e in zip(cons, elig):
                k = self._key_col(state, c.key)
                if k < 0:
                    got.append(None)
                    continue
                dom = np.full(state.n_rows, -1, np.int64)
                dom[all_rows[e]] = state.label_vals[all_rows[e], k]
                if not require_all:
                    empty = state.label_values[k].get("")
                    if empty is not None and empty >= 0:
                        dom[all_rows[e & (state.label_vals[all_rows, k] < 0)]] = empty
                got.append(dom)
            got = (key, tuple(got))
            cache[key] = got
        return got

    def _filter_sums(self, state, pod) -> list:
        """Per DoNotSchedule constraint: (constraint, key column, count key,
        count predicate, DomainSums over the counted nodes); the last three
        None when no node has the key.

        Kept for the last (state, pod) while nothing it is made of moved:
        the node set and labels (``structure_tag``), the loaded workloads
        (default constraints) and the DomainSums the index keeps
        (``PodCountIndex.generation``).  Binds and evictions do not move
        it: the index updates those DomainSums in place.  A preemptor's
        failed cycle, victim probe and retry so compute it once
        (``filter_sums_built`` counts the computations)."""
        index = pod_count_index(state)
        tag = (state.structure_tag(), index.generation)
        got = self._sums_memo
        if got is not None and got[0] is state and got[1] is pod and got[2] is index \
                and got[3] is state.workloads and got[4] == tag:
            return got[5]
        self.filter_sums_built += 1
        cons = self.constraints(state, pod, "DoNotSchedule")[0]
        elig_key, doms = self._eligible_doms(state, pod, cons)
        parts = []
        for i, c in enumerate(cons):
            k = self._key_col(state, c.key)
            if k < 0:
                parts.append((c, k, None, None, None))
                continue
            key, pred = _count_key(pod, c)
            ds = index.domain_sums(key, pred, (elig_key, i), lambda i=i: doms[i],
                                   max(len(state.label_values[k]), 1))
            parts.append((c, k, key, pred, ds))
        # the generation after the sums above joined the index (if any did)
        self._sums_memo = (state, pod, index, state.workloads,
                           (state.structure_tag(), index.generation), parts)
        return parts

    def codes_by_row(self, state, pod) -> np.ndarray:
        """``filter_codes`` of every node row ([n_rows] int64, read-only;
        reused while no count it depends on changed)."""
        parts = [(c, k, ds) for c, k, _, _, ds in self._filter_sums(state, pod)]
        sig = (state.structure_tag(), pod.namespace, tuple(
            (c, k) if ds is None else
            (c, k, ds.serial, ds.version, selector_matches(c.selector, pod.labels))
            for c, k, ds in parts))
        got = self._by_row
        if got is not None and got[0] is state and got[1] == sig:
            return got[2]
        codes = np.zeros(state.n_rows, np.int64)
        for c, k, ds in parts:
            if ds is None:
                codes[codes == 0] = 1
                continue
            gmin = self._global_min(ds, c)
            self_match = 1 if selector_matches(c.selector, pod.labels) else 0
            # Lacking the key: 1; sums + self - min > maxSkew: 2.
            D.host.domain_rule(codes, node_domains_p1(state, k), ds.sums,
                               c.max_skew - self_match + gmin, 1, 2, 0)
        codes.flags.writeable = False
        self.rows_evaluated += codes.shape[0]
        self._by_row = (state, sig, codes, codes == 0)
        return codes

    def run_keeps_skip(self, ctx, point: str) -> bool:
        """``RunSkipPlugin``: PreFilter and PreScore skip by the pod's own
        constraints and the loaded Services and controllers, which placing
        pods does not change."""
        return True

    def run_rules(self, ctx) -> list | None:
        """The DoNotSchedule filter as per-domain rules for a compiled run of
        pods alike to ``ctx.pod``: per constraint, a node lacking the key
        fails and a domain fails when its count exceeds maxSkew - self match
        + the global minimum (kept by the run as it counts placed pods that
        match the selector).  None when a constraint's key is on no node."""
        state, pod = ctx.state, ctx.pod
        out = []
        for c, k, _, pred, ds in self._filter_sums(state, pod):
            if ds is None:
                return None
            self_match = 1 if selector_matches(c.selector, pod.labels) else 0
            n_present = int(np.count_nonzero(ds.present))
            out.append(DomainRule(
                bit=self.reason_bits, domp1=node_domains_p1(state, k), count_dom=ds.dom,
                sums=ds.sums, present=ds.present, thresh=c.max_skew - self_match,
                track_min=n_present >= c.min_domains and n_present > 0, fail_absent=True,
                fail_above=True, fail_not_above=False, increment=bool(pred(pod))))
        return out

    # Victim search on counts (``preemption.host_search``): the probe's codes
    # 1.. map to these rejections.
    probe_kind = PROBE_SPREAD
    probe_reasons = ((REASON_MISSING,), (REASON_SKEW,))

    def victim_probe(self, state, pod, nominated=None):
        """A :class:`SpreadProbe` of this pod's DoNotSchedule constraints on
        ``state`` as it is now (the preemption victim search's baseline),
        with ``nominated`` (the cycle's ``NominatedPods``, or None) counted
        on their own rows (module doc)."""
        got = self._probe
        if got is not None and got[0] is state and got[1] == state.version \
                and got[2] is pod and got[3] is nominated:
            return got[4]
        index = pod_count_index(state)
        sums = self._filter_sums(state, pod)
        extras = _nominee_counts(state, sums, nominated) if nominated else {}
        parts = []
        for i, (c, k, key, pred, ds) in enumerate(sums):
            if ds is None:
                parts.append(None)
                continue
            parts.append((c, node_domains(state, k), ds, pred,
                          1 if selector_matches(c.selector, pod.labels) else 0,
                          lambda key=key, pred=pred: index.counts(key, pred), extras.get(i)))
        probe = SpreadProbe(parts, self.least)
        self._probe = (state, state.version, pod, nominated, probe)
        return probe

    def counts_nominated_per_node(self, ctx) -> bool:
        """The filter counts the cycle's nominated pods on their own nodes
        (module doc), and Score reads the state without them."""
        return True

    def _nominated_codes(self, ctx, codes: np.ndarray) -> np.ndarray:
        """``codes`` ([n_rows], the state's) with the cycle's nominated pods
        counted, upstream's way, on the rows they are nominated to."""
        nom = nominated_pods(ctx)
        if not nom:
            return codes
        probe = self.victim_probe(ctx.state, ctx.pod, nom)
        out = codes.copy()
        rows = np.array([r for r in nom.by_row if 0 <= r < out.shape[0]], np.int64)
        out[rows] = probe.codes(rows)
        out.flags.writeable = False
        return out

    def filter(self, ctx, rows):
        codes = self.codes_by_row(ctx.state, ctx.pod)
        nom = nominated_pods(ctx)
        if not nom:
            self._codes = (ctx.pod, ctx.state, ctx.state.version, codes, None)
            return np.take(self._by_row[3], rows)
        codes = self._nominated_codes(ctx, codes)
        self._codes = (ctx.pod, ctx.state, ctx.state.version, codes, nom)
        return np.take(codes == 0, rows)

    def filter_row(self, ctx, row: int) -> bool:
        """``filter(ctx, [row])[0]`` in O(constraints): the one node row
        preemption's retry checks (``evaluator.fits_on_row``), without the
        codes of every row."""
        return self.row_code(ctx, row) == 0

    def row_code(self, ctx, row: int) -> int:
        """The code (``filter_codes``) of node row ``row`` with the cycle's
        nominated pods, as ``filter`` gives it, read from the domain sums
        and their kept minimum: O(constraints)."""
        state, pod = ctx.state, ctx.pod
        self.rows_evaluated += 1
        nom = nominated_pods(ctx)
        if nom and row in nom.by_row:
            # its nominated pods join its own domain (``_nominated_codes``)
            probe = self.victim_probe(state, pod, nom)
            return int(probe.codes(np.array([row], np.int64))[0])
        for c, k, _, _, ds in self._filter_sums(state, pod):
            if ds is None:
                return 1
            d = int(node_domains(state, k)[row])
            if d < 0:
                return 1
            self_match = 1 if selector_matches(c.selector, pod.labels) else 0
            if int(ds.sums[d]) > c.max_skew - self_match + self._global_min(ds, c):
                return 2
        return 0

    def unresolvable(self, ctx, rows):
        """[M] bool: rows failing for a missing topology key (a status
        preemption cannot change: UnschedulableAndUnresolvable)."""
        return np.take(self._explained_codes(ctx), rows) == 1

    def _explained_codes(self, ctx) -> np.ndarray:
        """[n_rows] the filter codes of ``ctx.pod`` on the state as it is,
        with the cycle's nominated pods (the last filter's, while nothing
        changed)."""
        c = self._codes
        nom = nominated_pods(ctx)
        # the state too: one plugin serves several states (capacity probes),
        # whose version numbers can coincide
        if c is None or c[0] is not ctx.pod or c[1] is not ctx.state \
                or c[2] != ctx.state.version or (nom is not None and c[4] is not nom):
            codes = self._nominated_codes(ctx, self.codes_by_row(ctx.state, ctx.pod))
            c = (ctx.pod, ctx.state, ctx.state.version, codes, nom)
            self._codes = c
        return c[3]

    @staticmethod
    def _status_of_code(code: int) -> Status:
        if code == 1:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_MISSING,), NAME)
        return Status(Code.UNSCHEDULABLE, (REASON_SKEW,), NAME)

    def explain_status(self, ctx, row: int) -> Status:
        codes = self._explained_codes(ctx)
        return self._status_of_code(int(codes[row]) if 0 <= row < codes.shape[0] else 0)

    def explain_many(self, ctx, rows: np.ndarray):
        """(ids [K], statuses): ``explain_status`` of the node rows ``rows``
        [K] at once (one pass over arrays, not a call per node)."""
        codes = self._explained_codes(ctx)
        rows = np.asarray(rows, np.int64)
        inside = (rows >= 0) & (rows < codes.shape[0])
        c = np.where(inside, codes[np.where(inside, rows, 0)], 0) if codes.shape[0] else \
            np.zeros(rows.shape[0], np.int64)
        uniq, inverse = np.unique(c, return_inverse=True)
        return inverse.reshape(-1).astype(np.int64), [self._status_of_code(int(u))
                                                      for u in uniq.tolist()]

    def explain_reasons(self, ctx, row):
        return list(self.explain_status(ctx, row).reasons)

    # ------------------------------------------------------------- score
    def pre_score(self, ctx):
        if ctx.state.num_nodes == 0 or not self.constraints(ctx.state, ctx.pod,
                                                            "ScheduleAnyway")[0]:
            return SKIP
        return Status.OK

    def score(self, ctx, rows):
        return np.zeros(rows.shape[0], np.int64)      # see normalize_scores

    def run_score(self, ctx) -> SpreadScore | None:
        """The ScheduleAnyway score (``normalize_scores``) as arrays for a
        compiled run of pods alike to ``ctx.pod``: per constraint with a key
        on some node, each node's count (per node for the hostname key, per
        eligible domain otherwise), where a placed pod of the run counts,
        and the value each node adds to the distinct domains; the run
        recomputes weights, rounding and normalization over the scanned
        nodes for every pod.  None when no constraint's key is on a node."""
        state, pod = ctx.state, ctx.pod
        cons, require_all = self.constraints(state, pod, "ScheduleAnyway")
        n = state.n_rows
        ks = [self._key_col(state, c.key) for c in cons]
        has_all = np.ones(n, bool)
        for k in ks if require_all else ():
            has_all &= (node_domains(state, k) >= 0) if k >= 0 else False
        index = pod_count_index(state)
        elig_key = doms = None
        rows = np.arange(n, dtype=np.int64)
        terms = []
        for i, (c, k) in enumerate(zip(cons, ks)):
            if k < 0:
                continue
            key, pred = _count_key(pod, c)
            dom = node_domains(state, k)
            increment = bool(pred(pod))
            if c.key == HOSTNAME:
                terms.append(SpreadTerm(
                    domp1=np.where(dom >= 0, rows + 1, 0), count_dom=rows,
                    sums=index.counts(key, pred)[:n], size_dom=np.zeros(n, np.int64),
                    size_domains=1, hostname=True, max_skew=c.max_skew, increment=increment))
                continue
            if elig_key is None:
                elig_key, doms = self._eligible_doms(state, pod, cons, require_all)
            nd = max(len(state.label_values[k]), 1)
            ds = index.domain_sums(key, pred, (elig_key, i), lambda i=i, d=doms: d[i], nd)
            size_dom = dom
            if not require_all:
                # Nodes lacking the key are the empty value's domain.
                empty = state.label_values[k].get("")
                if empty is not None and empty >= 0:
                    size_dom = np.where(dom < 0, empty, dom)
            # A node still lacking it adds the "no value" domain of its own.
            terms.append(SpreadTerm(
                domp1=node_domains_p1(state, k), count_dom=ds.dom, sums=ds.sums,
                size_dom=np.where(size_dom < 0, nd, size_dom), size_domains=nd + 1,
                hostname=False, max_skew=c.max_skew, increment=increment))
        if not terms:
            return None
        return SpreadScore(self.score_slot, require_all, has_all, terms)

    def normalize_scores(self, ctx, rows, raw, scored):
        """Final scores of the scored rows: the raw score needs the set of
        scored nodes (topology sizes), so it is computed here."""
        state, pod = ctx.state, ctx.pod
        cons, require_all = self.constraints(state, pod, "ScheduleAnyway")
        ks = [self._key_col(state, c.key) for c in cons]
        doms_at = {k: np.take(node_domains(state, k), rows) for k in set(ks) if k >= 0}
        has_all = np.ones(rows.shape[0], bool)
        for k in ks if require_all else ():
            has_all &= (doms_at[k] >= 0) if k >= 0 else False
        counted = scored & has_all
        n_counted = int(counted.sum())
        index = pod_count_index(state)
        acc = np.zeros(rows.shape[0], np.float64)
        elig_key = doms = None
        for i, (c, k) in enumerate(zip(cons, ks)):
            if k < 0 or n_counted == 0:
                continue
            key, pred = _count_key(pod, c)
            dom = doms_at[k]
            if c.key == HOSTNAME:
                cnt = index.counts(key, pred)[rows]
                size = n_counted
            else:
                vals = dom[counted]
                if not require_all:
                    # Nodes lacking the key are the empty value's domain.
                    empty = state.label_values[k].get("")
                    if empty is not None and empty >= 0:
                        vals = np.where(vals < 0, empty, vals)
                size = int(np.unique(vals).shape[0])
                if elig_key is None:
                    elig_key, doms = self._eligible_doms(state, pod, cons, require_all)
                ds = index.domain_sums(key, pred, (elig_key, i), lambda i=i, d=doms: d[i],
                                       max(len(state.label_values[k]), 1))
                cnt = D.at_domain(ds.sums, dom, xp=np)
            term = cnt.astype(np.float64) * D.topology_weight(size) + float(c.max_skew - 1)
            if not require_all:
                term = np.where(dom >= 0, term, 0.0)    # a node scores only keys it has
            acc = acc + term
        raw_scores = np.where(counted, D.go_round(acc, xp=np), 0)
        return D.spread_normalize(raw_scores, counted, xp=np)


class SpreadCycleRules:
    """``PodTopologySpread.cycle_rules(ctx)``: the DoNotSchedule filter of one
    cycle as per-domain rules that the cuda backend's pick tests on the
    device (``kernels.domain_rules_cycle.CycleRule``): per constraint, the
    rows' domains under its key (a row lacking it fails), the live domain
    sums, and a domain fails when its sum exceeds maxSkew - self match +
    the global minimum (kept by the domains that moved, ``least``): the
    plugin's ``filter`` answer, in O(constraints) here.  Every constraint
    field (minDomains, the node inclusion policies, a hostname or zone
    key) is in the sums and the minimum.  None where this form does not
    cover the cycle, which then runs ``filter`` on the host: the cycle
    counts nominated pods (they join their rows' domains,
    ``_nominated_codes``), or a constraint's key is on no node."""

    def __init__(self, plugin: PodTopologySpread):
        self.plugin = plugin

    def __call__(self, ctx) -> list | None:
        state, pod, plugin = ctx.state, ctx.pod, self.plugin
        if nominated_pods(ctx):
            return None
        out = []
        for c, k, _, _, ds in plugin._filter_sums(state, pod):
            if ds is None:
                return None
            self_match = 1 if selector_matches(c.selector, pod.labels) else 0
            out.append(CycleRule(node_domains_p1(state, k), ds,
                                 c.max_skew - self_match + plugin._global_min(ds, c)))
        return out


def new(args, handle):
    return PodTopologySpread(args)


NOMINEE_MATCHES = MemoKey("spread_nominee_matches", __name__,
                          "count keys of constraints -> 0/1 per constraint the pod matches")


def _nominee_counts(state, sums, nominated) -> dict:
    """Constraint index -> [n_rows] int64: the nominated pods (``NominatedPods``)
    matching that constraint's count predicate per row (``_filter_sums``'
    constraints with a count; memoized per record)."""
    live = [(i, key, pred) for i, (_, _, key, pred, ds) in enumerate(sums) if ds is not None]
    if not live:
        return {}
    keys = tuple(key for _, key, _ in live)
    out = np.zeros((len(live), state.n_rows), np.int64)
    for row, recs in nominated.by_row.items():
        if not 0 <= row < state.n_rows:
            continue
        for rec in recs:
            memo = rec.memo.setdefault(NOMINEE_MATCHES, {})
            got = memo.get(keys)
            if got is None:
                got = memo[keys] = tuple(1 if pred(rec) else 0 for _, _, pred in live)
            for j, x in enumerate(got):
                out[j, row] += x
    return {i: out[j] for j, (i, _, _) in enumerate(live)}


class SpreadProbe:
    """The DoNotSchedule filter on one node row while only that row's pods
    change (preemption's SelectVictimsOnNode), in O(constraints) per test.

    Built on a baseline state (``PodTopologySpread.victim_probe``); the
    per-domain sums then differ from the baseline in the row's own domain
    only, so the global minimum (upstream's critical paths after RemovePod)
    is min(least sum over the other present domains, the row's domain sum
    when present): the baseline's two smallest present sums give the first
    term in O(1).  Zero when fewer than minDomains domains are present, as
    ``kernels.domains.min_match``.  The two smallest come from the plugin's
    ``least`` (kept between preemptors by the domains that moved), not from
    a pass over every domain.

    ``at(row)`` once per row, then ``code(parts, deltas)`` per test.

    A part's ``extra`` ([n_rows] int64, or None) holds the cycle's nominated
    pods matching the constraint per row: they join a counted row's own
    domain sum when that row is tested (upstream's AddPod on the node's
    cloned PreFilter state), never another row's; the least sum over the
    other domains is the baseline's.

    ``tests/test_preemption_host_filters.py`` checks it against the filter
    on the real state."""

    INF = INF

    def __init__(self, parts, least=None):
        """``parts``: per constraint, None (no node has its key) or (constraint,
        [n_rows] domain ids, DomainSums, count predicate, 1 if the pod
        matches its selector, () -> counts, nominated extras or None);
        ``least(ds) -> domain_minimum.Least`` the least sums of a
        DomainSums (default: computed whole; the plugin's are kept by the
        domains that moved)."""
        self.parts = []
        self.counts = []        # per constraint with a key: () -> [rows] matching pods
        self.preds = []         # per constraint with a key: record -> counts
        for p in parts:
            if p is None:
                self.parts.append(None)
                continue
            c, dom, ds, pred, self_match, counts, extra = p
            self.counts.append(counts)
            self.preds.append(pred)
            present = ds.present
            n_present, m1, n_m1, m2 = (least(ds) if least is not None
                                       else least_of(ds.sums, present))
            enforce = n_present >= c.min_domains and n_present > 0
            self.parts.append((c.max_skew - self_match, dom, ds, pred, present,
                               enforce, m1, n_m1, m2, extra))

    def at(self, row: int) -> list:
        """Per constraint on ``row``: None when the row lacks its key (the
        missing-label failure whatever the pods), else (counts predicate,
        the row is counted, baseline sum of its domain, maxSkew - self,
        least sum over the other present domains, the row's domain is
        present) for :meth:`code`."""
        out = []
        for p in self.parts:
            if p is None:
                out.append(None)
                continue
            bound, dom, ds, pred, present, enforce, m1, n_m1, m2, extra = p
            d = int(dom[row]) if row < dom.shape[0] else -1
            if d < 0:
                out.append(None)
                continue
            counted = row < ds.dom.shape[0] and int(ds.dom[row]) >= 0
            base = int(ds.sums[d])
            here = bool(present[d])
            if not enforce:
                other, here = 0, False          # the minimum is 0
            elif here and base == m1:
                other = m1 if n_m1 > 1 else m2
            else:
                other = m1
            if counted and extra is not None and row < extra.shape[0]:
                base += int(extra[row])
            out.append((pred, counted, base, bound, other, here))
        return out

    def arrays(self, rows):
        """``at`` for many rows as [M, S] arrays (S constraints): valid (the
        row has the key), counted, base, bound, other, here
        (``kernels.victims.on_counts``)."""
        m, n = rows.shape[0], len(self.parts)
        valid = np.zeros((m, n), np.bool_)
        counted = np.zeros((m, n), np.bool_)
        here = np.zeros((m, n), np.bool_)
        base = np.zeros((m, n), np.int64)
        bound = np.zeros((m, n), np.int64)
        other = np.zeros((m, n), np.int64)
        # rows past an array's end (rows added since it was built) read as
        # absent; when none is, the rows index it directly
        top = int(rows.max()) if m else -1
        for j, p in enumerate(self.parts):
            if p is None:
                continue
            b, dom, ds, _, present, enforce, m1, n_m1, m2, extra = p
            if top < dom.shape[0]:
                d = dom[rows]
            else:
                d = np.where(rows < dom.shape[0], dom[np.minimum(rows, dom.shape[0] - 1)], -1)
            ok = d >= 0
            dd = np.maximum(d, 0)           # 0 where absent (read only where ok)
            valid[:, j] = ok
            if top < ds.dom.shape[0]:
                counted[:, j] = ok & (ds.dom[rows] >= 0)
            else:
                dd_rows = np.minimum(rows, ds.dom.shape[0] - 1)
                counted[:, j] = ok & (rows < ds.dom.shape[0]) & (ds.dom[dd_rows] >= 0)
            base[:, j] = np.where(ok, ds.sums[dd], 0)
            bound[:, j] = b
            if enforce:
                h = ok & present[dd]
                here[:, j] = h
                other[:, j] = np.where(h & (base[:, j] == m1), m1 if n_m1 > 1 else m2, m1)
            if extra is not None:
                inside = rows < extra.shape[0]
                got = extra[np.where(inside, rows, 0)]
                base[:, j] += np.where(counted[:, j] & inside, got, 0)
        return valid, counted, base, bound, other, here

    def codes(self, rows) -> np.ndarray:
        """[M] int64: ``code(at(row), no pod taken off)`` of each of
        ``rows`` [M] at once (over ``arrays``)."""
        valid, counted, base, bound, other, here = self.arrays(rows)
        out = np.zeros(rows.shape[0], np.int64)
        for j in range(len(self.parts)):
            undecided = out == 0
            gmin = np.where(here[:, j], np.minimum(other[:, j], base[:, j]), other[:, j])
            out[undecided & ~valid[:, j]] = 1
            out[undecided & valid[:, j] & (base[:, j] - gmin > bound[:, j])] = 2
        return out

    @staticmethod
    def code(parts, deltas) -> int:
        """``PodTopologySpread.filter_codes`` of the row (0 fits, 1 missing
        key, 2 skew) with ``deltas[i]`` pods matching constraint ``i`` taken
        off the row since the baseline; the first failing constraint decides."""
        for p, dlt in zip(parts, deltas):
            if p is None:
                return 1
            _, counted, base, bound, other, here = p
            s = base - dlt if counted else base
            gmin = min(other, s) if here else other
            if s - gmin > bound:
                return 2
        return 0
