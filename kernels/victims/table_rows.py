"""The victim table's rows written from the bound pods' gathered columns
as one compiled host pass (``PodTable.sync``): a few rows change between
two preemptors, and clearing and scattering each of the table's nine
columns with NumPy costs more than the pass.

``write_rows(rows, counts, prio_v, start_v, shape_v, cls_v, dying_v,
request_of, pdb_v, port_pod, port_bit, start_absent, count, prio, start,
req, ports, pdb, cls, shape, dying)``: for each ``rows[j]`` ([k] int64) the
row holds ``counts[j]`` pods, the next ``counts[j]`` of the flat pod
columns (rows in order, positions 0.. within a row): ``prio_v``,
``start_v``, ``shape_v``, ``cls_v`` [T] int64, ``dying_v`` [T] bool,
``pdb_v`` [T, WB] int64 (or [0, WB]: no PDB bits), the request
``request_of[shape_v]`` ([S, R] int64); host port bit ``port_bit[i]`` is
set for flat pod ``port_pod[i]`` ([m] int64).  The rows' other cells are
cleared (``start_absent`` for start times, -1 for classes and shapes).
Table columns: count [N]; prio, start, cls, shape [N, C] int64; req
[N, C, R]; ports [N, C, WP]; pdb [N, C, WB] int64; dying [N, C] bool.
"""

from __future__ import annotations

__all__ = ["host"]


def _write_rows(rows, counts, prio_v, start_v, shape_v, cls_v, dying_v, request_of, pdb_v,
                port_pod, port_bit, start_absent, count, prio, start, req, ports, pdb, cls,
                shape, dying):
    c = prio.shape[1]
    r = req.shape[2]
    wp = ports.shape[2]
    wb = pdb.shape[2]
    any_pdb = pdb_v.shape[0] > 0
    at = 0
    first = 0
    for j in range(rows.shape[0]):
        row = rows[j]
        n = counts[j]
        count[row] = n
        for s in range(c):
            for w in range(wp):
                ports[row, s, w] = 0
            if s < n:
                p = at + s
                prio[row, s] = prio_v[p]
                start[row, s] = start_v[p]
                shape[row, s] = shape_v[p]
                cls[row, s] = cls_v[p]
                dying[row, s] = dying_v[p]
                for k in range(r):
                    req[row, s, k] = request_of[shape_v[p], k]
                for w in range(wb):
                    pdb[row, s, w] = pdb_v[p, w] if any_pdb else 0
            else:
                prio[row, s] = 0
                start[row, s] = start_absent
                shape[row, s] = -1
                cls[row, s] = -1
                dying[row, s] = False
                for k in range(r):
                    req[row, s, k] = 0
                for w in range(wb):
                    pdb[row, s, w] = 0
        # the host ports of this row's pods (``port_pod`` ascending)
        while first < port_pod.shape[0] and port_pod[first] < at + n:
            b = port_bit[first]
            ports[row, port_pod[first] - at, b >> 6] |= 1 << (b & 63)
            first += 1
        at += n


class _Compiled:
    """The pass above, ``njit``-compiled on first use (cached on disk)."""

    _fns = None

    def __getattr__(self, name):
        fns = _Compiled._fns
        if fns is None:
            from numba import njit
            fns = {"write_rows": njit(cache=True, nogil=True)(_write_rows)}
            _Compiled._fns = fns
        try:
            return fns[name]
        except KeyError:
            raise AttributeError(name) from None


host = _Compiled()
