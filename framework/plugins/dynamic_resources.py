"""DynamicResources: pods' ResourceClaims allocated from the devices that
ResourceSlices publish (upstream ``plugins/dynamicresources``).

Extension points, as upstream:

* PreEnqueue: every claim of the pod exists, is not being deleted and, when
  made from a template, was made for this pod (else
  UnschedulableAndUnresolvable: the pod waits for a claim event).  With the
  simulated resourceclaim controller on (``ClaimState.controller``) the
  pod's template claims are generated first.
* PreFilter: the claims are resolved; an allocated claim in use by others
  rejects the pod, an allocated claim pins the nodes its allocation's
  node selector allows; the requests of the claims still to allocate are
  checked (their device classes exist, subrequests only with
  DRAPrioritizedList) and the allocator is built for them.
* Filter: one pass over every node (``Allocator.feasible``): can this node
  satisfy every pending claim, and do the allocated ones allow it.  An
  allocator error is an Error status (upstream aborts the attempt).
* PostFilter: an allocated claim that was not available on some node and
  is reserved for no other pod is deallocated.
* Score / NormalizeScore: claims with ``firstAvailable`` requests score a
  node by how early in each list the chosen subrequest is (8 - index),
  normalized to 0..100.
* Reserve holds the node's allocation in memory (in flight: its devices
  count as in use for every other pod); Unreserve drops it; PreBind writes
  it to the claim and reserves the claim for the pod, then, with
  DRADeviceBindingConditions, waits (a Wait status with the time left) until
  every allocated device's binding conditions are reported True
  (``ClaimState.report_conditions``), failing at once when a binding
  failure condition is, and with "device binding timeout" once
  ``bindingTimeout`` has passed since the allocation.

Pods without claims are skipped from PreFilter on; they sign () and join
compiled runs.  A pod with claims signs None: it is scheduled on its own
(its claims, generated per pod, make it unlike any other).

DRA extended resources (DRAExtendedResource, ``extended_resources``; off by
default as upstream's alpha gate): a container's extended-resource request
that a DeviceClass serves (``dra_extended``) is, on every node that does not
offer the resource in allocatable, one more claim to allocate there; PreBind
creates that claim for the pod (owned by it, so it goes with the pod) and
Unreserve deletes it.  Such pods sign None too.  On a node whose
allocatable does not list the resource at all, NodeResourcesFit leaves it
to this plugin (``fused_exemptions``), as upstream's fitsRequest does.
"""

from __future__ import annotations

import itertools

import numpy as np

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.config.plugin_args import DynamicResourcesArgs
from tensorsched.framework.errors import StateError
from tensorsched.framework.preemption.evaluator import PreemptionResult
from tensorsched.framework.runtime.cluster_events import (
    NODE_ADD,
    NODE_UPDATE,
    POD_DELETE,
    POD_UPDATE,
    RESOURCE_CLAIM_UPDATE,
)
from tensorsched.framework.runtime.plugin import NORMALIZE_DEFAULT, Plugin
from tensorsched.framework.runtime.status import SKIP, Code, Status
from tensorsched.framework.state.dra_allocator import AllocationError, DraFeatures
from tensorsched.framework.state.dra_search import features_of_gates
from tensorsched.framework.state.dra_claims import consumer_matches
from tensorsched.kernels import layout as L

from . import dra_extended as ext
from . import dra_runs
from .dra_cycle import (
    ClaimProblem,
    Cycle,
    check_requests,
    claims_of,
    cycle_at,
    cycle_of,
    error,
    generate,
    resolve,
    unresolvable,
)
from .dra_fits import ClaimFits

NAME = names.DYNAMIC_RESOURCES

#: upstream ResourceClaimReservedForMaxSize: a claim is shared by at most this many pods
RESERVED_FOR_MAX = 256
#: resourceapi.FirstAvailableDeviceRequestMaxSize: the score of a first choice
FIRST_AVAILABLE_MAX = 8

MSG_CANNOT_ALLOCATE = "cannot allocate all claims"
# Pods with claims join compiled runs of at least this many: a run's set-up
# (the devices counted on every node, the run's own structures) costs a few
# cycles, so shorter stretches are scheduled one by one (the kind of claims
# is then not run again until the queue is idle)
MIN_RUN = 16
MAX_CYCLES = 1024           # per-pod cycle data kept at most
MSG_NOT_AVAILABLE = "resourceclaim not available on the node"
#: the ResourceClaim update PostFilter's deallocation makes: upstream's
#: queueing hint queues every pod DynamicResources rejected (the devices
#: may serve them), this pod included
CLAIM_DEALLOCATED = RESOURCE_CLAIM_UPDATE


