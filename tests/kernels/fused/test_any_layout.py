"""The fused kernels called from Python (``fused_pass``,
``fused_pass_by_row``, ``rebuild_keys``, ``update_keys``, the compiled
runs and the sort path's ``run_keys``) compile one signature with every
array of any layout (``_compile.AnyLayout``; the runs and ``run_keys``:
the stage arguments' arrays): on a random cluster, C-contiguous inputs (a
test's), strided views (the state's node columns are rows of wider
tables) and, for the runs, Fortran-ordered columns give the same answers,
and the other layouts compile nothing more."""

import numpy as np
from numba import types
from support.kernel_inputs import DEFAULT_NORM, DEFAULT_WEIGHTS, Source, cols, query

from tensorsched.kernels import layout as L
from tensorsched.kernels._compile import array_types
from tensorsched.kernels.fused import _numba as FN
from tensorsched.kernels.fused import run_sort as RS
from tensorsched.kernels.fused._core import RES_PODS
from tensorsched.kernels.fused.backends import (
    WINDOW_TREE_MIN_RUN,
    NumbaBackend,
    _pad_bitsets,
    kernel_args,
)
from tensorsched.kernels.fused.ties import seed_mix


def _strided(a):
    """``a`` as a non-contiguous view of a larger array, the same values
    (scalars as they are)."""
    if not isinstance(a, np.ndarray) or a.ndim == 0:
        return a
    if a.ndim == 1:
        wide = np.zeros(2 * a.shape[0], a.dtype)
        wide[::2] = a
        return wide[::2]
    wide = np.zeros(a.shape[:-1] + (a.shape[-1] + 1,), a.dtype)
    wide[..., : a.shape[-1]] = a
    return wide[..., : a.shape[-1]]


def _any_layout_only(dispatcher, before):
    """The signatures compiled since ``before``: every array of layout A."""
    new = [s for s in dispatcher.signatures if s not in before]
    return all(t.layout == "A" for s in new for t in s if isinstance(t, types.Array))


def _cluster(seed, n=12):
    rng = np.random.default_rng(seed)
    alloc = np.tile(np.array([8000, 16 << 30, 0, 110], np.int64), (n, 1))
    alloc[:, 0] = rng.integers(1, 9, n) * 1000
    req = np.zeros_like(alloc)
    req[:, 0] = rng.integers(0, 5, n) * 500
    req[:, 1] = rng.integers(0, 8, n) << 30
    req[:, RES_PODS] = rng.integers(0, 20, n)
    c = cols(n, alloc=alloc, req=req, valid=rng.random(n) < 0.9)
    q = query(filter_flags=L.F_FIT, score_flags=3, request=[1500, 2 << 30, 0, 1])
    return c, q


def test_fused_passes_one_compile_for_any_layout():
    for seed in range(3):
        c, q = _cluster(seed)
        n = c.allocatable.shape[0]
        rows = np.arange(n, dtype=np.int64)[::-1].copy()
        args = kernel_args(c, _pad_bitsets(c, q))
        for fn in (FN.fused_pass, FN.fused_pass_by_row):
            got = []
            for k, (r, a) in enumerate(((rows, args), (_strided(rows),
                                                       tuple(_strided(x) for x in args)))):
                reasons = np.zeros(n, np.int64)
                raw = np.zeros((n, 5), np.int64)
                before = list(fn.signatures)
                fn(r, *a, reasons, raw)
                if k == 1:
                    assert fn.signatures == before     # nothing compiled for the views
                else:
                    assert _any_layout_only(fn.dispatcher, before)
                got.append((reasons.tolist(), raw.tolist()))
            assert got[0] == got[1]
            assert any(r == 0 for r in got[0][0]) and any(r != 0 for r in got[0][0])


