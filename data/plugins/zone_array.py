"""Example user plugin written as array code over all nodes at once.

``ZoneSpreadHint`` scores nodes of a preferred zone (plugin arg ``zone``) 100
and others 0, and filters out nodes without a zone label.
"""

import numpy as np

from tensorsched.framework.runtime.user_plugins import ArrayPlugin

ZONE_KEY = "topology.kubernetes.io/zone"


class ZoneSpreadHint(ArrayPlugin):
    name = "ZoneSpreadHint"
    reason = "node(s) had no zone label"

    def __init__(self, zone: str):
        self.zone = zone

    def _zone_column(self, ctx, rows):
        k = ctx.state.label_keys.get(ZONE_KEY)
        if k < 0:
            return np.full(rows.shape[0], -1, np.int32), -1
        want = ctx.state.label_values[k].get(self.zone)
        return ctx.state.label_vals[rows, k], want

    def filter(self, ctx, rows):
        col, _ = self._zone_column(ctx, rows)
        return col >= 0

    def score(self, ctx, rows):
        col, want = self._zone_column(ctx, rows)
        return np.where((col == want) & (want >= 0), 100, 0).astype(np.int64)


def new(args, handle):
    return ZoneSpreadHint((args or {}).get("zone", "zone-a"))
