"""Compile the fused stage's CUDA kernels to PTX without a GPU.

Numba's CUDA simulator runs kernels as Python, so it never types them for
the device: an intrinsic it lacks (the warp shuffles) or a construct the
CUDA target refuses shows only on a GPU.  This compiles the fused pass,
the run kernel, the cycle pick (with its staged rows) and the victim
search for one compute
capability with NVVM alone (no driver, no device) and counts a few
instructions::

    python -m tensorsched.bench.cuda_ptx [--cc 9.0]

It needs NVVM and NVRTC (e.g. the ``nvidia-cuda-nvcc-cu12`` and
``nvidia-cuda-nvrtc-cu12`` wheels); without them it says so and exits 2.
The argument types are those the cuda backend launches with.
"""

from __future__ import annotations

import argparse
import re
import sys
import types

import numpy as np


def _signatures():
    from numba import boolean, int64, typeof, uint64
    t = typeof
    i1, i2, i3 = np.zeros(3, np.int64), np.zeros((3, 3), np.int64), np.zeros((2, 3, 3), np.int64)
    packs = (t(i2), t(np.zeros((3, 3), np.int8)), t(np.zeros((3, 3), np.int32)), t(i1))
    fused = (t(i1), *packs, boolean, t(i1), t(i2))
    # seed, staged rows, k, the packed run, packs, qbuf, reasons, raw, work,
    # spread weights (``_cuda_run.launch_place_run``)
    run = (uint64, t(i1), int64, t(i1), *packs[:3], t(i1), t(i1), t(i2), t(i1),
           t(np.zeros(3)))
    # staged rows, k, packs, qbuf, rows, reasons, raw, sparams, start,
    # num_to_find, seed_mix, pods_at, out (``_cuda_cycle.launch_cycle_pick``)
    cycle = (t(i1), int64, *packs, t(i1), t(i1), t(i2), t(i2), int64, int64, uint64, int64,
             t(i1))
    # visit [M, 1], offset, prio, packs, qbuf, allocatable (a view of
    # node_i64), the six pod tables, pdb_allowed, work (``victims._cuda.launch``)
    a2 = typeof(np.zeros((3, 6), np.int64)[:, 1:3])
    victims = (t(i2), int64, int64, *packs[:3], t(i1), a2, t(i1), t(i2), t(i2), t(i3), t(i3), t(i3),
               t(i1), t(i1))
    return fused, run, cycle, victims


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cc", default="9.0", help="compute capability, e.g. 9.0 (H100/H200)")
    args = ap.parse_args(argv)
    cc = tuple(int(x) for x in args.cc.split("."))
    from numba import cuda
    from numba.cuda import dispatcher
    # Device functions are compiled for the current device's capability:
    # there is none, so name the one asked for.
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)
    from tensorsched.kernels.fused.backends import cuda_kernels
    kernels = cuda_kernels()
    from tensorsched.kernels.victims.device import victim_kernel
    kernels["victim search"] = victim_kernel()
    fused_sig, run_sig, cycle_sig, victims_sig = _signatures()
    try:
        for name, sig in (("fused pass", fused_sig), ("run kernel", run_sig),
                          ("cycle pick", cycle_sig), ("victim search", victims_sig)):
            kernel = kernels[name]
            ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=cc)
            counts = {op: len(re.findall(rf"\b{re.escape(op)}\b", ptx))
                      for op in ("shfl.sync", "bar.sync", "atom.shared", "div.s64", "div.u32",
                                 "rem.u64")}
            print(f"{name}: {len(ptx)} bytes of PTX for sm_{cc[0]}{cc[1]};",
                  ", ".join(f"{k} {v}" for k, v in counts.items()))
    except Exception as exc:
        if "nvvm" in str(exc).lower() or "nvrtc" in str(exc).lower():
            print(f"cannot compile here: {exc}", file=sys.stderr)
            return 2
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
