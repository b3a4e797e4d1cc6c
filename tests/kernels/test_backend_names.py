"""``kernels.backend_names``: the backend names, importable without the
kernels, and the stage rule that resolves ``auto`` (the GPU only for the
stages measured faster there, and only where a GPU is present)."""

import subprocess
import sys

import pytest

from tensorsched.kernels import backend_names as BN


def test_names():
    assert BN.KERNEL_BACKENDS == ("numpy", "numba", "cuda")
    assert BN.BACKENDS == BN.KERNEL_BACKENDS + ("auto",)
    assert BN.GPU_STAGES < set(BN.STAGES) and BN.CYCLE not in BN.GPU_STAGES


def test_importing_the_names_loads_neither_numpy_nor_numba():
    code = ("import sys; import tensorsched.kernels.backend_names; "
            "print(any(m in sys.modules for m in ('numpy', 'numba')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("gpu", [True, False])
@pytest.mark.parametrize("stage", BN.STAGES)
def test_auto_picks_cuda_only_for_gpu_stages_with_a_gpu(stage, gpu):
    want = "cuda" if gpu and stage in (BN.BATCH, BN.SORT, BN.VICTIMS) else "numba"
    assert BN.resolve_backend("auto", stage, gpu) == want
    for name in BN.KERNEL_BACKENDS:          # a named backend is never replaced
        assert BN.resolve_backend(name, stage, gpu) == name


def test_auto_rejects_an_unknown_stage():
    with pytest.raises(ValueError, match="unknown stage 'sorting'"):
        BN.resolve_backend("auto", "sorting", True)
