"""``bench.cuda_ptx`` and ``bench.cuda_kernels``: every ``cuda.jit`` kernel
of the tree is known to the tool (found by import as by the source text),
the launch check refuses what the driver refuses, and, where NVVM is
installed (not in CI), every kernel compiles for sm_90 with the argument
types its launcher passes and fits its launch."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tensorsched.bench import cuda_kernels as CK
from tensorsched.bench import cuda_ptx


def _in_child(code: str, simulator: bool) -> str:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1" if simulator else "0")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_the_tool_knows_every_kernel_the_source_declares():
    declared = CK.kernels_in_source()
    assert declared == set(CK.LAUNCHES)
    # the batch engines, the fused stage, the victims, DRA and the GPU plugin all have some
    for part in ("batch.local_cuda:", "batch.local_trace_cuda:_events_kernel", "fused._cuda_run:",
                 "victims._pick_cuda:", "dra._search_cuda:", "gpu._cuda:"):
        assert any(part in key for key in declared), part


def test_the_source_scan_sees_kernels_and_not_device_functions(tmp_path):
    text = ('@cuda.jit\ndef a(x):\n    pass\n\n@cuda.jit(device=True)\ndef b(x):\n    pass\n\n'
            '@cuda.jit(**OPTS)\ndef c(x):\n    pass\n\n'
            'k = compile_source("m", SRC, cuda.jit,\n    ("d", "e"))\n'
            'f = compile_source("m", SRC, lambda f: cuda.jit(f, device=True), ("g",))\n')
    names = {m.group("name") for m in CK._DECORATED.finditer(text)
             if "device=True" not in (m.group("opts") or "")}
    generated = {n for m in CK._GENERATED.finditer(text)
                 for n in __import__("re").findall(r"[\"'](\w+)[\"']", m.group("names"))}
    assert names == {"a", "c"} and generated == {"d", "e"}


@pytest.mark.parametrize("simulator", [True, False])
def test_imported_kernels_are_the_declared_ones(simulator):
    """Found by import (simulator dispatchers, or device ones where no
    device answers: no NVVM needed), the same kernels as in the text."""
    code = ("from tensorsched.bench import cuda_kernels as CK\n"
            + ("" if simulator else "CK.allow_compile_without_device()\n")
            + "print('\\n'.join(sorted(CK.discover())))\n")
    found = set(_in_child(code, simulator).split())
    assert found == CK.kernels_in_source()


def test_every_launch_names_a_block_constant_and_existing_tests():
    for key, launch in CK.LAUNCHES.items():
        module, name = launch.block.split(":")
        assert module in CK._module_files(), key
        for test in launch.tests:
            assert (CK.REPO / test.split("::")[0]).is_file(), (key, test)


def test_launch_check_refuses_what_the_driver_refuses():
    ok = {"registers": 64, "static_shared": 4096}
    assert cuda_ptx.launch_problems(ok, 256, 0, None) == []
    # 255 registers x 256 threads: 256 per warp rounded, 65,536 x 1.0 ... over at 257 threads
    assert cuda_ptx.launch_problems({"registers": 255, "static_shared": 0}, 256, 0, None) == []
    (why,) = cuda_ptx.launch_problems({"registers": 255, "static_shared": 0}, 512, 0, None)
    assert "registers" in why
    # registers are allocated per warp in units of 256: 65 per thread takes 72
    assert cuda_ptx.launch_problems({"registers": 65, "static_shared": 0}, 1024, 0, None)
    assert cuda_ptx.launch_problems({"registers": 64, "static_shared": 0}, 1024, 0, None) == []
    (why,) = cuda_ptx.launch_problems({"registers": 32, "static_shared": 40_000}, 128, 10_000,
                                      None)
    assert "shared" in why
    (why,) = cuda_ptx.launch_problems(ok, 512, 0, 256)
    assert "launch bounds" in why
    assert cuda_ptx.launch_problems({"registers": 16, "static_shared": 0}, 2048, 0, None)


def test_ptxas_report_is_read_for_the_entry_function():
    report = """ptxas info    : 0 bytes gmem
