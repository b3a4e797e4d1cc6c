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
fifteen arguments (``_cuda.victims_kernel``); its scratch is one buffer
kept between searches, the visiting order goes up in one copy into a kept
buffer.  ``pack_stage`` makes a ``DeviceStage`` from host columns (tests).

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

from typing import NamedTuple

import numpy as np

from tensorsched.kernels.fused.stage_args import DeviceStage

from . import search as V

__all__ = ["DevicePick", "DeviceStage", "DeviceVictims", "pack_stage"]


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
        self._scratch: dict = {}
        self._rows = None                   # the visiting order's kept device buffer
        self._alloc = None                  # kept buffer of ``allocatable_from``
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
            buf[:head.shape[0]].copy_to_device(head)
            self._scratch = {key: (cap, buf, self._k.work_views(buf, head),
                                   cuda.device_array(self._pk.OUT_VICTIMS + c, np.int64))}
            got = self._scratch[key]
        return got[1:]

    def _device_rows(self, rows: np.ndarray):
        """``rows`` on the device: one copy into a kept buffer."""
        m = rows.shape[0]
        if self._rows is None or self._rows.shape[0] < m:
            self._rows = self._cuda.device_array(max(m, 2 * (0 if self._rows is None
                                                             else self._rows.shape[0])),
                                                 np.int64)
        self._rows[:m].copy_to_device(np.ascontiguousarray(rows, np.int64))
        return self._rows[:m]

    def allocatable_from(self, host: np.ndarray):
        """``host`` [N, R] int64 in a kept device buffer (one copy up), for a
        search that reads it instead of the stage's allocatable (the
        nominated pods' requests taken off: ``evaluator.nominated_allocatable``)."""
        host = np.ascontiguousarray(host, np.int64)
        if self._alloc is None or self._alloc.shape != host.shape:
            self._alloc = self._cuda.to_device(host)
        else:
            self._alloc.copy_to_device(host)
        return self._alloc

    def _launch_search(self, stage: DeviceStage, cols, rows: np.ndarray, priority: int,
                       allocatable=None) -> tuple:
        """Run the victim kernel over ``rows``: (its work views by name, the
        pick's out buffer)."""
        if not self._tables:
            raise RuntimeError("DeviceVictims.sync_pods must run before a search")
        n, r = cols.requested.shape
        wp = cols.port_bits.shape[1]
        if self._shape[3][2] != r or self._shape[4][2] != wp:
            raise ValueError(f"pod tables hold {self._shape[3][2]} resources and "
                             f"{self._shape[4][2]} port words, the node columns {r} and {wp}")
        c = max(self._shape[1][1], 1)
        m = rows.shape[0]
        buf, views, out = self._work(n, r, wp, m, c, self._allowed[1].shape[0])
        self._k.launch(m, self._device_rows(rows), priority, stage.packs, stage.qbuf,
                       stage.allocatable if allocatable is None else allocatable,
                       self._tables, self._allowed[1], buf)
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
        work, _ = self._launch_search(stage, cols, rows, priority, allocatable)
        return V.VictimResult(work["stats"][:m].copy_to_host(),
                              work["victims"][:m].copy_to_host())

    def search_and_pick(self, stage: DeviceStage, cols, rows: np.ndarray, priority: int,
                        cap: int, allocatable=None) -> DevicePick:
        """The search over the visiting order ``rows`` [M], upstream's visit
        (numCandidates ``cap``) and the pick: one copy up (the rows), two
        launches, one copy back; ``allocatable`` as ``search``'s."""
        m = rows.shape[0]
        if m == 0:
            return DevicePick(0, 0, -1, np.zeros(V.N_STATS, np.int64), np.zeros(0, np.int64))
        work, out = self._launch_search(stage, cols, rows, priority, allocatable)
        self._pk.launch_pick(work["stats"], work["victims"], m, cap, out)
        self._stats = work["stats"]
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
