"""The victim search resident on a CUDA device, for one cluster.

``DeviceVictims`` keeps the bound pods by node (``search.VictimPods``: pod
counts, priority / start / request / host-port / PDB columns per slot) in
device memory and follows the host table by the rows that changed: the
caller passes, with the table, a ``layout`` number (changes when the host
arrays were reallocated: a full upload) and ``row_stamp`` [N] int64 (the
sync at which each row was last written; rows newer than the last upload
are packed into one array, sent in one copy and scattered by one kernel).
The node columns and the query come packed from the fused pass's device
mirror (``fused.backends.CudaBackend.device_stage``: a ``DeviceStage`` of
the three node packs and the query buffer), so the victim kernel takes
sixteen arguments (``_cuda.victims_kernel``); its scratch is one buffer
kept between searches.  The visiting order of ``search_and_pick`` and
``counts_search_and_pick`` is kept resident (``_visit_order``): a rotation
of the last one (the same nodes from another seeded offset) sends only its
offset, another order its changed rows; ``search``'s batches go up in one
copy into a kept buffer.  ``pack_stage`` makes a ``DeviceStage`` from host columns (tests).

``search_and_pick`` is one preemptor's DryRunPreemption and
pickOneNodeForPreemption on the device: the victim search of every node of
the visiting order (``_cuda.victims_kernel``, one thread per node), the
visit and the pick (``_pick_cuda.pick_kernel``, one block), and one copy
back of the chosen position, its statistics and its victims.  ``search``
is the search alone with its statistics copied back (the host-filter and
dry-run paths).  Same answers as ``search.select_victims`` and
``pick.visit_and_pick`` on the host.

``counts_search_and_pick`` is the same with PodTopologySpread and/or
InterPodAffinity the only host filters: the search on counts
(``_counts_cuda.counts_kernel``, one thread per node, the numba visit's
per-node code ``_counts_core.position_kind``) over the pod tables, a
resident index table (``sync_index``) and the probes' node and domain
tables (``_following``: kept on the host by ``preemption.probe_tables``,
which names the rows each preemptor changed, and sent by those rows, with
no pass over the tables), then the same pick and one copy back.  ``allocatable_lowered`` builds, from the stage's own
column and the k rows the nominated pods sit on, the allocatable a search
reads beside a nominated overlay.  ``counters`` reports the traffic.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tensorsched.kernels import layout as L
from tensorsched.kernels.fused.stage_args import DeviceStage

from . import on_counts as VS
from . import search as V
from . import table_rows as TR

CODE_KIND_BASE = VS.CODE_KIND_BASE


def decode_code(code: int) -> tuple[int, int]:
    """(kind ``on_counts.KIND_*``, built-in reason bits) of a code the
    device search on counts leaves in ``stats[j, 0]``."""
    if code > 0:
        return VS.KIND_BITS, code
    if code == V.CODE_NO_VICTIMS:
        return VS.KIND_NO_VICTIMS, 0
    if code == V.CODE_NONE_LEFT:
        return VS.KIND_NONE_LEFT, 0
    if code == 0:
        return VS.KIND_OK, 0
    return CODE_KIND_BASE - code, 0

__all__ = ["DevicePick", "DeviceStage", "DeviceVictims", "VisitBase", "decode_code",
           "pack_stage"]


def pack_stage(cols, q) -> DeviceStage:
    """A ``DeviceStage`` uploaded from host columns ``cols`` and query ``q``
    (tests; the cuda backend's ``device_stage`` serves the scheduler from
    its mirror)."""
    from . import _cuda     # numba-cuda: only with the cuda backend
    return _cuda.pack_stage(cols, V.pad_query(cols, q))


def victim_kernel():
    """The victim search's CUDA kernel (a numba-cuda dispatcher,
    ``.py_func`` its source), for compiling it ahead of a device
    (``bench.cuda_ptx``).  Imports numba-cuda."""
    from . import _cuda
    return _cuda.victims_kernel


def counts_kernel():
    """The device search on counts' CUDA kernel (a numba-cuda dispatcher,
    ``.py_func`` its source; benches count its arguments).  Imports
    numba-cuda."""
    from . import _counts_cuda
    return _counts_cuda.counts_kernel


class DevicePick(NamedTuple):
    """visited, calls: as ``pick.Pick``; chosen: position (-1 none);
    stats [7] int64 of the chosen position; victims [n_victims] int64 slots."""

    visited: int
    calls: int
    chosen: int
    stats: np.ndarray
    victims: np.ndarray


class VisitBase(NamedTuple):
    """What a caller knows of a visiting order ``rows`` [M]: it is
    ``base`` [M] int64 rotated by ``offset`` (``rows[j] == base[(offset +
    j) % M]``), and ``key`` (hashable, or None) names ``base``'s content:
    two orders with the same key have equal bases, so the kept base is
    known level without comparing (``DeviceVictims._visit_order``)."""

    base: np.ndarray
    offset: int
    key: object = None


class DeviceVictims:
    """The pod tables, scratch and query arguments of the victim search on
    the device (see the module docstring).  Counters for tests and benches:
    ``full_uploads``, ``rows_uploaded``; and the traffic of every call:
    ``launches`` (kernels), ``copies`` (host -> device), ``bytes_uploaded``,
    ``copies_back`` (device -> host), ``bytes_downloaded``,
    ``probe_rows_uploaded`` (rows of the probes' tables sent), and how the
    pod and index tables found their changed rows: ``journal_reads`` (from
    the host table's ``SyncJournal``) or ``stamp_scans`` (a pass over
    ``row_stamp``); and how the visiting order was found level:
    ``visit_keyed``, ``visit_compared``, ``visit_searched``
    (``_visit_order``)."""

    def __init__(self):
        from numba import cuda

        from . import _cuda, _pick_cuda     # numba-cuda: only with the cuda backend
        from numba.cuda.cudadrv import driver
        self._cuda = cuda
        self._driver = driver               # a prefix copied up (``_pod_staging``)
        self._k = _cuda
        self._pk = _pick_cuda
        self._layout = None
        self._shape = None
        self._seen = -1
        self._tables: tuple = ()
        self._stage_bufs: dict = {}         # name -> (pinned host, device): ``_staging``
        self._allowed = (None, None)        # (host array, device copy)
        self._scratch: dict = {}
        self._rows = None                   # ``search``'s kept buffer of its rows [M, 1]
        self._alloc = None                  # kept buffer of ``allocatable_from``
        self._stats = None                  # the last search's device stats
        self._index = None                  # [N, 3C + 1] order, classes, dying, alike tail
        self._index_key = (None, None)      # (layout, shape) of the index table
        self._index_seen = -1
        self._per = None                    # kept buffer of the per-preemptor inputs
        self._counts_scratch: dict = {}
        self._kept: dict = {}               # name -> (host copy, device copy): ``_resident``
        self.full_uploads = 0
        self.rows_uploaded = 0
        self.launches = 0
        self.copies = 0
        self.bytes_uploaded = 0
        self.copies_back = 0
        self.bytes_downloaded = 0
        self.counts_searches = 0            # ``counts_search_and_pick`` calls
        self.probe_rows_uploaded = 0        # probe table rows sent (``_following``)
        self.stamp_scans = 0                # syncs that passed over ``row_stamp`` (O(N))
        # how ``_visit_order`` found the kept visit base level or not
        self.visit_keyed = 0                # by the caller's key: O(1)
        self.visit_compared = 0             # by comparing the caller's base: one pass
        self.visit_searched = 0             # by looking for a rotation: a few passes
        self._visit_key = None              # the kept visit base's key (``VisitBase``)
        self.journal_reads = 0              # syncs that took their rows from a journal

    def _up(self, host: np.ndarray, dev=None):
        """``host`` to the device (into ``dev`` when given), counted."""
        self.copies += 1
        self.bytes_uploaded += host.nbytes
        if dev is None:
            return self._cuda.to_device(host)
        dev.copy_to_device(host)
        return dev

    def _down(self, dev) -> np.ndarray:
        """``dev`` back to the host, counted."""
        host = dev.copy_to_host()
        self.copies_back += 1
        self.bytes_downloaded += host.nbytes
        return host

    def counters(self) -> dict:
        """The traffic counters by name (benches)."""
        return {k: int(getattr(self, k)) for k in
                ("launches", "copies", "bytes_uploaded", "copies_back", "bytes_downloaded",
                 "full_uploads", "rows_uploaded", "counts_searches", "probe_rows_uploaded",
                 "stamp_scans", "journal_reads", "visit_keyed", "visit_compared",
                 "visit_searched")}

    # ------------------------------------------------------------ pod tables
    def _dirty(self, row_stamp: np.ndarray, n: int, seen: int, written) -> np.ndarray:
        """[k] int64 ascending: the rows among the first ``n`` stamped above
        ``seen``: from ``written`` (a ``SyncJournal``) when it still holds
        every sync since (O(rows written)), else by a pass over
        ``row_stamp`` (O(N)).  Counted: ``stamp_scans``, ``journal_reads``."""
        got = None if written is None else written.rows_since(seen)
        if got is None:
            self.stamp_scans += 1
            return np.flatnonzero(row_stamp[:n] > seen)
        self.journal_reads += 1
        return got[got < n] if got.shape[0] and got[-1] >= n else got

    def sync_pods(self, pods: V.VictimPods, layout, row_stamp: np.ndarray, stamp: int,
                  written=None) -> None:
        """Bring the device tables level with ``pods`` (rows whose
        ``row_stamp`` is above the last upload's ``stamp``; ``written``,
        the table's ``SyncJournal``, names them without a pass over
        ``row_stamp``)."""
        tables = pods[:6]
        shape = tuple(a.shape for a in tables)
        if layout != self._layout or shape != self._shape:
            self._tables = tuple(self._up(np.ascontiguousarray(a)) for a in tables)
            self._layout, self._shape = layout, shape
            self.full_uploads += 1
            self.rows_uploaded += tables[0].shape[0]
        elif stamp != self._seen:
            n = tables[0].shape[0]
            dirty = self._dirty(row_stamp, n, self._seen, written)
            if dirty.shape[0] * 4 > n:
                for dev, a in zip(self._tables, tables):
                    self._up(np.ascontiguousarray(a), dev)
                self.full_uploads += 1
                self.rows_uploaded += n
            elif dirty.shape[0]:
                d = dirty.shape[0]
                host, dev = self._staging("pods", d * TR.row_width(shape))
                self._send(host, dev, d * TR.host.pack_rows(dirty, *tables, host))
                self._pk.launch_scatter_packed(dev, d, *self._tables)
                self.launches += 1
                self.rows_uploaded += d
        self._seen = stamp
        allowed = pods.pdb_allowed
        if self._allowed[0] is not allowed:
            self._allowed = (allowed, self._up(np.ascontiguousarray(allowed)))

    def _staging(self, name: str, size: int) -> tuple:
        """(pinned host buffer, device buffer) of ``size`` int64 values at
        least, kept under ``name`` between uploads and grown by doubling:
        a few changed rows take one packing, one driver copy of the prefix
        (``_send``) and no allocation nor device array view."""
        got = self._stage_bufs.get(name)
        if got is None or got[0].shape[0] < size:
            cap = max(size, 1024, 2 * got[0].shape[0] if got is not None else 0)
            got = self._stage_bufs[name] = (self._cuda.pinned_array(cap, np.int64),
                                            self._cuda.device_array(cap, np.int64))
        return got

    def _send(self, host: np.ndarray, dev, size: int) -> None:
        """The first ``size`` values of ``host`` (pinned) into the start of
        ``dev``: one driver copy, counted."""
        self._driver.host_to_device(dev, host, 8 * size)
        self.copies += 1
        self.bytes_uploaded += 8 * size

    def _scatter_rows(self, name: str, rows: np.ndarray, host: np.ndarray, table) -> None:
        """Rows ``rows`` [d] int64 of ``host`` [N, W] int64 into the device
        ``table`` [N, W] through the staging buffers kept under ``name``:
        packed by one compiled pass (``table_rows.pack_flat_rows``: the
        row, then its W values), one copy up, one scatter launch
        (counted)."""
        d = rows.shape[0]
        staged, dev = self._staging(name, d * (1 + host.shape[1]))
        self._send(staged, dev, d * TR.host.pack_flat_rows(rows, host, staged))
        self._pk.launch_scatter_flat_rows(dev, d, table)
        self.launches += 1

    def sync_index(self, order: np.ndarray, cls: np.ndarray, dying: np.ndarray,
                   alike_from: np.ndarray, layout, row_stamp: np.ndarray, stamp: int,
                   written=None) -> None:
        """Bring the resident index table (the search on counts reads it:
        per row the importance order, class ids, terminating flags [N, C]
        and the alike tail [N]) level with the host's, as ``sync_pods``
        does the pod tables: whole on a new layout, else the rows whose
        ``row_stamp`` is above the last upload (one packed copy, one
        scatter; ``written`` as ``sync_pods``')."""
        n, c = order.shape

        def rows_of(idx):
            return np.concatenate([order[idx], cls[idx], dying[idx].astype(np.int64),
                                   alike_from[idx][:, None]], axis=1)
        key = (layout, (n, c))
        if key != self._index_key:
            self._index = self._up(np.ascontiguousarray(rows_of(slice(None)), np.int64))
            self._index_key = key
        elif stamp != self._index_seen:
            dirty = self._dirty(row_stamp, n, self._index_seen, written)
            if dirty.shape[0] * 4 > n:
                self._up(np.ascontiguousarray(rows_of(slice(None)), np.int64), self._index)
            elif dirty.shape[0]:
                # packed by one compiled pass (the row, then ``rows_of``'s)
                d = dirty.shape[0]
                staged, dev = self._staging("index", d * (2 + 3 * c))
                self._send(staged, dev, d * TR.host.pack_index_rows(
                    np.ascontiguousarray(dirty, np.int64), order, cls, dying, alike_from,
                    staged))
                self._pk.launch_scatter_flat_rows(dev, d, self._index)
                self.launches += 1
        self._index_seen = stamp

    # --------------------------------------------------------------- scratch
    def _work(self, n: int, r: int, wp: int, m: int, c: int, p: int) -> tuple:
        """(the work buffer laid out for ``m`` positions or more, its parts'
        device views by name, the pick's out [OUT_VICTIMS + C]): kept,
        regrown by doubling ``m``; the header goes up once per layout."""
        cuda = self._cuda
        key = (n, r, wp, c, p)
        got = self._scratch.get(key)
        if got is None or got[0] < m:
            cap = max(m, 2 * got[0]) if got is not None else max(m, 1)
            head, size = self._k.work_layout(n, cap, r, wp, c, p, V.N_STATS)
            buf = cuda.device_array(size, np.int64)
            self._up(head, buf[:head.shape[0]])
            self._scratch = {key: (cap, buf, self._k.work_views(buf, head),
                                   cuda.device_array(self._pk.OUT_VICTIMS + c, np.int64))}
            got = self._scratch[key]
        return got[1:]

    def _device_rows(self, rows: np.ndarray):
        """``rows`` [M] on the device as [M, 1]: one copy into a kept
        buffer (``search``'s batches: not a rotation of one another)."""
        m = rows.shape[0]
        if self._rows is None or self._rows.shape[0] < m:
            self._rows = self._cuda.device_array(
                (max(m, 2 * (0 if self._rows is None else self._rows.shape[0])), 1), np.int64)
        # reshape, not [:, None]: a stride-0 axis the simulator's copy rejects
        self._up(np.ascontiguousarray(rows, np.int64).reshape(m, 1), self._rows[:m])
        return self._rows[:m]

    def allocatable_lowered(self, stage: DeviceStage, rows: np.ndarray, amounts: np.ndarray):
        """The stage's allocatable [N, R] less ``amounts`` [k, R] int64 on
        node rows ``rows`` [k] (ascending, distinct), in a kept device
        buffer, for a search that reads it instead of the stage's (the
        nominated pods' requests taken off: ``evaluator.nominated_lowering``).
        One copy up of the k rows (O(k), not O(N)) and one launch that
        copies the stage's column on the device and lowers those rows."""
        src = stage.allocatable
        if self._alloc is None or self._alloc.shape != src.shape:
            self._alloc = self._cuda.device_array(src.shape, np.int64)
        k, r = amounts.shape[0], src.shape[1]
        packed = np.zeros((max(k, 1), 1 + r), np.int64)
        packed[:, 0] = -1               # no row: nothing lowered
        packed[:k, 0] = rows
        w = min(r, amounts.shape[1])
        packed[:k, 1:1 + w] = amounts[:, :w]
        self._pk.launch_lowered(self._alloc, src, self._up(packed))
        self.launches += 1
        return self._alloc

    def _launch_search(self, stage: DeviceStage, cols, visit, offset: int, priority: int,
                       allocatable=None) -> tuple:
        """Run the victim kernel over the visiting order ``visit`` [M, 1]
        (device) rotated by ``offset``: (its work views by name, the pick's
        out buffer)."""
        if not self._tables:
            raise RuntimeError("DeviceVictims.sync_pods must run before a search")
        n, r = cols.requested.shape
        wp = cols.port_bits.shape[1]
        if self._shape[3][2] != r or self._shape[4][2] != wp:
            raise ValueError(f"pod tables hold {self._shape[3][2]} resources and "
                             f"{self._shape[4][2]} port words, the node columns {r} and {wp}")
        c = max(self._shape[1][1], 1)
        m = visit.shape[0]
        buf, views, out = self._work(n, r, wp, m, c, self._allowed[1].shape[0])
        self._k.launch(m, visit, offset, priority, stage.packs, stage.qbuf,
                       stage.allocatable if allocatable is None else allocatable,
                       self._tables, self._allowed[1], buf)
        self.launches += 1
        return views, out

    def search(self, stage: DeviceStage, cols, rows: np.ndarray, priority: int,
               allocatable=None) -> V.VictimResult:
        """``search.select_victims`` on the device tables (outputs copied
        back); ``allocatable``: a device [N, R] read instead of the stage's
        (host filters' lifted cells)."""
        m = rows.shape[0]
        if m == 0:
            return V.VictimResult(np.zeros((0, V.N_STATS), np.int64),
                                  np.zeros((0, max(self._shape[1][1], 1)), np.int64))
        work, _ = self._launch_search(stage, cols, self._device_rows(rows), 0, priority,
                                      allocatable)
        return V.VictimResult(self._down(work["stats"][:m]), self._down(work["victims"][:m]))

    def search_and_pick(self, stage: DeviceStage, cols, rows: np.ndarray, priority: int,
                        cap: int, allocatable=None, visit: VisitBase | None = None
                        ) -> DevicePick:
        """The search over the visiting order ``rows`` [M], upstream's visit
        (numCandidates ``cap``) and the pick: the visiting order only when it
        is not a rotation of the last one (``_visit_order``; a rotation
        sends nothing, its offset is a launch argument; ``visit``, a
        ``VisitBase`` of ``rows``, spares the search for the rotation), two
        launches, one copy back; ``allocatable`` as ``search``'s."""
        m = rows.shape[0]
        if m == 0:
            return DevicePick(0, 0, -1, np.zeros(V.N_STATS, np.int64), np.zeros(0, np.int64))
        if not self._tables:
            raise RuntimeError("DeviceVictims.sync_pods must run before a search")
        visit, offset = self._visit_order(rows, visit)
        work, out = self._launch_search(stage, cols, visit, offset, priority, allocatable)
        self._pk.launch_pick(work["stats"], work["victims"], m, cap, out)
        self.launches += 1
        self._stats = work["stats"]
        return self._picked(self._down(out))

    def _picked(self, host: np.ndarray) -> DevicePick:
        """A ``DevicePick`` from the pick's out buffer copied back (a fresh
        host array: its stats and victims are views of it, not copies)."""
        pk = self._pk
        head = host[:pk.OUT_VICTIMS].tolist()      # the scalars by one conversion
        chosen = head[pk.OUT_CHOSEN]
        nv = head[pk.OUT_STATS + V.STAT_N_VICTIMS] if chosen >= 0 else 0
        return DevicePick(head[pk.OUT_VISITED], head[pk.OUT_CALLS], chosen,
                          host[pk.OUT_STATS: pk.OUT_STATS + V.N_STATS],
                          host[pk.OUT_VICTIMS: pk.OUT_VICTIMS + nv])

    def counts_search_and_pick(self, stage: DeviceStage, cols, q, rows: np.ndarray,
                               priority: int, cap: int, counts: VS.DeviceCounts,
                               any_pdb: bool, allocatable=None,
                               visit: VisitBase | None = None) -> DevicePick:
        """The search on counts (``on_counts.visit``'s per-node answers)
        over the visiting order ``rows`` [M], the visit (numCandidates
        ``cap``) and the pick on the device: the probes' node and domain
        tables (``counts``, an ``on_counts.DeviceCounts``) kept resident and
        sent by the rows that changed since the last search (those its
        ``tables`` names; without them, found by comparing: ``_resident``), the visiting
        order only when it is not a rotation of the last one
        (``_visit_order``, ``visit`` as ``search_and_pick``'s), one copy up of the rest (``per``: the offset,
        the query's fit columns, the conditions' scalars and class
        matches; one driver copy into a kept buffer the kernel reads
        through its header), two launches, one copy back.  ``q`` the padded query;
        the index table must be level (``sync_index``).  A position the host filters reject carries
        ``CODE_KIND_BASE - kind`` as its code (``decode_code``)."""
        from . import _counts_cuda
        m = rows.shape[0]
        if m == 0:
            return DevicePick(0, 0, -1, np.zeros(V.N_STATS, np.int64), np.zeros(0, np.int64))
        if self._index is None:
            raise RuntimeError("DeviceVictims.sync_index must run before a search on counts")
        fit_cols, fit_want = VS.fit_columns(q)
        flags = int(q.filter_flags)
        check_ports = bool(flags & L.F_PORTS) and bool(np.any(q.port_conflicts))
        n_spread, n_ia = counts.sp_scalars.shape[0], counts.ia_code.shape[0]
        nodes, doms = self.probe_tables(counts)
        visit, offset = self._visit_order(rows, visit)
        per = _counts_cuda.pack_per(      # in PER_SCALARS' and PER_PARTS' order
            (n_spread, counts.ia_self, counts.ia_first, check_ports, any_pdb, offset),
            (fit_cols, fit_want, counts.ia_code, counts.ia_pos, counts.class_match,
             counts.sp_scalars))
        if self._per is None or self._per.shape[0] < per.shape[0]:
            self._per = self._cuda.device_array(
                max(per.shape[0], 2 * (0 if self._per is None else self._per.shape[0])),
                np.int64)
        # one driver copy into the kept buffer's start, which the kernel
        # reads whole through its header: no device array view a preemptor
        self._send(per, self._per, per.shape[0])
        self.counts_searches += 1
        c = max(self._shape[1][1], 1)
        views, out = self._counts_work(m, 1 + fit_cols.shape[0], c, n_spread, n_ia,
                                       self._allowed[1].shape[0])
        _counts_cuda.launch(m, priority, stage.packs, stage.qbuf,
                            stage.allocatable if allocatable is None else allocatable,
                            self._tables, self._allowed[1], self._index, nodes, doms, visit,
                            self._per, views["_buf"])
        self.launches += 1
        self._pk.launch_pick(views["stats"], views["victims"], m, cap, out)
        self.launches += 1
        self._stats = views["stats"]
        return self._picked(self._down(out))

    def _visit_order(self, rows: np.ndarray, known: VisitBase | None = None) -> tuple:
        """(the resident visit base [M, 1] on the device, offset): ``rows``
        [M] is the base rotated by offset (both device searches share it).

        With ``known`` (a ``VisitBase`` of ``rows``): a key equal to the
        kept base's says it is level, in O(1) (``visit_keyed``); else its
        base is compared with the kept one (one pass, ``visit_compared``)
        and sent by the rows that differ (``_resident``) when it is not
        the same.  Without: a rotation of the kept base (the same nodes
        from another seeded offset) is found by looking for ``rows[0]``
        in it (``visit_searched``), and another order becomes the base.
        A rotation sends nothing."""
        got = self._kept.get("visit")
        m = rows.shape[0]
        if known is not None:
            base = np.ascontiguousarray(known.base, np.int64)
            if got is not None and got[0].shape[0] == m:
                if known.key is not None and known.key == self._visit_key:
                    self.visit_keyed += 1
                    return got[1], int(known.offset)
                self.visit_compared += 1
                if np.array_equal(got[0][:, 0], base):
                    self._visit_key = known.key
                    return got[1], int(known.offset)
            dev = self._resident("visit", base.reshape(m, 1))
            self._visit_key = known.key
            return dev, int(known.offset)
        rows = np.ascontiguousarray(rows, np.int64)
        if got is not None and got[0].shape[0] == m:
            self.visit_searched += 1
            base = got[0][:, 0]
            at = np.flatnonzero(base == rows[0])
            if at.shape[0] == 1:
                k = int(at[0])
                if np.array_equal(rows[:m - k], base[k:]) and np.array_equal(rows[m - k:],
                                                                              base[:k]):
                    return got[1], k
        self._visit_key = None
        return self._resident("visit", rows.reshape(m, 1)), 0

    def _resident(self, name: str, host: np.ndarray):
        """``host`` [n, w] int64 kept on the device under ``name``: the
        first time (or another shape) one copy, then the rows that differ
        from the last one sent (a packed copy and a scatter; all of them
        in one copy when over a quarter changed)."""
        host = np.ascontiguousarray(host, np.int64)
        if host.shape[1] == 0:              # no column: one of zeros (a device array's
            host = np.zeros((host.shape[0], 1), np.int64)   # shape must not be empty)
        got = self._kept.get(name)
        if got is None or got[0].shape != host.shape:
            self._kept[name] = (host.copy(), self._up(host))
            return self._kept[name][1]
        last, dev = got
        diff = np.flatnonzero((last != host).any(axis=1))
        if diff.shape[0] * 4 > host.shape[0]:
            self._up(host, dev)
        elif diff.shape[0]:
            self._scatter_rows(name, diff.astype(np.int64, copy=False), host, dev)
        last[...] = host
        return dev

    def probe_tables(self, counts: VS.DeviceCounts) -> tuple:
        """(nodes, doms): the probes' tables of ``counts`` on the device,
        level with the host's: by the rows its ``tables`` names
        (``_following``), or without them by the rows that differ from the
        last ones sent (``_resident``)."""
        t = counts.tables
        if t is None:
            return self._resident("nodes", counts.nodes), self._resident("doms", counts.doms)
        return (self._following("probe_nodes", counts.nodes, t, t.nodes_changed),
                self._following("probe_doms", counts.doms, t, t.doms_changed))

    def _following(self, name: str, host: np.ndarray, owner, changed):
        """``host`` [n, w] int64 (w >= 1) kept on the device under ``name``,
        following ``owner`` (a ``ProbeTables``) by its generations: one
        generation behind, the rows ``changed`` go up (a packed copy and a
        scatter; all of them in one copy when over a quarter changed);
        else, or with ``changed`` None, the whole table.  No host pass over
        the table: O(changed rows)."""
        gen = owner.generation
        got = self._kept.get(name)
        if got is not None and got[0] is owner and got[2].shape == host.shape:
            if got[1] == gen:
                return got[2]
            dev = got[2]
            if got[1] == gen - 1 and changed is not None and changed.shape[0] * 4 <= host.shape[0]:
                if changed.shape[0]:
                    self._scatter_rows(name, np.ascontiguousarray(changed, np.int64), host,
                                       dev)
                    self.probe_rows_uploaded += changed.shape[0]
            else:
                self._up(np.ascontiguousarray(host, np.int64), dev)
                self.probe_rows_uploaded += host.shape[0]
        else:
            dev = self._up(np.ascontiguousarray(host, np.int64))
            self.probe_rows_uploaded += host.shape[0]
        self._kept[name] = (owner, gen, dev)
        return dev

    def _counts_work(self, m: int, k: int, c: int, n_spread: int, n_ia: int,
                     p: int) -> tuple:
        """(the counts search's work views by name, ``_buf`` the buffer, and
        the pick's out [OUT_VICTIMS + C]): kept, regrown by doubling ``m``."""
        from . import _counts_cuda
        key = (k, c, n_spread, n_ia, p)
        got = self._counts_scratch.get(key)
        if got is None or got[0] < m:
            cap = max(m, 2 * got[0]) if got is not None else max(m, 1)
            head, size = _counts_cuda.work_layout(cap, k, c, n_spread, n_ia, p, V.N_STATS)
            buf = self._cuda.device_array(size, np.int64)
            self._up(head, buf[:head.shape[0]])
            views = _counts_cuda.work_views(buf, head)
            views["_buf"] = buf
            self._counts_scratch = {key: (cap, views,
                                          self._cuda.device_array(self._pk.OUT_VICTIMS + c,
                                                                  np.int64))}
            got = self._counts_scratch[key]
        return got[1], got[2]

    def last_stats(self, visited: int) -> np.ndarray:
        """[visited, 7] statistics of the last ``search_and_pick`` (a second
        copy, for the reasons of a preemption that found no candidate)."""
        return self._down(self._stats[:visited])
