"""InterPodAffinity: mirrors plugins/interpodaffinity (v1.32 semantics).

Terms: a term without namespaces and namespaceSelector applies to its
owner's namespace; a namespaceSelector is matched against the namespace's
only label ``kubernetes.io/metadata.name`` (Namespace objects are not
loaded); ``labelSelector: null`` matches no pod.  matchLabelKeys /
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

from tensorsched.kernels import layout as L
from tensorsched.kernels import topology as T

from ..plugin import NORMALIZE_NONE, Plugin
from ..plugin_args import InterPodAffinityArgs
from ..pod_counts import pod_count_index
from ..pod_selectors import pod_terms
from ..status import SKIP, Code, Status
from . import names

NAME = names.INTER_POD_AFFINITY
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"


def _term_counts(index, term):
    return index.counts(("term", term), lambda r: term.matches(r.namespace, r.labels))


def _all_terms_counts(index, terms):
    return index.counts(("all-terms", terms),
                        lambda r: all(t.matches(r.namespace, r.labels) for t in terms))


def _has_labels(state, rows):
    lv = state.label_vals[rows]
    keep = np.ones(lv.shape[1], bool)
    keep[L.LABEL_KEY_NAME] = False
    return (lv[:, keep] >= 0).any(axis=1)


class InterPodAffinity(Plugin):
    name = NAME
    normalize = NORMALIZE_NONE
    score_slot = -1
    reason_bits = 0

    def __init__(self, args: InterPodAffinityArgs | None = None):
        self.args = args or InterPodAffinityArgs()
        self._codes = None

    # ----------------------------------------------------------- filter
    def _existing_anti(self, state, pod):
        """[(key column, blocked value ids)] from bound pods' required
        anti-affinity terms that match ``pod``."""
        index = pod_count_index(state)
        out = []
        all_rows = None
        for term, cnt in index.group_counts("req_anti").items():
            if not term.matches(pod.namespace, pod.labels):
                continue
            k = state.label_keys.get(term.topology_key)
            if k < 0:
                continue
            if all_rows is None:
                all_rows = state.valid_rows()
            dom = state.label_vals[all_rows, k]
            vals = np.unique(dom[(cnt[all_rows] > 0) & (dom >= 0)])
            if vals.shape[0]:
                out.append((k, vals))
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
        if existing is None:
            existing = self._existing_anti(state, pod)
        terms = pod_terms(pod)
        index = pod_count_index(state)
        lv = state.label_vals[rows]
        m = rows.shape[0]
        codes = np.zeros(m, np.int64)
        req_aff = terms["req_aff"]
        if req_aff:
            all_rows = state.valid_rows()
            node_cnt = _all_terms_counts(index, req_aff)[all_rows]
            missing = np.zeros(m, bool)
            pods_exist = np.ones(m, bool)
            any_pair = False
            for t in req_aff:
                k = state.label_keys.get(t.topology_key)
                if k < 0:
                    missing[:] = True
                    continue
                dom_all = state.label_vals[all_rows, k]
                sums, _ = T.domain_sums(dom_all, node_cnt, np.ones(all_rows.shape[0], bool),
                                        len(state.label_values[k]), xp=np)
                any_pair = any_pair or bool(((node_cnt > 0) & (dom_all >= 0)).any())
                dom = lv[:, k]
                missing |= dom < 0
                pods_exist &= T.at_domain(sums, dom, xp=np) > 0
            first_of_group = not any_pair and all(
                t.matches(pod.namespace, pod.labels) for t in req_aff)
            ok = ~missing & (pods_exist | first_of_group)
            codes = np.where(ok, 0, 1)
        for t in terms["req_anti"]:
            k = state.label_keys.get(t.topology_key)
            if k < 0:
                continue
            all_rows = state.valid_rows()
            cnt = _term_counts(index, t)[all_rows]
            sums, _ = T.domain_sums(state.label_vals[all_rows, k], cnt,
                                    np.ones(all_rows.shape[0], bool),
                                    len(state.label_values[k]), xp=np)
            fail = T.at_domain(sums, lv[:, k], xp=np) > 0
            codes = np.where((codes == 0) & fail, 2, codes)
        for k, vals in existing:
            fail = T.value_in(lv[:, k], vals, xp=np)
            codes = np.where((codes == 0) & fail, 3, codes)
        return codes

    def filter(self, ctx, rows):
        codes = self.filter_codes(ctx.state, ctx.pod, rows, ctx.data.get(NAME))
        self._codes = (ctx.pod, ctx.state.version, rows.copy(), codes)
        return codes == 0

    def explain_status(self, ctx, row: int) -> Status:
        c = self._codes
        hit = None
        if c is not None and c[0] is ctx.pod and c[1] == ctx.state.version:
            where = np.flatnonzero(c[2] == row)
            hit = int(c[3][where[0]]) if where.shape[0] else None
        if hit is None:
            rows = ctx.state.valid_rows()
            codes = self.filter_codes(ctx.state, ctx.pod, rows)
            self._codes = (ctx.pod, ctx.state.version, rows.copy(), codes)
            where = np.flatnonzero(rows == row)
            hit = int(codes[where[0]]) if where.shape[0] else 0
        code = hit
        if code == 1:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_AFFINITY,), NAME)
        if code == 2:
            return Status(Code.UNSCHEDULABLE, (REASON_ANTI,), NAME)
        return Status(Code.UNSCHEDULABLE, (REASON_EXISTING,), NAME)

    def explain_reasons(self, ctx, row):
        return list(self.explain_status(ctx, row).reasons)

    # ------------------------------------------------------------ score
    def topology_scores(self, state, pod):
        """[(key column, per-node weight [N] over valid rows)] and whether
        anything contributed (upstream's non-empty topologyScore)."""
        terms = pod_terms(pod)
        index = pod_count_index(state)
        all_rows = state.valid_rows()
        labelled = _has_labels(state, all_rows)
        contrib = []
        any_event = False

        def add(term, weight, cnt):
            nonlocal any_event
            k = state.label_keys.get(term.topology_key)
            if k < 0:
                return
            c = cnt[all_rows] * labelled
            dom = state.label_vals[all_rows, k]
            if ((c > 0) & (dom >= 0)).any():
                any_event = True
                contrib.append((k, c * int(weight)))

        for t in terms["pref_aff"]:
            add(t, t.weight, _term_counts(index, t))
        for t in terms["pref_anti"]:
            add(t, -t.weight, _term_counts(index, t))
        hard = self.args.hard_pod_affinity_weight
        for kind, sign in (("req_aff", 1), ("pref_aff", 1), ("pref_anti", -1)):
            if kind == "req_aff" and hard <= 0:
                continue
            for t, cnt in index.group_counts(kind).items():
                if t.matches(pod.namespace, pod.labels):
                    add(t, sign * (hard if kind == "req_aff" else t.weight), cnt)
        return all_rows, contrib, any_event

    def pre_score(self, ctx):
        terms = pod_terms(ctx.pod)
        has_own = bool(terms["pref_aff"] or terms["pref_anti"])
        if self.args.ignore_preferred_terms_of_existing_pods and not has_own:
            return SKIP
        if not has_own and pod_count_index(ctx.state).pods_with_affinity == 0:
            return SKIP                 # nothing can contribute
        all_rows, contrib, any_event = self.topology_scores(ctx.state, ctx.pod)
        if not any_event:
            return SKIP
        ctx.data[NAME + "/score"] = (all_rows, contrib)
        return Status.OK

    def score(self, ctx, rows):
        got = ctx.data.get(NAME + "/score")
        if got is None:
            all_rows, contrib, _ = self.topology_scores(ctx.state, ctx.pod)
        else:
            all_rows, contrib = got
        state = ctx.state
        lv = state.label_vals[rows]
        out = np.zeros(rows.shape[0], np.int64)
        for k, w in contrib:
            sums, _ = T.domain_sums(state.label_vals[all_rows, k], w,
                                    np.ones(all_rows.shape[0], bool),
                                    len(state.label_values[k]), xp=np)
            out += T.at_domain(sums, lv[:, k], xp=np)
        return out

    def normalize_scores(self, ctx, rows, raw, scored):
        return T.minmax_normalize(raw, scored, xp=np)


def new(args, handle):
    return InterPodAffinity(args)
