"""Two ways to write a plugin without touching the kernels.

* ``ArrayPlugin``: subclass it and implement ``filter(ctx, rows) -> [M] bool``
  (True = the node fits) and/or ``score(ctx, rows) -> [M] int64`` over all
  evaluated nodes at once, with array code.
* ``ScalarPlugin``: give per-node functions of one node's columns,
  ``fn(allocatable [R], requested [R], label_vals [K], request [R])``,
  returning a bool (filter) or an int (score).  On the ``numba`` backend the
  framework compiles them into the fused kernel pass; on ``numpy`` and
  ``cuda`` they run per node on the host (same results, slower).

Register either with ``registry.register(name, factory, points)``; see
``data/plugins/`` for one example of each.
"""

from __future__ import annotations

import numpy as np

from .plugin import NORMALIZE_NONE, Plugin


class ArrayPlugin(Plugin):
    """Base for array-code user plugins; ``reasons`` names the rejection."""

    normalize: int = NORMALIZE_NONE
    score_slot: int = -1
    reason: str = "node(s) didn't pass {name}"

    def explain_reasons(self, ctx, row: int) -> list[str]:
        return [self.reason.format(name=self.name)]


class ScalarPlugin(Plugin):
    """A user plugin made of per-node scalar functions (see module doc)."""

    score_slot: int = -1

    def __init__(self, name: str, filter_fn=None, score_fn=None,
                 normalize: int = NORMALIZE_NONE, reason: str | None = None):
        self.name = name
        self.filter_fn = filter_fn
        self.score_fn = score_fn
        self.normalize = normalize
        self.reason = reason or f"node(s) didn't pass {name}"

    def _host(self, fn, ctx, rows, dtype):
        cols = ctx.state.columns()
        request = ctx.state.resource_vector(ctx.pod.requests, intern=False)
        py = getattr(fn, "py_func", fn)
        out = np.zeros(rows.shape[0], dtype)
        for j, i in enumerate(rows):
            if cols.valid[i]:
                out[j] = py(cols.allocatable[i], cols.requested[i], cols.label_vals[i], request)
        return out

    def filter(self, ctx, rows):
        return self._host(self.filter_fn, ctx, rows, np.bool_)

    def score(self, ctx, rows):
        return self._host(self.score_fn, ctx, rows, np.int64)

    def explain_reasons(self, ctx, row: int) -> list[str]:
        return [self.reason]
