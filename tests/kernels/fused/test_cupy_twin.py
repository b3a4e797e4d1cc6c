"""The array-namespace filter/score/finalize kernels on CuPy arrays give what
they give on NumPy arrays (the numpy backend's source is the CuPy path).

Runs where CuPy and a CUDA device are present (``-m gpu``); CI covers the
same source through the numpy backend.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from support.kernel_inputs import DEFAULT_NORM, DEFAULT_WEIGHTS, compiled, stage_case, state_of

from tensorsched.kernels import layout as L
from tensorsched.kernels._backend import array_namespace, to_host
from tensorsched.kernels._deps import cupy
from tensorsched.kernels.fused import filters, scores
from tensorsched.kernels.fused.backends import _pad_bitsets, rotated

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(cupy is None, reason="needs CuPy and a CUDA device")]


def _on_device(value):
    """``value`` with every NumPy array (nested NamedTuples too) as a CuPy array."""
    if isinstance(value, np.ndarray):
        return cupy.asarray(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_on_device(v) for v in value))
    return value


def _stage(cols, rows, q, to_find, active, n_slots):
    """filter -> raw scores -> finalize in the namespace of the inputs, as
    ``NumpyBackend.evaluate`` runs it; host lists out."""
    xp = array_namespace(cols.allocatable)
    reasons = filters.node_reasons(cols, rows, q)
    raw = xp.zeros((rows.shape[0], n_slots), dtype=xp.int64)
    scores.raw_scores(cols, rows, q, raw, reasons == 0)
    sc, total, ties, processed, found = scores.finalize(
        reasons, raw, to_find, active, DEFAULT_NORM, DEFAULT_WEIGHTS)
    return {"reasons": to_host(reasons).tolist(), "scores": to_host(sc).tolist(),
            "total": to_host(total).tolist(), "ties": to_host(ties).tolist(),
            "processed": int(processed), "found": int(found)}


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(stage_case())
def test_random_cupy_equals_numpy(case):
    objs, pod, filter_flags, score_flags, strategy, start, to_find = case
    state = state_of(objs)
    q = compiled(state, pod, filter_flags=filter_flags, score_flags=score_flags,
                 fit_strategy=strategy, shape=((0, 10), (50, 3), (100, 0)))
    active = np.array([bool(score_flags >> s & 1) for s in range(L.N_BUILTIN_SCORES)])
    cols = state.columns()
    q = _pad_bitsets(cols, q)
    rows = rotated(state.valid_rows(), start)
    want = _stage(cols, rows, q, to_find, active, L.N_BUILTIN_SCORES)
    got = _stage(_on_device(cols), cupy.asarray(rows), _on_device(q), to_find, active,
                 L.N_BUILTIN_SCORES)
    assert got == want
