"""A failed cycle's status code per node from its filter reason bits, and
the nodes a preemptor's dry run may visit, as compiled host passes (one
pass over the nodes each, no temporaries), not a dozen NumPy passes.

``first_rejector(reasons, start, bits, code_of, pf_bits, pf_code, error_code,
invalid, out) -> pending``: ``reasons`` [M] int64 in evaluation order
(position j is the node at row-order position (start + j) % M); ``out`` [M]
int64 in row order receives per node 0 when no bit is set, -1 for an
``invalid`` (free) row, ``pf_code`` when a bit of ``pf_bits`` is set, else
``code_of[p]`` of the first ``p`` whose ``bits[p]`` meets the reasons
(``code_of[p] < 0``: the caller decides: ``-(2 + p)`` is written and
counted in ``pending``), else ``error_code``.  Codes are plain integers
here; the caller names them.

``helpful_rows(codes, all_rows, not_helpful, out) -> (n, unhelpful)``: the
``all_rows`` [M] whose code is neither 0 nor ``not_helpful`` copied to
``out[:n]`` in order, and how many rows hold one of those two.
"""

from __future__ import annotations

__all__ = ["host"]


def _first_rejector(reasons, start, bits, code_of, pf_bits, pf_code, error_code, invalid, out):
    m = reasons.shape[0]
    pending = 0
    for j in range(m):
        r = reasons[j]
        i = j + start
        if i >= m:
            i -= m
        if r == 0:
            out[i] = 0
        elif r == invalid:
            out[i] = -1
        elif r & pf_bits:
            out[i] = pf_code
        else:
            c = error_code
            for p in range(bits.shape[0]):
                if r & bits[p]:
                    c = code_of[p]
                    if c < 0:
                        c = -(2 + p)
                        pending += 1
                    break
            out[i] = c
    return pending


def _helpful_rows(codes, all_rows, not_helpful, out):
    n = 0
    unhelpful = 0
    for i in range(codes.shape[0]):
        c = codes[i]
        if c == not_helpful or c == 0:
            unhelpful += 1
        else:
            out[n] = all_rows[i]
            n += 1
    return n, unhelpful


class _Compiled:
    """The passes above, ``njit``-compiled on first use (cached on disk)."""

    _fns = None

    def __getattr__(self, name):
        fns = _Compiled._fns
        if fns is None:
            from numba import njit
            fns = {n: njit(cache=True, nogil=True)(f) for n, f in (
                ("first_rejector", _first_rejector), ("helpful_rows", _helpful_rows))}
            _Compiled._fns = fns
        try:
            return fns[name]
        except KeyError:
            raise AttributeError(name) from None


host = _Compiled()
