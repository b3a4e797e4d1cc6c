"""DefaultPreemption for ``sweep_local``'s batched jobs: the pods' arrays
the trace kernel's queue preempts with (``kernels.batch.local_preempt``),
the checks of what it covers, and the rows' preemption counts.

A job "could preempt" when its profile has DefaultPreemption and a pod
whose preemptionPolicy is not Never has a priority above the lowest of the
cluster's pods (``LocalProber``'s own refusal, here lifted).  Covered: the
victims are the pods the kernel binds (the manifests' pending pods and the
trace's) and the manifests' bound pods, on the node-local filters and
scores, with the manifests' PodDisruptionBudgets (``pdb_kind`` /
``pdb_val`` / ``pmatch``: ``parsing.pdb``'s rules, the allowance
recounted in the kernel).  Refused by name (``BatchProfileError``): a
bound pod being deleted
(``metadata.deletionTimestamp``: a terminating victim); pod affinity or
anti-affinity terms on any pod (InterPodAffinity's answers change as
victims leave); a pending pod nominated in its manifest
(``status.nominatedNodeName``); a profile whose filters put
NodeResourcesFit before a usage-independent filter (the nodes where
preemption might help would depend on usage).  With node events, a
scenario's Pod delete of a pod a preemption removed before it stops the
Simulation with NotFound: the kernel's run goes on, and
``sweep_events.missed_delete`` reads it afterwards from the run's
victims (the Simulation's error, raised by ``ts.simulate_batch``, the
job's in a sweep).

With node events (a scenario's steps, a pod the usage-independent
filters reject everywhere) the kernel's form with both runs the job
(``kernels.batch.local_preempt_events``): ``preempt_event_arrays`` names
the manifests' bound pods in the events one by one, ``preempt_event_row``
counts the row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensorsched.framework.capacity.batch_probe import BatchProfileError, LocalProber
from tensorsched.framework.parsing.priorities import NEVER, pod_priority
from tensorsched.kernels import layout as L
from tensorsched.framework.parsing.node_lifecycle import drain_exemption
from tensorsched.framework.parsing.pdb import pdb_selects
from tensorsched.kernels.batch import local_preempt as P
from tensorsched.kernels.batch.local_events import (
    EV_EVICT,
    EV_KEEP,
    WHY_DELETED,
    WHY_EVICTED,
)
from tensorsched.kernels.batch.local_preempt import START_NOW

from .sweep_events import RowSteps, event_row

__all__ = ["PreemptSetup", "PreemptingProber", "pdb_columns",
           "departed_terminating", "preempt_event_arrays", "preempt_event_row", "preempt_row",
           "preempt_setup"]

DEFAULT_PREEMPTION = "DefaultPreemption"
# the usage-independent filters (UnschedulableAndUnresolvable where they reject)
STATIC_FILTERS = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity")
RES_PODS = L.RES_PODS


def _refuse(what: str, why: str) -> BatchProfileError:
    return BatchProfileError(f"{what}: {why}; the batched node-local trace kernel does not "
                             "cover it with preemption")


class PreemptingProber(LocalProber):
    """``LocalProber`` that leaves a pod that could preempt to the trace
    kernel's queue (``preempt_setup`` checks what it covers) instead of
    refusing it; ``bound`` keeps the manifests' bound pods."""

    def _check_preemption(self, bound) -> None:
        self.bound = list(bound)


@dataclass
class PreemptSetup:
    """Per pod, the setup's queue pods then the manifests' bound pods
    (``local_preempt``'s rows of one cluster): ``prio``, ``may`` (1: it
    may preempt), ``krank`` (its key's rank), ``pstart``
    (``status.startTime`` ns, START_NOW none), ``preq`` [., R] / ``pnz``
    [., 2] its requests (pods column 0) and non-zero cpu / memory;
    ``bnode`` each bound pod's node (its index in the setup's nodes); the
    profile's ``pct`` / ``least`` (minCandidateNodesPercentage /
    minCandidateNodesAbsolute); the manifests' PodDisruptionBudgets
    ``pdb_kind`` / ``pdb_val`` [NP] and ``pmatch`` [., NP] (``local_preempt``'s
    columns of one cluster)."""

    prio: np.ndarray
    may: np.ndarray
    krank: np.ndarray
    pstart: np.ndarray
    preq: np.ndarray
    pnz: np.ndarray
    bnode: np.ndarray
    pct: int
    least: int
    pdb_kind: np.ndarray
    pdb_val: np.ndarray
    pmatch: np.ndarray