_CANNOT_ALLOCATE = unresolvable(MSG_CANNOT_ALLOCATE)
# PostFilter's status where this cycle's PreFilter recorded no claim (a pod
# without claims, or one this plugin's PreFilter rejected or skipped):
# upstream's message; one frozen object, not one built per failed
# preemptor cycle (the plugin runs ahead of DefaultPreemption for every pod)
MSG_NO_NEW_CLAIMS = "no new claims to deallocate"
_NO_CLAIMS = Status(Code.UNSCHEDULABLE, (MSG_NO_NEW_CLAIMS,), NAME)
# PostFilter's status where this plugin's PreFilter did not run in the cycle
# (an earlier PreFilter rejected the pod, or the profile leaves it out):
# upstream reads its cycle state and fails with the cycle state's error, an
# Error that ends the PostFilter plugins (DefaultPreemption is not asked) and
# whose text closes the FailedScheduling message ("... PersistentVolumeClaims.
# not found")
MSG_NO_CYCLE_STATE = "not found"
_NO_CYCLE_STATE = Status(Code.ERROR, (MSG_NO_CYCLE_STATE,), NAME)


def prefilter_reached(profile, prefilter_status: Status) -> bool:
    """Whether the DynamicResources PreFilter ran in a cycle whose PreFilter
    phase ended with ``prefilter_status`` under ``profile``: it is among
    the profile's PreFilter plugins, and no plugin before it rejected (the
    phase stops at the first rejection)."""
    order = profile.names("preFilter")
    if NAME not in order:
        return False
    if prefilter_status.ok or prefilter_status.plugin == NAME:
        return True
    by = prefilter_status.plugin
    return by not in order or order.index(NAME) < order.index(by)


def _every_claim(_record) -> bool:
    return True


# ------------------------------------------------------------ node selectors
def _requirement_ok(req: dict, value: str | None) -> bool:
    op = req.get("operator")
    values = req.get("values") or []
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            a, b = int(value), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def selector_allows(selector: dict | None, node) -> bool:
    """A v1 NodeSelector (as written in an allocation) against a NodeRecord:
    any term whose every expression and field requirement holds; an
    empty term matches nothing, as upstream."""
    if selector is None:
        return True
    for term in selector.get("nodeSelectorTerms") or []:
        exprs = (term or {}).get("matchExpressions") or []
        fields = (term or {}).get("matchFields") or []
        if not exprs and not fields:
            continue
        if all(_requirement_ok(e, node.labels.get(e.get("key"))) for e in exprs) and all(
                _requirement_ok(f, node.name if f.get("key") == "metadata.name" else None)
                for f in fields):
            return True
    return False


# ------------------------------------------------------------ scoring
def compute_score(claims, allocations) -> int:
    """The prioritized-list score of one node: for every claim (pod order)
    and each of its requests with ``firstAvailable``, 8 minus the index of
    the subrequest its allocation used.  ``allocations[i]`` belongs to
    ``claims[i]`` (an ``AllocationResult`` or None)."""
    score = 0
    for claim, alloc in zip(claims, allocations):
        if alloc is None:
            continue
        used = {r.request for r in alloc.results}
        for req in claim.requests:
            if not req.first_available:
                continue
            for i, sub in enumerate(req.first_available):
                if f"{req.name}/{sub.name}" in used:
                    score += FIRST_AVAILABLE_MAX - i
                    break
    return score


def normalize_scores(scores) -> np.ndarray:
    """DefaultNormalizeScore(100, reverse=False): score * 100 // max (int64),
    all zero when the maximum is 0."""
    s = np.asarray(scores, np.int64)
    top = int(s.max()) if s.shape[0] else 0
    if top == 0:
        return np.zeros_like(s)
    return s * 100 // top


