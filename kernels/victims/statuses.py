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

``helpful_of_reasons(reasons, start, bits, code_of, pf_bits, pf_code,
error_code, invalid, all_rows, not_helpful, rows_out, pending_at,
pending_p) -> (n, unhelpful, k)``: ``codes_and_helpful``'s rows and count
with no codes array: one pass in row order reading ``reasons`` rotated
(row-order position i is position (i - start) % M); a node whose code is
pending (host filter p to ask) is kept among the rows, its index in
``rows_out`` written to ``pending_at[k]`` and p to ``pending_p[k]`` (k
such nodes, in row order): the caller drops those the filter then finds
unresolvable.  ``rows_out`` is written only from the first node left out
on (the rows before it copied then): where every node helps (n == M, a
full cluster's failed cycle) nothing is written and ``all_rows`` is the
answer, read by no pass.

``first_rejector`` and ``helpful_of_reasons`` walk the rejectors
(``code_of_reasons``) once per change of the reason bits along the nodes,
not once per node (a failed cycle's nodes mostly share their reasons).
"""

from __future__ import annotations

from tensorsched.kernels._compile import LazyNjit

__all__ = ["host"]


def _code_of_reasons(r, bits, code_of, pf_bits, pf_code, error_code, invalid):
    """The code of one node's reason bits ``r`` (``first_rejector``'s rule)."""
    if r == 0:
        return 0
    if r == invalid:
        return -1
    if r & pf_bits:
        return pf_code
    for p in range(bits.shape[0]):
        if r & bits[p]:
            c = code_of[p]
            return -(2 + p) if c < 0 else c
    return error_code


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
            last_c = code_of_reasons(r, bits, code_of, pf_bits, pf_code, error_code, invalid)
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


def _helpful_of_reasons(reasons, start, bits, code_of, pf_bits, pf_code, error_code, invalid,
                        all_rows, not_helpful, rows_out, pending_at, pending_p):
    m = reasons.shape[0]
    n = 0
    unhelpful = 0
    k = 0
    last_r = 0
    last_c = 0
    copying = False                         # a node left out: rows_out holds the answer
    j = m - start if start else 0           # row-order position 0 is position (-start) % m
    for i in range(m):
        if j == m:
            j = 0
        r = reasons[j]
        j += 1
        if r != last_r:
            last_r = r
            last_c = code_of_reasons(r, bits, code_of, pf_bits, pf_code, error_code, invalid)
        if last_c == not_helpful or last_c == 0:
            unhelpful += 1
            if not copying:                 # every node before this one helps (n == i)
                for t in range(n):
                    rows_out[t] = all_rows[t]
                copying = True
        else:
            if last_c <= -2:
                pending_at[k] = n
                pending_p[k] = -(2 + last_c)
                k += 1
            if copying:
                rows_out[n] = all_rows[i]
            n += 1
    return n, unhelpful, k


def _with(fn, name: str, **compiled):
    """``fn`` as a function named ``name`` whose globals add ``compiled``
    (its compiled callees)."""
    return type(fn)(fn.__code__, fn.__globals__ | compiled, name)


def _compiled(jit) -> dict:
    """The passes above, compiled; each calls the compiled ones it names
    (its globals)."""
    code = jit(_code_of_reasons)
    first = jit(_with(_first_rejector, "first_rejector", code_of_reasons=code))
    helpful = jit(_helpful_rows)
    both = jit(_with(_codes_and_helpful, "codes_and_helpful", first_rejector=first,
                     helpful_rows=helpful))
    rows = jit(_with(_helpful_of_reasons, "helpful_of_reasons", code_of_reasons=code))
    return {"first_rejector": first, "helpful_rows": helpful, "codes_and_helpful": both,
            "helpful_of_reasons": rows}


#: the passes above, compiled on first use (cached on disk)
host = LazyNjit(_compiled)