def _preemption(fw):
    """The profile's DefaultPreemption plugin, or None."""
    if fw is None:
        return None
    return next((p for p in fw.plugins_at("postFilter") if p.name == DEFAULT_PREEMPTION), None)


def preempt_setup(prober: LocalProber, objects, pods: list, names: list) -> PreemptSetup | None:
    """The kernel's preemption inputs for ``pods`` (resolved records, the
    setup's order) on ``prober``'s cluster (``objects``: its
    ``ClusterObjects``; ``names`` its nodes in order); None when no pod
    could preempt; raises ``BatchProfileError`` (module doc) for what the
    kernel does not cover."""
    plugin = _preemption(prober.fw)
    if plugin is None or not pods:
        return None
    bound = list(getattr(prober, "bound", []))
    prio = np.asarray([pod_priority(p) for p in pods], np.int64)
    lowest = min([pod_priority(p) for p in bound] + prio.tolist())
    may = np.asarray([p.preemption_policy != NEVER for p in pods], np.int64)
    able = may.astype(bool) & (prio > lowest)
    if not able.any():
        return None
    top = int(prio[able].max())
    first = pods[int(np.flatnonzero(able & (prio == top))[0])]
    for b in bound:
        if b.deleting and pod_priority(b) < top:
            raise _refuse("metadata.deletionTimestamp", f"bound pod {b.key} is terminating "
                          f"and pod {first.key} (priority {top}) could preempt it")
    for p in list(bound) + list(pods):
        if p.pod_affinity or p.pod_anti_affinity:
            raise _refuse("InterPodAffinity", f"pod {p.key} has pod affinity or anti-affinity "
                          "terms (their answers change as victims leave)")
    for p in pods:
        if ((p.obj or {}).get("status") or {}).get("nominatedNodeName"):
            raise _refuse("status.nominatedNodeName", f"pod {p.key} is nominated in its "
                          "manifest")
    filters = [f.name for f in prober.fw.filters]
    if "NodeResourcesFit" in filters:
        fit = filters.index("NodeResourcesFit")
        early = [n for n in STATIC_FILTERS if n in filters and filters.index(n) > fit]
        if early:
            raise _refuse("NodeResourcesFit", f"filters before {early[0]} (the nodes where "
                          "preemption might help would depend on usage)")
    everyone = list(pods) + bound
    keys = [p.key for p in everyone]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    krank = np.empty(len(keys), np.int64)
    krank[np.asarray(order, np.int64)] = np.arange(len(keys), dtype=np.int64)
    pstart = np.asarray([START_NOW if p.start_ns is None else int(p.start_ns)
                         for p in everyone], np.int64)
    preq, pnz = _requests(prober, bound)
    at = {name: i for i, name in enumerate(names)}
    bnode = np.asarray([at[b.node_name] for b in bound], np.int64)
    args = plugin.args
    kind, val, pmatch = _pdbs(objects.pdbs, everyone)
    return PreemptSetup(np.concatenate([prio, [pod_priority(b) for b in bound]]).astype(np.int64),
                        np.concatenate([may, np.zeros(len(bound), np.int64)]), krank, pstart,
                        preq, pnz, bnode, int(args.min_candidate_nodes_percentage),
                        int(args.min_candidate_nodes_absolute), kind, val, pmatch)


def _budget(pdb) -> tuple[int, int]:
    """(``PDB_*`` kind, its number): how ``parsing.pdb.disruptions_allowed``
    finds the PDB's disruptionsAllowed."""
    if pdb.disruptions_allowed is not None:
        return P.PDB_FIXED, int(pdb.disruptions_allowed)
    for value, count, pct in ((pdb.max_unavailable, P.PDB_MAX_UNAVAILABLE,
                               P.PDB_MAX_UNAVAILABLE_PCT),
                              (pdb.min_available, P.PDB_MIN_AVAILABLE, P.PDB_MIN_AVAILABLE_PCT)):
        if value is not None:
            return (pct, int(value[:-1])) if isinstance(value, str) else (count, int(value))
    return P.PDB_NEITHER, 0