class DynamicResources(Plugin):
    """The DynamicResources plugin (see the module doc)."""

    name = NAME
    normalize = NORMALIZE_DEFAULT
    # Reserve / PreBind do work only for pods with claims, which never join
    # a compiled run (they sign None): for every pod of a run they accept
    # at once and change nothing.
    run_safe = True
    # False: PostFilter builds its no-claims status afresh per call (the
    # tests' oracle for the shared ``_NO_CLAIMS``)
    share_no_claims_status = True
    # EventsToRegister: nodes added or relabelled; claims deallocated or
    # updated, which here follows a bound pod leaving (or updated) or
    # PostFilter (``CLAIM_DEALLOCATED``); slices and classes are fixed once
    # loaded.  Not the arrival of other pending
    # pods (blocks of arrivals rely on it).
    events = frozenset({NODE_ADD, NODE_UPDATE, POD_DELETE, POD_UPDATE, CLAIM_DEALLOCATED})

    def __init__(self, args: DynamicResourcesArgs | None = None, handle=None,
                 features: DraFeatures | None = None):
        self.args = args or DynamicResourcesArgs()
        self.handle = handle
        # the allocator's switches: ``features`` when given, else the DRA
        # gates the config was loaded under (``args.feature_gates``)
        self.features = (features if features is not None
                         else features_of_gates(self.args.feature_gates))
        self.now_ns = None          # the clock for binding timeouts (None: never timed out)
        # DRAPreemption (alpha upstream, on here): a node whose devices are
        # taken may be freed by preemption, whose victim search releases
        # the victims' claims (``ClaimState``); off, a node that cannot
        # allocate the claims is UnschedulableAndUnresolvable for preemption
        self.preemption = True
        # DRAExtendedResource (alpha upstream, off by default): containers'
        # extended-resource requests that DeviceClasses serve
        self.extended_resources = "DRAExtendedResource" in self.args.feature_gates
        self._scheduler = None
        self._cycles: dict[str, Cycle] = {}
        # which nodes can allocate a cycle's pending claims (``dra_fits``)
        self._claim_fits = ClaimFits(lambda: self.features)
        self._run_plan = None           # the compiled run being placed

    def _now_ns(self) -> int:
        """The clock PreBind stamps allocations with: ``now_ns`` when set,
        else the scheduler's (simulated) clock, else 0."""
        if self.now_ns is not None:
            return self.now_ns
        if self._scheduler is not None:
            return int(self._scheduler.clock.now() * 1e9)
        return 0

    # ------------------------------------------------------------ signing
    def _may_need(self, pod) -> bool:
        """Whether the plugin may have work for ``pod``: claims, or (with
        DRAExtendedResource) extended-resource requests."""
        return bool(pod.resource_claims) or (self.extended_resources
                                             and ext.may_request(pod))

    def sign(self, pod) -> tuple | None:
        """() for a pod without claims; for a pod whose claims all come
        from templates (``dra_runs.template_signature``), the templates;
        None otherwise (and for any pod that may ask DRA-served extended
        resources)."""
        if self.extended_resources and ext.may_request(pod):
            return None
        if not pod.resource_claims:
            return ()
        sig = dra_runs.template_signature(pod)
        return None if sig is None else ("claims", sig)

    def run_keeps_skip(self, ctx, point: str) -> bool:
        """A pod without claims is skipped at both points, whatever a run
        places; a pod with template claims skips PreScore for want of
        ``firstAvailable`` requests, which its alike pods' claims (the same
        templates) lack too."""
        if not self._may_need(ctx.pod):
            return True
        return point == "preScore" and self.sign(ctx.pod) is not None

    def ignores_pods(self, ctx) -> bool:
        """Preemption: with nothing to allocate, the answer does not depend
        on the pods on a node (only allocated claims' node selectors)."""
        cyc = self._cycles.get(ctx.pod.key)
        return cyc is None or not (cyc.pending or cyc.extended)

    # ------------------------------------------------------------ runs
    def run_rules(self, ctx) -> list | None:
        """The pod's pending claims as a per-node room rule for a compiled
        run of alike pods (``dra_runs``), or None when they are neither
        counted claims nor claims the compiled search allocates (the pods
        are then scheduled one by one)."""
        pod = ctx.pod
        cyc = self._cycles.get(pod.key)
        if (cyc is None or not cyc.pending or cyc.extended or cyc.failed_binding
                or any(sel is not None for sel in cyc.pins)
                or len(cyc.pending) != len(cyc.claims)
                or dra_runs.template_signature(pod) is None):
            return None
        state = ctx.state
        store = claims_of(state)
        self._claim_fits.ensure_allocator(store, cyc)
        if cyc.allocator is None:
            return None
        fits_of = self._claim_fits
        kind = fits_of.kind_for(cyc, store)
        if kind is None:
            return None
        if kind is fits_of.counted_for(cyc, store):
            free = fits_of.free_counts(cyc, kind, store, state)
            room = None if free is None else free // kind.need
        else:
            # the compiled search's picks, pod after pod on each node
            room = kind.room(fits_of.node_list(state), state.valid_rows(), state.n_rows)
        if room is None:
            return None
        total = int(room.sum())
        if total == 0:
            # nothing fits: the pod's own cycle (diagnosis, PostFilter) is next
            return None
        # the run's first answer must be the Filter's (a safety net: the
        # counted form holds for these claims, module doc of dra_runs)
        rows = state.valid_rows()
        fits = self._claim_fits.pending_fits(cyc, store, state, rows, keep=True)
        if not np.array_equal(fits, room[rows] > 0):
            return None
        self._run_plan = dra_runs.RunPlan(pod.key, kind,
                                          [e.record for e in cyc.claims], total)
        return [dra_runs.room_rule(self.reason_bits, state, room)]

    def run_prefix(self, ctx, pods) -> int:
        """How many of ``pods`` (a run, ``ctx.pod`` first, after
        ``run_rules``) have fresh claims of the first pod's kind: the run
        places at most those."""
        plan = self._run_plan
        if not self._may_need(ctx.pod):
            return len(pods)
        if plan is None or plan.pod_key != ctx.pod.key:
            return 0
        if len(pods) < MIN_RUN:
            return 0
        store = claims_of(ctx.state)
        # the run places at most the room it has: only those pods are read
        upto = min(len(pods), plan.room)
        for i in range(1, upto):
            pod = pods[i]
            # what the pod's own PreFilter does first (a pod that never went
            # through the queue's PreEnqueue, e.g. capacity's replicas)
            if store.controller and generate(store, pod) is not None:
                return i
            try:
                entries = resolve(store, pod)
            except ClaimProblem:
                return i
            if not dra_runs.claims_like(entries, plan.records) or any(
                    store.claim_has_pending_allocation(e.key) for e in entries):
                return i
        return upto

    def reserve_run(self, ctx, pods, rows) -> None:
        """After a compiled run placed ``pods[i]`` on ``rows[i]``: each
        pod's claims allocated there in order (the first free matching
        devices, or the compiled search's picks, as its Filter found them),
        committed and reserved for it, as its Reserve and PreBind would
        have."""
        if not self._may_need(ctx.pod) or not len(pods):
            return
        plan = self._run_plan
        self._run_plan = None
        state = ctx.state
        store = claims_of(state)
        now = self._now_ns()
        nodes = state.nodes
        for pod, row in zip(pods, np.asarray(rows).tolist()):
            self._cycles.pop(pod.key, None)
            entries = resolve(store, pod)
            got = plan.claims.allocate(nodes[row])
            if got is None:
                raise StateError(f"Pod {pod.key}: the run placed it on node {nodes[row].name} "
                                 "without devices for its claims")
            for e, alloc in zip(entries, got):
                store.commit(e.key, alloc, now)
                store.reserve(e.key, pod)

    # ------------------------------------------------------------ PreEnqueue
    def set_handle(self, scheduler) -> None:
        """The scheduler running this plugin: PreEnqueue reads its cluster."""
        self._scheduler = scheduler

    def lets_in(self, pod) -> bool:
        """PreEnqueue certainly admits a pod without claims (the queue then
        keeps it in a lane block without asking)."""
        return not pod.resource_claims

    def pre_enqueue(self, pod, state=None) -> Status:
        if not pod.resource_claims:
            return Status.OK
        if state is None and self._scheduler is not None:
            state = self._scheduler.cluster.state
        if state is None:
            return Status.OK        # no cluster known yet: PreFilter checks again
        store = claims_of(state)
        if store.controller:
            st = generate(store, pod)
            if st is not None:
                return st
        try:
            resolve(store, pod)
        except ClaimProblem as exc:
            return unresolvable(str(exc))
        return Status.OK

    # ------------------------------------------------------------ PreFilter
    def pre_filter(self, ctx):
        pod = ctx.pod
        self._cycles.pop(pod.key, None)
        if not self._may_need(pod):
            return SKIP, None
        store = claims_of(ctx.state)
        extended = (ext.extended_requests(pod, ext.resource_classes(store.classes))
                    if self.extended_resources else [])
        if store.controller and pod.resource_claims:
            st = generate(store, pod)
            if st is not None:
                return st, None
        try:
            claims = resolve(store, pod)
        except ClaimProblem as exc:
            return unresolvable(str(exc)), None
        if not claims and not extended:
            return SKIP, None
        pins, pending = [], []
        for i, e in enumerate(claims):
            reserved_here = any(consumer_matches(r, pod.name, pod.uid) for r in e.reserved_for)
            if e.allocation is not None:
                if len(e.reserved_for) >= RESERVED_FOR_MAX and not reserved_here:
                    return unresolvable("resourceclaim in use"), None
                pins.append(e.allocation.node_selector)
                continue
            pins.append(None)
            pending.append(i)
            if store.claim_has_pending_allocation(e.key):
                return unresolvable(f"resource claim {e.key} is in the process of being "
                                     "allocated"), None
            st = check_requests(store, e, self.features)
            if st is not None:
                return st, None
        cyc = Cycle(claims, pins, pending, extended=extended)
        self._check_binding(cyc)
        cycles = self._cycles
        cycles[pod.key] = cyc
        if len(cycles) > MAX_CYCLES:
            # pods that failed keep their cycle for PostFilter and explain;
            # the oldest of them are forgotten (a later attempt starts anew)
            for key in list(itertools.islice(cycles, len(cycles) - MAX_CYCLES // 2)):
                del cycles[key]
        return Status.OK, None

    def _check_binding(self, cyc: Cycle) -> None:
        """Allocated claims whose devices' binding failed or timed out
        (DRADeviceBindingConditions): no node is available to them."""
        timeout_ns = int(self.args.binding_timeout_s * 1e9)
        for i, e in enumerate(cyc.claims):
            a = e.allocation
            if a is None or not any(r.binding_conditions for r in a.results):
                continue
            ready, failed = True, False
            for r in a.results:
                have = e.conditions.get((r.driver, r.pool, r.device), set())
                if any(c in have for c in r.binding_failure_conditions):
                    failed = True
                if not all(c in have for c in r.binding_conditions):
                    ready = False
            timed_out = (not ready and e.allocated_ns is not None
                         and self._now_ns() - e.allocated_ns > timeout_ns)
            if failed or timed_out:
                cyc.failed_binding.add(i)

    # ------------------------------------------------------------ Filter
    def filter(self, ctx, rows: np.ndarray) -> np.ndarray:
        """[M] bool over ``rows``: every pending claim can be allocated on the
        node and every allocated claim's node selector allows it."""
        rows = np.asarray(rows, np.int64)
        cyc = self._cycles.get(ctx.pod.key)
        if cyc is None:
            return np.ones(rows.shape[0], np.bool_)
        state = ctx.state
        nodes = state.nodes
        ok = np.ones(rows.shape[0], np.bool_)
        statuses = cyc.statuses
        if cyc.failed_binding:
            cyc.unavailable.update(cyc.failed_binding)
            st = unresolvable(MSG_NOT_AVAILABLE)
            for r in rows.tolist():
                statuses[r] = st
            return np.zeros(rows.shape[0], np.bool_)
        pinned = [(i, sel) for i, sel in enumerate(cyc.pins) if sel is not None]
        if pinned:
            st = unresolvable(MSG_NOT_AVAILABLE)
            for j, r in enumerate(rows.tolist()):
                bad = [i for i, sel in pinned if not selector_allows(sel, nodes[r])]
                if bad:
                    cyc.unavailable.update(bad)
                    ok[j] = False
                    statuses[r] = st
        store = claims_of(state)
        if cyc.extended:
            # nodes grouped by the extended resources they lack: each group
            # allocates the pod's claims plus a claim made for those
            groups: dict = {}
            for j, r in enumerate(rows.tolist()):
                groups.setdefault(ext.lacking(nodes[r], cyc.extended), []).append(j)
            for lack, js in groups.items():
                sub = cycle_of(cyc, ctx.pod, lack)
                if sub.pending:
                    idx = np.asarray(js, np.int64)
                    ok[idx] &= self._claim_fits.pending_fits(sub, store, state, rows[idx],
                                                  keep=not lack)
        elif cyc.pending:
            ok &= self._claim_fits.pending_fits(cyc, store, state, rows, keep=True)
        return ok

    def fused_exemptions(self, ctx, rows) -> np.ndarray | None:
        """[M] int64 reason bits NodeResourcesFit must not report on the
        rows (the framework clears them before this Filter's own): with
        DRAExtendedResource, a DRA-served extended resource the node's
        allocatable does not list at all is this plugin's to allocate, so
        NodeResourcesFit skips it there (upstream's fitsRequest); a node
        listing it, even as 0, keeps NodeResourcesFit's check."""
        cyc = self._cycles.get(ctx.pod.key)
        if cyc is None or not cyc.extended:
            return None
        state = ctx.state
        index = state.resources.index
        bits = {}
        for r in cyc.extended:
            i = index.get(r.resource)
            if i is not None and i < L.MAX_RESOURCES:
                bits[r.resource] = 1 << (L.INSUFFICIENT_SHIFT + i)
        if not bits:
            return None
        out = np.zeros(len(rows), np.int64)
        nodes = state.nodes
        for j, r in enumerate(np.asarray(rows).tolist()):
            node = nodes[r]
            if node is None:
                continue
            alloc = node.allocatable
            out[j] = sum(b for name, b in bits.items() if name not in alloc)
        return out

    def begin_victim_search(self, ctx) -> None:
        """Preemption's victim search starts taking pods off: a victim frees
        what upstream's RemovePod frees in the dry run.  With DRAPreemption
        (``preemption``) that is every claim the victim's spec names (once
        no pod left holds it); the claim made for its DRA-served extended
        resources is not among them and keeps its devices.  Without it,
        no claim is freed."""
        kept = ext.is_extended_claim if self.preemption else _every_claim
        claims_of(ctx.state).begin_victim_search(lambda e: kept(e.record))

    def end_victim_search(self, ctx) -> None:
        claims_of(ctx.state).end_victim_search()

    def unresolvable(self, ctx, rows) -> np.ndarray:
        """[M] bool: preemption cannot help on these rows (DefaultPreemption
        asks).  A node short of devices can be helped when ``preemption``
        is on (the victims' claims free theirs); a claim pinned elsewhere, a
        failed binding or an error never."""
        rows = np.asarray(rows, np.int64)
        cyc = self._cycles.get(ctx.pod.key)
        out = np.ones(rows.shape[0], np.bool_)
        if cyc is None or not self.preemption:
            return out
        out[:] = False
        # only rows with a status of their own (pinned elsewhere, errors)
        # can be unresolvable: the rest could not allocate the claims
        hard = [r for r, st in cyc.statuses.items() if st.reasons != (MSG_CANNOT_ALLOCATE,)]
        if hard:
            out |= np.isin(rows, np.asarray(hard, np.int64))
        return out

    def explain_status(self, ctx, row: int) -> Status:
        """One node's rejection, for ``explain``: upstream's status, and for
        "cannot allocate all claims" which request failed there and why
        (the allocator's account: devices matching, in use, tainted; a
        constraint)."""
        cyc = self._cycles.get(ctx.pod.key)
        st = cyc.statuses.get(row, _CANNOT_ALLOCATE) if cyc is not None else _CANNOT_ALLOCATE
        if st.reasons != (MSG_CANNOT_ALLOCATE,) or cyc is None or not cyc.pending:
            return st
        self._claim_fits.ensure_allocator(claims_of(ctx.state), cyc)
        if cyc.allocator is None:
            return st
        try:
            why = cyc.allocator.explain(ctx.state.nodes[row])
        except AllocationError as exc:
            why = str(exc)
        if not why:
            return st
        return Status(st.code, (f"{MSG_CANNOT_ALLOCATE}: {why}",), NAME)

    def explain_many(self, ctx, rows) -> tuple:
        """(ids, statuses) of many rejected nodes (the FailedScheduling
        diagnosis): upstream's statuses, without the per-node account.
        Most rows carry the default status; only the few with one of their
        own are looked at one by one."""
        rows = np.asarray(rows, np.int64)
        cyc = self._cycles.get(ctx.pod.key)
        own = cyc.statuses if cyc is not None else {}
        ids = np.zeros(rows.shape[0], np.int64)
        special = (np.flatnonzero(np.isin(rows, np.fromiter(own, np.int64, len(own))))
                   if own else np.zeros(0, np.int64))
        table: list = []
        index: dict = {}
        if special.shape[0] < rows.shape[0]:
            table.append(_CANNOT_ALLOCATE)
            index[_CANNOT_ALLOCATE] = 0
        for j in special.tolist():
            st = own[int(rows[j])]
            k = index.get(st)
            if k is None:
                k = index[st] = len(table)
                table.append(st)
            ids[j] = k
        return ids, table

    def aborted(self, pod) -> Status | None:
        """The Error status that ended the pod's last Filter, if any."""
        cyc = self._cycles.get(pod.key)
        if cyc is None:
            return None
        for st in cyc.statuses.values():
            if st.code == Code.ERROR:
                return st
        return None

    # ------------------------------------------------------------ PostFilter
    def post_filter(self, ctx, result, victims, *, seed: int = 0, attempt: int = 0):
        pod = ctx.pod
        # a fresh result each call (callers may amend it), its status shared
        if not prefilter_reached(ctx.framework.profile, result.prefilter_status):
            return PreemptionResult(None, status=_NO_CYCLE_STATE)
        if not pod.resource_claims:
            return PreemptionResult(None, status=_NO_CLAIMS if self.share_no_claims_status
                                    else Status(Code.UNSCHEDULABLE, (MSG_NO_NEW_CLAIMS,), NAME))
        cyc = self._cycles.get(pod.key)
        if cyc is None or not cyc.claims:
            return PreemptionResult(None, status=Status(
                Code.UNSCHEDULABLE, (MSG_NO_NEW_CLAIMS,), NAME))
        store = claims_of(ctx.state)
        # upstream picks one at random among the unavailable claims; the
        # lowest index here, so that every run agrees
        for i in sorted(cyc.unavailable):
            e = cyc.claims[i]
            if e.allocation is None:
                continue
            rf = e.reserved_for
            if not rf or (len(rf) == 1 and consumer_matches(rf[0], pod.name, pod.uid)):
                store.deallocate(e.key)
                cyc.unavailable.discard(i)
                # the claim's update reaches the queue: the pod (in flight)
                # is tried again after its backoff, not left unschedulable;
                # not under a look that undoes it (explain)
                queue = getattr(self._scheduler, "queue", None)
                if queue is not None and not store.looking:
                    queue.move_all(CLAIM_DEALLOCATED)
                return PreemptionResult(None, status=Status(
                    Code.UNSCHEDULABLE, ("deallocation of ResourceClaim completed",), NAME))
        return PreemptionResult(None, status=Status(
            Code.UNSCHEDULABLE, ("still not schedulable",), NAME))

    # ------------------------------------------------------------ Score
    def pre_score(self, ctx) -> Status:
        cyc = self._cycles.get(ctx.pod.key)
        if cyc is None or not any(cyc.claims[i].record.requests and any(
                r.first_available for r in cyc.claims[i].record.requests)
                for i in cyc.pending):
            return SKIP
        return Status.OK

    def score(self, ctx, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, np.int64)
        out = np.zeros(rows.shape[0], np.int64)
        cyc = self._cycles.get(ctx.pod.key)
        if cyc is None or not cyc.pending:
            return out
        self._claim_fits.ensure_allocator(claims_of(ctx.state), cyc)
        if cyc.allocator is None:
            return out
        claims = [cyc.claims[i].record for i in cyc.pending]
        for j, r in enumerate(rows.tolist()):
            got = self._node_results(cyc, ctx.state, r)
            if got is not None:
                out[j] = compute_score(claims, got)
        return out

    def _node_results(self, cyc: Cycle, state, row: int):
        got = cyc.results.get(row)
        if got is None:
            try:
                got = self._claim_fits.allocate_on(cyc, claims_of(state), state.nodes[row])
            except AllocationError:
                got = None
            if got is not None:
                cyc.results[row] = got
        return got

    # ------------------------------------------------------------ explain
    def explain_fields(self, ctx, selected: str | None) -> dict:
        """``{"claims": {claim: [device results]}}``: for a pod with claims,
        the devices each claim holds or would be given on the selected node
        (what Reserve would take now; ``status.allocation.devices.results``
        entries), or ``{"claims": None}`` when no node was selected.  Pods
        without claims add nothing to the record."""
        pod = ctx.pod
        if not self._may_need(pod):
            return {}
        cyc = self._cycles.get(pod.key)
        if selected is None or cyc is None:
            return {"claims": None}
        state = ctx.state
        row = state.node_rows[selected]
        cyc = cycle_at(cyc, pod, state.nodes[row])
        out = {e.key: [r.to_dict() for r in e.allocation.results]
               for e in cyc.claims if e.allocation is not None}
        if cyc.pending:
            self._claim_fits.ensure_allocator(claims_of(state), cyc)
            got = self._node_results(cyc, state, row) if cyc.allocator is not None else None
            for i, alloc in zip(cyc.pending, got or ()):
                out[cyc.claims[i].key] = [r.to_dict() for r in alloc.results]
        return {"claims": out}

    # ------------------------------------------------------------ Reserve
    def reserve(self, ctx, node_name: str) -> Status:
        pod = ctx.pod
        cyc = self._cycles.get(pod.key)
        if cyc is None or not (cyc.pending or cyc.extended):
            return Status.OK
        state = ctx.state
        store = claims_of(state)
        row = state.node_rows.get(node_name)
        if row is not None and cyc.extended:
            cyc = cycle_at(cyc, pod, state.nodes[row])
            # from here on the pod's claims are those of the node's cycle
            self._cycles[pod.key] = cyc
            if not cyc.pending:
                return Status.OK
        self._claim_fits.ensure_allocator(store, cyc)
        if row is None or cyc.allocator is None:
            return error("claim allocation not found for node")
        got = self._node_results(cyc, state, row)
        if got is None or len(got) != len(cyc.pending):
            return error("claim allocation not found for node")
        for i, alloc in zip(cyc.pending, got):
            store.hold_in_flight(cyc.claims[i].key, alloc)
        cyc.version = store.in_use.version
        cyc.results = {row: got}
        return Status.OK

    def unreserve(self, ctx, node_name: str) -> None:
        pod = ctx.pod
        cyc = self._cycles.pop(pod.key, None)
        if cyc is None:
            return
        store = claims_of(ctx.state)
        if cyc.created is not None and store.claims.get(cyc.created.key) is cyc.created:
            store.delete(cyc.created.key)       # the claim made for the pod goes
        for e in cyc.claims:
            store.drop_in_flight(e.key)
            if e.allocation is not None and any(
                    consumer_matches(r, pod.name, pod.uid) for r in e.reserved_for):
                store.unreserve(e.key, pod)

    # ------------------------------------------------------------ PreBind
    def pre_bind(self, ctx, node_name: str) -> Status:
        pod = ctx.pod
        cyc = self._cycles.get(pod.key)
        if cyc is None:
            return Status.OK
        store = claims_of(ctx.state)
        if cyc.created is not None and cyc.created.key not in store.claims:
            try:
                store.create(cyc.created)   # the claim made for extended resources
            except StateError as exc:
                return error(str(exc))
        now = self._now_ns()
        since = None            # the oldest allocation still waiting
        for e in cyc.claims:
            if not any(consumer_matches(r, pod.name, pod.uid) for r in e.reserved_for):
                alloc = store.in_flight.get(e.key)
                if alloc is not None:
                    store.commit(e.key, alloc, now)
                store.reserve(e.key, pod)
            a = e.allocation
            if a is not None and any(r.binding_conditions for r in a.results):
                for r in a.results:
                    have = e.conditions.get((r.driver, r.pool, r.device), set())
                    if any(c in have for c in r.binding_failure_conditions):
                        return error(f"claim {e.key} binding failed")
                    if not all(c in have for c in r.binding_conditions):
                        stamp = e.allocated_ns if e.allocated_ns is not None else now
                        since = stamp if since is None else min(since, stamp)
        if since is not None:
            # DRADeviceBindingConditions: wait until the drivers report the
            # conditions (``ClaimState.report_conditions``), a failure
            # condition, or the binding timeout since the allocation
            timeout_ns = int(self.args.binding_timeout_s * 1e9)
            left = since + timeout_ns - now
            if left <= 0:
                return error("device binding timeout")
            return (Status(Code.WAIT, (f"waiting for the binding conditions of devices on "
                                       f"node {node_name}",), NAME), left / 1e9)
        self._cycles.pop(pod.key, None)
        return Status.OK


def new(args, handle) -> DynamicResources:
    return DynamicResources(args, handle)
