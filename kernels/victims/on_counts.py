"""SelectVictimsOnNode on counts for many node rows in one compiled pass,
and DryRunPreemption's visit with pickOneNodeForPreemption in the same pass.

Each node of ``rows`` is searched as upstream's SelectVictimsOnNode does:
every lower-priority pod off, the first Filter call, then the reprieve
(PDB-violating pods first, each group most important first: a pod goes back
and stays when the preemptor still fits, else it is a victim).  What a
Filter call reads while only one node's pods move is kept as numbers
(``victims._counts_core``): the built-in filters that pods do not change
once per node, NodeResourcesFit on the node's working requested column,
NodePorts on the ports of the pod put back, and, when the profile's
PodTopologySpread and/or InterPodAffinity run on the host, how many pods
matching each of their selectors left the node (``Counts``; the node's own
domain sums move, the rest of each rule comes from the baseline probes
``SpreadProbe`` / ``AffinityProbe``).  Same victims, codes and Filter-call
counts as ``search.select_victims`` (built-in filters) and the search on the
real state (``framework.preemption.host_search``).

The visit runs in the same pass: positions are searched in visiting order;
a candidate joins upstream's non-violating or violating list while that
list holds fewer than ``cap`` (numCandidates), the best listed one is kept
(``_core.ranks_before``'s order), and the pass stops after the position
where upstream's serial DryRunPreemption stops (a non-violating candidate,
and the lists hold ``cap`` together).  ``VisitState`` carries the visit
across calls (batches of positions).

Inputs: node columns and the preemptor's compiled ``PodQuery`` (its bitsets
as wide as the node bitsets: ``search.pad_query``), its priority, the
``search.VictimPods`` table (as wide as the node columns: ``search.fit_pods``)
and ``order`` [N, C] int64: per row the occupied slots most important
first (priority desc, start asc, slot asc), so a preemptor's lower-priority
pods are the tail of its row.

Outputs per batch index i (``Searched``): ``kind[i]`` (KIND_*), ``bits[i]``
(the built-in reason bits for KIND_BITS), ``stats[i]`` (``search.STAT_*``;
code 0 for the host filters' kinds), and with ``keep_victims`` the victims
``victims[i, :n_victims]``.  Only the visited prefix is written.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tensorsched.kernels import layout as L

from .search import N_STATS, filter_args

__all__ = ["Counts", "DeviceCounts", "KIND_AFFINITY", "KIND_ANTI", "KIND_BITS", "KIND_EXISTING",
           "KIND_MISSING", "KIND_NONE_LEFT", "KIND_NO_VICTIMS", "KIND_OK", "KIND_SKEW",
           "Searched", "VisitState", "importance_order", "visit"]

KIND_OK = 0             # a candidate
KIND_BITS = 1           # a built-in filter fails with every lower-priority pod gone
KIND_MISSING = 2        # PodTopologySpread: the node lacks a constraint's key
KIND_SKEW = 3           # PodTopologySpread: the skew stays too large
KIND_NONE_LEFT = 4      # every lower-priority pod reprieved
KIND_NO_VICTIMS = 6     # no lower-priority pod on the node
KIND_AFFINITY = 7       # InterPodAffinity codes 1-3 (AffinityProbe.code + 6)
KIND_ANTI = 8
KIND_EXISTING = 9
# The device search on counts (``victims._counts_cuda``) leaves a position
# the host filters reject (code 0 in ``stats`` here) this less its kind as
# its code, so the device pick reads code 0 as "a candidate" alone.
CODE_KIND_BASE = -16

_VS_NON_VIOLATING, _VS_VIOLATING, _VS_CALLS, _VS_BEST, _VS_VISITED, _VS_STOPPED = range(6)


class Counts(NamedTuple):
    """PodTopologySpread (S constraints) and InterPodAffinity (P conditions)
    on counts for a batch of m rows, C slots.

    match [S + P, m, C] int64: what the pod in a slot counts for each
    spread constraint, then each affinity condition.  Spread per
    constraint: sp_valid (the row has the key), sp_counted (its pods count
    in its domain), sp_here (its domain is present) [m, S] bool; sp_base
    (baseline domain sum), sp_bound (maxSkew - self), sp_other (least sum
    over the other present domains) [m, S] int64.  Affinity per condition:
    ia_code [P] (1 required affinity term, 2 own anti-affinity term, 3 bound
    pods' anti-affinity term), ia_valid [m, P] bool, ia_base [m, P],
    ia_pos [P] (positive domains of a code-1 term, -1: its key is nowhere),
    ia_self (the pod matches all its affinity terms), ia_first
    (InterPodAffinity runs before PodTopologySpread)."""

    match: np.ndarray
    sp_valid: np.ndarray
    sp_counted: np.ndarray
    sp_base: np.ndarray
    sp_bound: np.ndarray
    sp_other: np.ndarray
    sp_here: np.ndarray
    ia_code: np.ndarray
    ia_valid: np.ndarray
    ia_base: np.ndarray
    ia_pos: np.ndarray
    ia_self: bool
    ia_first: bool


class DeviceCounts(NamedTuple):
    """PodTopologySpread (S constraints) and InterPodAffinity (P
    conditions) on counts as the device search reads them (``Counts``'
    per-row arrays are worked out there, each node's thread its own row).

    nodes [N, 3S + P] int64 per node row: each constraint's domain id (-1:
    the row lacks the key), its counted domain id (-1: the row's pods do
    not count), the nominated pods it counts there (0 without), then each
    condition's domain id (-1: none); doms [D, 2S + P] int64 per domain:
    each constraint's baseline sum and presence (0/1), each condition's
    baseline sum; sp_scalars [S, 5]: maxSkew - self, minDomains enforced
    (0/1), the least present sum, how many domains hold it, the next
    (``SpreadProbe``); ia_code, ia_pos [P], ia_self, ia_first as
    ``Counts``'; class_match [S + P, K] what a pod of class k counts for
    each (a terminating pod counts for no spread constraint whatever its
    class).  ``tables``: the kept tables ``nodes`` and ``doms`` belong to
    (its ``generation``, ``nodes_changed``, ``doms_changed``: the rows
    changed since the generation before, None all), so a device copy
    follows by those rows; None: compared whole."""

    nodes: np.ndarray
    doms: np.ndarray
    sp_scalars: np.ndarray
    ia_code: np.ndarray
    ia_pos: np.ndarray
    ia_self: bool
    ia_first: bool
    class_match: np.ndarray
    tables: object = None


def no_counts() -> Counts:
    """Counts without host filters (the built-in filters only)."""
    b = np.zeros((0, 0), np.bool_)
    i = np.zeros((0, 0), np.int64)
    return Counts(np.zeros((0, 0, 0), np.int64), b, b, i, i, i, b,
                  np.zeros(0, np.int64), b, i, np.zeros(0, np.int64), False, False)


class VisitState:
    """The visit across batches: positions visited, Filter calls made, the
    candidate lists' lengths and the best listed candidate so far (its
    position, stats [7] and victims [C])."""

    def __init__(self, cap: int, slots: int):
        self.cap = int(cap)
        self.vs = np.zeros(6, np.int64)
        self.vs[_VS_BEST] = -1
        self.best_stats = np.zeros(N_STATS, np.int64)
        self.best_victims = np.zeros(max(slots, 1), np.int64)

    @property
    def visited(self) -> int:
        return int(self.vs[_VS_VISITED])

    @property
    def calls(self) -> int:
        return int(self.vs[_VS_CALLS])

    @property
    def stopped(self) -> bool:
        return bool(self.vs[_VS_STOPPED])

    @property
    def chosen(self) -> int:
        """The chosen position, -1 while there is no listed candidate."""
        return int(self.vs[_VS_BEST])

    def victims(self) -> np.ndarray:
        """[n] the chosen candidate's victim slots, most important first."""
        return self.best_victims[: int(self.best_stats[1])].copy()