def _pdbs(pdbs, pods: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """([NP] kind, [NP] number, [len(pods), NP] ``pmatch`` code) of the
    manifests' PodDisruptionBudgets over ``pods`` (``parsing.pdb``'s
    rules: namespace and selector; ``status.disruptedPods``; terminating)."""
    budgets = [_budget(b) for b in pdbs]
    kind = np.asarray([k for k, _ in budgets], np.int64)
    val = np.asarray([v for _, v in budgets], np.int64)
    pmatch = np.zeros((len(pods), len(pdbs)), np.int64)
    for q, b in enumerate(pdbs):
        for k, p in enumerate(pods):
            if p.namespace != b.namespace or not pdb_selects(b.selector, p.labels):
                continue
            if p.name in b.disrupted_pods:
                pmatch[k, q] = P.PDB_DISRUPTED
            else:
                pmatch[k, q] = P.PDB_DELETING if p.deleting else P.PDB_HEALTHY
    return kind, val, pmatch


def pdb_columns(setups: list) -> dict:
    """``LocalPreempt``'s PodDisruptionBudget fields (``n_pdb``,
    ``pdb_kind``, ``pdb_val``, ``pmatch``) of one run per ``PreemptSetup``
    in ``setups``, padded to the most PDBs of a run (at least 1)."""
    w = max([s.pdb_kind.shape[0] for s in setups] + [1])
    n = len(setups)
    kind = np.zeros((n, w), np.int64)
    val = np.zeros((n, w), np.int64)
    rows = []
    for b, s in enumerate(setups):
        k = s.pdb_kind.shape[0]
        kind[b, :k] = s.pdb_kind
        val[b, :k] = s.pdb_val
        m = np.zeros((s.pmatch.shape[0], w), np.int64)
        m[:, :k] = s.pmatch
        rows.append(m)
    return {"n_pdb": np.asarray([s.pdb_kind.shape[0] for s in setups], np.int64),
            "pdb_kind": kind, "pdb_val": val,
            "pmatch": np.concatenate(rows) if rows else np.zeros((0, w), np.int64)}


def _requests(prober: LocalProber, bound: list) -> tuple[np.ndarray, np.ndarray]:
    """([P + B, R] requests, pods column 0; [P + B, 2] non-zero cpu and
    memory) of the queue pods (their classes') then the ``bound`` pods (as
    the cluster's state accounts them)."""
    base = prober.base
    req = base["c_request"][prober.class_of]
    nz = base["c_nonzero"][prober.class_of]
    r = req.shape[1]
    cols = prober.universe.state.pods.arrays()
    row = {k: i for i, k in enumerate(cols["key"].tolist())}
    breq = np.zeros((len(bound), r), np.int64)
    bnz = np.zeros((len(bound), 2), np.int64)
    for k, b in enumerate(bound):
        i = row[b.key]
        w = min(r, cols["request"].shape[1])
        breq[k, :w] = cols["request"][i, :w]
        bnz[k] = cols["nonzero"][i]
    breq[:, RES_PODS] = 0
    return (np.concatenate([req, breq]).astype(np.int64),
            np.concatenate([nz, bnz]).astype(np.int64))


def departed_terminating(res, depart, duration, grace: float) -> np.ndarray:
    """[P + B] bool: the victims of ``res`` (a run under the termination
    ``grace``, seconds; its ``victim`` and ``evicted_at`` per queue pod then
    per bound pod of the manifests, ``bind`` per queue pod, ``why`` where
    it has one) that left at their own departure while terminating:
    ``depart`` / ``duration`` [P] the trace's (seconds, inf or NaN none),
    the departure ``depart`` else ``bind + duration``, before the grace's
    end (first eviction + ``grace``; at that same time the termination
    comes first and the departure finds nothing), no node event having
    taken it (``why`` 0).  The Simulation counts such a pod departed."""
    ev = np.asarray(res.victim, np.int64)
    out = np.zeros(ev.shape[0], bool)
    if grace <= 0 or not ev.any():
        return out
    p = res.node.shape[0]
    dep = np.asarray(depart, np.float64)
    due = np.where(np.isfinite(dep), dep, np.asarray(res.bind, np.float64)
                   + np.asarray(duration, np.float64))
    at = np.asarray(res.evicted_at, np.float64)[:p]
    hit = (ev[:p] > 0) & np.isfinite(due) & (at + grace > due)
    why = getattr(res, "why", None)
    if why is not None:
        hit &= np.asarray(why)[:p] == 0
    out[:p] = hit
    return out


def preempt_row(row: dict, res, trace, departed: np.ndarray | None = None) -> dict:
    """``row`` (``sweep_batch.simulate_row``'s, of ``res``: a run whose
    ``victim`` [P + B] counts each pod's evictions, the queue's then the
    manifests' bound pods, and whose ``why``, where it has one, says how a
    pod a node event took left) with the preemptions counted: every
    eviction is one (the Simulation's Preempted events; a terminating
    victim chosen again counts again); a victim of the queue's that left
    by its preemption was scheduled, neither departed nor running nor
    deleted later (its departure finds it gone), a bound one is no longer
    running; one a step took while it terminated (``why``) left that way,
    counted so by the events' row; one that departed while terminating
    (``departed`` [P + B], ``departed_terminating``) departed."""
    ev = np.asarray(res.victim, np.int64)
    if not ev.any():
        return row
    why = getattr(res, "why", None)
    v = ev > 0 if why is None else (ev > 0) & (np.asarray(why) == 0)
    if departed is not None:
        v &= ~departed
    p = res.node.shape[0]
    q = v[:p]
    leaves = np.isfinite(np.asarray(trace.departure, np.float64))
    timed = np.isfinite(np.asarray(trace.duration, np.float64))
    row["preemptions"] += int(ev.sum())
    row["departed"] -= int((q & (leaves | timed)).sum())
    row["running"] -= int((q & ~leaves & ~timed).sum()) + int(v[p:].sum())
    return row


def preempt_event_arrays(arrays: dict, plan, bound: list, bnode: np.ndarray, p: int) -> dict:
    """The node events' kernel arrays ``arrays`` (``ev_t``, ``ev_kind``,
    ``ev_node``, ``ev_x``, ``ev_find``, ``ev_bound``, ``ev_used``,
    ``ev_nz``, one row per event of ``plan``) in the form with preemption:
    a Pod delete of the manifests' bound pod k names it P + k (``p`` queue
    pods), and before each drain an ``EV_KEEP`` per bound pod on its node
    that ``kubectl drain`` leaves (DaemonSet's, static; ``bound`` the
    records, ``bnode`` their local rows)."""
    out = {k: np.asarray(v).copy() for k, v in arrays.items()}
    at = {b.key: k for k, b in enumerate(bound)}
    for e, key in plan.bound_deleted.items():
        out["ev_bound"][e] = p + at[key]
    exempt = [k for k, b in enumerate(bound) if drain_exemption(b) is not None]
    if not exempt:
        return out
    rows = []       # (insert before event e, its copy with kind EV_KEEP and pod P + k)
    for e, kind in enumerate(out["ev_kind"].tolist()):
        if kind == EV_EVICT:
            rows += [(e, p + k) for k in exempt if int(bnode[k]) == int(out["ev_node"][e])]
    if not rows:
        return out
    where = np.asarray([e for e, _ in rows], np.int64)
    for name, v in out.items():
        extra = v[where].copy()
        if name == "ev_kind":
            extra[:] = EV_KEEP
        elif name == "ev_bound":
            extra[:] = [k for _, k in rows]
        elif name in ("ev_used", "ev_nz"):
            extra[:] = 0
        out[name] = np.insert(v, where, extra, axis=0)
    return out


def preempt_event_row(res, trace, steps: RowSteps, caps: tuple, base: tuple, bound: int,
                      interval: float, horizon: float, last_event: float,
                      departed: np.ndarray | None = None) -> dict:
    """``sweep_events.event_row`` of a run with preemption and node events
    (its arguments; ``res.why`` / ``res.victim`` per queue pod then per
    bound pod of the manifests, ``trace.table`` both's requests): the
    bound pods' leavings are in the run's log (not ``steps``' per-event
    totals), counted deleted / evicted by their ``why``, and the
    preemptions as ``preempt_row`` counts them (``departed`` its)."""
    p = res.node.shape[0]
    why = np.asarray(res.why, np.int64)
    flat = RowSteps(steps.t, steps.cap_cpu, steps.cap_mem,
                    np.full(steps.t.shape[0], base[0], np.int64),
                    np.full(steps.t.shape[0], base[1], np.int64), 0, 0)
    row = event_row(res, why[:p], trace, flat, caps, base, bound, interval, horizon,
                    last_event)
    left = why[p:]
    row["deleted"] += int((left == WHY_DELETED).sum())
    row["evicted"] += int((left == WHY_EVICTED).sum())
    row["running"] -= int((left != 0).sum())
    return preempt_row(row, res, trace, departed)
