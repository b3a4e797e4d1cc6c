"""Compile every CUDA kernel for one GPU without a GPU, and check its launch.

Numba's CUDA simulator runs kernels as Python, so it never types them for
the device: an intrinsic it lacks, a shared array sized by a variable, a
typing unification failure, a construct the CUDA target refuses, or a
kernel too large in registers for its launcher's block shows only on a
GPU, where it loses the whole measurement.  This takes every ``cuda.jit``
kernel of the package (``bench.cuda_kernels``: found by import, each with
the argument types its launcher really passed under the simulator),
compiles it to PTX with NVVM for one compute capability (no driver, no
device), assembles that with ``ptxas`` and checks the resources against the
launch::

    python -m tensorsched.bench.cuda_ptx [--cc 9.0] [--json PATH]

Per kernel: registers per thread, static shared memory plus the dynamic
amount the launcher asks, local-memory spills, the block size.  A launch
fits when the block's registers (allocated per warp in units of 256) stay
within the 65,536 an SM (and a block) has, the block within 1,024 threads
and the kernel's ``launch_bounds``, and static + dynamic shared memory
within 48 KiB (what a block gets without the opt-in attribute, which Numba
does not set; H100/H200 allow 227 KiB with it); otherwise the driver
refuses it ("too many resources requested for launch").

It needs NVVM and NVRTC, and ``ptxas`` for the resources (outside the
project's dependencies)::

    pip install nvidia-cuda-nvrtc nvidia-nvvm nvidia-cuda-nvcc     # or the extra .[cuda-ptx]

Without NVVM it says so and exits 2 (without ``ptxas``: PTX only, noted in
the table).  Exit 1 when a kernel is not covered (found in the tree but
without a recorded launch), does not compile, or would not launch.
"""

from __future__ import annotations

import argparse
import glob
import json
import multiprocessing
import os
import pickle
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import types
from importlib.metadata import PackageNotFoundError, version

from tensorsched.bench import cuda_kernels as CK

REGISTERS_PER_SM = 65_536       # and per block, compute capability 5.0 to 9.0
REGISTER_UNIT = 256             # registers are allocated per warp in these
MAX_THREADS = 1024
SHARED_DEFAULT = 48 * 1024      # bytes a block gets without the opt-in attribute
SHARED_OPT_IN = 227 * 1024      # H100/H200 with it


class CannotCompile(RuntimeError):
    """NVVM (or NVRTC) is missing here."""


def _ptxas_release(path: str) -> tuple[int, int]:
    """``ptxas --version``'s release (13, 5); (0, 0) when it cannot say."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return (0, 0)
    found = re.search(r"release (\d+)\.(\d+)", out)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def newest_ptxas(candidates) -> str | None:
    """The candidate of the newest release.  A ``ptxas`` assembles the PTX
    ISA of its own release and older ones only, and NVVM (from the wheel or
    a toolkit) may be newer than the ``ptxas`` on PATH: the newest one
    accepts whatever either wrote.  Ties keep the earlier candidate."""
    best, best_release = None, None
    for path in candidates:
        release = _ptxas_release(path)
        if best_release is None or release > best_release:
            best, best_release = path, release
    return best


def find_ptxas() -> str | None:
    """``ptxas``: the newest of the one on PATH and those in installed
    NVIDIA wheels (nvidia-cuda-nvcc)."""
    candidates = []
    found = shutil.which("ptxas")
    if found:
        candidates.append(found)
    for entry in sys.path:
        for path in sorted(glob.glob(os.path.join(entry, "nvidia", "**", "bin", "ptxas"),
                                     recursive=True)):
            if os.access(path, os.X_OK) and path not in candidates:
                candidates.append(path)
    return newest_ptxas(candidates)


def _for_capability(cc: tuple[int, int]) -> None:
    """Device functions compile for the current device's capability: there
    is none, so name the one asked for."""
    from numba.cuda import dispatcher
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)


def compile_ptx(kernel, sig, cc: tuple[int, int]) -> str:
    """``kernel``'s PTX for argument types ``sig``, with its own options."""
    from numba import cuda
    from numba.core import types as nt
    opts = kernel.targetoptions
    try:
        ptx, resty = cuda.compile_ptx(
            kernel.py_func, sig, cc=cc, debug=opts.get("debug"), lineinfo=opts.get("lineinfo", False),
            fastmath=opts.get("fastmath", False), opt=opts.get("opt"),
            launch_bounds=opts.get("launch_bounds"))
    except Exception as exc:
        text = str(exc).lower()
        missing = ("not found" in text or "failure finding" in text
                   or type(exc).__name__ == "DynamicLibNotFoundError")
        if ("nvrtc" in text or "nvvm" in text) and missing:
            raise CannotCompile(str(exc)) from exc
        raise
    if resty != nt.void:
        raise TypeError(f"a kernel returns nothing; this one returns {resty}")
    return ptx


