"""Builders for the kernel tests: small ``NodeColumns`` / ``PodQuery`` values
as plain NumPy arrays, a duck-typed column source for ``fused.evaluate``,
and the same inputs compiled from a real cluster (object dicts).

Kept in tests/kernels (no ``__init__``): pytest puts this folder on
``sys.path``, so the test modules import it as ``kernel_inputs``.
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import strategies as st

from support import strategies as ST
from tensorsched.kernels import layout as L

_LAYOUTS = itertools.count(1_000_000)


def cols(n, *, alloc=None, req=None, nonzero=None, unsched=None, valid=None, labels=None,
         nums=None, isnum=None, taints=None, images=None, ports=None, n_res=4):
    """NodeColumns for n nodes; every column defaults to 'empty'.

    alloc/req: [n, R] (defaults: 4000m cpu, 8Gi, 0 ephemeral, 110 pods /
    nothing requested); labels: [n, K] value ids (-1 absent); taints,
    images, ports: [n, W] int64 bitset words."""
    a = lambda x, dt=np.int64: np.ascontiguousarray(np.asarray(x, dt))
    if alloc is None:
        alloc = np.tile(np.array([4000, 8 << 30, 0, 110] + [0] * (n_res - 4), np.int64), (n, 1))
    alloc = a(alloc)
    req = a(req) if req is not None else np.zeros_like(alloc)
    nonzero = a(nonzero) if nonzero is not None else a(req[:, :2])
    lab = a(labels, np.int32) if labels is not None else np.zeros((n, 0), np.int32)
    return L.NodeColumns(
        allocatable=alloc, requested=req, nonzero_requested=nonzero,
        unschedulable=a(unsched if unsched is not None else [False] * n, np.bool_),
        valid=a(valid if valid is not None else [True] * n, np.bool_),
        label_vals=lab,
        label_nums=a(nums) if nums is not None else np.zeros(lab.shape, np.int64),
        label_isnum=a(isnum, np.bool_) if isnum is not None else np.zeros(lab.shape, np.bool_),
        taint_bits=a(taints) if taints is not None else np.zeros((n, 1), np.int64),
        image_bits=a(images) if images is not None else np.zeros((n, 1), np.int64),
        port_bits=a(ports) if ports is not None else np.zeros((n, 1), np.int64))


def program(selector=(), required=(), added=(), preferred=()):
    """(SelectorProgram, program_terms) from four lists of terms.

    A term is ``[(key, op, vals, num), ...]`` (an AND); a preferred term is
    ``(weight, [requirements])``.  vals are value ids."""
    offs, weights, keys, ops, nums, voffs, vals = [0], [], [], [], [], [0], []
    terms = [0]
    for group, weighted in ((selector, False), (required, False), (added, False),
                            (preferred, True)):
        for term in group:
            w, reqs = term if weighted else (1, term)
            for key, op, vs, num in reqs:
                keys.append(key)
                ops.append(op)
                nums.append(num)
                vals.extend(vs)
                voffs.append(len(vals))
            offs.append(len(keys))
            weights.append(w)
        terms.append(len(weights))
    a = lambda x: np.asarray(x, np.int64)
    return (L.SelectorProgram(a(offs), a(weights), a(keys), a(ops), a(nums), a(voffs), a(vals)),
            a(terms))


def req(key, op, vals=(), num=0):
    """One requirement for ``program``."""
    return (key, op, list(vals), num)


def query(*, n_res=4, filter_flags=0, score_flags=0, request=None, nonzero=None,
          anything=None, ignored=None, node_name_row=-1, prefilter=None,
          tolerates_unschedulable=False, taint_reject=(0,), taint_prefer=(0,),
          has_node_selector=False, has_required=False, has_added_required=False,
          programs=None, port_conflicts=(0,), strategy=L.STRATEGY_LEAST,
          fit_res=(0, 1), fit_kind=(L.RK_NONZERO, L.RK_NONZERO), fit_weights=(1, 1),
          shape=(), bal_res=(0, 1), bal_kind=(L.RK_NONZERO, L.RK_NONZERO),
          image_entries=(), image_scaled=(), image_max=L.IMAGE_MAX_PER_CONTAINER):
    """A PodQuery; ``request`` is the actual request vector ([R]); nonzero
    defaults to its cpu/memory; ``anything`` to 'some request > 0'."""
    a = lambda x, dt=np.int64: np.asarray(x, dt)
    request = a(request if request is not None else [0] * n_res)
    if nonzero is None:
        nonzero = request[:2]
    if anything is None:
        anything = bool((np.delete(request, L.RES_PODS) > 0).any())
    prog, terms = programs if programs is not None else program()
    return L.PodQuery(
        filter_flags=filter_flags, score_flags=score_flags, request=request,
        nonzero_request=a(nonzero), requests_anything=anything,
        fit_ignored=a(ignored if ignored is not None else [False] * request.shape[0], np.bool_),
        node_name_row=node_name_row,
        prefilter_rows=a(prefilter if prefilter is not None else [], np.bool_),
        tolerates_unschedulable=tolerates_unschedulable,
        taint_reject=a(taint_reject), taint_prefer=a(taint_prefer),
        has_node_selector=has_node_selector, has_required=has_required,
        has_added_required=has_added_required, programs=prog, program_terms=terms,
        port_conflicts=a(port_conflicts), fit_strategy=strategy, fit_res=a(fit_res),
        fit_kind=a(fit_kind), fit_weights=a(fit_weights),
        shape_util=a([u for u, _ in shape]), shape_score=a([s for _, s in shape]),
        bal_res=a(bal_res), bal_kind=a(bal_kind), image_entries=a(image_entries),
        image_scaled=a(image_scaled), image_max=image_max)


class Source:
    """The column source ``fused.*Backend.evaluate`` reads: every row is
    'written' at version 1, and each source has a layout of its own (so no
    backend cache outlives it)."""

    def __init__(self, columns: L.NodeColumns):
        self._cols = columns
        n = columns.allocatable.shape[0]
        self.version = 1
        self.layout_version = next(_LAYOUTS)
        self.row_version = np.ones(n, np.int64)

    def columns(self) -> L.NodeColumns:
        return self._cols


# ---------------------------------------------------------------------------
# Inputs compiled from object dicts
# ---------------------------------------------------------------------------

ALL_FILTERS = (L.F_UNSCHEDULABLE | L.F_NODE_NAME | L.F_TAINT | L.F_NODE_AFFINITY | L.F_PORTS
               | L.F_FIT)
ALL_SCORES = sum(1 << s for s in range(L.N_BUILTIN_SCORES))
# Default-profile kernel slot setup: DefaultNormalizeScore modes (TaintToleration
# reversed, NodeAffinity plain) and the default weights.
DEFAULT_NORM = np.array([0, 0, 2, 1, 0], np.int64)
DEFAULT_WEIGHTS = np.array([1, 1, 3, 2, 1], np.int64)


def state_of(objects):
    """A ClusterState holding the nodes and bound pods of ``objects``."""
    from tensorsched.framework.scheduler.cluster import build_cluster
    return build_cluster(objects).state


def compiled(state, pod_obj, **options):
    """compile_query for a pod dict under QueryOptions(**options)."""
    from tensorsched.framework.parsing.manifests import parse_pod
    from tensorsched.framework.state.query import QueryOptions, compile_query
    return compile_query(state, parse_pod(pod_obj), QueryOptions(**options))


def node_rows(state, objects):
    """{node name: row} for the Node objects of ``objects``."""
    return {o["metadata"]["name"]: state.node_rows[o["metadata"]["name"]]
            for o in objects if o.get("kind") == "Node"}


def resource_names(state) -> dict:
    """{row index r: resource name}."""
    return {r: name for name, r in state.resources.index.items()}


# ---------------------------------------------------------------------------
# Random stage inputs
# ---------------------------------------------------------------------------

@st.composite
def stage_case(draw):
    """(objects, pod dict, filter flags, score flags, Fit strategy, start,
    num_to_find) for one fused stage on a random cluster of 2-10 nodes."""
    objs = draw(ST.clusters(2, 10))
    names = [o["metadata"]["name"] for o in objs if o["kind"] == "Node"]
    pod = draw(ST.pods(names))
    n = len(names)
    filters = draw(st.sampled_from([ALL_FILTERS, L.F_FIT, L.F_TAINT | L.F_NODE_AFFINITY, 0]))
    scores = draw(st.integers(0, ALL_SCORES))
    strategy = draw(st.sampled_from([L.STRATEGY_LEAST, L.STRATEGY_MOST, L.STRATEGY_RATIO]))
    start = draw(st.integers(0, n - 1))
    to_find = draw(st.integers(1, n))
    return objs, pod, filters, scores, strategy, start, to_find
