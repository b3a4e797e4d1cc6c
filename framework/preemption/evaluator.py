"""DefaultPreemption's evaluator (pkg/scheduler/framework/preemption/preemption.go
and plugins/defaultpreemption/default_preemption.go), on columnar state.

Order of work, as upstream:
1. eligibility (``pod_eligible_to_preempt_others``);
2. the nodes where preemption might help: every node whose filter status is
   not UnschedulableAndUnresolvable (``nodes_where_preemption_might_help``);
3. ``numCandidates`` and a seeded ``offset``; nodes are visited from the
   offset, wrapping around, and the victim search of the visited nodes runs
   as ONE kernel call per batch (``tensorsched.kernels.victims.search``) on the
   framework's backend; the visit stops, exactly where upstream's serial
   DryRunPreemption would, once there is a non-violating candidate and the
   candidate lists hold numCandidates;
4. ``pick_one_node`` (fewest PDB violations, lowest highest-victim priority,
   smallest sum of priority + 2^31, fewest victims, latest earliest start of
   the highest-priority victims, then the first candidate).

Without host filters, steps 3 and 4 are array code over the search's
statistics (``kernels.victims.pick``); on the cuda backend the search, the
visit and the pick run on the device over its resident copy of the pod
table (``PodTable.device``) with one copy back per preemptor.  The same
holds on cuda when PodTopologySpread and/or InterPodAffinity are the only
host filters: the search on counts runs on the device, one thread per
node (``_device_counts_visit``, ``kernels.victims._counts_cuda``), over the
resident pod, index and probe tables (each sent by the rows that change;
the probe tables kept on the host too, ``PodTable.probe_tables``, and
updated by the rows the last preemptor's evictions and binding moved).

The caller (the scheduler loop) deletes the victims and retries the pod.

"The pod fits" means every filter of the profile that runs for the pod, as
upstream's SelectVictimsOnNode runs them.  The kernel re-runs the fused
built-in ones (NodeResourcesFit, NodePorts: see kernels/victims/_core.py).
When a host-side filter applies to the pod (PodTopologySpread or
InterPodAffinity that did not Skip, GpuShareFit for a GPU pod, user
plugins), the kernel is a pre-pass and every node it leaves open is searched
again on the host with all filters (``preemption.host_search``), on every backend
alike; pods without such filters keep the all-kernel path.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from itertools import chain, compress
from operator import is_, is_not

import numpy as np

from tensorsched.framework.config.plugin_args import DefaultPreemptionArgs
from tensorsched.framework.parsing.priorities import NEVER, pod_priority
from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.parsing.selectors import pod_terms
from tensorsched.framework.runtime.framework import PREFILTER_REJECT_REASON, splitmix64
from tensorsched.framework.runtime.plugin import FusedFilter
from tensorsched.framework.runtime.status import Code, Status
from tensorsched.framework.state.bound_pods import NO_START
from tensorsched.framework.state.cluster_state import ClusterState
from tensorsched.kernels import layout as L
from tensorsched.kernels.backend_names import VICTIMS
from tensorsched.kernels.fused.source import LOG_READ_MAX
from tensorsched.kernels.victims import on_counts as VS
from tensorsched.kernels.victims import pick as VP
from tensorsched.kernels.victims import search as V
from tensorsched.kernels.victims import statuses as VT
from tensorsched.kernels.victims import table_rows as VW
from tensorsched.kernels.victims.device import DeviceVictims, VisitBase, decode_code
from tensorsched.kernels.victims.sync_journal import SyncJournal

from .filter_hooks import exempt_bits
from .host_search import HostVictimSearch, active_host_filters, filters_memo
from .pdb_membership import PdbMembership
from .probe_tables import ProbeTables
from .visit import visit_candidates

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_ELIGIBLE_POLICY = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
_OFFSET_SALT = 0x5EED0FF5E7


# up to this many bound classes, ``PodTable._class_map`` checks them all
_FEW_CLASSES = 64
# up to this many rows, a sync reads the rows' pods with their slots
# (``BoundPods.pods_on_rows``); more: keys from the state, slots from the
# key index in one pass
_FEW_ROWS = 64
# False: every sync takes its rows' keys from the state and their slots
# from the key index (the way before ``pods_on_rows``; for paired timings,
# ``bench.victim_sync_paired``, and the tests that compare the two)
ROWS_FROM_BOUND_PODS = True
# On cuda, a preemptor whose only host filters are PodTopologySpread /
# InterPodAffinity is searched on counts on the device (``_device_counts_visit``);
# False: the device pre-pass, then the search on counts on the CPU (the
# path before, for before/after records: ``bench.victims_counts_device``).
DEVICE_ON_COUNTS = True
_NO_PDBS = np.zeros(1, np.int64)     # disruptionsAllowed without PDBs (read only by use)
# Where no host filter is asked, a failed cycle's helpful rows come from
# one compiled pass that writes no codes (``helpful_rows_of_reasons``);
# False: through ``status_codes_and_helpful`` (tests compare the two).
ONE_PASS_HELPFUL = True


def _words(n: int) -> int:
    return max(1, (n + 63) // 64)


# ---------------------------------------------------------------------------
# The pods of every node as the victim kernel's table
# ---------------------------------------------------------------------------

class PodTable:
    """``VictimPods`` kept in step with a ClusterState: rows written since the
    last sync are re-read, the rest are kept.  The rows written are found
    from the state's write log (``ClusterState.write_log``: O(writes since
    the last sync)), or, where the log no longer reaches back to the last
    sync or holds more entries since than a scan costs, by a scan of
    ``row_version`` (O(N)).  Counters: ``rows_scanned`` (log entries or
    ``row_version`` cells looked at to find them), ``rows_read`` (rows
    re-read), ``scans`` (syncs that scanned), ``log_searches`` (syncs that
    searched the log for its first entry since, not starting where the
    last sync stopped).

    For a device mirror (``device``): ``layout`` counts reallocations,
    ``syncs`` the syncs, ``row_stamp[i]`` is the sync that last wrote row
    i and ``written`` (a ``SyncJournal``) the rows each recent sync wrote,
    so the mirror uploads only the rows newer than its last upload, found
    in O(rows written)."""

    def __init__(self, state: ClusterState, pdbs=()):
        self.state = state
        # ``order[row]``: the row's occupied slots most important first
        # (``on_counts.importance_order``), and ``alike_from[row]``: where
        # its tail of alike pods starts (``on_counts.alike_tail``: same
        # shape and class, no host port, no PDB, not terminating), kept
        # with the rows: the rows a sync wrote are indexed when ``order``
        # or ``alike_from`` is next read (``_unindexed``), so a preemptor
        # whose search reads neither (the device search without host
        # filters) spares the pass.  Counters: ``index_passes`` and
        # ``rows_indexed``.
        self._order = np.zeros((0, 0), np.int64)
        self._alike_from = np.zeros(0, np.int64)
        self._unindexed: list[np.ndarray] = []
        self.index_passes = 0
        self.rows_indexed = 0
        self.pdbs = list(pdbs)
        # which PDBs cover each bound pod class, and their disruptionsAllowed
        # from class counts (no record or selector per bound pod)
        self.membership = PdbMembership(self.pdbs)
        self.seen = -1
        self.shape = None
        self.layout = 0
        self.syncs = 0
        self.row_stamp = np.zeros(0, np.int64)
        self.written = SyncJournal()
        self.rows_scanned = 0
        self.rows_read = 0
        self.scans = 0
        self._log_at = 0                    # the state's write log length at the last sync
        self.log_searches = 0               # syncs that searched the log for their start
        self._device = None
        # the probes' tables of the device search on counts, kept between
        # preemptors (updated and sent by the rows that change)
        self.probe_tables = ProbeTables()
        self.keys: list[list[str]] = []
        self._allowed_cache = (-1, None)
        # Pods alike for the pod-to-pod filters (namespace, labels, required
        # anti-affinity terms): ``cls[row, slot]`` a class id (-1: no pod),
        # ``class_records[id]`` one record of the class.
        self._class_ids: dict = {}
        self.class_records: list = []
        self._proto_class: dict = {}        # id(prototype) -> (prototype, class id)
        self._shape_cache = None
        # bound-pod class id -> this table's (-1: none yet), and the bound
        # class record each entry was mapped from (``_class_map``)
        self._cmap = np.full(0, -1, np.int64)
        self._cmap_recs: list = []
        self.class_entries_mapped = 0       # entries ``_class_map`` looked at one by one
        self._kept: dict[int, int] = {}     # row -> row version it is current at
        # batched row writes (one a sync that wrote rows) and pods whose
        # columns were read one at a time (host ports, PDBs): ``_write_rows``
        self.row_writes = 0
        self.pods_stepped = 0
        # keys whose slots a write looked up in the bound pods' key index
        # (a few rows' come from ``BoundPods.pods_on_rows`` instead)
        self.slots_looked_up = 0
        # The node columns the victim search reads: None for the state's;
        # the scheduling cycle sets its nominated overlay's around PostFilter
        # (the nominated pods counted in ``requested``, not in the state).
        self.nominated_columns = None

    @property
    def order(self) -> np.ndarray:
        """[N, C] int64 per row its slots, occupied ones most important
        first (``on_counts.importance_order``), level with the last sync."""
        if self._unindexed:
            self._index_written()
        return self._order

    @property
    def alike_from(self) -> np.ndarray:
        """[N] int64 per row where its tail of alike pods starts in
        ``order`` (``on_counts.alike_tail``), level with the last sync."""
        if self._unindexed:
            self._index_written()
        return self._alike_from

    def _index_written(self) -> None:
        """``order`` and ``alike_from`` of the rows the syncs since the
        last read wrote, in one compiled pass (``on_counts.index_rows``)."""
        parts, self._unindexed = self._unindexed, []
        rows = parts[0] if len(parts) == 1 else np.unique(np.concatenate(parts))
        self.index_passes += 1
        self.rows_indexed += rows.shape[0]
        VS.index_rows(rows, self.count, self.prio, self.start, self.shp, self.cls,
                      self.ports, self.pdb, self.dying, self._order, self._alike_from)

    def node_columns(self):
        """The node columns the victim search reads (``nominated_columns``
        or the state's)."""
        cols = self.nominated_columns
        return self.state.columns() if cols is None else cols

    def keep_rows(self, rows: dict[int, int]) -> None:
        """``rows``: row -> a row version at which the row holds exactly
        what this table last read for it (pods taken out and put back as
        they were since): the next sync keeps those rows unless they change
        again."""
        self._kept.update(rows)

    def _alloc(self, n, c, r, wp, wb):
        self.shape = (n, c, r, wp, wb)
        self.count = np.zeros(n, np.int64)
        self.prio = np.zeros((n, c), np.int64)
        self.start = np.full((n, c), V.START_NOW, np.int64)
        self.req = np.zeros((n, c, r), np.int64)
        self.ports = np.zeros((n, c, wp), np.int64)
        self.pdb = np.zeros((n, c, wb), np.int64)
        self.cls = np.full((n, c), -1, np.int64)
        self.shp = np.full((n, c), -1, np.int64)
        self.dying = np.zeros((n, c), np.bool_)
        self._order = np.zeros((n, c), np.int64)
        self._alike_from = np.zeros(n, np.int64)
        self._unindexed = []            # the sync that follows writes every row
        self.keys = [[] for _ in range(n)]
        self.row_stamp = np.zeros(n, np.int64)
        self.layout += 1
        self.written.reset(self.syncs)     # followers upload a new layout whole

    def sync(self) -> V.VictimPods:
        st = self.state
        n = max(st.n_rows, 1)
        r = len(st.resources)
        wp = _words(len(st.ports))
        wb = _words(len(self.pdbs))
        c = self.shape[1] if self.shape else 1
        on_node = st.pods_on_node
        if self.shape is None or self.shape[0] != n or self.shape[2] != r \
                or self.shape[3] != wp:
            # A fresh table holds the fullest row (it may have more pods than
            # the old table's slots: a node came while pods were bound).
            need_c = max(map(len, on_node[:st.n_rows]), default=1)
            self._alloc(n, max(need_c, c, 1), r, wp, wb)
            rows = np.arange(st.n_rows, dtype=np.int64)
            keys = on_rows = None
        else:
            rows = self._rows_written()
            if self._kept:
                rows = self._less_kept(rows)
            row_list = rows.tolist()
            # each row's pods in key order (slot order), for the write too;
            # a few rows' with their slots (``BoundPods.pods_on_rows``: no
            # lookup in the whole cluster's key index)
            on_rows = (st.pods.pods_on_rows(row_list, on_node)
                       if ROWS_FROM_BOUND_PODS and len(row_list) <= _FEW_ROWS else None)
            keys = list(map(sorted, on_rows if on_rows is not None
                            else map(on_node.__getitem__, row_list)))
            biggest = max(map(len, keys), default=0)
            if biggest > c:
                self._alloc(n, max(biggest, 2 * c), r, wp, wb)
                rows = np.arange(st.n_rows, dtype=np.int64)
                keys = on_rows = None
        self._kept = {}
        self.syncs += 1
        if rows.shape[0]:
            self._write_rows(rows, keys, on_rows)
            self.rows_read += rows.shape[0]
            self.row_stamp[rows] = self.syncs
            self._unindexed.append(rows)
        self.written.add(self.syncs, rows)
        self.seen = st.version
        return V.VictimPods(self.count, self.prio, self.start, self.req, self.ports,
                            self.pdb, self.allowed())

    def _less_kept(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` [k] int64 ascending less those ``keep_rows`` named that
        are still at the row version it gave (O(k + kept), no sort)."""
        st = self.state
        version, n = st.row_version, st.n_rows
        same = {row for row, at in self._kept.items() if row < n and version[row] == at}
        if not same:
            return rows
        return np.fromiter((i for i in rows.tolist() if i not in same), np.int64)

    def _rows_written(self) -> np.ndarray:
        """[k] int64 ascending: the rows the state wrote after version
        ``seen`` (the last sync): from the state's write log when it holds
        every write since and at most ``max(LOG_READ_MAX, N // 8)`` entries
        after ``seen`` (a numpy ``logged_rows``: O(entries)), else by a
        scan of ``row_version`` (O(N))."""
        st = self.state
        n = st.n_rows
        log = getattr(st, "write_log", None)
        if log is not None and self.seen >= log.floor:
            length, seen, versions = log.length, self.seen, log.versions
            # the first entry after ``seen`` (versions are non-decreasing):
            # where the log stood at the last sync, when the entries either
            # side of it say so (two reads, whatever the log did since),
            # else searched (counted: ``log_searches``)
            lo = self._log_at
            if not (lo <= length and (lo == 0 or versions[lo - 1] <= seen)
                    and (lo == length or versions[lo] > seen)):
                self.log_searches += 1
                lo = int(versions[:length].searchsorted(seen, "right"))
            self._log_at = length
            if length - lo <= max(LOG_READ_MAX, n // 8):
                self.rows_scanned += length - lo
                if length - lo <= 64:       # a preemptor's few: no sort of an array
                    got = np.array(sorted(set(log.rows[lo:length].tolist())), np.int64)
                else:
                    got = np.unique(log.rows[lo:length])
                return got[got < n] if got.shape[0] and got[-1] >= n else got
        self.rows_scanned += n
        self.scans += 1
        return np.flatnonzero(st.row_version[:n] > self.seen)

    @property
    def mirror(self) -> DeviceVictims | None:
        """The device mirror, None until a cuda search used it."""
        return self._device

    def device(self, pods: V.VictimPods):
        """The device mirror (``victims.device.DeviceVictims``, made on first
        use) level with ``pods`` (this table's last ``sync``, widened by
        ``search.fit_pods`` where the node columns grew)."""
        if self._device is None:
            self._device = DeviceVictims()
        self._device.sync_pods(pods, self.layout, self.row_stamp, self.syncs, self.written)
        return self._device

    def _write_rows(self, rows: np.ndarray, keys: list | None = None,
                    on_rows: list | None = None) -> None:
        """Rows ``rows`` [k] int64 (distinct) from the bound-pod columns, in
        one batch: each row's pods in key order (one ``sorted`` a row;
        ``keys``, when given, those lists),
        their slots (from ``on_rows``, the rows' {key: slot} dicts, when
        given, else the key index: ``slots_looked_up``) and class ids
        (``_class_map``) by C-level passes, then one compiled pass writes
        every row (``victims.table_rows``), the start times and terminating
        flags gathered there from the bound pods' columns by slot
        (``BoundPods.start_ns`` / ``deleting``), the PDB bits by the pods'
        classes (``PdbMembership.slot_words``).  A pod is read on its own
        (counted in ``pods_stepped``) only for its host ports."""
        st = self.state
        bound = st.pods
        self.row_writes += 1
        row_list = rows.tolist()
        if keys is None:
            keys = list(map(sorted, map(st.pods_on_node.__getitem__, row_list)))
        deque(map(self.keys.__setitem__, row_list, keys), maxlen=0)
        counts = np.fromiter(map(len, keys), np.int64, len(keys))
        flat = keys[0] if len(keys) == 1 else list(chain.from_iterable(keys))
        total = len(flat)
        if on_rows is None:
            self.slots_looked_up += total
            slots = bound.slots_of(flat)
        elif len(on_rows) == 1:
            slots = np.fromiter(map(on_rows[0].__getitem__, flat), np.int64, total)
        else:
            slots = np.fromiter(chain.from_iterable(map(map, [d.__getitem__ for d in on_rows],
                                                        keys)), np.int64, total)
        cmap = self._class_map(slots)
        # start times and terminating flags gathered by slot in the pass
        # (the bound pods' columns), no per-pod read of their extras
        VW.host.write_rows(rows, counts, slots, bound.class_id, bound.class_priority,
                           bound.shape_id, self._shape_requests(), cmap, bound.start_ns,
                           bound.deleting, NO_START, self.count, self.prio, self.start,
                           self.req, self.cls, self.shp, self.dying, self.ports, self.pdb,
                           V.START_NOW)
        if not (bound.ports or self.pdbs) or not total:
            return
        # (row, slot position) of every pod, row after row
        at_row = np.repeat(rows, counts)
        at_pos = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts,
                                                              counts)
        if bound.ports:
            ports, slot_list = bound.ports, slots.tolist()
            for j in np.flatnonzero(np.fromiter(map(ports.__contains__, slot_list),
                                                np.bool_, total)).tolist():
                self.pods_stepped += 1
                i, s = int(at_row[j]), int(at_pos[j])
                for b in ports[slot_list[j]]:
                    self.ports[i, s, b >> 6] |= np.int64(1) << np.int64(b & 63)
        if self.pdbs:       # by class (``PdbMembership``): no pod read on its own
            self.pdb[at_row, at_pos] = self.membership.slot_words(bound, slots, flat,
                                                                  self.pdb.shape[2])

    def _class_map(self, slots: np.ndarray) -> np.ndarray:
        """[classes] int64: this table's class id of each bound-pod class
        id, kept between syncs, level for the classes of the bound pods in
        ``slots`` [k].  A bound class id is reused once its class has left
        (``BoundPods._release_class``), so an entry holds while the class
        record it was mapped from is still its id's (by identity): with
        few classes every entry is checked in one C-level pass, else the
        ids met whose record changed (found in one C-level pass; looked at
        one by one, counted in ``class_entries_mapped``); an entry whose
        record changed is mapped again (``_class_of``)."""
        bound = self.state.pods
        classes = bound.classes
        if self._cmap.shape[0] < len(classes):
            grown = np.full(max(len(classes), 2 * self._cmap.shape[0]), -1, np.int64)
            grown[:self._cmap.shape[0]] = self._cmap
            self._cmap = grown
            self._cmap_recs.extend([None] * (grown.shape[0] - len(self._cmap_recs)))
        recs, cmap = self._cmap_recs, self._cmap
        if len(classes) <= _FEW_CLASSES:
            if all(map(is_, classes, recs)):
                return cmap
            met = range(len(classes))
        else:
            cid = bound.class_id[slots]
            if cid.shape[0] <= 4096:
                ids = cid.tolist()
                # the ids met whose record changed, in one C-level pass (a
                # preemptor's row: a few dozen pods, as many classes, one
                # of them new)
                met = set(compress(ids, map(is_not, map(classes.__getitem__, ids),
                                            map(recs.__getitem__, ids))))
            else:
                met = np.unique(cid).tolist()
        for c in met:
            self.class_entries_mapped += 1
            rec = classes[c]
            if recs[c] is not rec:
                if rec is not None:         # None: a freed id, no pod holds it
                    cmap[c] = self._class_of(rec)
                recs[c] = rec
        return cmap

    def _shape_requests(self) -> np.ndarray:
        """[S, R] int64 the request of every bound-pod shape (shapes are
        only ever appended: rebuilt when one was added or R changed)."""
        shapes = self.state.pods.shapes
        r = self.req.shape[2]
        got = self._shape_cache
        if got is None or got.shape != (len(shapes), r):
            got = np.zeros((len(shapes), r), np.int64)
            for j, (req, _nonzero) in enumerate(shapes):
                m = min(r, req.shape[0])
                got[j, :m] = req[:m]
            self._shape_cache = got
        return got

    def _class_of(self, rec) -> int:
        """The class id of a pod (``rec``: its record, or its class's
        prototype: namespace, labels and terms are class fields)."""
        known = self._proto_class.get(id(rec))
        if known is not None and known[0] is rec:
            return known[1]
        key = (rec.namespace, frozenset((rec.labels or {}).items()),
               pod_terms(rec)["req_anti"])
        got = self._class_ids.get(key)
        if got is None:
            got = self._class_ids[key] = len(self.class_records)
            self.class_records.append(rec)
        self._proto_class[id(rec)] = (rec, got)
        return got

    def allowed(self) -> np.ndarray:
        """[P] disruptionsAllowed of every PDB (at least one entry)."""
        if not self.pdbs:
            return _NO_PDBS     # one array: a device mirror uploads it once
        if self._allowed_cache[0] == self.state.version:
            return self._allowed_cache[1]
        out = self.membership.allowed(self.state.pods)
        self._allowed_cache = (self.state.version, out)
        return out


# ---------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------

def num_candidates(num_nodes: int, args: DefaultPreemptionArgs) -> int:
    """GetOffsetAndNumCandidates' count."""
    n = num_nodes * args.min_candidate_nodes_percentage // 100
    n = max(n, args.min_candidate_nodes_absolute)
    return min(n, num_nodes)


def seeded_offset(seed: int, attempt: int, num_nodes: int) -> int:
    """The random offset in [0, num_nodes), a pure function of (seed, attempt)."""
    if num_nodes <= 0:
        return 0
    return splitmix64((seed * 0x9E3779B97F4A7C15 + attempt + _OFFSET_SALT)
                      & ((1 << 64) - 1)) % num_nodes


def _terminating_by_preemption(pod: PodRecord) -> bool:
    if not pod.deleting:
        return False
    for c in ((pod.obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == "DisruptionTarget" and c.get("status") == "True" \
                and c.get("reason") == "PreemptionByScheduler":
            return True
    return False


def nominated_node_name(pod: PodRecord) -> str:
    return ((pod.obj or {}).get("status") or {}).get("nominatedNodeName") or ""


def pod_eligible_to_preempt_others(pod: PodRecord, state: ClusterState,
                                   nominated_status_code: Code | None) -> tuple[bool, str]:
    """(eligible, message): preemptionPolicy Never; a nominated node whose
    status is not UnschedulableAndUnresolvable and that holds a lower-priority
    pod terminating because of preemption makes the pod wait."""
    if pod.preemption_policy == NEVER:
        return False, NOT_ELIGIBLE_POLICY
    nominated = nominated_node_name(pod)
    if nominated:
        if nominated_status_code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True, ""
        row = state.node_rows.get(nominated)
        if row is not None:
            prio = pod_priority(pod)
            for key in state.pods_on_node[row]:
                other = state.pods.record(key)
                if pod_priority(other) < prio and _terminating_by_preemption(other):
                    return False, NOT_ELIGIBLE_TERMINATING
    return True, ""


def nodes_where_preemption_might_help(codes) -> np.ndarray:
    """[M] bool: preemption is attempted on nodes whose status code is not
    UnschedulableAndUnresolvable (nor Success: a feasible node never reaches here)."""
    codes = np.asarray(codes, np.int64)
    return (codes != int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)) & (codes != int(Code.SUCCESS))


def status_codes(fw, reasons: np.ndarray, ctx=None, rows: np.ndarray | None = None, *,
                 start: int = 0) -> np.ndarray:
    """[M] the status code of the first rejecting filter plugin (profile order)
    per node, from the fused reason bits; -1 for free rows.

    ``ctx`` and ``rows`` ([M] node rows) let a host filter with
    ``unresolvable(ctx, rows) -> [M] bool`` (PodTopologySpread's missing
    key, InterPodAffinity's required affinity) report
    UnschedulableAndUnresolvable where it does upstream; it is asked about
    the rows it rejects first only.  ``start``: position j of ``reasons``
    is position (start + j) % M of ``rows`` and of the answer (a cycle's
    evaluation order in, row order out); 0: the same order.

    One compiled pass (``kernels.victims.statuses``)."""
    reasons = np.ascontiguousarray(reasons, np.int64)
    m = reasons.shape[0]
    bits, code_of, ask = _rejectors(fw, ctx)
    codes = np.empty(m, np.int64)
    pending = VT.host.first_rejector(reasons, int(start) % max(m, 1), bits, code_of,
                                     int(L.R_PREFILTER_NAMES),
                                     int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
                                     int(Code.ERROR), int(L.R_INVALID_ROW), codes)
    if pending:
        _ask_unresolvable(codes, ask, ctx, rows)
    return codes


def status_codes_and_helpful(fw, reasons: np.ndarray, ctx, rows: np.ndarray, *,
                             start: int = 0) -> tuple[np.ndarray, np.ndarray, int]:
    """(``status_codes``' codes [M] in row order, then
    ``rows_where_preemption_might_help`` of them and ``rows`` [M]: the rows
    where preemption might help and how many others hold a status), in
    one compiled call where no host filter is left to ask (else the two
    passes, the host filters asked between)."""
    reasons = np.ascontiguousarray(reasons, np.int64)
    rows = np.ascontiguousarray(rows, np.int64)
    m = reasons.shape[0]
    bits, code_of, ask = _rejectors(fw, ctx)
    codes = np.empty(m, np.int64)
    helpful = np.empty(m, np.int64)
    pending, n, unhelpful = VT.host.codes_and_helpful(
        reasons, int(start) % max(m, 1), bits, code_of, int(L.R_PREFILTER_NAMES),
        int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), int(Code.ERROR), int(L.R_INVALID_ROW),
        codes, rows, int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), helpful)
    if pending:
        _ask_unresolvable(codes, ask, ctx, rows)
        n, unhelpful = VT.host.helpful_rows(codes, rows,
                                            int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), helpful)
    return codes, helpful[:n], int(unhelpful)


def helpful_rows_of_reasons(fw, reasons: np.ndarray, ctx, rows: np.ndarray, *,
                            start: int = 0) -> tuple[np.ndarray, int]:
    """``status_codes_and_helpful``'s rows where preemption might help [k]
    int64 and count of the others holding a status, without its codes:
    one compiled pass that writes no codes array
    (``statuses.helpful_of_reasons``); the nodes a host filter rejects
    first are kept among the rows and that filter asked about them
    (``unresolvable``, the same rows in the same order as
    ``status_codes_and_helpful`` asks), those it finds unresolvable
    dropped and counted.  Where every row helps the answer is ``rows``
    itself (the pass writes no copy; callers only read it).
    ``ONE_PASS_HELPFUL`` False: through ``status_codes_and_helpful``
    (tests compare the two)."""
    if not ONE_PASS_HELPFUL:
        _, got, unhelpful = status_codes_and_helpful(fw, reasons, ctx, rows, start=start)
        return got, unhelpful
    bits, code_of, ask = _rejectors(fw, ctx)
    reasons = np.ascontiguousarray(reasons, np.int64)
    rows = np.ascontiguousarray(rows, np.int64)
    m = reasons.shape[0]
    out = np.empty(m, np.int64)
    pending_at = np.empty(m if ask else 0, np.int64)
    pending_p = np.empty(m if ask else 0, np.int64)
    n, unhelpful, k = VT.host.helpful_of_reasons(
        reasons, int(start) % max(m, 1), bits, code_of, int(L.R_PREFILTER_NAMES),
        int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), int(Code.ERROR), int(L.R_INVALID_ROW),
        rows, int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), out, pending_at, pending_p)
    got = rows if n == m else out[:n]       # every row helps: the pass wrote no copy
    if not k:
        return got, int(unhelpful)
    at, by = pending_at[:k], pending_p[:k]
    keep = np.ones(n, bool)
    for p, plugin in ask:
        mine = at[by == p]
        if mine.shape[0]:
            keep[mine[np.asarray(plugin.unresolvable(ctx, got[mine]), bool)]] = False
    dropped = n - int(np.count_nonzero(keep))
    return (got[keep] if dropped else got), int(unhelpful) + dropped


def _ask_unresolvable(codes: np.ndarray, ask, ctx, rows) -> None:
    """The pending codes (``-(2 + p)``: host filter p rejected first) set
    to UnschedulableAndUnresolvable or Unschedulable as that filter's
    ``unresolvable(ctx, rows)`` answers for its rows."""
    at = np.flatnonzero(codes <= -2)
    for p, plugin in ask:
        mine = at[codes[at] == -(2 + p)]
        if not mine.shape[0]:
            continue
        unres = np.asarray(plugin.unresolvable(ctx, np.asarray(rows)[mine]), bool)
        codes[mine] = np.where(unres, int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
                               int(Code.UNSCHEDULABLE))


def _rejectors(fw, ctx):
    """(bits [P] int64, code_of [P] int64, [(p, plugin)]) of the profile's
    filters with reason bits, profile order: the code each reports where
    it rejects first, -1 where the plugin is asked (``unresolvable``, with
    ``ctx``), and those plugins by position.  Kept per framework (its
    filters and their bits are set when it is built) while its filter
    list holds the same plugins (``host_search.filters_memo``)."""
    if ctx is None:
        return filters_memo(fw, "rejectors", _rejectors_without_ctx)
    return filters_memo(fw, "rejectors asking", _rejectors_asking)


def _rejectors_without_ctx(fw):
    return _rejectors_of(fw, None)


def _rejectors_asking(fw):
    return _rejectors_of(fw, True)


def _rejectors_of(fw, ctx):
    """``_rejectors``' answer, built."""
    bits, code_of, ask = [], [], []
    for p in fw.filters:
        rb = int(getattr(p, "reason_bits", 0))
        if not rb:
            continue
        if isinstance(p, FusedFilter) and p.always_unresolvable:
            code = int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        elif ctx is not None and hasattr(p, "unresolvable"):
            code = -1
            ask.append((len(bits), p))
        else:
            code = int(Code.UNSCHEDULABLE)
        bits.append(rb)
        code_of.append(code)
    return np.array(bits, np.int64), np.array(code_of, np.int64), ask


def rows_where_preemption_might_help(codes_rows: np.ndarray, all_rows: np.ndarray) -> tuple[np.ndarray, int]:
    """(the rows of ``all_rows`` [M] where preemption might help
    (``nodes_where_preemption_might_help`` of ``codes_rows`` [M], row
    order), how many of the others hold a status: Success or
    UnschedulableAndUnresolvable), in one compiled pass."""
    out = np.empty(all_rows.shape[0], np.int64)
    n, unhelpful = VT.host.helpful_rows(np.ascontiguousarray(codes_rows, np.int64),
                                        np.ascontiguousarray(all_rows, np.int64),
                                        int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), out)
    return out[:n], int(unhelpful)


def status_of_bits(fw, ctx, row: int, bits: int) -> Status:
    """The Status the first rejecting filter reports for reason ``bits``."""
    if bits & int(L.R_PREFILTER_NAMES):
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                      (PREFILTER_REJECT_REASON.format(""),), "")
    for p in fw.filters:
        own = bits & int(getattr(p, "reason_bits", 0))
        if own:
            if isinstance(p, FusedFilter):
                return p.explain_reasons(ctx, row, own)
            return Status(Code.UNSCHEDULABLE, tuple(p.explain_reasons(ctx, row)), p.name)
    return Status(Code.ERROR, ("unexplained rejection",), "")


@dataclass
class Candidate:
    row: int
    node: str
    victims: list[str]              # pod keys, most important first
    num_pdb_violations: int
    stats: tuple


@dataclass
class PreemptionResult:
    """What PostFilter decided: the nominated node (None = none) and victims."""

    nominated_node: str | None
    victims: list[str] = field(default_factory=list)
    status: Status = Status.OK
    # Every candidate of upstream's lists with ``dry_run_all`` (and with host
    # filters); otherwise the chosen one only (the visit and the pick run
    # as array code, on the device with the cuda backend).
    candidates: list[Candidate] = field(default_factory=list)
    filter_calls: int = 0
    eligible: bool = True
    query: object = None            # the preemptor's PodQuery (for the retry)
    host_filters: list = field(default_factory=list)   # non-fused filters that ran

    @property
    def message(self) -> str:
        return "; ".join(self.status.reasons)


def pick_one_node(stats: np.ndarray) -> int:
    """pickOneNodeForPreemption over candidate stats [K, 7] (candidate order):
    the index of the chosen candidate."""
    k = stats.shape[0]
    if k == 0:
        return -1
    alive = np.arange(k)
    criteria = ((V.STAT_N_VIOLATIONS, -1), (V.STAT_TOP_PRIORITY, -1),
                (V.STAT_PRIORITY_SUM, -1), (V.STAT_N_VICTIMS, -1),
                (V.STAT_EARLIEST_START, 1))
    for col, sign in criteria:
        if alive.shape[0] == 1:
            break
        score = stats[alive, col] * sign if sign == 1 else -stats[alive, col]
        best = score.max()
        alive = alive[score == best]
    return int(alive[0])


def _fail_message(num_all: int, counts: dict[str, int]) -> str:
    parts = sorted(f"{n} {r}" for r, n in counts.items())
    return f"preemption: 0/{num_all} nodes are available: {', '.join(parts)}."


def _helpful_by_row(fw, ctx, result, node_codes, absent_code) -> tuple[np.ndarray, int]:
    """(the rows where preemption might help, how many others hold a
    status) from the Status code of each live node row in the failed
    cycle: its filter status (the rows in one compiled call:
    ``helpful_rows_of_reasons``), the PreFilter's for all, or
    ``node_codes``."""
    state, all_rows = ctx.state, result.all_rows
    if node_codes is None and result.prefilter_status.ok:
        # Evaluation order in, row order out (position j is row-order
        # position start + j, wrapped).
        return helpful_rows_of_reasons(fw, result.reasons, ctx, all_rows, start=result.start)
    if node_codes is not None:
        codes = np.array([int(node_codes.get(state.node_name(int(r)), absent_code))
                          for r in all_rows], np.int64)
    else:
        codes = np.full(all_rows.shape[0], int(result.prefilter_status.code), np.int64)
    return rows_where_preemption_might_help(codes, all_rows)


def _failure_reasons(fw, ctx, failures, counts: dict[str, int]) -> None:
    """Count into ``counts`` why each visited node gave no candidate."""
    for row, code in failures:
        if isinstance(code, tuple):         # a host filter's reasons
            reasons = code
        elif code == V.CODE_NO_VICTIMS:
            reasons = (NO_VICTIMS,)
        elif code == V.CODE_NONE_LEFT:
            reasons = (f"expected at least one victim pod on node {ctx.state.node_name(row)!r}",)
        else:
            reasons = status_of_bits(fw, ctx, row, code).reasons
        for r in reasons:
            counts[r] = counts.get(r, 0) + 1


def _candidates(fw, ctx, result, table: PodTable, scan, cap: int,
                every: bool, visit: VisitBase | None = None):
    """(candidates, index of the chosen one or -1, failures, Filter calls,
    active host filters) of the dry run over the nodes ``scan`` in visiting
    order (an array, or a ``Rotation``: the device searches read a few of
    its rows, the host paths take it whole).  ``every``: all candidates
    upstream's lists hold (non-violating first), else at least the chosen
    one (the fast paths return only it).  ``visit``: what ``scan`` is a
    rotation of (``_visit_base``), for the device searches."""
    state, q = ctx.state, result.query
    prio = pod_priority(ctx.pod)
    pods = table.sync()
    host = active_host_filters(fw, ctx, result.skipped_filters) if q is not None else []
    search = HostVictimSearch(ctx, q, host, prio, pods, table.keys,
                              classes=(table.cls, table.class_records),
                              order=table.order, alike_from=table.alike_from,
                              columns=table.nominated_columns) if host else None
    backend = fw.backend_for(VICTIMS)
    device = backend == "cuda" and not every and (
        search is None or (search.on_counts and DEVICE_ON_COUNTS))
    if not device:
        scan = np.asarray(scan)         # the host paths read every row
    if not every and backend == "numba" and (search is None or search.on_counts):
        try:
            got = visit_candidates(table.node_columns(), q, prio, pods, table.order, scan, cap,
                                   search, any_pdb=bool(table.pdbs),
                                   alike_from=table.alike_from)
        finally:
            if search is not None:
                search.close()
        if got.chosen < 0:
            return [], -1, got.failures, got.calls, host
        return ([_candidate(state, table, got.row, got.stats, got.victims)], 0, [],
                got.calls, host)
    if not every and backend == "cuda" and search is not None and search.on_counts \
            and DEVICE_ON_COUNTS:
        try:
            return (*_device_counts_visit(fw, state, q, prio, pods, scan, cap, table, search,
                                          visit), host)
        finally:
            search.close()
    if host:
        try:
            nv_list, v_list, failures, calls = _dry_run(fw, state, q, prio, pods, scan, cap,
                                                        search, table)
        finally:
            search.close()
        found = nv_list + v_list
        cands = [_candidate(state, table, row, stats, slots) for row, stats, slots in found]
        chosen = pick_one_node(np.array([c.stats for c in cands], np.int64)) if cands else -1
        return cands, chosen, failures, calls, host
    if backend == "cuda" and not every:
        return (*_device_visit(fw, state, q, prio, pods, scan, cap, table, visit), host)
    stats, victims = _search_until_stop(fw, state, q, prio, pods, scan, cap, table)
    pk = VP.visit_and_pick(stats, cap)
    seen = stats[: pk.visited]
    if every:
        kept = VP.listed(seen, cap)
        violating = seen[:, V.STAT_N_VIOLATIONS] > 0
        positions = np.concatenate((np.flatnonzero(kept & ~violating),
                                    np.flatnonzero(kept & violating)))
    else:
        positions = np.array([pk.chosen] if pk.chosen >= 0 else [], np.int64)
    cands = [_candidate(state, table, int(scan[j]), stats[j],
                        victims[j, : int(stats[j, V.STAT_N_VICTIMS])]) for j in positions]
    chosen = int(np.flatnonzero(positions == pk.chosen)[0]) if pk.chosen >= 0 else -1
    failures = _visit_failures(scan, seen) if pk.chosen < 0 else []
    return cands, chosen, failures, pk.calls, host


def _candidate(state, table: PodTable, row: int, stats, slots) -> Candidate:
    """The Candidate of node ``row``: ``stats`` [7] and ``slots`` [k]
    (int arrays or sequences) as Python ints by one ``tolist`` each, the
    victims' keys by one C-level map (no NumPy scalar per value)."""
    st = np.asarray(stats).tolist()
    victims = list(map(table.keys[row].__getitem__, np.asarray(slots, np.int64).tolist()))
    return Candidate(row, state.node_name(row), victims, st[V.STAT_N_VIOLATIONS], tuple(st))


def _visit_failures(scan: np.ndarray, seen: np.ndarray) -> list:
    """(row, code) of the visited positions that gave no candidate."""
    bad = np.flatnonzero(seen[:, V.STAT_CODE] != 0)
    return [(int(scan[j]), int(seen[j, V.STAT_CODE])) for j in bad]


def _search(fw, state, q, rows, prio, pods, table: PodTable, hooks=None) -> V.VictimResult:
    """The victim kernel over ``rows`` on the framework's backend (on cuda,
    over the device mirror of the pod table); ``hooks``
    (``filter_hooks.VictimSearchHooks``) lift the resources host filters
    take over from NodeResourcesFit."""
    cols = table.node_columns()
    backend = fw.backend_for(VICTIMS)
    if backend == "cuda":
        dev = table.device(V.fit_pods(cols, pods))
        stage = fw.stage_backend(VICTIMS).device_stage(state, q)
        lowering = nominated_lowering(state, table)
        lifted = None
        if hooks is not None:
            if lowering is not None:
                cols = cols._replace(allocatable=nominated_allocatable(state, table))
            lifted = hooks.device_allocatable(cols, rows)
        if lifted is None and lowering is not None:
            lifted = dev.allocatable_lowered(stage, *lowering)
        return dev.search(stage, cols, rows, prio, lifted)
    if hooks is not None:
        cols = hooks.columns(cols, rows)
    return V.select_victims(backend, cols, q, rows, prio, pods)


def nominated_allocatable(state: ClusterState, table: PodTable) -> np.ndarray | None:
    """With the nominated overlay (``table.nominated_columns``), the
    allocatable [N, R] int64 the device search must read in place of the
    stage's, else None.  The device stage packs the state's ``requested``
    (the cuda mirror follows the state, not the overlay), and the victim
    kernel's fit reads a node's resources only as ``allocatable -
    requested`` (``fused._core.fit_reasons``): lowering ``allocatable`` by
    the nominated pods' requests the overlay adds gives the answers of the
    overlay's ``requested``.  None too where the overlay adds nothing.
    The device takes only the lowered rows (``nominated_lowering``); the
    whole column serves the host filters' lifted copy."""
    over = table.nominated_columns
    if over is None:
        return None
    own = state.columns().requested
    added = over.requested - own
    if not added.any():
        return None
    return over.allocatable - added


def nominated_lowering(state: ClusterState, table: PodTable):
    """``nominated_allocatable`` as what the device needs to build it from
    the stage's own column: (rows [k] int64 ascending, amounts [k, R] int64
    the overlay adds on them), k the rows the nominated pods sit on; None
    where the overlay adds nothing."""
    over = table.nominated_columns
    if over is None:
        return None
    own = state.columns().requested
    # a host-side pass over [N, R]; only the k rows travel
    rows = np.flatnonzero((over.requested != own).any(axis=1)).astype(np.int64)
    if rows.shape[0] == 0:
        return None
    return rows, np.ascontiguousarray(over.requested[rows] - own[rows], np.int64)


def _search_until_stop(fw, state, q, prio, pods, scan, cap, table):
    """(stats, victims) of the positions of ``scan`` searched, batch after
    batch until upstream's visit stops inside them (or ``scan`` ends)."""
    n = scan.shape[0]
    batch = max(cap, 64)
    parts = []
    pos = 0
    while pos < n:
        rows = scan[pos: pos + batch]
        parts.append(_search(fw, state, q, rows, prio, pods, table))
        pos += rows.shape[0]
        stats = parts[0].stats if len(parts) == 1 else np.concatenate(
            [p.stats for p in parts])
        if VP.stop_position(stats, cap) >= 0:
            break
    if not parts:
        return np.zeros((0, V.N_STATS), np.int64), np.zeros((0, 1), np.int64)
    victims = parts[0].victims if len(parts) == 1 else np.concatenate(
        [p.victims for p in parts])
    return stats, victims


def _device_visit(fw, state, q, prio, pods, scan, cap, table, visit=None):
    """The search, the visit and the pick on the device: (candidates = the
    chosen one, 0 or -1, failures, Filter calls); ``visit``: ``scan``'s
    ``VisitBase`` (or None)."""
    cols = table.node_columns()
    dev = table.device(V.fit_pods(cols, pods))
    stage = fw.stage_backend(VICTIMS).device_stage(state, q)
    lowering = nominated_lowering(state, table)
    got = dev.search_and_pick(stage, cols, scan, prio, cap,
                              None if lowering is None else dev.allocatable_lowered(stage,
                                                                                   *lowering),
                              visit)
    if got.chosen < 0:
        return [], -1, _visit_failures(scan, dev.last_stats(got.visited)), got.calls
    cand = _candidate(state, table, int(scan[got.chosen]), got.stats, got.victims)
    return [cand], 0, [], got.calls


def _device_counts_visit(fw, state, q, prio, pods, scan, cap, table, search, visit=None):
    """The search on counts (PodTopologySpread and/or InterPodAffinity the
    only host filters), the visit and the pick on the device: (candidates
    = the chosen one, 0 or -1, failures, Filter calls), as the numba visit
    (``visit.visit_candidates`` with ``search``) gives them; ``visit`` as
    ``_device_visit``'s."""
    cols = table.node_columns()
    dev = table.device(V.fit_pods(cols, pods))
    dev.sync_index(table.order, table.cls, table.dying, table.alike_from, table.layout,
                   table.row_stamp, table.syncs, table.written)
    stage = fw.stage_backend(VICTIMS).device_stage(state, q)
    lowering = nominated_lowering(state, table)
    got = dev.counts_search_and_pick(
        stage, cols, V.pad_query(cols, q), scan, prio, cap,
        search.device_counts(table.order.shape[0], table.probe_tables), bool(table.pdbs),
        None if lowering is None else dev.allocatable_lowered(stage, *lowering), visit)
    if got.chosen < 0:
        seen = dev.last_stats(got.visited)
        failures = [(int(scan[j]), search.answer(*decode_code(int(seen[j, V.STAT_CODE]))))
                    for j in range(got.visited)]
        return [], -1, failures, got.calls
    cand = _candidate(state, table, int(scan[got.chosen]), got.stats, got.victims)
    return [cand], 0, [], got.calls


def preempt(fw, ctx, result, args: DefaultPreemptionArgs, table: PodTable, *,
            plugin: str, seed: int = 0, attempt: int = 0, offset: int | None = None,
            num_cands: int | None = None, nominated_status_code: Code | None = None,
            dry_run_all: bool = False, node_codes: dict | None = None,
            absent_code: Code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            potential_rows: np.ndarray | None = None) -> PreemptionResult:
    """DefaultPreemption's PostFilter for the failed cycle ``result``.

    ``plugin`` is the calling plugin's name, which its failure statuses
    carry.  ``offset`` / ``num_cands`` override the seeded offset and the
    count from ``args`` (tests); ``dry_run_all`` returns every candidate
    found while visiting (upstream's DryRunPreemption output) without
    selecting.
    ``node_codes`` ({node: Code}, others ``absent_code``) replaces the
    cycle's filter statuses and ``potential_rows`` the nodes where
    preemption might help, as upstream's unit tests feed them."""
    state, pod = ctx.state, ctx.pod
    # 0) The preemptor may preempt at all.
    ok, why = pod_eligible_to_preempt_others(pod, state, nominated_status_code)
    if not ok:
        return PreemptionResult(None, status=Status(Code.UNSCHEDULABLE, (why,), plugin),
                                eligible=False)
    # 1) The nodes where evicting pods might help.
    potential, unhelpful = _helpful_by_row(fw, ctx, result, node_codes, absent_code)
    if potential_rows is not None:
        potential = np.asarray(potential_rows, np.int64)
    counts: dict[str, int] = {}
    if unhelpful:
        counts[NOT_HELPFUL] = unhelpful
    n = potential.shape[0]
    fail = lambda: Status(Code.UNSCHEDULABLE,  # noqa: E731
                          (_fail_message(state.num_nodes, counts),), plugin)
    if n == 0:
        return PreemptionResult(None, status=fail())
    if not state.priorities.has_below(pod_priority(pod)):
        # No bound pod anywhere has a lower priority: every node the dry run
        # would visit has no victims (no table to sync for that).
        if dry_run_all:
            return PreemptionResult(None, candidates=[], filter_calls=0)
        counts[NO_VICTIMS] = counts.get(NO_VICTIMS, 0) + n
        return PreemptionResult(None, status=fail(), candidates=[], filter_calls=0)
    # 2) The dry run from a seeded offset, up to the candidate count.
    cap = num_cands if num_cands is not None else num_candidates(n, args)
    off = offset if offset is not None else seeded_offset(seed, attempt, n)
    visit = _visit_base(state, result, potential, off % n, potential_rows is None)
    cands, best, failures, calls, host = _candidates(
        fw, ctx, result, table, Rotation(visit), cap, dry_run_all, visit)
    if dry_run_all:
        return PreemptionResult(None, candidates=cands, filter_calls=calls)
    if not cands:
        _failure_reasons(fw, ctx, failures, counts)
        return PreemptionResult(None, status=fail(), candidates=cands, filter_calls=calls)
    # 3) The best candidate (chosen with the visit: ``pick_one_node``'s rule).
    chosen = cands[best]
    return PreemptionResult(chosen.node, list(chosen.victims), Status.OK, cands, calls,
                            query=result.query, host_filters=host)


class Rotation:
    """The visiting order ``visit.base`` rotated by ``visit.offset``
    (``np.roll(base, -offset)``) without building it: its length, row j
    (``rows[j] == base[(offset + j) % M]``) and, for a caller that reads
    every row, the array (``np.asarray``).  The device searches read only
    the chosen and the failed positions; a preemptor at 10,000 nodes
    spares a [N] copy."""

    __slots__ = ("base", "offset", "shape")

    def __init__(self, visit: VisitBase):
        self.base = visit.base
        self.offset = visit.offset
        self.shape = visit.base.shape

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, j):
        if not isinstance(j, (int, np.integer)):
            return np.asarray(self)[j]
        m = self.shape[0]
        if not -m <= j < m:
            raise IndexError(f"position {j} of a visiting order of {m}")
        return self.base[(self.offset + int(j)) % m]

    def __array__(self, dtype=None, copy=None):
        got = np.roll(self.base, -self.offset) if self.shape[0] else self.base.copy()
        return got if dtype is None else got.astype(dtype, copy=False)


def _visit_base(state: ClusterState, result, potential: np.ndarray, offset: int,
                from_result: bool) -> VisitBase:
    """The visiting order ``potential`` rotated by ``offset`` as a
    ``VisitBase``, keyed when its content is known without reading it:
    every live node helps (``potential`` is all of ``result.all_rows``, a
    boolean pick that kept all) and ``result.all_rows`` is the state's
    live rows of its current node set (``valid_rows``' cached array,
    which changes with the set's key): the key is that node set's.  O(1);
    the device then keeps its visiting order without comparing it."""
    key = None
    rows = result.all_rows
    if from_result and potential.shape[0] == rows.shape[0] and rows is state.valid_rows():
        key = ("live rows", state.layout_version, state.epoch, state.n_rows)
    return VisitBase(potential, offset, key)


def _dry_run(fw, state, q, prio, pods, scan, cap, search, table):
    """DryRunPreemption with host filters over the visit order ``scan`` [n]
    (node rows): (non-violating candidates, violating candidates, failures,
    filter calls).

    Candidates are (row, stats [7], victim slots); failures (row, code) with
    code a kernel code or a tuple of reasons.  The kernel runs per batch of
    rows as a pre-pass: nodes it leaves open (fit with every lower-priority
    pod gone, on the built-in filters) are searched again, exactly, with all
    filters (``search``).  The visit stops where upstream's serial visit
    would."""
    n = scan.shape[0]
    nv_list: list = []
    v_list: list = []
    failures: list = []
    calls = 0
    pos = 0
    batch = max(cap, 64)
    while pos < n:
        rows = scan[pos: pos + batch]
        res = _search(fw, state, q, rows, prio, pods, table, search.hooks)
        code = res.stats[: rows.shape[0], V.STAT_CODE]
        open_rows = rows[(code == 0) | (code == V.CODE_NONE_LEFT)]
        search.prefetch(open_rows)
        search.batch(open_rows)
        for j in range(rows.shape[0]):
            row = int(rows[j])
            st = res.stats[j]
            code = int(st[V.STAT_CODE])
            if code in (0, V.CODE_NONE_LEFT):
                code, st, slots = search.on_node(row)
            else:
                slots = res.victims[j, : int(st[V.STAT_N_VICTIMS])]
            calls += int(st[V.STAT_FILTER_CALLS])
            if isinstance(code, int) and code == 0:
                target = v_list if st[V.STAT_N_VIOLATIONS] > 0 else nv_list
                if len(target) < cap:
                    target.append((row, st.copy(), slots.copy()))
            else:
                failures.append((row, code))
            if nv_list and len(nv_list) + len(v_list) >= cap:
                return nv_list, v_list, failures, calls
        pos += rows.shape[0]
    return nv_list, v_list, failures, calls


def fits_on_row(state: ClusterState, q, row: int, host_filters=(), ctx=None) -> bool:
    """The built-in filters of query ``q`` pass on node ``row`` now, and so
    do ``host_filters`` (``PreemptionResult.host_filters``, run with ``ctx``).

    A host filter with ``filter_row(ctx, row) -> bool`` (PodTopologySpread,
    InterPodAffinity: O(constraints) from their domain sums) answers for
    the one row; the others' ``filter`` runs on it.  The built-in filters'
    bits come from the scalar rule on that row (``victims.search.
    row_reasons``), not from the array pass over a [1] row set."""
    cols = state.columns()
    bits = V.row_reasons(cols, V.pad_query(cols, q), row)
    one = np.array([row], np.int64)
    if bits and ctx is not None:
        got = exempt_bits(host_filters, ctx, one)       # checks host filters take over
        if got is not None:
            bits &= ~int(got[0])
    if bits != 0:
        return False
    for p in host_filters:
        one_row = getattr(p, "filter_row", None)
        ok = one_row(ctx, row) if one_row is not None else bool(np.asarray(p.filter(ctx, one))[0])
        if not ok:
            return False
    return True