_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)'")
_USED = re.compile(r"Used (?P<regs>\d+) registers(?:.*?(?P<smem>\d+) bytes smem)?")
_FRAME = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<stores>\d+) bytes spill stores, "
                    r"(?P<loads>\d+) bytes spill loads")


_EXTERN = re.compile(r"\.extern\s+\.func\s+(?:\([^)]*\)\s*)?(?P<name>\w+)\s*\(")
_SHARED = re.compile(r"^\s*\.shared\s+(?:\.align\s+\d+\s+)?\.b8\s+\w+\[(\d+)\]", re.M)
_FUNC_USED = re.compile(r"Function properties for (?P<name>\w+)[\s\S]*?Used (?P<regs>\d+) registers")


def _numba_helpers(names: set[str]) -> tuple[str, str] | None:
    """(file name, CUDA C source) of the helper library numba-cuda links into
    a kernel calling ``names`` at launch (its array reshapes), or None."""
    from numba.cuda import dispatcher
    if not names or not names <= set(dispatcher.reshape_funcs):
        return None
    path = os.path.join(os.path.dirname(dispatcher.__file__), "reshape_funcs.cu")
    with open(path, encoding="utf-8") as fh:
        return "reshape_funcs.cu", fh.read()


def _nvrtc_ptx(name: str, source: str, cc: tuple[int, int]) -> str:
    """CUDA C to relocatable PTX by NVRTC (no driver needed, unlike
    numba-cuda's own wrapper)."""
    from cuda.bindings import nvrtc as N
    err, prog = N.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    err, = N.nvrtcCompileProgram(prog, 2, [f"--gpu-architecture=compute_{cc[0]}{cc[1]}".encode(),
                                           b"-rdc=true"])
    if err != N.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"NVRTC refused {name}: {err}")
    err, size = N.nvrtcGetPTXSize(prog)
    buf = b" " * size
    N.nvrtcGetPTX(prog, buf)
    return buf.rstrip(b"\0").decode()


def _ptxas(ptxas: str, ptx: str, cc: tuple[int, int], tmp: str, stem: str,
           relocatable: bool) -> tuple[str, str]:
    """(``ptxas -v``'s report, the object's path)."""
    src, obj = os.path.join(tmp, f"{stem}.ptx"), os.path.join(tmp, f"{stem}.cubin")
    with open(src, "w") as fh:
        fh.write(ptx)
    proc = subprocess.run([ptxas, f"-arch=sm_{cc[0]}{cc[1]}", "-v", *(["-c"] if relocatable else []),
                           "-o", obj, src], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"ptxas refused {stem}: {proc.stderr.strip()[-2000:]}")
    return proc.stdout + proc.stderr, obj


