"""The typical-pod table of a learning FGD, kept incrementally.

When GpuShareScore's FGD learns its typical pods from the pods it scores,
every new pod moves the typical-pod frequencies, and with them every
node's fragmentation.  ``TypicalTerms`` keeps, per scored pod shape, each
node's integer fragmentation term per typical shape (``kernels.gpu.fgd_terms``):
a node's terms are computed again only when its GPU-table row changes
(``GpuTable.ver``), a shape new to the table adds one column, and a change
of frequencies only re-combines the kept terms.  The scores equal the full
recompute's (``kernels.gpu.share.score_nodes``) bit for bit: same integer
terms, same float sums in the table's order.

The terms start afresh with another table, another capacity or GPU width,
another list of GPU models (a shape's model mask depends on it), or when the
columns kept outgrow the table (shapes that left it) past ``MAX_STALE_COLS``;
a scored shape's terms are dropped with the others past ``MAX_SHAPES``
shapes or ``MAX_TERM_BYTES``.
"""

from __future__ import annotations

import numpy as np

from tensorsched.kernels.gpu import fgd_terms as KFT

#: scored pod shapes kept at once; past it the terms start afresh
MAX_SHAPES = 64
#: bytes of terms kept at once (every scored shape); past it they start afresh
MAX_TERM_BYTES = 256 << 20
#: columns kept beyond the table's own before the terms start afresh
MAX_STALE_COLS = 64


class TypicalTerms:
    """Per-node, per-typical-shape FGD terms for one GpuShareScore (numpy
    or numba backend)."""

    def __init__(self, backend: str):
        self._kernel = KFT.score_rows_np if backend == "numpy" else KFT.score_rows
        self._sig = None
        self._cols: dict = {}           # typical shape (cpu, num, milli, models) -> column
        self._tp = tuple(np.zeros(0, np.int64) for _ in range(4))   # cpu, num, milli, mask [C]
        self._shapes: dict = {}         # scored shape -> (terms, term_ver, term_cols)
        self._spec = None
        self._order = np.zeros(0, np.int64)

    def _check(self, t) -> None:
        sig = (t, t.cap, t.left.shape[1], tuple(t.models))
        if self._sig is None or self._sig[0] is not t or self._sig[1:] != sig[1:]:
            self._reset(sig)

    def _reset(self, sig) -> None:
        self._sig = sig
        self._cols.clear()
        self._shapes.clear()
        self._tp = tuple(np.zeros(16, np.int64) for _ in range(4))
        self._spec = None

    def _columns(self, t, spec) -> np.ndarray:
        """``order``: the column of each shape of ``spec`` (the table:
        (cpu, num, milli, models, freq) each), new shapes given new ones."""
        if spec is self._spec:
            return self._order
        if len(self._cols) > len(spec) + MAX_STALE_COLS:
            self._reset(self._sig)
        order = np.empty(len(spec), np.int64)
        for p, s in enumerate(spec):
            key = s[:4]
            col = self._cols.get(key)
            if col is None:
                col = self._cols[key] = len(self._cols)
                if col >= self._tp[0].shape[0]:
                    self._grow(max(16, 2 * self._tp[0].shape[0]))
                vals = (s[0], s[1], s[2], t.model_mask(s[3].split("|")))
                for a, v in zip(self._tp, vals):
                    a[col] = v
            order[p] = col
        self._spec, self._order = spec, order
        return order

    def _grow(self, c: int) -> None:
        self._tp = tuple(np.concatenate([a, np.zeros(c - a.shape[0], np.int64)]) for a in self._tp)
        for key, (terms, ver, cols) in list(self._shapes.items()):
            wider = np.zeros(terms.shape[:2] + (c,), np.int32)
            wider[:, :, :terms.shape[2]] = terms
            self._shapes[key] = (wider, ver, cols)

    def score(self, t, state, rows: np.ndarray, skey, spec, freq: np.ndarray) -> np.ndarray:
        """FGD's raw scores (int64 [k], -1 where the pod does not fit) of
        ``rows`` (int64 [k]) for the pod shape ``skey`` = (cpu_nz, num,
        milli, model mask) under the typical pods ``spec`` with frequencies
        ``freq`` [P] (``GpuShareScore.typical``'s last array)."""
        self._check(t)
        order = self._columns(t, spec)
        got = self._shapes.get(skey)
        if got is None:
            shape = (t.cap, KFT.width(t.left.shape[1]), self._tp[0].shape[0])
            kept = sum(v[0].nbytes for v in self._shapes.values())
            if len(self._shapes) >= MAX_SHAPES or kept + 4 * np.prod(shape) > MAX_TERM_BYTES:
                self._shapes.clear()
            got = self._shapes[skey] = (
                np.zeros(shape, np.int32),
                np.full(t.cap, -1, np.int64), np.zeros(t.cap, np.int64))
        terms, term_ver, term_cols = got
        cpu_nz, num, milli, mask = skey
        return self._kernel(rows, t.count, t.model, t.left, state.allocatable, state.requested,
                            t.ver, cpu_nz, num, milli, mask, *self._tp, len(self._cols),
                            order, freq, terms, term_ver, term_cols)
