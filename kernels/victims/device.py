"""The victim search resident on a CUDA device, for one cluster.

``DeviceVictims`` keeps the bound pods by node (``search.VictimPods``: pod
counts, priority / start / request / host-port / PDB columns per slot) in
device memory and follows the host table by the rows that changed: the
caller passes, with the table, a ``layout`` number (changes when the host
arrays were reallocated: a full upload) and ``row_stamp`` [N] int64 (the
sync at which each row was last written; rows newer than the last upload
are packed into one array, sent in one copy and scattered by one kernel).
The node columns come from the fused pass's device mirror
(``fused.backends.CudaBackend.device_columns``), the query's arrays are
uploaded once per compiled query.

``search_and_pick`` is one preemptor's DryRunPreemption and
pickOneNodeForPreemption on the device: the victim search of every node of
the visiting order (``_cuda.victims_kernel``, one thread per node), the
visit and the pick (``_pick_cuda.pick_kernel``, one block), and one copy
back of the chosen position, its statistics and its victims.  ``search``
is the search alone with its statistics copied back (the host-filter and
dry-run paths).  Same answers as ``search.select_victims`` and
``pick.visit_and_pick`` on the host.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from . import search as V

__all__ = ["DevicePick", "DeviceVictims"]

_COLUMN_ARGS = ("allocatable", "requested", "unschedulable", "valid", "label_vals",
                "label_nums", "label_isnum", "taint_bits", "port_bits")


class DevicePick(NamedTuple):
    """visited, calls: as ``pick.Pick``; chosen: position (-1 none);
    stats [7] int64 of the chosen position; victims [n_victims] int64 slots."""

    visited: int
    calls: int
    chosen: int
    stats: np.ndarray
    victims: np.ndarray


class DeviceVictims:
    """The pod tables, scratch and query arguments of the victim search on
    the device (see the module docstring).  Counters for tests and benches:
    ``full_uploads``, ``rows_uploaded``."""

    def __init__(self):
        from numba import cuda

        from . import _cuda, _pick_cuda     # numba-cuda: only with the cuda backend
        self._cuda = cuda
        self._k = _cuda
        self._pk = _pick_cuda
        self._layout = None
        self._shape = None
        self._seen = -1
        self._tables: tuple = ()
        self._allowed = (None, None)        # (host array, device copy)
        self._qargs: OrderedDict = OrderedDict()
        self._scratch: dict = {}
        self._stats = None                  # the last search's device stats
        self.full_uploads = 0
        self.rows_uploaded = 0

    # ------------------------------------------------------------ pod tables
    def sync_pods(self, pods: V.VictimPods, layout, row_stamp: np.ndarray, stamp: int) -> None:
        """Bring the device tables level with ``pods`` (rows whose
        ``row_stamp`` is above the last upload's ``stamp``)."""
        cuda = self._cuda
        tables = pods[:6]
        shape = tuple(a.shape for a in tables)
        if layout != self._layout or shape != self._shape:
            self._tables = tuple(cuda.to_device(np.ascontiguousarray(a)) for a in tables)
            self._layout, self._shape = layout, shape
            self.full_uploads += 1
            self.rows_uploaded += tables[0].shape[0]
        elif stamp != self._seen:
            n = tables[0].shape[0]
            dirty = np.flatnonzero(row_stamp[:n] > self._seen)
            if dirty.shape[0] * 4 > n:
                for dev, a in zip(self._tables, tables):
                    dev.copy_to_device(np.ascontiguousarray(a))
                self.full_uploads += 1
                self.rows_uploaded += n
            elif dirty.shape[0]:
                d = dirty.shape[0]
                packed = np.concatenate(
                    [dirty[:, None], tables[0][dirty][:, None]]
                    + [a[dirty].reshape(d, -1) for a in tables[1:]], axis=1)
                self._pk.launch_scatter(cuda.to_device(packed), *self._tables)
                self.rows_uploaded += d
        self._seen = stamp
        allowed = pods.pdb_allowed
        if self._allowed[0] is not allowed:
            self._allowed = (allowed, cuda.to_device(np.ascontiguousarray(allowed)))

    # --------------------------------------------------------------- queries
    def _query_args(self, cols, q) -> tuple:
        """The query part of ``search.filter_args`` on the device (once per
        compiled query and bitset width)."""
        key = (id(q), cols.taint_bits.shape[1], cols.port_bits.shape[1])
        hit = self._qargs.get(key)
        if hit is not None and hit[0] is q:
            return hit[1]
        host = V.filter_args(cols, V.pad_query(cols, q))[len(_COLUMN_ARGS):]
        args = tuple(self._cuda.to_device(np.ascontiguousarray(a))
                     if isinstance(a, np.ndarray) and a.ndim > 0 else a for a in host)
        self._qargs[key] = (q, args)
        while len(self._qargs) > 32:
            self._qargs.popitem(last=False)
        return args

    def _work(self, n: int, r: int, wp: int, m: int, c: int, p: int) -> tuple:
        """Device scratch: per node row [N, R], [N, WP] x2; per position
        [M, C] x2, [M, P], victims [M, C], stats [M, 7] (kept, grown by doubling)."""
        cuda = self._cuda
        key = (n, r, wp, c, p)
        got = self._scratch.get(key)
        if got is None or got[0] < m:
            cap = max(m, 2 * got[0]) if got is not None else max(m, 1)
            arrays = (cuda.device_array((n, r), np.int64), cuda.device_array((n, wp), np.int64),
                      cuda.device_array((n, wp), np.int64), cuda.device_array((cap, c), np.int64),
                      cuda.device_array((cap, c), np.int64), cuda.device_array((cap, p), np.int64),
                      cuda.device_array((cap, c), np.int64),
                      cuda.device_array((cap, V.N_STATS), np.int64),
                      cuda.device_array(self._pk.OUT_VICTIMS + c, np.int64))
            self._scratch = {key: (cap, arrays)}
            got = self._scratch[key]
        return got[1]

    def _launch_search(self, dcols: dict, cols, q, rows: np.ndarray, priority: int) -> tuple:
        """Run the victim kernel over ``rows``; its device outputs."""
        if not self._tables:
            raise RuntimeError("DeviceVictims.sync_pods must run before a search")
        n, r = cols.requested.shape
        wp = cols.port_bits.shape[1]
        if self._shape[3][2] != r or self._shape[4][2] != wp:
            raise ValueError(f"pod tables hold {self._shape[3][2]} resources and "
                             f"{self._shape[4][2]} port words, the node columns {r} and {wp}")
        c = max(self._shape[1][1], 1)
        m = rows.shape[0]
        work = self._work(n, r, wp, m, c, self._allowed[1].shape[0])
        args = (self._cuda.to_device(np.ascontiguousarray(rows, np.int64)),
                *(dcols[f] for f in _COLUMN_ARGS), *self._query_args(cols, q),
                np.int64(priority), *self._tables, self._allowed[1], *work[:8])
        self._k.launch(m, *args)
        return work

    def search(self, dcols: dict, cols, q, rows: np.ndarray, priority: int) -> V.VictimResult:
        """``search.select_victims`` on the device tables (outputs copied back)."""
        m = rows.shape[0]
        if m == 0:
            return V.VictimResult(np.zeros((0, V.N_STATS), np.int64),
                                  np.zeros((0, max(self._shape[1][1], 1)), np.int64))
        work = self._launch_search(dcols, cols, q, rows, priority)
        return V.VictimResult(work[7][:m].copy_to_host(), work[6][:m].copy_to_host())

    def search_and_pick(self, dcols: dict, cols, q, rows: np.ndarray, priority: int,
                        cap: int) -> DevicePick:
        """The search over the visiting order ``rows`` [M], upstream's visit
        (numCandidates ``cap``) and the pick, with one copy back."""
        m = rows.shape[0]
        if m == 0:
            return DevicePick(0, 0, -1, np.zeros(V.N_STATS, np.int64), np.zeros(0, np.int64))
        work = self._launch_search(dcols, cols, q, rows, priority)
        out = work[8]
        self._pk.launch_pick(work[7], work[6], m, cap, out)
        self._stats = work[7]
        host = out.copy_to_host()
        pk = self._pk
        chosen = int(host[pk.OUT_CHOSEN])
        stats = host[pk.OUT_STATS: pk.OUT_STATS + V.N_STATS].copy()
        nv = int(stats[V.STAT_N_VICTIMS]) if chosen >= 0 else 0
        return DevicePick(int(host[pk.OUT_VISITED]), int(host[pk.OUT_CALLS]), chosen, stats,
                          host[pk.OUT_VICTIMS: pk.OUT_VICTIMS + nv].copy())

    def last_stats(self, visited: int) -> np.ndarray:
        """[visited, 7] statistics of the last ``search_and_pick`` (a second
        copy, for the reasons of a preemption that found no candidate)."""
        return self._stats[:visited].copy_to_host()