def ptxas_resources(ptxas: str, ptx: str, cc: tuple[int, int]) -> dict:
    """The entry function's resources by ``ptxas -v``: registers per thread,
    static shared bytes, stack frame and spill bytes per thread.  A kernel
    that calls numba-cuda's helpers (``.extern`` functions: an array
    reshape) is assembled relocatable and linked (``nvlink``) with those
    helpers compiled by NVRTC, as a launch links them; its registers are
    then the most of the entry's and the helpers'."""
    externs = {m.group("name") for m in _EXTERN.finditer(ptx)}
    linked = []
    with tempfile.TemporaryDirectory() as tmp:
        text, obj = _ptxas(ptxas, ptx, cc, tmp, "kernel", relocatable=bool(externs))
        helper_regs = 0
        if externs:
            helper = _numba_helpers(externs)
            if helper is None:
                raise RuntimeError(f"calls {sorted(externs)}, which nothing links")
            htext, hobj = _ptxas(ptxas, _nvrtc_ptx(*helper, cc), cc, tmp, "helpers", True)
            helper_regs = max((int(m.group("regs")) for m in _FUNC_USED.finditer(htext)
                               if m.group("name") in externs), default=0)
            nvlink = os.path.join(os.path.dirname(ptxas), "nvlink")
            proc = subprocess.run([nvlink, f"-arch=sm_{cc[0]}{cc[1]}", obj, hobj,
                                   "-o", os.path.join(tmp, "linked.cubin")],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"nvlink refused it: {proc.stderr.strip()[-2000:]}")
            linked.append(helper[0])
    entry = _ENTRY.search(text)
    if entry is None:
        raise RuntimeError(f"no entry function in ptxas's report:\n{text[-2000:]}")
    section = text[entry.end():]
    nxt = _ENTRY.search(section)
    section = section[:nxt.start()] if nxt else section
    used, frame = _USED.search(section), _FRAME.search(section)
    if used is None:
        raise RuntimeError(f"no register count in ptxas's report:\n{text[-2000:]}")
    smem = int(used.group("smem") or 0)
    if externs:
        # relocatable code leaves shared memory to the link: ptxas does not
        # report it, so count the PTX's own shared declarations
        smem = sum(int(m.group(1)) for m in _SHARED.finditer(ptx))
    return {"registers": max(int(used.group("regs")), helper_regs),
            "static_shared": smem,
            "stack_frame": int(frame.group("stack")) if frame else 0,
            "spill_stores": int(frame.group("stores")) if frame else 0,
            "spill_loads": int(frame.group("loads")) if frame else 0,
            "linked": linked}


def max_threads_of(ptx: str) -> int | None:
    """The kernel's ``.maxntid`` (its launch bounds), if any."""
    m = re.search(r"\.maxntid\s+(\d+)(?:,\s*(\d+))?(?:,\s*(\d+))?", ptx)
    if m is None:
        return None
    n = 1
    for g in m.groups():
        n *= int(g or 1)
    return n


