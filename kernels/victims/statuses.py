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

``codes_and_helpful(reasons, start, bits, code_of, pf_bits, pf_code,
error_code, invalid, out, all_rows, not_helpful, rows_out) -> (pending, n,
unhelpful)``: ``first_rejector`` then, when no code is pending,
``helpful_rows`` over its codes into ``rows_out``, in one call (n and
unhelpful -1 when codes are pending: the caller resolves them first).

``first_rejector`` walks the rejectors once per change of the reason
bits along the nodes, not once per node (a failed cycle's nodes mostly
share their reasons).
"""

from __future__ import annotations

from tensorsched.kernels._compile import LazyNjit

__all__ = ["host"]


def _first_rejector(reasons, start, bits, code_of, pf_bits, pf_code, error_code, invalid, out):
    m = reasons.shape[0]
    pending = 0
    # The last reasons' code kept: a failed cycle's nodes mostly share
    # their reasons (a full cluster: the same insufficient resource), so
    # the walk over the rejectors runs once per change, not once per node.
    last_r = 0
    last_c = 0
    for j in range(m):
        r = reasons[j]
        if r != last_r:
            last_r = r
            if r == 0:
                last_c = 0
            elif r == invalid:
                last_c = -1
            elif r & pf_bits:
                last_c = pf_code
            else:
                last_c = error_code
                for p in range(bits.shape[0]):
                    if r & bits[p]:
                        last_c = code_of[p]
                        if last_c < 0:
                            last_c = -(2 + p)
                        break
        i = j + start
        if i >= m:
            i -= m
        out[i] = last_c
        if last_c <= -2:
            pending += 1
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


def _codes_and_helpful(reasons, start, bits, code_of, pf_bits, pf_code, error_code, invalid,
                       out, all_rows, not_helpful, rows_out):
    pending = first_rejector(reasons, start, bits, code_of, pf_bits, pf_code, error_code,
                             invalid, out)
    if pending:
        return pending, -1, -1
    n, unhelpful = helpful_rows(out, all_rows, not_helpful, rows_out)
    return 0, n, unhelpful


def _compiled(jit) -> dict:
    """The passes above, compiled; the fused pass calls the two compiled
    ones (its globals)."""
    first = jit(_first_rejector)
    helpful = jit(_helpful_rows)
    both = _codes_and_helpful.__globals__ | {"first_rejector": first, "helpful_rows": helpful}
    fused = type(_codes_and_helpful)(_codes_and_helpful.__code__, both, "codes_and_helpful")
    return {"first_rejector": first, "helpful_rows": helpful, "codes_and_helpful": jit(fused)}


#: the passes above, compiled on first use (cached on disk)
host = LazyNjit(_compiled)
