"""A victim table's rows written from the bound pods' columns in one
compiled host pass (``framework.preemption.evaluator.PodTable``'s batched
row writes): every row blanked and its pods' slots filled, no NumPy call
per column nor Python step per pod.

``write_rows(rows, counts, slots, class_id, class_priority, shape_id,
shape_req, class_map, start_ns, deleting, no_start, count, prio, start,
req, cls, shp, dying, ports, pdb, start_now)``: ``rows`` [k] int64 the table rows
(distinct); ``counts`` [k] their pods; ``slots`` [sum(counts)] int64 the
pods' bound slots, row after row, each row's in slot (key) order;
``class_id`` / ``shape_id`` [cap] the bound pods' class and shape ids by
slot, ``class_priority`` [classes] the classes' priorities, ``shape_req``
[S, R'] int64 each shape's request (R' <= R columns; the rest 0),
``class_map`` [classes] int64 the table's class id of each bound class
id; ``start_ns`` [cap] int64 the bound pods' start times by slot (ns,
``no_start`` for none: written as ``start_now``) and ``deleting`` [cap]
bool their terminating flags by slot (gathered here: no per-pod pass
before the call).  Writes, per row i and slot position s: ``count[i]``,
``prio``, ``start``, ``req`` [.., R], ``cls``, ``shp``, ``dying``; ports
and PDB bits are zeroed (the caller sets the few pods' bits).  Free slots
hold 0, ``start_now``, 0, -1, -1, False.

``pack_rows(rows, count, prio, start, req, ports, pdb, out) -> width``:
the device pod tables' rows ``rows`` [d] packed for one upload, row
after row into ``out`` (``d * width`` values): the row, its pod count,
then its prio [C], start [C], req [C x R], ports [C x WP] and pdb
[C x WB] flattened (``_pick_cuda.scatter_packed_kernel`` unpacks them);
``row_width`` is that width.

``pack_flat_rows(rows, table, out) -> width``: rows ``rows`` [d] of a 2-D
int64 ``table`` [N, W] packed for one upload, each the row then its W
values (``_pick_cuda.scatter_flat_rows_kernel`` unpacks them), width
1 + W; ``pack_index_rows(rows, order, cls, dying, alike_from, out) ->
width``: the same for the index table the device search on counts reads
(per row its order [C], class ids [C], terminating flags [C] as 0/1 and
its alike tail), width 2 + 3C.
"""

from __future__ import annotations

from tensorsched.kernels._compile import LazyNjit

__all__ = ["host", "row_width"]


def _write_rows(rows, counts, slots, class_id, class_priority, shape_id, shape_req, class_map,
                start_ns, deleting, no_start, count, prio, start, req, cls, shp, dying, ports,
                pdb, start_now):
    width = prio.shape[1]
    n_res = req.shape[2]
    have_res = min(n_res, shape_req.shape[1])
    k = 0
    for rr in range(rows.shape[0]):
        i = rows[rr]
        n = counts[rr]
        count[i] = n
        for s in range(width):
            if s < n:
                at = k + s
                slot = slots[at]
                cid = class_id[slot]
                sid = shape_id[slot]
                prio[i, s] = class_priority[cid]
                cls[i, s] = class_map[cid]
                shp[i, s] = sid
                for r in range(have_res):
                    req[i, s, r] = shape_req[sid, r]
                for r in range(have_res, n_res):
                    req[i, s, r] = 0
                t = start_ns[slot]
                start[i, s] = start_now if t == no_start else t
                dying[i, s] = deleting[slot]
            else:
                prio[i, s] = 0
                cls[i, s] = -1
                shp[i, s] = -1
                for r in range(n_res):
                    req[i, s, r] = 0
                start[i, s] = start_now
                dying[i, s] = False
            for w in range(ports.shape[2]):
                ports[i, s, w] = 0
            for w in range(pdb.shape[2]):
                pdb[i, s, w] = 0
        k += n


def _pack_rows(rows, count, prio, start, req, ports, pdb, out):
    c = prio.shape[1]
    width = 2 + 2 * c + c * (req.shape[2] + ports.shape[2] + pdb.shape[2])
    at = 0
    for rr in range(rows.shape[0]):
        i = rows[rr]
        out[at] = i
        out[at + 1] = count[i]
        at += 2
        for s in range(c):
            out[at] = prio[i, s]
            at += 1
        for s in range(c):
            out[at] = start[i, s]
            at += 1
        for s in range(c):
            for r in range(req.shape[2]):
                out[at] = req[i, s, r]
                at += 1
        for s in range(c):
            for w in range(ports.shape[2]):
                out[at] = ports[i, s, w]
                at += 1
        for s in range(c):
            for w in range(pdb.shape[2]):
                out[at] = pdb[i, s, w]
                at += 1
    return width


def _pack_flat_rows(rows, table, out):
    w = table.shape[1]
    at = 0
    for rr in range(rows.shape[0]):
        i = rows[rr]
        out[at] = i
        for k in range(w):
            out[at + 1 + k] = table[i, k]
        at += 1 + w
    return 1 + w


def _pack_index_rows(rows, order, cls, dying, alike_from, out):
    c = order.shape[1]
    at = 0
    for rr in range(rows.shape[0]):
        i = rows[rr]
        out[at] = i
        for s in range(c):
            out[at + 1 + s] = order[i, s]
            out[at + 1 + c + s] = cls[i, s]
            out[at + 1 + 2 * c + s] = 1 if dying[i, s] else 0
        out[at + 1 + 3 * c] = alike_from[i]
        at += 2 + 3 * c
    return 2 + 3 * c


def row_width(shapes) -> int:
    """Values a packed row holds (``pack_rows``), from the shapes of the
    six pod tables (count, prio, start, req, ports, pdb)."""
    c = shapes[1][1]
    return 2 + 2 * c + c * (shapes[3][2] + shapes[4][2] + shapes[5][2])


#: the passes above, compiled on first use (cached on disk)
host = LazyNjit(lambda jit: {"write_rows": jit(_write_rows), "pack_rows": jit(_pack_rows),
                             "pack_flat_rows": jit(_pack_flat_rows),
                             "pack_index_rows": jit(_pack_index_rows)})