def launch_problems(res: dict, block: int, dynamic_shared: int, bound: int | None) -> list[str]:
    """Why a launch of ``block`` threads with these resources would be
    refused (empty: it fits)."""
    out = []
    if block > MAX_THREADS:
        out.append(f"{block} threads per block > {MAX_THREADS}")
    if bound is not None and block > bound:
        out.append(f"{block} threads per block > its launch bounds ({bound})")
    per_warp = -(-res["registers"] * 32 // REGISTER_UNIT) * REGISTER_UNIT
    regs = per_warp * -(-block // 32)
    if regs > REGISTERS_PER_SM:
        out.append(f"{res['registers']} registers x {block} threads = {regs} registers "
                   f"> {REGISTERS_PER_SM}")
    shared = res["static_shared"] + dynamic_shared
    if shared > SHARED_DEFAULT:
        out.append(f"{shared} bytes of shared memory > {SHARED_DEFAULT}")
    return out


def _git_commit() -> str:
    """HEAD, with ``+dirty`` when tracked files differ from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=CK.REPO, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=CK.REPO, capture_output=True, text=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except Exception:
        return "unknown"


def _versions() -> dict:
    out = {}
    for dist in ("numba", "numba-cuda", "nvidia-nvvm", "nvidia-cuda-nvrtc", "nvidia-cuda-nvcc"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            pass
    return out


def check(cc: tuple[int, int], launches: dict, ptxas: str | None, log=print,
          every_signature: bool = True, only=None, coverage: bool = True) -> tuple[list, list]:
    """(one row per kernel and signature, the problems found).  ``launches``:
    ``cuda_kernels.record()``'s answer; ``every_signature`` False: the first
    signature each kernel was launched with only (the others differ in array
    layouts, C or A, mostly); ``only``: these kernel keys only;
    ``coverage``: report the kernels found in the tree but not in
    ``LAUNCHES`` and the reverse."""
    _for_capability(cc)
    found = CK.discover()
    seen, sim_blocks = launches["seen"], launches["sim_blocks"]
    problems, rows = [], []
    for key in sorted(set(found) - set(CK.LAUNCHES)) if coverage else ():
        problems.append(f"{key}: not covered (a kernel in the tree, not in cuda_kernels.LAUNCHES)")
    for key in sorted(set(CK.LAUNCHES) - set(found)) if coverage else ():
        problems.append(f"{key}: in cuda_kernels.LAUNCHES but not found in the tree")
    for key in sorted(set(found) & set(CK.LAUNCHES)):
        if only and key not in only:
            continue
        launch = CK.LAUNCHES[key]
        s = seen.get(key)
        if s is None or not s.signatures:
            problems.append(f"{key}: not covered (no launch recorded by {', '.join(launch.tests)})")
            continue
        sim_block = sim_blocks[key]
        stale = [b for b in s.blocks if (b > sim_block if launch.upto else b != sim_block)]
        if stale:
            problems.append(f"{key}: the simulator launched {sorted(s.blocks)} threads per block, "
                            f"not {'at most ' if launch.upto else ''}{launch.block} "
                            f"({sim_block} there): LAUNCHES names the wrong constant")
        block = CK.block_of(launch)
        for i, sig in enumerate(s.signatures if every_signature else s.signatures[:1]):
            row = {"kernel": key, "signature": i, "signatures_recorded": len(s.signatures),
                   "block": block, "block_upto": launch.upto,
                   "dynamic_shared": s.dynamic_shared}
            t0 = time.process_time()
            try:
                ptx = compile_ptx(found[key], sig, cc)
            except CannotCompile:
                raise
            except Exception as exc:
                row.update(fits=False, error=f"{type(exc).__name__}: {exc}"[:4000])
                problems.append(f"{key}: does not compile: {row['error'][:800]}")
                rows.append(row)
                continue
            row["compile_cpu_s"] = round(time.process_time() - t0, 2)
            row["ptx_bytes"] = len(ptx)
            bound = max_threads_of(ptx)
            row["launch_bounds"] = bound
            if ptxas is None:
                row["fits"] = None
                rows.append(row)
                log(f"{key} [{i}]: PTX {len(ptx)} bytes (no ptxas: resources unchecked)")
                continue
            try:
                res = ptxas_resources(ptxas, ptx, cc)
            except Exception as exc:
                row.update(fits=False, error=str(exc)[:4000])
                problems.append(f"{key}: {exc}")
                rows.append(row)
                continue
            row.update(res)
            row["shared_bytes"] = res["static_shared"] + s.dynamic_shared
            why = launch_problems(res, block, s.dynamic_shared, bound)
            row["fits"] = not why
            if why:
                row["refused"] = why
                problems.append(f"{key}: would not launch: {'; '.join(why)}")
            rows.append(row)
            log(f"{key} [{i}]: {res['registers']} registers, {row['shared_bytes']} B shared, "
                f"{res['spill_stores']}/{res['spill_loads']} B spill stores/loads, "
                f"block {'<= ' if launch.upto else ''}{block}: "
                f"{'fits' if not why else 'REFUSED: ' + '; '.join(why)}")
    return rows, problems


def _check_one(job):
    """One kernel's rows and problems (a worker of ``check_parallel``)."""
    cc, launches, ptxas, every_signature, key = job
    return check(cc, launches, ptxas, every_signature=every_signature, only=(key,),
                 coverage=False)


def check_parallel(cc, launches, ptxas, every_signature=True, only=None, jobs=1):
    """``check`` with the kernels spread over ``jobs`` processes (NVVM is
    single-threaded; the batch kernels take tens of CPU seconds each)."""
    if jobs <= 1:
        return check(cc, launches, ptxas, every_signature=every_signature, only=only)
    keys = sorted(k for k in CK.LAUNCHES if not only or k in only)
    # the coverage problems once, from a run that compiles nothing
    rows, problems = check(cc, launches, ptxas, only=("(none)",))
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(jobs, initializer=CK.allow_compile_without_device) as pool:
        for r, p in pool.imap(_check_one, [(cc, launches, ptxas, every_signature, k)
                                           for k in keys]):
            rows += r
            problems += p
    return rows, problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cc", default="9.0", help="compute capability, e.g. 9.0 (H100/H200)")
    ap.add_argument("--json", help="write the table here (e.g. bench/results/cuda-ptx-sm90.json)")
    ap.add_argument("--launches", help="read the recorded launches from this pickle "
                                       "(written by --save-launches) instead of recording")
    ap.add_argument("--save-launches", help="keep the recorded launches in this pickle")
    ap.add_argument("--first-signature", action="store_true",
                    help="compile each kernel with the first argument types recorded only")
    ap.add_argument("--only", nargs="+", metavar="KEY", help="these kernels only")
    ap.add_argument("--jobs", type=int, default=1, help="compile in this many processes")
    args = ap.parse_args(argv)
    cc = tuple(int(x) for x in args.cc.split("."))
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1":
        print("cannot compile under the simulator: unset NUMBA_ENABLE_CUDASIM", file=sys.stderr)
        return 2
    CK.allow_compile_without_device()
    commit = _git_commit()      # the code compiled: taken before anything runs
    t0 = time.time()
    if args.launches:
        with open(args.launches, "rb") as fh:
            launches = pickle.load(fh)
    else:
        launches = CK.record()
        if args.save_launches:
            with open(args.save_launches, "wb") as fh:
                pickle.dump(launches, fh)
    t_record = time.time() - t0
    ptxas = find_ptxas()
    try:
        rows, problems = check_parallel(cc, launches, ptxas,
                                        every_signature=not args.first_signature,
                                        only=args.only, jobs=args.jobs)
    except CannotCompile as exc:
        print(f"cannot compile here: {exc}", file=sys.stderr)
        return 2
    t_all = time.time() - t0
    for p in problems:
        print(f"PROBLEM {p}", file=sys.stderr)
    print(f"{len(rows)} signatures of {len({r['kernel'] for r in rows})} kernels for "
          f"sm_{cc[0]}{cc[1]}; {len(problems)} problems; recording {t_record:.0f} s, "
          f"all {t_all:.0f} s wall")
    if args.json:
        doc = {"what": "every cuda.jit kernel compiled to PTX (NVVM) and assembled (ptxas) "
                       "with its launcher's argument types, checked against its launch",
               "cc": f"{cc[0]}.{cc[1]}", "commit": commit,
               "machine": {"node": platform.node(), "cpu": platform.processor() or
                           platform.machine(), "python": platform.python_version()},
               "versions": _versions(), "ptxas": ptxas and os.path.basename(ptxas),
               "ptxas_release": ptxas and "%d.%d" % _ptxas_release(ptxas),
               "limits": {"registers_per_block": REGISTERS_PER_SM, "register_unit": REGISTER_UNIT,
                          "shared_per_block": SHARED_DEFAULT, "shared_opt_in": SHARED_OPT_IN,
                          "threads_per_block": MAX_THREADS},
               "signatures": "the first recorded per kernel" if args.first_signature
               else "every recorded one",
               "recording_wall_s": round(t_record, 1), "wall_s": round(t_all, 1),
               "pytest_rc": launches.get("pytest_rc"), "problems": problems, "kernels": rows}
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)
            fh.write("\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
