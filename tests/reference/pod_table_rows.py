"""The victim table's rows read pod by pod: the scalar reference of
``PodTable``'s batched row writes (``PodTable._write_rows``).  Each row's
pods in key order, each pod's columns read one at a time from the state:
its record (built from its class) for PDB membership
(``parsing.pdb.applies``), its class record for what the pod-to-pod
filters compare (namespace, labels, required anti-affinity terms)."""

from __future__ import annotations

import numpy as np

from tensorsched.framework.parsing.pdb import applies
from tensorsched.framework.parsing.selectors import pod_terms
from tensorsched.kernels.victims import search as V


def read_row(state, pdbs, row: int, width: int, words_ports: int, words_pdb: int) -> dict:
    """Row ``row`` of a victim table of ``width`` slots, as plain lists:
    keys, count, prio, start, shp, req, dying, ports, pdb (bit words) and
    cls (per slot the class's (namespace, sorted labels, anti-affinity
    terms), None for a free slot)."""
    bound = state.pods
    keys = sorted(state.pods_on_node[row])
    r = len(state.resources)
    out = {"keys": keys, "count": len(keys), "prio": [0] * width,
           "start": [V.START_NOW] * width, "shp": [-1] * width,
           "req": [[0] * r for _ in range(width)], "dying": [False] * width,
           "ports": [[0] * words_ports for _ in range(width)],
           "pdb": [[0] * words_pdb for _ in range(width)], "cls": [None] * width}
    for s, key in enumerate(keys):
        slot = bound._slot[key]
        rec = bound.record(key)
        out["prio"][s] = rec.priority or 0
        out["start"][s] = V.START_NOW if rec.start_ns is None else rec.start_ns
        sid = int(bound.shape_id[slot])
        out["shp"][s] = sid
        req = bound.shapes[sid][0]
        out["req"][s] = [int(x) for x in req[:r]] + [0] * max(0, r - req.shape[0])
        out["dying"][s] = bool(rec.deleting)
        for b in bound.ports.get(slot, ()):
            word = np.int64(out["ports"][s][b >> 6]) | (np.int64(1) << np.int64(b & 63))
            out["ports"][s][b >> 6] = int(word)
        for p, pdb in enumerate(pdbs):
            if applies(pdb, rec):
                word = np.int64(out["pdb"][s][p >> 6]) | (np.int64(1) << np.int64(p & 63))
                out["pdb"][s][p >> 6] = int(word)
        out["cls"][s] = (rec.namespace, sorted((rec.labels or {}).items()),
                         pod_terms(rec)["req_anti"])
    return out


def table_row(table, row: int) -> dict:
    """Row ``row`` of ``table`` (a synced ``PodTable``) in ``read_row``'s form."""
    recs = table.class_records
    got = {a: getattr(table, a)[row].tolist()
           for a in ("prio", "start", "shp", "req", "dying", "ports", "pdb")}
    got["keys"] = list(table.keys[row])
    got["count"] = int(table.count[row])
    got["cls"] = [None if c < 0 else (recs[c].namespace, sorted((recs[c].labels or {}).items()),
                                      pod_terms(recs[c])["req_anti"])
                  for c in table.cls[row].tolist()]
    return got
