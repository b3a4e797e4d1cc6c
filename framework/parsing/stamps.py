"""Many timestamps at once: the pods of a list arrive with creation times of
the API server's shape (``YYYY-MM-DDTHH:MM:SSZ``), mostly in order.

``utc_seconds`` reads such strings as one array (no Python work per
string): the shape and the second are checked on the characters, the
date, hour and minute parsed once per run of equal prefixes by
``meta.parse_utc_second``'s minute parser, so every value it gives is
exactly ``meta.parse_timestamp``'s.  A string of another shape, or an
invalid one, is left to the caller (``ok`` False).
"""

from __future__ import annotations

import numpy as np

from .meta import minute_ns

__all__ = ["utc_seconds"]

_SHAPE = 20                     # len("2024-05-01T10:00:00Z")
_NS = 1_000_000_000
_LOW, _HIGH = -(2**63), 2**63 - 1 - 59 * _NS


def utc_seconds(values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(ns [n] int64, ok [n] bool) of ``values`` (n str): ``ns[i]`` is
    ``parse_timestamp(values[i])`` where ``ok[i]``, 0 elsewhere."""
    n = len(values)
    ns = np.zeros(n, np.int64)
    ok = np.zeros(n, bool)
    if n == 0:
        return ns, ok
    codes = _ascii_codes(values)
    if codes is not None:
        shaped = True           # every one 20 characters long
    else:
        # the lengths apart: numpy's str arrays drop trailing NULs
        shaped = np.fromiter(map(len, values), np.int64, n) == _SHAPE
        text = np.array(values, dtype=str)
        width = text.dtype.itemsize // 4
        if width < _SHAPE:
            return ns, ok
        codes = text.view(np.uint32).reshape(n, width)[:, :_SHAPE]
    tens, units = codes[:, 17], codes[:, 18]
    ok = (shaped & (codes[:, 19] == ord("Z")) & (codes[:, 16] == ord(":"))
          & (tens >= ord("0")) & (tens <= ord("5")) & (units >= ord("0")) & (units <= ord("9")))
    rows = np.flatnonzero(ok)
    if rows.size == 0:
        return ns, ok
    # the first 16 characters as whole words (a copy: rows picked)
    prefix = np.ascontiguousarray(codes[rows, :16]).view(np.uint64)
    # runs of one minute: parsed once each
    starts = np.flatnonzero(np.concatenate(
        ([True], (prefix[1:] != prefix[:-1]).any(axis=1))))
    minutes = np.zeros(starts.size, np.int64)
    valid = np.ones(starts.size, bool)
    for j, row in enumerate(rows[starts].tolist()):
        m = minute_ns(values[row][:16])
        if m is None or not _LOW <= m <= _HIGH:     # invalid, or past int64: the caller's
            valid[j] = False
        else:
            minutes[j] = m
    lengths = np.diff(np.append(starts, rows.size))
    second = (tens[rows].astype(np.int64) - ord("0")) * 10 + (units[rows].astype(np.int64)
                                                             - ord("0"))
    ns[rows] = np.repeat(minutes, lengths) + second * _NS
    ok[rows] = np.repeat(valid, lengths)
    ns[~ok] = 0
    return ns, ok


def _ascii_codes(values: list[str]) -> np.ndarray | None:
    """[n, 20] uint8 character codes of ``values`` when every one is 20
    ASCII characters long, else None (the caller then reads code points).
    One join and one encode, no pass in Python: joined by newlines, which
    none of them holds, each is 20 long exactly when the newlines fall
    every 21 characters."""
    n = len(values)
    joined = "\n".join(values)
    if len(joined) != (_SHAPE + 1) * n - 1 or joined.count("\n") != n - 1:
        return None
    try:
        raw = (joined + "\n").encode("ascii")
    except UnicodeEncodeError:
        return None
    codes = np.frombuffer(raw, np.uint8).reshape(n, _SHAPE + 1)
    if not (codes[:, _SHAPE] == ord("\n")).all():
        return None
    return codes[:, :_SHAPE]