class Searched(NamedTuple):
    """kind, bits [m]; stats [m, 7]; victims [m, C] (empty without
    ``keep_victims``): the visited prefix of a batch."""

    kind: np.ndarray
    bits: np.ndarray
    stats: np.ndarray
    victims: np.ndarray


def importance_order(prio: np.ndarray, start: np.ndarray, count: np.ndarray) -> np.ndarray:
    """[n, C] int64 per row the occupied slots most important first
    (priority desc, start asc, slot asc), then the free slots."""
    n, c = prio.shape
    slot = np.broadcast_to(np.arange(c), (n, c))
    free = slot >= count[:, None]
    if c == 0:
        # Writable, unlike the broadcast: a read-only array is another
        # signature of the compiled visit (another compile).
        return np.zeros((n, 0), np.int64)
    return np.ascontiguousarray(np.lexsort((slot, start, -prio, free), axis=-1), np.int64)


def alike_tail(order: np.ndarray, shape: np.ndarray, cls: np.ndarray, special: np.ndarray,
               count: np.ndarray) -> np.ndarray:
    """[n] per row the first position t of ``order`` ([n, C], see
    ``importance_order``) from which the occupied slots are alike: the same
    ``shape`` (request) and ``cls`` (what the host filters count, but for
    a terminating pod) [n, C], none ``special`` [n, C] bool (holds a host
    port, counts against a PDB, or is terminating).  ``count`` [n] occupied slots; t = count when the last is special."""
    n, c = order.shape
    if c == 0:
        return np.zeros(n, np.int64)
    sh = np.take_along_axis(shape, order, axis=1)
    cl = np.take_along_axis(cls, order, axis=1)
    sp = np.take_along_axis(special, order, axis=1)
    pos = np.arange(c)
    occupied = pos[None, :] < count[:, None]
    # t must pass every special position u (t >= u + 1) and every change
    # between u - 1 and u (t >= u).
    after_special = np.where(occupied & sp, pos + 1, 0).max(axis=1)
    change = np.zeros((n, c), np.bool_)
    change[:, 1:] = (sh[:, 1:] != sh[:, :-1]) | (cl[:, 1:] != cl[:, :-1])
    after_change = np.where(occupied & change, pos, 0).max(axis=1)
    return np.maximum(after_special, after_change).astype(np.int64)


