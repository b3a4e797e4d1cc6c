"""Scalar reference of Coscheduling's minResources check
(``Coscheduling.resource_gap``; upstream's CheckClusterResource): per
valid node row allocatable minus requested, every bound pod of the group
(and every pod added for the cycle only) read one at a time and its
request counted back as free, then the running sum over rows."""

from __future__ import annotations

import numpy as np


def resource_gap(plugin, state, pg) -> dict[str, int]:
    """{resource: amount still missing} for ``pg`` (empty: it fits)."""
    need = dict(pg.min_resources or {})
    need["pods"] = pg.min_member
    rows = state.valid_rows()
    width = len(state.resources)
    free = np.zeros((rows.shape[0], width), np.int64)
    for i, r in enumerate(rows.tolist()):
        for j in range(min(width, state.allocatable.shape[1])):
            free[i, j] = state.allocatable[r, j] - state.requested[r, j]
    g = (pg.namespace, pg.name)
    extra = set(plugin._cycle_extra(state))
    pos = {int(r): i for i, r in enumerate(rows)}
    for key, e in state.pods.items():
        if key in extra or plugin.group_key(e.record) == g:
            free[pos[e.node_row], : e.request.shape[0]] += e.request
    gap = {}
    for name, amount in need.items():
        i = state.resources.get(name)
        running = free[:, i].cumsum() if i >= 0 and rows.shape[0] else np.zeros(1, np.int64)
        if not rows.shape[0] or int(running.max()) < amount:
            gap[name] = amount - (int(free[:, i].sum()) if i >= 0 else 0)
    return gap