ptxas info    : Function properties for helper
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Compiling entry function '_Z6kernel' for 'sm_90'
ptxas info    : Function properties for _Z6kernel
    40 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 2112 bytes smem, 400 bytes cmem[0]
"""
    entry = cuda_ptx._ENTRY.search(report)
    section = report[entry.end():]
    used, frame = cuda_ptx._USED.search(section), cuda_ptx._FRAME.search(section)
    assert (used.group("regs"), used.group("smem")) == ("128", "2112")
    assert (frame.group("stack"), frame.group("stores"), frame.group("loads")) == ("40", "12", "16")
    assert cuda_ptx.max_threads_of(".entry k(\n)\n.maxntid 256, 1, 1\n{") == 256
    assert cuda_ptx.max_threads_of(".entry k(\n)\n{") is None
    # relocatable code (a kernel linked with numba-cuda's helpers): shared
    # memory read from the PTX's declarations, ptxas leaves it to the link
    ptx = ("\t.shared .align 8 .b8 _cudapy_smem_4[128];\n"
           ".shared .align 4 .b8 _cudapy_smem_9[32];\n.extern .func (.param .b32 r) f(\n")
    assert sum(int(m.group(1)) for m in cuda_ptx._SHARED.finditer(ptx)) == 160
    assert {m.group("name") for m in cuda_ptx._EXTERN.finditer(ptx)} == {"f"}


def _nvvm_reason() -> str | None:
    # a one-line kernel to PTX: NVVM (and NVRTC, which numba-cuda loads on the way)
    code = ("from numba import cuda, int64\n"
            "def k(x):\n    pass\n"
            "cuda.compile_ptx(k, (int64,), cc=(9, 0))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, NUMBA_ENABLE_CUDASIM="0"), timeout=120)
    if proc.returncode:
        return proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "NVVM absent"
    return None


@pytest.mark.slow
@pytest.mark.timeout(4000)
def test_every_kernel_compiles_for_sm90_and_fits_its_launch(tmp_path):
    """The whole tool: launches recorded under the simulator, every kernel
    compiled by NVVM (and assembled by ptxas where it is installed).  It
    takes tens of minutes on 2 cores, so it runs only when asked for
    (TENSORSCHED_PTX_CHECK=1): a machine that happens to have NVVM would
    otherwise spend its test run here."""
    if os.environ.get("TENSORSCHED_PTX_CHECK") != "1":
        pytest.skip("the sm_90 compile of every kernel runs with TENSORSCHED_PTX_CHECK=1 "
                    "(or `python -m tensorsched.bench.cuda_ptx`)")
    reason = _nvvm_reason()
    if reason is not None:
        pytest.skip(f"NVVM/NVRTC not importable here ({reason}); "
                    "pip install nvidia-cuda-nvrtc nvidia-nvvm nvidia-cuda-nvcc")
    out = tmp_path / "ptx.json"
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run([sys.executable, "-m", "tensorsched.bench.cuda_ptx", "--json", str(out)],
                          env=env, capture_output=True, text=True, timeout=3600)
    doc = json.loads(out.read_text())
    assert proc.returncode == 0, (doc["problems"], proc.stderr[-3000:])
    assert {row["kernel"] for row in doc["kernels"]} == set(CK.LAUNCHES)
    assert all(row["fits"] is not False for row in doc["kernels"])


def _fake_ptxas(folder, release):
    path = folder / f"ptxas-{release}"
    path.write_text("#!/bin/sh\necho 'Cuda compilation tools, release %s, V%s.1'\n"
                    % (release, release))
    path.chmod(0o755)
    return str(path)


def test_the_newest_ptxas_is_taken(tmp_path):
    # NVVM 13.5 writes PTX ISA 9.5, which a 13.0 ptxas on PATH refuses
    # ("Unsupported .version 9.5"): the newest candidate assembles both.
    old = _fake_ptxas(tmp_path, "13.0")
    new = _fake_ptxas(tmp_path, "13.5")
    assert cuda_ptx.newest_ptxas([old, new]) == new
    assert cuda_ptx.newest_ptxas([new, old]) == new
    broken = str(tmp_path / "missing-ptxas")
    assert cuda_ptx.newest_ptxas([broken, old]) == old
    assert cuda_ptx.newest_ptxas([]) is None
