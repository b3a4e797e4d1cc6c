"""The bounds of an openb run's inputs and the seed lists of a sweep, in a
module without NumPy or the kernels, so that a command line checks them
(and shows them in ``--help``) before loading anything."""

from __future__ import annotations

import re

__all__ = ["DEFAULT_TUNE", "MAX_TUNE", "MAX_SEEDS", "MAX_SEED", "parse_seeds"]

DEFAULT_TUNE = 1.3           # the paper's arrived GPU demand, x capacity
MAX_TUNE = 10.0              # arrived demand up to 10x capacity
MAX_SEEDS = 10_000           # seeds in one sweep
MAX_SEED = 2**63 - 1

_SEED = re.compile(r"[0-9]+")


def parse_seeds(text: str) -> list[int]:
    """``42-51``, ``42,43,44`` or a mix (``42-44,50``): non-negative
    integers, at most MAX_SEEDS of them (checked before any list is built)."""
    out = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        lo_s, sep, hi_s = part.partition("-")
        lo_s, hi_s = lo_s.strip(), hi_s.strip()
        if not _SEED.fullmatch(lo_s) or (sep and not _SEED.fullmatch(hi_s)):
            raise ValueError(f"seeds {part!r}: expected a non-negative integer or a range "
                             "like 42-51")
        lo = int(lo_s)
        hi = int(hi_s) if sep else lo
        if hi > MAX_SEED:
            raise ValueError(f"seeds {part!r}: a seed must be at most {MAX_SEED}")
        if hi < lo:
            raise ValueError(f"seed range {part!r} runs backwards")
        if len(out) + (hi - lo + 1) > MAX_SEEDS:
            raise ValueError(f"seeds {text!r}: more than {MAX_SEEDS} seeds")
        out.extend(range(lo, hi + 1))
    if not out:
        raise ValueError(f"no seeds in {text!r}")
    return out
