"""Per-row codes of several per-domain count rules, in one compiled pass.

A filter made of C rules of the form "a node lacking the key fails; a node
whose domain's count is above a threshold fails" (PodTopologySpread's
DoNotSchedule constraints) answers every node row at once: rule c gives
row i code 1 when ``domp1s[c][i]`` is 0 (no domain), code 2 when
``sums[c][domp1s[c][i] - 1] > thresh[c]``, and the first failing rule's
code stands (0: every rule passes).  One pass writes the codes and the
pass mask together, where one pass per rule and one more for the mask
read the rows C + 1 times.

Host kernels only (Numba, compiled on first use and cached; no pods, no
selectors): the caller hands the rules' arrays as tuples of equal dtype.
"""

from __future__ import annotations

from ._compile import LazyNjit


def _rule_codes(codes, ok, domp1s, sums, thresh):
    """codes [N] int64 and ok [N] bool of rules ``domp1s`` (C arrays of
    at least N int64 domain ids + 1, 0: lacks the key), ``sums`` (C [D_c]
    int64 per-domain counts) and ``thresh`` [C] int64 (module doc)."""
    for i in range(codes.shape[0]):
        code = 0
        for c in range(len(domp1s)):
            d = domp1s[c][i]
            if d == 0:
                code = 1
                break
            if sums[c][d - 1] > thresh[c]:
                code = 2
                break
        codes[i] = code
        ok[i] = code == 0


#: ``rule_codes``, compiled on first use (one specialization per C)
host = LazyNjit(lambda jit: {"rule_codes": jit(_rule_codes)})
