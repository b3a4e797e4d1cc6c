"""Framework: a profile's plugins compiled into fused stages, run per pod.

A scheduling cycle is PreFilter (per plugin, on the host), one fused
filter+score pass over every evaluated node (built-in plugins inside the
kernel, user plugins as array code or compiled per-node functions), then
normalize/weigh/select on the backend, and the seeded tie rule among the
best (``kernels.fused.ties``).
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
from dataclasses import dataclass

import numpy as np

from tensorsched.framework.config.kube_config import Profile
from tensorsched.framework.errors import BackendError, ConfigError, TensorschedError
from tensorsched.framework.records.records import MemoKey, PodRecord
from tensorsched.framework.state.cluster_state import ClusterState
from tensorsched.framework.state.domain_counts import grouped_rows
from tensorsched.framework.state.query import QueryCache, QueryOptions, pod_signature
from tensorsched.kernels import domains as _T
from tensorsched.kernels import layout as L
from tensorsched.kernels.backend_names import SORT
from tensorsched.kernels.domain_rules import (
    AffinityScore,
    SpreadScore,
    stack_affinity,
    stack_rules,
    stack_spread,
)
from tensorsched.kernels.fused.backends import (
    COMPILED_RUN_PATH,
    SORT_PATH,
    make_backend,
    resolve_backend,
    rotated,
)
from tensorsched.kernels.fused.ties import pick_tied, seed_mix

from .blocks import block_setup, place_block
from .plugin import (
    CYCLE_DRAW,
    NORMALIZE_NONE,
    PRE_FILTER,
    PRE_SCORE,
    CycleContext,
    FusedFilter,
    FusedScore,
    NodeMaskPlugin,
    PostFilterPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    RepeatableFailurePlugin,
    RunFilterPlugin,
    RunReservePlugin,
    RunSafePlugin,
    RunScorePlugin,
    RunSkipPlugin,
    SignPlugin,
    SpecAnswerPlugin,
)
from .nominated_pods import NOMINATED_PODS
from .registry import Registry
from .status import Code, Diagnosis, NodeStatuses, Status
from .user_plugins import ScalarPlugin

DECISION_POINTS = ("preFilter", "filter", "preScore", "score", "reserve", "permit", "preBind",
                   "bind", "postBind")
BINDING_POINTS = ("reserve", "permit", "preBind", "bind", "postBind")
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
PREFILTER_REJECT_REASON = "node(s) didn't satisfy plugin(s) [{}]"
_MASK64 = (1 << 64) - 1
_SKIP = Code.SKIP
_SUCCESS = Code.SUCCESS
# PreFilter codes that end the cycle: rejections and errors
_PREFILTER_STOPS = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                              Code.ERROR})
_PLAN_PARTS_KEPT = 1024         # pairs of (skip, scoring) masks kept per framework


def splitmix64(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def tied_node(source, seed: int, rows: np.ndarray) -> int:
    """The row a cycle takes among ``rows`` [n >= 1], the nodes sharing
    the top total score: the seeded tie rule (``kernels.fused.ties``) on
    the pods each holds in ``source`` (the ``ColumnSource`` the cycle read:
    the state, or its overlay with the nominated pods).  A backend that
    ranks a placement cycle itself answers that one row already (the cuda
    pick on the device, the host finalize's ``fused.backends.tied_one``)."""
    if rows.shape[0] == 1:
        return int(rows[0])
    pods = source.columns().requested[:, L.RES_PODS]
    return int(rows[pick_tied(seed_mix(seed), rows, pods[rows])])


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """kube-scheduler's numFeasibleNodesToFind (adaptive when percentage is 0)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = 50 - num_all_nodes // 125
        if pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    if pct >= 100:
        return num_all_nodes
    n = num_all_nodes * pct // 100
    return max(n, MIN_FEASIBLE_NODES_TO_FIND)


def processed_rows(feasible: np.ndarray, num_to_find: int) -> int:
    """How many rows (in evaluation order) a cycle scans: up to the
    ``num_to_find``-th feasible one (as ``finalize_scores`` counts them)."""
    m = feasible.shape[0]
    if num_to_find <= 0:
        return m
    csum = np.cumsum(feasible)
    if m == 0 or csum[-1] < num_to_find:
        return m
    return int(np.argmax(csum >= num_to_find)) + 1


@dataclass
class CycleResult:
    """The outcome of filtering and scoring one pod.

    all_rows [M] live node rows; evaluation starts at position ``start``
    (``rows`` gives them in evaluation order); reasons/scores/total are in
    evaluation order as in ``StageResult``; selected row or -1."""

    all_rows: np.ndarray
    start: int
    reasons: np.ndarray
    scores: np.ndarray
    total: np.ndarray
    processed: int
    found: int
    selected_row: int
    prefilter_status: Status
    prefilter_plugin_rejects: dict
    active_score_plugins: list
    skipped_filters: set
    query: object = None        # the compiled PodQuery (None after a PreFilter reject)

    @property
    def rows(self) -> np.ndarray:
        return rotated(self.all_rows, self.start)


@dataclass
class CyclePlan:
    """What PreFilter and PreScore decided for one pod: its compiled query,
    the plugins that skipped, the node names a PreFilter allows (None: all,
    with the plugins that restricted them), the score setup, and the host
    plugins that run for it."""

    query: object
    skipped: set
    node_names: set | None
    restricted_by: list
    active: np.ndarray
    norm: np.ndarray
    weights: np.ndarray
    active_plugins: list
    host_filters: list
    host_scores: list
    masks: dict = dataclasses.field(default_factory=dict)   # plugin name -> [n_rows] bool


_FRAMEWORK_NUMBERS = itertools.count()


SIGNATURE = MemoKey("framework.signature", __name__,
                    "with a framework's number: the pod's signature (``Framework.signature``)")
SPEC_CALLS = MemoKey("framework.spec_calls", __name__,
                     "with a framework's number: the PreFilter and PreScore calls a pod's "
                     "class makes and what its plugins answered from the spec "
                     "(``Framework._spec_calls``)")


class Framework:
    """One profile's plugins, ready to run cycles on one backend."""

    def __init__(self, profile: Profile, backend: str, registry: Registry,
                 percentage_of_nodes_to_score=None):
        self.profile = profile
        self.registry = registry
        try:
            self.backend = make_backend(backend)
        except BackendError:
            raise
        except Exception as exc:                 # BackendUnavailable from the kernels
            raise BackendError(str(exc)) from exc
        # ``backend`` as asked for; ``backend_name`` the one the fused cycle
        # runs on (they differ for ``auto``); other stages ask ``backend_for``
        self.requested_backend = backend
        self.backend_name = resolve_backend(backend)
        self._stage_backends: dict = {}     # stage_backend's, by name
        self.percentage = (profile.percentage_of_nodes_to_score
                           if profile.percentage_of_nodes_to_score is not None
                           else percentage_of_nodes_to_score)
        self.plugins: dict = {}
        for point in ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter",
                      "preScore", "score", "reserve", "permit", "preBind", "bind", "postBind"):
            for ref in profile.plugins.get(point, ()):
                if ref.name not in self.plugins:
                    if ref.name not in self.registry:
                        raise ConfigError(f"plugins.{point}", f"unknown plugin {ref.name!r}")
                    factory = self.registry.factory(ref.name)
                    try:
                        self.plugins[ref.name] = factory(profile.args.get(ref.name), self)
                    except TensorschedError:
                        raise
                    except Exception as exc:
                        raise ConfigError(f"plugins.{point}",
                                          f"initializing plugin {ref.name!r}: {exc}") from exc
        self._at = {p: [self.plugins[r.name] for r in profile.plugins.get(p, ())]
                       for p in profile.plugins}
        self.filters = self.plugins_at("filter")
        self.score_refs = [(self.plugins[r.name], r.weight)
                           for r in profile.plugins.get("score", ())]
        self._assign_slots()
        if self.user_filters or self.user_scores:
            _T.warm()       # host-stage kernels: once per process (cached on disk)
        # Resolved once: protocol isinstance checks are too slow per pod.
        self._prefilters = [p for p in self.plugins_at("preFilter")
                            if isinstance(p, PreFilterPlugin)]
        self._fused_filters = [p for p in self.filters if isinstance(p, FusedFilter)]
        self._post_filters = [p for p in self.plugins_at("postFilter")
                              if isinstance(p, PostFilterPlugin)]
        self._maskers = [p for p, _b in self.user_filters if isinstance(p, NodeMaskPlugin)]
        self._scorers = [(p, w, isinstance(p, PreScorePlugin)) for p, w in self.score_refs]
        self._weight_of = {id(p): w for p, w in self.score_refs}
        self._base_options = self._options()
        self._options_cache: dict = {}
        # Per-pod steps of ``plan_cycle`` as tuples made once: each
        # PreFilter (its bound method, name and bit in the skip mask), each
        # score plugin with a slot (its bound PreScore or None, its bit in
        # the scoring mask), and the decisions a pair of masks fixes
        # (``_plan_parts``), kept by the masks.
        self._prefilter_steps = tuple((p.pre_filter, p.name, 1 << i)
                                      for i, p in enumerate(self._prefilters))
        self._score_steps = tuple((p, p.pre_score if has_pre else None, 1 << i)
                                  for i, (p, _w, has_pre) in enumerate(self._scorers)
                                  if getattr(p, "score_slot", -1) >= 0)
        self._plan_parts: dict = {}
        # What each PreFilter / score step's plugin answers from a pod's
        # spec (``SpecAnswerPlugin``; None: it has no such answers), and
        # the calls of a pod none of them answered (``call_every_plugin``)
        self._prefilter_answers = tuple(
            p.spec_answer if isinstance(p, SpecAnswerPlugin) else None
            for p in self._prefilters)
        self._score_answers = tuple(
            p.spec_answer if isinstance(p, SpecAnswerPlugin) and pre is not None else None
            for p, pre, _bit in self._score_steps)
        self._every_call = (self._prefilter_steps, 0, frozenset(), (),
                            tuple((pre, bit) for _p, pre, bit in self._score_steps
                                  if pre is not None),
                            sum(bit for _p, pre, bit in self._score_steps if pre is None))
        self._spec_calls_key = (SPEC_CALLS, next(_FRAMEWORK_NUMBERS))
        # True: every PreFilter and PreScore is called, answered from the
        # spec or not (the tests' oracle)
        self.call_every_plugin = False
        # The binding cycle's plugins per point, each with its key in the
        # metrics' per-plugin seconds ("Reserve/VolumeBinding"), made once
        self.timed_plugins = {point: tuple((p, f"{point[0].upper()}{point[1:]}/{p.name}")
                                           for p in self._at.get(point, ()))
                              for point in BINDING_POINTS}
        self.binding_keys = tuple(k for point in BINDING_POINTS
                                  for _p, k in self.timed_plugins[point])
        # False: every cycle assembles its plan from scratch (the tests' oracle)
        self.keep_plan_parts = True
        # Compiled runs: the plugins whose answers a pod's signature must
        # cover, and whether the binding-cycle plugins may be left out.
        deciding = {id(p): p for point in DECISION_POINTS for p in self._at.get(point, [])}
        signers = [p for p in deciding.values() if isinstance(p, SignPlugin)]
        self._signable = len(signers) == len(deciding)
        # the pod memo key of this framework's signatures (a fresh number per
        # framework: ``id`` could be reused by a later one)
        self._signature_key = (SIGNATURE, next(_FRAMEWORK_NUMBERS))
        # Fused plugins sign () (the query signature covers them): skip them.
        self._signers = [p for p in signers if not isinstance(p, (FusedFilter, FusedScore))]
        self.run_safe = all(isinstance(p, RunSafePlugin) and p.run_safe
                            for point in BINDING_POINTS for p in self._at.get(point, []))
        # A failed cycle of a signed pod can be answered again from memory
        # (``scheduler.failure_memory``) when every PostFilter plugin's
        # "nothing found" is a function of the state and what the pod's
        # signature, priority and preemptionPolicy cover.
        signed = {id(p) for p in signers}
        self.failures_repeat = self._signable and all(
            id(p) in signed or (isinstance(p, RepeatableFailurePlugin) and p.repeats_failure)
            for p in self._at.get("postFilter", []))
        # Reserve plugins that do their work for a run's pods themselves
        self._run_reservers = [p for p in self._at.get("reserve", [])
                               if isinstance(p, RunReservePlugin)]
        # A pod this profile signs has nothing to call at the binding points
        # when every plugin there is ``run_safe`` (as a compiled run leaves
        # them out, its Reserve plugins' run forms aside): ``quiet_binding``
        self._binds_quietly = self.run_safe
        self._score_setups: dict = {}
        self._queries = QueryCache()
        self._masked: collections.OrderedDict = collections.OrderedDict()   # _masked_query
        self.block_setup = block_setup(self)
        self.block_classes = None       # (state key, kinds of pods) of the last block
        self.last_run_path = None       # the path that placed the last run (``place_run``)

    def backend_for(self, stage: str) -> str:
        """The backend that runs ``stage`` (``kernels.backend_names.STAGES``)
        under this framework's backend: itself, or ``auto``'s choice."""
        return resolve_backend(self.requested_backend, stage)

    def stage_backend(self, stage: str):
        """The kernel backend object that runs ``stage``: the cycle's own,
        or (``auto`` with a GPU: the victim search, sorts) one made for that
        stage on first use and kept."""
        name = self.backend_for(stage)
        if name == self.backend_name:
            return self.backend
        made = self._stage_backends.get(name)
        if made is None:
            made = self._stage_backends[name] = make_backend(name)
        return made

    def signature(self, pod: PodRecord) -> tuple | None:
        """The pod's scheduling signature under this profile: its compiled
        query's signature and every deciding plugin's ``sign``; pods with
        equal signatures get equal answers.  None when some plugin cannot
        sign it (the pod is then scheduled on its own)."""
        if not self._signable:
            return None
        memo = pod.memo
        key = self._signature_key
        if key in memo:         # ``sign`` reads only the pod: once per record
            return memo[key]
        parts = [pod_signature(pod)]
        for p in self._signers:
            s = p.sign(pod)
            if s is None:
                memo[key] = None
                return None
            parts.append(s)
        memo[key] = got = tuple(parts)
        return got

    def quiet_binding(self, ctx: CycleContext) -> bool:
        """Whether ``ctx.pod``'s Reserve, Permit, PreBind, Bind and PostBind
        may be left out, as a compiled run of alike pods leaves them out:
        every plugin at those points is ``run_safe`` (always succeeds at
        once, changes nothing another cycle reads), the profile signs the
        pod, and each Reserve plugin with a run form takes it
        (``RunReservePlugin.run_prefix``; its ``reserve_run`` then does
        the pod's Reserve and PreBind: ``reserve_quietly``)."""
        if not self._binds_quietly or self.signature(ctx.pod) is None:
            return False
        return all(p.run_prefix(ctx, (ctx.pod,)) >= 1 for p in self._run_reservers)

    def reserve_quietly(self, ctx: CycleContext, row: int) -> None:
        """After ``quiet_binding``: the Reserve plugins' run form for the
        pod alone, placed on ``row``."""
        if self._run_reservers:
            rows = np.array([row], np.int64)
            for p in self._run_reservers:
                p.reserve_run(ctx, [ctx.pod], rows)

    def plugins_at(self, point: str) -> list:
        """The profile's plugins at extension point ``point`` (its config
        name, e.g. "reserve"), in profile order."""
        return self._at.get(point, [])

    # ------------------------------------------------------------ compile
    def _assign_slots(self) -> None:
        """Reason bits and score slots for user plugins; names per slot."""
        self.user_filters: list = []           # (plugin, bit)
        self.user_scores: list = []            # (plugin, slot)
        bit, slot = L.USER_FILTER_SHIFT, L.N_BUILTIN_SCORES
        # Scalar plugins take the first bits/slots (the numba kernel compiles
        # them in); explanations still follow profile order.
        scalar_first = lambda p: not isinstance(p, ScalarPlugin)  # noqa: E731
        for p in sorted(self.filters, key=scalar_first):
            if isinstance(p, FusedFilter):
                continue
            reserved = int(getattr(p, "reason_bit", 0))
            if reserved:        # a built-in host filter with a bit of its own
                p.reason_bits = reserved
                self.user_filters.append((p, reserved.bit_length() - 1))
                continue
            if bit >= L.USER_FILTER_SHIFT + L.MAX_USER_FILTERS:
                raise ConfigError("plugins.filter", "too many user filter plugins "
                                  f"(at most {L.MAX_USER_FILTERS})")
            p.reason_bits = 1 << bit
            self.user_filters.append((p, bit))
            bit += 1
        for p, _w in sorted(self.score_refs, key=lambda pw: scalar_first(pw[0])):
            if isinstance(p, FusedScore):
                continue
            if hasattr(p, "score"):
                self.user_scores.append((p, slot))
                p.score_slot = slot
                slot += 1
        self.n_slots = slot
        scalar_f = [p.filter_fn for p, _ in self.user_filters if isinstance(p, ScalarPlugin)]
        scalar_s = [p.score_fn for p, _ in self.user_scores if isinstance(p, ScalarPlugin)]
        self._scalar_in_kernel = False
        if self.backend_name == "numba" and (scalar_f or scalar_s) and self._scalar_contiguous():
            self.backend.use_user_functions(tuple(scalar_f), tuple(scalar_s),
                                            L.USER_FILTER_SHIFT, L.N_BUILTIN_SCORES)
            self._scalar_in_kernel = True

    def _scalar_contiguous(self) -> bool:
        """Scalar plugins compile into the kernel when they come first among
        the user plugins (their bits/slots are then the kernel's)."""
        kinds_f = [isinstance(p, ScalarPlugin) for p, _ in self.user_filters]
        kinds_s = [isinstance(p, ScalarPlugin) for p, _ in self.user_scores]
        return kinds_f == sorted(kinds_f, reverse=True) and kinds_s == sorted(kinds_s, reverse=True)

    def _options(self) -> dict:
        opts: dict = {}
        flags = 0
        for p in self.filters:
            if isinstance(p, FusedFilter):
                flags |= p.filter_flag
        for p in self.plugins.values():
            if isinstance(p, FusedScore) or isinstance(p, FusedFilter):
                qo = getattr(p, "query_options", None)
                if qo:
                    opts.update(qo())
        opts["filter_flags"] = flags
        return opts

    # -------------------------------------------------------------- cycle
    def plan_cycle(self, ctx: CycleContext):
        """PreFilter and PreScore for ``ctx.pod``, then its compiled query:
        a ``CyclePlan``, or the rejecting PreFilter's Status (with the
        plugins that skipped so far)."""
        state, pod = ctx.state, ctx.pod
        if self.call_every_plugin:
            calls = self._every_call
        else:
            calls = pod.memo.get(self._spec_calls_key)
            if calls is None:
                calls = self._spec_calls(pod)
        # the calls left, and what the plugins answered from the spec
        prefilters, skip_bits, spec_skipped, spec_skips, pre_scores, score_bits = calls
        skipped: set = set(spec_skipped)
        node_names = None
        restricted_by = []
        for pre_filter, name, bit in prefilters:
            st, names_ = pre_filter(ctx)
            code = st.code
            if code == _SKIP:
                skipped.add(name)
                skip_bits |= bit
            elif code in _PREFILTER_STOPS:          # rejected, or an error
                if spec_skipped:
                    # the plugins after it were never asked: no Skip of theirs
                    skipped.difference_update(n for b, n in spec_skips if b > bit)
                return st.with_plugin(name), skipped
            if names_ is not None:
                node_names = names_ if node_names is None else node_names & names_
                restricted_by.append(name)
        for pre_score, bit in pre_scores:
            if pre_score(ctx).code != _SKIP:
                score_bits |= bit
        parts = self._plan_parts.get((skip_bits, score_bits)) if self.keep_plan_parts else None
        if parts is None:
            parts = self._assemble_plan(skipped, score_bits)
            if self.keep_plan_parts:
                if len(self._plan_parts) >= _PLAN_PARTS_KEPT:
                    self._plan_parts.clear()
                self._plan_parts[(skip_bits, score_bits)] = parts
        opts, (active, norm, weights, _flags, active_plugins), host_filters, host_scores = parts
        q = self._queries.get(state, pod, opts)
        # Host filters whose answer is a fixed node mask for this pod
        # (``NodeMaskPlugin``) ride in the query's row mask: the fused pass
        # and its per-row cache stay on the fast path.
        masks: dict = {}
        if self._maskers:
            mask_keys = []
            masked = False
            for p in self._maskers:
                if p.name in skipped:
                    continue
                got = p.node_mask(ctx)
                if got is None:
                    continue
                key, mask = got
                skipped.add(p.name)
                masked = True
                if mask is not None:
                    masks[p.name] = mask
                    mask_keys.append(key)
            if masked:      # the host filters that run change with ``skipped``
                host_filters = self._host_filters(skipped)
        if node_names is not None:
            allowed = np.zeros(max(state.n_rows, 1), np.bool_)
            for n in node_names:
                r = state.node_rows.get(n)
                if r is not None:
                    allowed[r] = True
            for m in masks.values():
                allowed &= m[: allowed.shape[0]]
            q = q._replace(prefilter_rows=allowed)
        elif masks:
            q = self._masked_query(q, masks, mask_keys, state)
        return CyclePlan(q, skipped, node_names, restricted_by, active, norm, weights,
                         active_plugins, host_filters, host_scores, masks), skipped

    def _spec_calls(self, pod: PodRecord) -> tuple:
        """The PreFilter and PreScore calls ``pod``'s class makes under this
        profile, and what the plugins answered from its spec
        (``SpecAnswerPlugin``), kept in the class's memo: (the PreFilter
        steps to call, in profile order; the skip mask of those answered
        Skip, their names, and (bit, name) of each; the (PreScore, bit) to
        call; the scoring mask of the score plugins without a PreScore or
        answered Success).  A PreFilter answered Success is left out as if
        called (no names, nothing kept)."""
        prefilters, names_, skips = [], [], []
        skip_bits = 0
        for step, answer in zip(self._prefilter_steps, self._prefilter_answers):
            code = answer(pod, PRE_FILTER) if answer is not None else None
            if code == _SKIP:
                skip_bits |= step[2]
                names_.append(step[1])
                skips.append((step[2], step[1]))
            elif code != _SUCCESS:
                prefilters.append(step)
        pre_scores = []
        score_bits = 0
        for (_p, pre_score, bit), answer in zip(self._score_steps, self._score_answers):
            if pre_score is None:
                score_bits |= bit
                continue
            code = answer(pod, PRE_SCORE) if answer is not None else None
            if code == _SUCCESS:
                score_bits |= bit
            elif code != _SKIP:
                pre_scores.append((pre_score, bit))
        got = (tuple(prefilters), skip_bits, frozenset(names_), tuple(skips),
               tuple(pre_scores), score_bits)
        pod.memo[self._spec_calls_key] = got
        return got

    def _assemble_plan(self, skipped: set, score_bits: int) -> tuple:
        """What the PreFilters that skipped (``skipped``, before the node
        masks) and the score plugins that passed PreScore (``score_bits``,
        bits of ``_score_steps``) decide for a cycle: (its query options,
        the score setup (``_score_setup``), the host filters and the host
        scores that run, as ``CyclePlan`` holds them)."""
        filter_flags = 0
        for p in self._fused_filters:
            if p.name not in skipped:
                filter_flags |= p.filter_flag
        scoring = tuple(p for p, _pre, bit in self._score_steps if score_bits & bit)
        setup = self._score_setup(scoring)
        score_flags = setup[3]
        opts = self._options_cache.get((filter_flags, score_flags))
        if opts is None:
            opts = QueryOptions(**{**self._base_options, "filter_flags": filter_flags,
                                   "score_flags": score_flags})
            self._options_cache[(filter_flags, score_flags)] = opts
        # Host-side plugins that run for this pod: filters whose PreFilter did
        # not Skip, scores that passed PreScore (a skipped plugin keeps the
        # numba backend on its cached per-row path).
        host_scores = [(p, s) for p, s in self.user_scores if p in scoring
                       and not (self._scalar_in_kernel and isinstance(p, ScalarPlugin))]
        return opts, setup, self._host_filters(skipped), host_scores

    def _host_filters(self, skipped: set) -> list:
        """The host filters (plugin, reason bit) that run when ``skipped``
        skipped (a fresh list: a cycle's plan owns it)."""
        return [(p, b) for p, b in self.user_filters if p.name not in skipped
                and not (self._scalar_in_kernel and isinstance(p, ScalarPlugin))]

    def _masked_query(self, q, masks: dict, keys: list, state):
        """``q`` with the rows outside ``masks`` disallowed; kept per (query,
        mask keys) so that alike pods share it and its per-row cache (a key
        None: the mask is this pod's own, nothing kept)."""
        ck = None if any(k is None for k in keys) else (id(q), tuple(keys))
        got = self._masked.get(ck) if ck is not None else None
        arrays = tuple(masks.values())
        # identity of the query and of the very mask arrays (a key made of
        # ids is only trusted while those objects are the ones it was made for)
        if got is not None and got[0] is q and len(got[2]) == len(arrays) and all(
                a is b for a, b in zip(got[2], arrays)):
            self._masked.move_to_end(ck)
            return got[1]
        allowed = np.ones(max(state.n_rows, 1), np.bool_)
        for m in masks.values():
            allowed &= m[: allowed.shape[0]]
        masked = q._replace(prefilter_rows=allowed)
        if ck is not None:
            self._masked[ck] = (q, masked, arrays)
            while len(self._masked) > 256:
                self._masked.popitem(last=False)
        return masked

    def run_cycle(self, state: ClusterState, pod: PodRecord, *, seed: int = 0,
                  attempt: int = 0, start_index: int = 0, all_nodes: bool = False,
                  want_scores: bool = True, columns=None,
                  nominated=None) -> CycleResult | None:
        """Filter and score ``pod`` against ``state``; nothing is reserved.
        ``columns``: the ``ColumnSource`` the fused pass reads instead of
        ``state`` (the nominated pods' overlay of the requested columns)
        and ``nominated`` the cycle's ``NominatedPods`` for the host
        plugins; then None when the cycle would read more than these do (a
        PreFilter rejects, a host plugin runs that does not count nominated
        pods per node itself: ``counts_nominated_per_node``)."""
        ctx = CycleContext(state, pod, self)
        ctx.data[CYCLE_DRAW] = (seed, attempt)
        if nominated is not None:
            ctx.data[NOMINATED_PODS] = nominated
        all_rows = state.valid_rows()
        plan, skipped = self.plan_cycle(ctx)
        if not isinstance(plan, CyclePlan):
            if columns is not None:
                return None
            return self._rejected_by_prefilter(all_rows, plan, skipped)
        if columns is not None and not all(
                getattr(p, "counts_nominated_per_node", None) is not None
                and p.counts_nominated_per_node(ctx)
                for p, _ in itertools.chain(plan.host_filters, plan.host_scores)):
            return None
        n = all_rows.shape[0]
        if all_nodes or n == 0:
            start, to_find = 0, max(n, 1)
        else:
            start = start_index % n
            to_find = num_feasible_nodes_to_find(self.percentage, n)
        extra = (self._user_stage(ctx, rotated(all_rows, start), plan.host_filters,
                                  plan.host_scores, to_find)
                 if plan.host_filters or plan.host_scores else None)
        source = state if columns is None else columns
        res = self.backend.evaluate(source, all_rows, start, plan.query, to_find, plan.active,
                                    plan.norm, plan.weights, self.n_slots, extra, want_scores,
                                    seed=seed)
        sel = -1
        ties = res.ties
        if len(ties) == 1:      # one best node (a backend that ranked the ties itself)
            sel = int(all_rows[(int(ties[0]) + start) % n])
        elif len(ties):
            # the tied positions' rows, read without rotating every row
            # (position j is row all_rows[(start + j) % n])
            tied = (ties + start) % n if start else ties
            sel = tied_node(source, seed, all_rows[tied])
        pf_rejects = {}
        if plan.node_names is not None:
            pf_rejects = {"plugins": plan.restricted_by, "names": plan.node_names}
        if plan.masks:
            pf_rejects["masks"] = plan.masks
        return CycleResult(all_rows, start, res.reasons, res.scores, res.total, res.processed,
                           res.found, sel, Status.OK, pf_rejects, plan.active_plugins,
                           skipped, plan.query)

    def place_run(self, state: ClusterState, pods: list, *, seed: int, attempt: int,
                  start_index: int) -> tuple[np.ndarray, int] | None:
        """Schedule ``pods`` (alike: one signature) in one compiled call, as
        their cycles one after another would: each takes the best node (the
        seeded tie rule, ``tied_node``), is accounted on it and recorded in
        the state (``ClusterState.register_run``), and that node's answers
        are recomputed; with percentageOfNodesToScore below every node each
        pod scans from where the previous one stopped.  Returns (the rows
        chosen, [p] int64 with p <= len(pods); the next start index): the
        run stops before the first pod that fits nowhere (pods[p] then takes
        the usual cycle).

        Host plugins take part through their compiled forms (``_run_forms``).
        Where the sort stage's backend (``_sort_backend``) has a sort path
        (``place_run_sorted``: every score node-local, every node scored) it
        places the run, else the compiled
        run does; the sort path also stops before a pod whose cycle would
        see a normalization maximum move (that pod takes its own cycle).

        None (nothing done) when such a run cannot be compiled: the backend
        has none, a PreFilter rejects the pod or narrows its nodes, a host
        plugin has no compiled form for it, or the pod holds host ports.
        After a run, ``last_run_path`` names the path that placed it
        (``SORT_PATH``, or the backend's ``run_path``: ``compiled_run`` on
        numba, ``device_run`` on cuda)."""
        place = getattr(self.backend, "place_run", None)
        pod = pods[0]
        if place is None or pod.host_ports or any(
                n != "pods" and n not in state.resources.index for n in pod.requests):
            return None
        ctx = CycleContext(state, pod, self)
        plan, _ = self.plan_cycle(ctx)
        if not isinstance(plan, CyclePlan) or plan.node_names is not None:
            return None
        all_rows = state.valid_rows()
        n = all_rows.shape[0]
        if n == 0:
            return None
        forms = self._run_forms(ctx, plan)
        if forms is None:
            return None
        for p in self._run_reservers:
            k = p.run_prefix(ctx, pods)
            if k < len(pods):
                pods = pods[:k]
        if not pods:
            return None
        request = state.resource_vector(pod.requests, intern=False)
        request[L.RES_PODS] = 1
        nonzero = np.array([pod.nonzero_cpu, pod.nonzero_memory], np.int64)
        if not state.room_for(request, nonzero, len(pods)):
            return None
        nz = (pod.nonzero_cpu, pod.nonzero_memory)

        def register(rows):
            placed = pods[: rows.shape[0]]
            state.register_run(placed, rows, request, nz)
            for p in self._run_reservers:
                p.reserve_run(ctx, placed, rows)
        args = (state, all_rows, start_index % n, plan.query,
                num_feasible_nodes_to_find(self.percentage, n), plan.active, plan.norm,
                plan.weights, self.n_slots, len(pods), seed, attempt, request, nonzero, register)
        # the sort path first (node-local scores, every node scored); it
        # answers None where it does not apply
        place_sorted = getattr(self._sort_backend(), "place_run_sorted", None)
        if place_sorted is not None:
            got = place_sorted(*args, **forms)
            if got is not None:
                self.last_run_path = SORT_PATH
                return got
        got = place(*args, **forms)
        if got is not None:
            self.last_run_path = getattr(self.backend, "run_path", COMPILED_RUN_PATH)
        return got

    def _sort_backend(self):
        """The backend whose sort path places runs: the sort stage's
        (``auto`` with a GPU: cuda), unless user functions were compiled
        into the cycle backend's fused pass (only that pass knows them)."""
        if self._scalar_in_kernel:
            return self.backend
        return self.stage_backend(SORT)

    def place_block(self, state: ClusterState, pods: list, *, seed: int, attempt: int,
                    start_index: int):
        """Unlike pods placed in one compiled call (``runtime.blocks``): a
        ``BlockResult`` for a prefix of ``pods``, or None when this profile
        or the state has no block form."""
        n = state.num_nodes
        if self.block_setup is None or num_feasible_nodes_to_find(self.percentage, n) < n:
            return None
        return place_block(self, state, pods, seed=seed, attempt=attempt,
                           start_index=start_index)

    def _run_forms(self, ctx, plan: CyclePlan) -> dict | None:
        """The host plugins of a run as the arrays the compiled run keeps
        current (``kernels.domain_rules``), as ``place_run`` keywords:
        ``rules`` from the filters' ``RunFilterPlugin.run_rules``
        (PodTopologySpread's DoNotSchedule skew, InterPodAffinity's required
        affinity and anti-affinity), ``spread`` / ``affinity`` from the
        scores' ``RunScorePlugin.run_score`` (ScheduleAnyway spread, pod
        affinity weights).  A host plugin that skipped ``ctx.pod`` must
        promise the skip holds for every alike pod whatever the run places
        (``RunSkipPlugin``; a pod's preferred affinity, say, scores the next
        pods once the first is placed), or, for a score, take part from the
        start (nothing to score yet gives every node the same value).  None
        when some plugin has no such form."""
        state = ctx.state
        scoring = [p for p, _ in plan.host_scores]
        for point, hosts, running in (
                ("preFilter", self.user_filters, {id(p) for p, _ in plan.host_filters}),
                ("preScore", self.user_scores, {id(p) for p in scoring})):
            for p, _ in hosts:
                if id(p) in running or (self._scalar_in_kernel and isinstance(p, ScalarPlugin)):
                    continue
                if isinstance(p, RunSkipPlugin) and p.run_keeps_skip(ctx, point):
                    continue
                if point == "preScore" and isinstance(p, RunScorePlugin):
                    scoring.append(p)
                    continue
                return None
        rules = []
        for p, _bit in plan.host_filters:
            got = p.run_rules(ctx) if isinstance(p, RunFilterPlugin) else None
            if got is None:
                return None
            rules.extend(got)
        forms = {"rules": None, "spread": None, "affinity": None}
        try:        # ValueError: domains that do not cover the nodes (no run then)
            if rules:
                forms["rules"] = stack_rules(rules, state.n_rows, grouped_rows(state))
            for p in scoring:
                got = p.run_score(ctx) if isinstance(p, RunScorePlugin) else None
                if isinstance(got, SpreadScore) and forms["spread"] is None:
                    forms["spread"] = stack_spread(got, state.n_rows)
                elif isinstance(got, AffinityScore) and forms["affinity"] is None:
                    forms["affinity"] = stack_affinity(got, state.n_rows,
                                                       self._weight_of[id(p)])
                else:
                    return None
        except ValueError:
            return None
        return forms

    def _user_stage(self, ctx, rows, host_filters, host_scores, to_find):
        """Array user plugins (and scalar ones outside the numba kernel) as
        a post-step of the fused pass.

        A host filter with ``fused_exemptions(ctx, rows) -> [M] int64 |
        None`` clears those reason bits of the fused filters on the rows
        first: a check it takes over on some nodes (DynamicResources for
        extended resources DRA serves where the node does not offer them).

        A score plugin with ``normalize_scores(ctx, rows, raw, scored) ->
        [M] int64`` normalizes itself here, on the host: ``scored`` marks the
        rows that will be scored (feasible, within percentageOfNodesToScore),
        and its slot's kernel normalization is NORMALIZE_NONE.

        ``run.cycle_rules()`` offers the host filters as per-domain rules
        (each filter's ``cycle_rules(ctx)``, ``kernels.domain_rules_cycle``)
        for a backend that tests them where it picks the node (the cuda
        backend's device pick, the numba backend's compiled scan) instead
        of calling ``run``; None where some
        filter has no such form for this cycle or a score runs here."""
        def run(reasons, raw):
            # One compiled pass per plugin (kernels.domains.host); reasons and
            # raw are the backend's own arrays for this cycle, updated in place.
            reasons = np.ascontiguousarray(reasons, dtype=np.int64)
            if not (raw.dtype == np.int64 and raw.flags.c_contiguous):
                raw = np.ascontiguousarray(raw, dtype=np.int64)
            for p, _bit in host_filters:
                exempt = getattr(p, "fused_exemptions", None)
                clear = exempt(ctx, rows) if exempt is not None else None
                if clear is not None:
                    # the fused filters' reasons this plugin answers for itself
                    np.bitwise_and(reasons, ~np.asarray(clear, np.int64), out=reasons)
            for p, bit in host_filters:
                ok = np.ascontiguousarray(p.filter(ctx, rows), dtype=np.bool_)
                _T.host.or_filter_bits(reasons, ok, int(np.int64(1) << bit),
                                       int(L.R_INVALID_ROW))
            scored = None
            for p, slot in host_scores:
                s = np.ascontiguousarray(p.score(ctx, rows), dtype=np.int64)
                norm = getattr(p, "normalize_scores", None)
                if norm is not None:
                    if scored is None:
                        scored = np.empty(reasons.shape[0], np.bool_)
                        _T.host.scored_rows(reasons, int(to_find), scored)
                    s = np.ascontiguousarray(norm(ctx, rows, s, scored), dtype=np.int64)
                _T.host.put_slot(raw, slot, s, reasons)
            return reasons, raw
        def cycle_rules():
            # The host filters as per-domain rules a backend may test where
            # it picks (``cycle_rules`` of each; ``kernels.domain_rules_cycle``)
            # instead of calling ``run``: None unless every filter has that
            # form for this cycle and no score runs on the host.
            if host_scores:
                return None
            out = []
            for p, _bit in host_filters:
                form = getattr(p, "cycle_rules", None)
                if form is None or getattr(p, "fused_exemptions", None) is not None:
                    return None
                got = form(ctx)
                if got is None:
                    return None
                out.extend(got)
            return out
        # The slots ``run`` writes at every position (a backend may take the
        # other slots from elsewhere, e.g. its per-row cache).
        run.slots = tuple(slot for _p, slot in host_scores)
        run.cycle_rules = cycle_rules
        return run

    def _score_setup(self, scoring: tuple):
        """(active [S] bool, norm [S], weights [S], score_flags, plugins) for a
        set of score plugins that passed PreScore (memoized: few distinct sets)."""
        got = self._score_setups.get(scoring)
        if got is None:
            active = np.zeros(self.n_slots, np.bool_)
            norm = np.zeros(self.n_slots, np.int64)
            weights = np.zeros(self.n_slots, np.int64)
            flags = 0
            weight_of = {id(p): w for p, w, _ in self._scorers}
            for p in scoring:
                slot = p.score_slot
                active[slot] = True
                norm[slot] = getattr(p, "normalize", NORMALIZE_NONE)
                weights[slot] = weight_of[id(p)]
                if slot < L.N_BUILTIN_SCORES:
                    flags |= 1 << slot
            got = (active, norm, weights, flags, list(scoring))
            self._score_setups[scoring] = got
        return got

    def _rejected_by_prefilter(self, rows, status, skipped) -> CycleResult:
        m = rows.shape[0]
        return CycleResult(rows, 0, np.full(m, -1, np.int64),
                           np.zeros((m, self.n_slots), np.int64), np.full(m, -1, np.int64),
                           m, 0, -1, status, {}, [], skipped)

    # --------------------------------------------------------- PostFilter
    def run_post_filter(self, ctx: CycleContext, result: CycleResult, victims,
                        seed: int = 0, attempt: int = 0):
        """The profile's PostFilter plugins (DefaultPreemption, Coscheduling...)
        for a failed cycle, in order, as upstream's RunPostFilterPlugins: the
        first that nominates a node, or returns anything but Unschedulable,
        decides; otherwise one outcome whose status joins every plugin's
        reasons with ", " (Status.Message).  ``victims`` is the cluster's
        victim table (``preemption.PodTable``).  None when the profile has
        no PostFilter."""
        outcomes = []
        for p in self._post_filters:
            out = p.post_filter(ctx, result, victims, seed=seed, attempt=attempt)
            if out.nominated_node is not None or out.status.code != Code.UNSCHEDULABLE:
                return out
            outcomes.append(out)
        if len(outcomes) <= 1:
            return outcomes[0] if outcomes else None
        reasons = [r for o in outcomes for r in o.status.reasons if r]
        # the first plugin stays the rejector, as upstream records it
        status = Status(Code.UNSCHEDULABLE, (", ".join(reasons),) if reasons else (),
                        outcomes[0].status.plugin)
        return dataclasses.replace(outcomes[0], status=status)

    # ------------------------------------------------------------ explain
    def node_status(self, ctx: CycleContext, result: CycleResult, j: int) -> Status | None:
        """The rejection of the j-th evaluated node (first rejecting plugin in
        profile order, as upstream), or None when it is feasible."""
        if not result.prefilter_status.ok:
            st = result.prefilter_status
            return Status(st.code, st.reasons, st.plugin)
        bits = int(result.reasons[j])
        if bits == 0:
            return None
        m = result.all_rows.shape[0]
        row = int(result.all_rows[(result.start + j) % m])
        pf = result.prefilter_plugin_rejects
        masks = pf.get("masks", {})
        if bits & int(L.R_PREFILTER_NAMES) and not (
                masks and ("names" not in pf or ctx.state.node_name(row) in pf["names"])):
            plugins = pf.get("plugins", [])
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                          (PREFILTER_REJECT_REASON.format(" ".join(plugins)),),
                          plugins[0] if plugins else "")
        for p in self.filters:
            mask = masks.get(p.name)
            if mask is not None and not mask[row]:
                return p.explain_status(ctx, row)
            own = bits & getattr(p, "reason_bits", 0)
            if own:
                if isinstance(p, FusedFilter):
                    return p.explain_reasons(ctx, row, own)
                if hasattr(p, "explain_status"):        # code and reasons of its own
                    return p.explain_status(ctx, row)
                return Status(Code.UNSCHEDULABLE, tuple(p.explain_reasons(ctx, row)), p.name)
        return Status(Code.ERROR, ("unexplained rejection",), "")

    def diagnosis(self, ctx: CycleContext, result: CycleResult) -> Diagnosis:
        """The FailedScheduling diagnosis of a cycle that found no node: the
        same statuses as ``node_status`` per node, found per plugin over
        arrays (a plugin explains all the nodes it rejected first at once),
        so a pod that fits nowhere in 10,000 nodes costs a few distinct
        statuses, not 10,000 Python calls."""
        state = ctx.state
        diag = Diagnosis(num_all_nodes=state.num_nodes)
        if not result.prefilter_status.ok:
            diag.pre_filter_msg = ", ".join(result.prefilter_status.reasons)
            return diag
        k = min(result.processed, result.rows.shape[0])
        bits = np.asarray(result.reasons[:k], np.int64)
        rows = result.rows[:k]
        if np.count_nonzero(bits) != k:
            rejected = np.flatnonzero(bits)
            rows = rows[rejected]
            bits = bits[rejected]
        ids = np.full(bits.shape[0], -1, np.int64)
        table: list[Status] = []
        index: dict[Status, int] = {}

        def assign(mask: np.ndarray | None, local_ids: np.ndarray, statuses: list) -> None:
            # mask None: every rejected node (one plugin explains them all)
            remap = np.empty(len(statuses), np.int64)
            for i, st in enumerate(statuses):
                remap[i] = index.setdefault(st, len(table))
                if remap[i] == len(table):
                    table.append(st)
            if mask is None:
                ids[:] = remap[local_ids]
            else:
                ids[mask] = remap[local_ids]

        left = np.ones(bits.shape[0], np.bool_)
        # the reason bits any rejected node carries: filters with none of
        # them rejected no node (most of them, most of the time)
        seen = int(np.bitwise_or.reduce(bits)) if bits.shape[0] else 0
        pre = int(L.R_PREFILTER_NAMES)
        own = (bits & pre) != 0 if seen & pre else np.zeros(bits.shape[0], np.bool_)
        pf = result.prefilter_plugin_rejects
        masks = pf.get("masks", {})
        if masks and own.any():
            # rows a mask plugin rejected are explained by it, in profile
            # order below; only rows outside a node-name set are the names'
            if "names" in pf:
                named = np.array([state.node_name(int(r)) in pf["names"] for r in rows],
                                 np.bool_)
                own &= ~named
            else:
                own[:] = False
        if own.any():
            plugins = result.prefilter_plugin_rejects.get("plugins", [])
            st = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                        (PREFILTER_REJECT_REASON.format(" ".join(plugins)),),
                        plugins[0] if plugins else "")
            assign(own, np.zeros(int(own.sum()), np.int64), [st])
            left &= ~own
        whole = not own.any()           # no node explained yet
        for p in self.filters:
            pm = masks.get(p.name)
            if pm is not None:
                mask = left & ~pm[rows]
                if mask.any():
                    assign(mask, *self._explain_many(p, ctx, rows[mask], bits[mask]))
                    left &= ~mask
                    whole = False
                continue
            rb = getattr(p, "reason_bits", 0)
            if not (rb & seen):
                continue
            mine = (bits & rb) != 0
            if whole and mine.all():
                # the usual failure: one plugin rejected every node (no
                # copies of the rows, no masks)
                assign(None, *self._explain_many(p, ctx, rows, bits & rb))
                left[:] = False
                break
            mask = left & mine
            if not mask.any():
                continue
            assign(mask, *self._explain_many(p, ctx, rows[mask], bits[mask] & rb))
            left &= ~mask
            whole = False
        if left.any():
            assign(left, np.zeros(int(left.sum()), np.int64),
                   [Status(Code.ERROR, ("unexplained rejection",), "")])
        diag.node_statuses = NodeStatuses(rows, ids, table, list(state.nodes))
        return diag

    @staticmethod
    def _explain_many(p, ctx: CycleContext, rows: np.ndarray, own: np.ndarray):
        """(ids [K], statuses) of the nodes ``rows`` that filter ``p``
        rejected with its reason bits ``own`` [K]: as ``node_status`` per
        node, once per distinct bits when the plugin's text depends on the
        bits alone (``explains_by_bits``), in one call when it explains
        arrays (``explain_many``), else per node with equal statuses
        merged."""
        if isinstance(p, FusedFilter) and p.explains_by_bits:
            if own.shape[0] and not (own != own[0]).any():
                # one reason everywhere (a pod too big for every node): no sort
                return (np.zeros(own.shape[0], np.int64),
                        [p.explain_reasons(ctx, int(rows[0]), int(own[0]))])
            uniq, first, inverse = np.unique(own, return_index=True, return_inverse=True)
            return inverse.reshape(-1), [p.explain_reasons(ctx, int(rows[f]), int(b))
                                         for b, f in zip(uniq.tolist(), first.tolist())]
        if hasattr(p, "explain_many"):
            return p.explain_many(ctx, rows)
        if isinstance(p, FusedFilter):
            statuses = [p.explain_reasons(ctx, r, b) for r, b in zip(rows.tolist(), own.tolist())]
        elif hasattr(p, "explain_status"):        # code and reasons of its own
            statuses = [p.explain_status(ctx, r) for r in rows.tolist()]
        else:
            statuses = [Status(Code.UNSCHEDULABLE, tuple(p.explain_reasons(ctx, r)), p.name)
                        for r in rows.tolist()]
        table = list(dict.fromkeys(statuses))
        index = {st: i for i, st in enumerate(table)}
        return np.fromiter((index[st] for st in statuses), np.int64, len(statuses)), table