_COMPILED = []                  # the compiled module, once imported


def _numba():
    """The compiled twin (``victims._numba``), imported on first use (numba
    compiles or loads its cache then) and kept: an import statement per
    call costs microseconds a call."""
    if not _COMPILED:
        from . import _numba        # numba: compiled when first used
        _COMPILED.append(_numba)
    return _COMPILED[0]


def index_rows(rows: np.ndarray, count: np.ndarray, prio: np.ndarray, start: np.ndarray,
               shape: np.ndarray, cls: np.ndarray, ports: np.ndarray, pdb: np.ndarray,
               dying: np.ndarray, order: np.ndarray, alike_from: np.ndarray) -> None:
    """Write ``order[rows]`` (``importance_order``) and ``alike_from[rows]``
    (``alike_tail``, special = a host port, a PDB bit or ``dying``) of a
    victim table in place: count [N]; prio, start, shape, cls [N, C];
    ports [N, C, WP]; pdb [N, C, WB]; dying [N, C] bool (terminating);
    order [N, C]; alike_from [N] (int64, C-contiguous)."""
    _numba().index_rows(np.ascontiguousarray(rows, np.int64), count, prio, start, shape, cls,
                        ports, pdb, dying, order, alike_from)


def visit(cols, q, priority: int, pods, order: np.ndarray, rows: np.ndarray, base: int,
          state: VisitState, counts: Counts | None = None, keep_victims: bool = False,
          any_pdb: bool = True, alike_from: np.ndarray | None = None) -> Searched:
    """Search ``rows`` (visit positions ``base``, ``base`` + 1, ...) until the
    visit stops; ``state`` moves on.  ``counts`` (batch-indexed like
    ``rows``): the host filters on counts, None for the built-in ones only.
    ``any_pdb`` False: no pod of the table counts against a PDB (their
    bits are not read).  ``alike_from`` [N] (``alike_tail``): a row whose
    lower-priority pods all sit in its alike tail is searched in
    O(victims); None: every row pod by pod."""
    rows = np.ascontiguousarray(rows, np.int64)
    m = rows.shape[0]
    c = max(pods.pod_prio.shape[1], 1)
    counts = counts if counts is not None else no_counts()
    kind = np.zeros(m, np.int64)
    bits = np.zeros(m, np.int64)
    stats = np.zeros((m, N_STATS), np.int64)
    victims = np.zeros((m if keep_victims else 0, c), np.int64)
    fit_cols, fit_want = fit_columns(q)
    flags = int(q.filter_flags)
    check_ports = bool(flags & L.F_PORTS) and bool(np.any(q.port_conflicts))
    scratch = (np.zeros(1 + fit_cols.shape[0], np.int64),
               np.zeros(1 + fit_cols.shape[0], np.int64),
               np.zeros(c, np.bool_), np.zeros(c, np.bool_),
               np.zeros(counts.match.shape[0], np.int64),
               np.zeros(pods.pdb_allowed.shape[0], np.int64), np.zeros(c, np.int64))
    if alike_from is None:
        alike_from = np.full(order.shape[0], c + 1, np.int64)
    _numba().visit_rows(np.int64(base), rows, *filter_args(cols, q), np.int64(priority), *pods, order,
                  alike_from, fit_cols, fit_want, check_ports, bool(any_pdb),
                  counts.match, counts.sp_valid, counts.sp_counted, counts.sp_base,
                  counts.sp_bound, counts.sp_other, counts.sp_here, counts.ia_code,
                  counts.ia_valid, counts.ia_base, counts.ia_pos, bool(counts.ia_self),
                  bool(counts.ia_first), np.int64(state.cap), state.vs, state.best_stats,
                  state.best_victims, kind, bits, stats, victims, *scratch)
    return Searched(kind, bits, stats, victims)


def fit_columns(q) -> tuple[np.ndarray, np.ndarray]:
    """([K] resource columns, [K] amounts) NodeResourcesFit compares for
    query ``q`` besides the pod count (``fused._core.fit_reasons``)."""
    if not q.requests_anything:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # a few resources: one ``tolist`` each and a comprehension, not a
    # dozen NumPy calls on [R] arrays (a preemptor on the device asks)
    req = np.asarray(q.request, np.int64).tolist()
    ignored = np.asarray(q.fit_ignored, bool).tolist()
    pods = int(L.RES_PODS)
    cols = [r for r, v in enumerate(req) if v > 0 and r != pods and not ignored[r]]
    return np.array(cols, np.int64), np.array([req[r] for r in cols], np.int64)
