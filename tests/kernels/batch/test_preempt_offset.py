"""The seeded start of DefaultPreemption's visit
(``_candidates.preempt_offset``: splitmix64, whose sums and products wrap
mod 2**64 by design) is the Scheduler's ``evaluator.seeded_offset`` on
every backend: compiled with ``njit`` (the CPU engines' twin) and as the
device function of each cuda engine (on the simulator, NumPy scalars),
seeds and attempts that wrap included.  On the simulator the wrap is quiet
(``kernels.mod64``) and nothing else warns: any RuntimeWarning fails."""
import itertools

import numpy as np
import pytest
from numba import cuda
from support.backends import needs_cuda

from tensorsched.framework.preemption.evaluator import seeded_offset
from tensorsched.kernels._deps import CUDA_SIMULATOR
from tensorsched.kernels.fused.ties import seed_mix

SEEDS = [0, 1, 7, 12345, 2**31 - 1, 2**32 + 5, 2**62 + 3, 2**63 - 1]
ATTEMPTS = [0, 1, 5, 999, 2**40 + 17]
NODES = [1, 2, 3, 37, 1000, 5003, 2**31 - 1]
CASES = list(itertools.product(SEEDS, ATTEMPTS, NODES))


def _columns():
    mix = np.array([seed_mix(s) for s, _, _ in CASES], np.uint64)
    attempt = np.array([a for _, a, _ in CASES], np.int64)
    n = np.array([k for _, _, k in CASES], np.int64)
    return mix, attempt, n


def _host():
    return np.array([seeded_offset(s, a, k) for s, a, k in CASES], np.int64)


def test_the_cpu_twins_offset_is_the_evaluators():
    from tensorsched.kernels.batch import cpu
    offset = cpu.preempt_ns["preempt_offset"]
    mix, attempt, n = _columns()
    got = np.array([offset(m, a, k) for m, a, k in zip(mix, attempt, n)], np.int64)
    np.testing.assert_array_equal(got, _host())
    # the inputs wrap: the first sum passes 2**64 for some seeds
    assert any(int(m) + int(a) + 0x5EED0FF5E7 + 0x9E3779B97F4A7C15 >= 2**64
               for m, a in zip(mix, attempt))


def _offsets_kernel(offset):
    @cuda.jit
    def offsets(mix, attempt, n, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = offset(mix[i], attempt[i], n[i])
    return offsets


def _device_offsets(offset):
    mix, attempt, n = _columns()
    out = np.full(len(CASES), -1, np.int64)
    _offsets_kernel(offset)[(len(CASES) + 63) // 64, 64](mix, attempt, n, out)
    return out


def _engine_offset(engine):
    import importlib
    module = importlib.import_module(f"tensorsched.kernels.batch.{engine}")
    ns = module._pns if engine == "cuda" else module._cand_ns
    return ns["preempt_offset"]


@pytest.mark.cudasim
@needs_cuda
@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("engine", ["cuda", "openb_events_cuda", "local_trace_cuda"])
def test_each_cuda_engines_offset_is_the_evaluators_without_a_warning(engine):
    np.testing.assert_array_equal(_device_offsets(_engine_offset(engine)), _host())


@pytest.mark.cudasim
@pytest.mark.skipif(not CUDA_SIMULATOR, reason="a device wraps silently; only the simulator's "
                    "NumPy scalars warn")
def test_the_simulator_warns_at_the_wrap_without_mod64():
    """What the engines' decorator keeps quiet: the same function, plainly
    ``cuda.jit(device=True)``, warns on the simulator (the cases wrap)
    and gives the same offsets."""
    from tensorsched.kernels.batch import _candidates
    plain = cuda.jit(_candidates.preempt_offset, device=True)
    with pytest.warns(RuntimeWarning, match="overflow encountered in scalar"):
        got = _device_offsets(plain)
    np.testing.assert_array_equal(got, _host())