def test_key_tree_one_compile_for_any_layout():
    rng = np.random.default_rng(5)
    m, slots, size = 10, 4, 16
    active = np.ones(slots, np.bool_)
    norm = np.array([0, 1, 2, 0], np.int64)
    weights = np.array([1, 2, 1, 3], np.int64)
    reasons = np.where(rng.random(m) < 0.3, 1, 0).astype(np.int64)
    raw = rng.integers(0, 5, (m, slots)).astype(np.int64)
    requested = np.zeros((m, 4), np.int64)
    requested[:, RES_PODS] = rng.integers(0, 3, m)
    dirty = np.array([1, 4, 7], np.int64)
    mix = np.uint64(seed_mix(3))
    got = []
    for k, lay in enumerate((np.ascontiguousarray, _strided)):
        r, w, req = lay(reasons.copy()), lay(raw.copy()), lay(requested.copy())
        hi, hi_cnt = lay(np.zeros(2 * slots, np.int64)), lay(np.zeros(2 * slots, np.int64))
        total, tkey = lay(np.zeros(m, np.int64)), lay(np.zeros(2 * size, np.int64))
        before = (list(FN.rebuild_keys.signatures), list(FN.update_keys.signatures))
        feasible = FN.rebuild_keys(m, r, w, lay(active), lay(norm), lay(weights), hi, hi_cnt,
                                   total, mix, req, tkey, size)
        old_r, old_raw = lay(r[dirty].copy()), lay(w[dirty].copy())
        r[dirty] = 1 - r[dirty]
        w[dirty] = w[dirty] + 1
        delta = FN.update_keys(lay(dirty), 3, old_r, old_raw, r, w, lay(active), lay(norm),
                               lay(weights), hi, hi_cnt, total, mix, req, tkey, size)
        after = (list(FN.rebuild_keys.signatures), list(FN.update_keys.signatures))
        if k == 1:
            assert after == before
        else:
            assert _any_layout_only(FN.rebuild_keys.dispatcher, before[0])
            assert _any_layout_only(FN.update_keys.dispatcher, before[1])
        got.append((feasible, delta, np.asarray(tkey).tolist(), np.asarray(total).tolist()))
    assert got[0] == got[1]


def _contiguous(a):
    """``a`` C-contiguous where it is an array (scalars as they are)."""
    return np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a


def _fortran(a):
    """``a`` in Fortran order where it has two axes (layout F), else as is."""
    return np.asfortranarray(a) if isinstance(a, np.ndarray) and a.ndim == 2 else a


LAYOUTS = (_contiguous, _strided, _fortran)


def _one_any_layout_signature(fn):
    """One signature, the arrays of the parameters ``fn`` types any-layout
    all of layout A."""
    sigs = fn.signatures
    return len(sigs) == 1 and all(a.layout == "A" for s in sigs for k, t in enumerate(s)
                                  if fn.positions is None or k in fn.positions
                                  for a in array_types(t))


def test_compiled_runs_one_compile_for_any_layout():
    # whole: every node scored (the key tree); scan: a window of
    # percentageOfNodesToScore, few pods; window: the same, a long run
    # (the position trees).  Each on C, strided and Fortran-ordered columns.
    active = np.array([True, True, False, False, False])
    cases = (("whole", None, 12), ("scan", 9, 6), ("window", 9, WINDOW_TREE_MIN_RUN + 8))
    for seed in range(2):
        c, q = _cluster(seed, 40)
        n = c.allocatable.shape[0]
        rows = np.arange(n, dtype=np.int64)
        for path, num_to_find, count in cases:
            got = []
            for lay in LAYOUTS:
                columns = L.NodeColumns(*(lay(np.array(x)) for x in c))
                placed, start = NumbaBackend().place_run(
                    Source(columns), rows, 3, q, num_to_find or n, active, DEFAULT_NORM,
                    DEFAULT_WEIGHTS, 5, count, seed + 7, 0, q.request, q.nonzero_request,
                    lambda r: None)
                got.append((placed.tolist(), start, columns.requested.tolist()))
            assert got[0] == got[1] == got[2], path
            assert got[0][0], path
    for fn in FN.build_place_run(FN.fused_pass_by_row):
        assert _one_any_layout_signature(fn), fn.py_func.__name__


def test_run_keys_one_compile_for_any_layout():
    active = np.array([True, True, False, False, False])
    norm = np.array([0, 0, 2, 1, 0], np.int64)
    weights = np.array([1, 1, 3, 2, 1], np.int64)
    c, q = _cluster(4, 16)
    n = c.allocatable.shape[0]
    rows = np.arange(n, dtype=np.int64)
    got = []
    for lay in LAYOUTS:
        args = tuple(lay(x) for x in kernel_args(c, _pad_bitsets(c, q)))
        reasons = np.zeros(n, np.int64)
        raw = np.zeros((n, 5), np.int64)
        FN.fused_pass_by_row(rows, *args, reasons, raw)
        hi = RS.run_maxima(reasons, raw, rows, active, norm)
        keys, lens = RS.keys_numba(args, rows, 6, seed_mix(2), reasons, raw, active, norm,
                                   weights, hi)
        got.append((keys.tolist(), lens.tolist()))
    assert got[0] == got[1] == got[2]
    assert _one_any_layout_signature(RS.keys_kernel)
