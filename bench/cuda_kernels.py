"""Every ``cuda.jit`` kernel of the package and the launches that type it.

Numba's CUDA simulator runs kernels as Python, so the CI never types them
for the device; ``bench.cuda_ptx`` compiles each one for a GPU without a
GPU.  This module says what to compile:

* ``discover()``: the kernels themselves (not device functions), found by
  importing every module whose source says ``cuda.jit`` and keeping the
  module-level kernel dispatchers (simulator or device ones), keyed
  ``"<module>:<name>"`` (module relative to ``tensorsched``);
  ``kernels_in_source()`` finds the same keys in the source text alone (a
  ``@cuda.jit`` over a ``def``, or a name ``compile_source`` decorates with
  ``cuda.jit``), so the two can be held equal.
* ``LAUNCHES``: for each kernel, the threads per block its launcher asks
  (a module constant, read in the process that compiles, where it has its
  device value) and the simulator tests whose run launches it.
* ``record(tests)``: runs those tests under the simulator in a child
  process and keeps, per kernel, the Numba types of the arguments its
  launcher really passed (the signatures to compile), the block and grid
  sizes and the dynamic shared memory asked, so the signatures follow the
  launchers instead of a list written beside them.

    python -m tensorsched.bench.cuda_kernels     # the kernels, their launches
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pickle
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

# lets the cuda modules import where no device answers, for compiling
# their kernels ahead of a device only
from tensorsched.kernels._deps import allow_compile_without_device

#: the sub-packages searched for kernels
PACKAGES = ("kernels", "topology", "experiments", "framework")
ROOT = "tensorsched"
#: the repository (tests/ runs from there)
REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Launch:
    """How a kernel's launcher starts it.  ``block``: ``"<module>:<NAME>"``,
    the constant holding the threads per block it asks (the largest when
    ``upto``: fewer for a small input); ``tests``: simulator test node ids
    (relative to the repository) whose run launches the kernel."""
    block: str
    tests: tuple[str, ...]
    upto: bool = False


_B = "tests/kernels/batch/"
_F = "tests/kernels/fused/"
_V = "tests/kernels/victims/"
_P = "tests/framework/preemption/"

#: every kernel the tool compiles (``discover()`` must find exactly these)
LAUNCHES: dict[str, Launch] = {
    "kernels.batch.cuda:_kernel": Launch(
        "kernels.batch.warp:THREADS", (_B + "test_cuda_batch.py",)),
    "kernels.batch.env_cuda:_step_kernel": Launch(
        "kernels.batch.warp:THREADS", (_B + "test_env_cuda.py",)),
    "kernels.batch.local_cuda:_kernel": Launch(
        "kernels.batch.warp:THREADS", (_B + "test_local_cuda.py",)),
    "kernels.batch.local_preempt_cuda:_kernel": Launch(
        "kernels.batch.warp:THREADS", (_B + "test_local_preempt_cuda.py",)),
    "kernels.batch.local_preempt_events_cuda:_kernel": Launch(
        "kernels.batch.warp:THREADS", (_B + "test_local_preempt_events_cuda.py",)),
    "kernels.batch.local_trace_cuda:_kernel": Launch(
        "kernels.batch.warp:THREADS", (_B + "test_local_trace_cuda.py",)),
    "kernels.batch.local_trace_cuda:_events_kernel": Launch(
        "kernels.batch.warp:THREADS", (_B + "test_local_events_cuda.py",)),
    "kernels.batch.openb_events_cuda:_kernel": Launch(
        "kernels.batch.warp:THREADS", (_B + "test_openb_events.py",)),
    "kernels.dra._search_cuda:search_kernel": Launch(
        "kernels.dra._search_cuda:THREADS_PER_BLOCK", ("tests/kernels/dra/test_dra_search.py",)),
    "kernels.fused._cuda:fused_pass_kernel": Launch(
        "kernels.fused._cuda:THREADS_PER_BLOCK", (_F + "test_backends.py",)),
    "kernels.fused._cuda:staged_rows_kernel": Launch(
        "kernels.fused._cuda:THREADS_PER_BLOCK", (_F + "test_cycle_uploads.py",)),
    "kernels.fused._cuda:staged_write_kernel": Launch(
        "kernels.fused._cuda:THREADS_PER_BLOCK", (_F + "test_device_stage.py",)),
    "kernels.fused._cuda:relayout_kernel": Launch(
        "kernels.fused._cuda:THREADS_PER_BLOCK", (_F + "test_mirror_capacity.py",)),
    "kernels.fused._cuda_cycle:cycle_pick_kernel": Launch(
        "kernels.fused._cuda_cycle:CYCLE_THREADS", (_F + "test_cycle_cuda.py",), upto=True),
    "kernels.fused._cuda_run:place_run_kernel": Launch(
        "kernels.fused._cuda_run:RUN_THREADS",
        ("tests/framework/runtime/test_cuda_backend.py::test_a_device_run_is_one_copy_up_and_one_back",),
        upto=True),
    "kernels.fused.run_sort_cuda:run_keys_kernel": Launch(
        "kernels.fused.run_sort_cuda:THREADS_PER_BLOCK", (_F + "test_run_sort_cuda.py",)),
    "kernels.fused.run_sort_cuda:run_maxima_kernel": Launch(
        "kernels.fused.run_sort_cuda:THREADS_PER_BLOCK", (_F + "test_run_sort_cuda.py",)),
    "kernels.fused.run_sort_cuda:order_result_kernel": Launch(
        "kernels.fused.run_sort_cuda:THREADS_PER_BLOCK", (_F + "test_run_sort_cuda.py",)),
    "kernels.gpu._cuda:score_kernel": Launch(
        "kernels.gpu._cuda:MAX_THREADS", ("tests/kernels/gpu/test_gpu_cuda.py",), upto=True),
    "kernels.gpu._cuda:fit_kernel": Launch(
        "kernels.gpu._cuda:MAX_THREADS", ("tests/kernels/gpu/test_gpu_cuda.py",), upto=True),
    "kernels.gpu._cuda:subset_kernel": Launch(
        "kernels.gpu._cuda:MAX_THREADS", ("tests/kernels/gpu/test_gpu_cuda.py",), upto=True),
    "kernels.victims._cuda:victims_kernel": Launch(
        "kernels.victims._cuda:THREADS_PER_BLOCK", (_V + "test_device.py",)),
    "kernels.victims._counts_cuda:counts_kernel": Launch(
        "kernels.victims._counts_cuda:THREADS_PER_BLOCK",
        (_P + "test_victims_counts_device.py"
              "::test_device_on_counts_equals_numba_visit_on_random_cases",)),
    "kernels.victims._pick_cuda:pick_kernel": Launch(
        "kernels.victims._pick_cuda:PICK_THREADS", (_V + "test_pick.py",)),
    "kernels.victims._pick_cuda:scatter_packed_kernel": Launch(
        "kernels.victims._pick_cuda:SCATTER_THREADS",
        (_V + "test_device.py::test_a_warm_sync_sends_its_rows_in_one_driver_copy",)),
    "kernels.victims._pick_cuda:scatter_flat_rows_kernel": Launch(
        "kernels.victims._pick_cuda:SCATTER_THREADS",
        (_P + "test_victims_counts_device.py::test_resident_tables_send_the_rows_that_changed",)),
    "kernels.victims._pick_cuda:lowered_rows_kernel": Launch(
        "kernels.victims._pick_cuda:SCATTER_THREADS", (_V + "test_pick.py",)),
}


def _module_files() -> dict[str, Path]:
    """``"<sub-package>.<module>"`` -> its source file, for every module of
    ``PACKAGES`` (found on disk: nothing is imported)."""
    out = {}
    for package in PACKAGES:
        spec = importlib.util.find_spec(f"{ROOT}.{package}")
        for base in spec.submodule_search_locations:
            base = Path(base)
            for path in sorted(base.rglob("*.py")):
                rel = path.relative_to(base).with_suffix("")
                parts = [p for p in rel.parts if p != "__init__"]
                out[".".join([package, *parts])] = path
    return out


# ``@cuda.jit`` or ``@cuda.jit(...)`` without ``device=True`` over a def
_DECORATED = re.compile(r"^[ \t]*@cuda\.jit(\((?P<opts>[^)]*)\))?[ \t]*\n[ \t]*def (?P<name>\w+)",
                        re.M)
# compile_source(..., cuda.jit, ("name", ...), ...): the kernels a source generates
_GENERATED = re.compile(r"\bcuda\.jit\s*,\s*\((?P<names>[^)]*)\)")


def kernels_in_source() -> set[str]:
    """The kernel keys the source text declares (no import)."""
    found = set()
    for module, path in _module_files().items():
        text = path.read_text(encoding="utf-8")
        if "cuda.jit" not in text:
            continue
        for m in _DECORATED.finditer(text):
            if "device=True" not in (m.group("opts") or ""):
                found.add(f"{module}:{m.group('name')}")
        for m in _GENERATED.finditer(text):
            for name in re.findall(r"[\"'](\w+)[\"']", m.group("names")):
                found.add(f"{module}:{name}")
    return found


def is_kernel(obj) -> bool:
    """A kernel dispatcher (a simulator one too), not a device function."""
    if type(obj).__name__ == "FakeCUDAKernel":
        return not vars(obj)["_device"]       # the simulator's flag (no public one)
    options = getattr(obj, "targetoptions", None)
    return (type(obj).__name__ == "CUDADispatcher" and isinstance(options, dict)
            and not options.get("device", False))


def discover() -> dict[str, object]:
    """``key -> kernel dispatcher`` for every kernel defined at module level
    (a kernel imported into another module counts once, where its source
    lives).  Under the simulator the dispatchers are the simulator's."""
    found: dict[str, object] = {}
    for module, path in _module_files().items():
        if "cuda.jit" not in path.read_text(encoding="utf-8"):
            continue
        mod = importlib.import_module(f"{ROOT}.{module}")
        for name, obj in vars(mod).items():
            if not is_kernel(obj):
                continue
            origin = getattr(obj, "py_func", None) or getattr(obj, "fn", None)
            if getattr(origin, "__module__", "").startswith(mod.__name__):
                found[f"{module}:{name}"] = obj
    return found


def block_of(launch: Launch) -> int:
    """The threads per block ``launch`` asks in this process (the
    simulator's constants are smaller than the device's)."""
    module, name = launch.block.split(":")
    return int(getattr(importlib.import_module(f"{ROOT}.{module}"), name))


@dataclass
class Seen:
    """What the simulated launches of one kernel passed."""
    signatures: list = field(default_factory=list)     # tuples of Numba types, first seen first
    blocks: set = field(default_factory=set)           # threads per block asked
    grids: set = field(default_factory=set)            # blocks asked
    dynamic_shared: int = 0                            # largest dynamic shared bytes asked


def _install_recorder(seen: dict[str, Seen], wanted: set[str]) -> None:
    """Every simulator launch of a discovered kernel records into ``seen``;
    the test run stops once each of ``wanted`` launched."""
    import pytest
    from numba import typeof
    from numba.cuda.simulator import kernel as sim_kernel
    keys: dict[int, str] = {}
    launch = sim_kernel.FakeCUDAKernel.__call__

    def recording(self, *args):
        if not vars(self)["_device"] and not sim_kernel._kernel_context:
            if not keys:
                keys.update({id(k): key for key, k in discover().items()})
            key = keys.get(id(self))
            if key is not None:
                s = seen.setdefault(key, Seen())
                sig = tuple(typeof(a) for a in args)
                if sig not in s.signatures:
                    s.signatures.append(sig)
                block = self.block_dim[0] * self.block_dim[1] * self.block_dim[2]
                s.blocks.add(int(block))
                s.grids.add(int(self.grid_dim[0] * self.grid_dim[1] * self.grid_dim[2]))
                s.dynamic_shared = max(s.dynamic_shared, int(self.dynshared_size))
        out = launch(self, *args)
        if wanted and wanted <= seen.keys():
            pytest.exit("every kernel launched", returncode=0)
        return out

    sim_kernel.FakeCUDAKernel.__call__ = recording


def _record_here(out: str, tests: list[str]) -> int:
    """In the simulator child: run ``tests`` recording the launches into
    the pickle ``out`` (``{key: Seen}`` plus each kernel's simulator block)."""
    import pytest
    seen: dict[str, Seen] = {}
    wanted = set(LAUNCHES)
    _install_recorder(seen, wanted)
    rc = pytest.main(["-q", "-p", "no:cacheprovider", "-m", "cudasim", *tests])
    sim_blocks = {key: block_of(launch) for key, launch in LAUNCHES.items()}
    with open(out, "wb") as fh:
        pickle.dump({"seen": seen, "sim_blocks": sim_blocks, "pytest_rc": int(rc)}, fh)
    return 0


def record(keys=None, timeout: float = 1800) -> dict:
    """Run the tests that launch ``keys`` (default: every kernel of
    ``LAUNCHES``) under the simulator in a child process; ``{"seen": {key:
    Seen}, "sim_blocks": {key: threads}, "pytest_rc": int}``.  A test that
    fails does not stop the recording of the kernels launched before it."""
    keys = sorted(LAUNCHES if keys is None else keys)
    tests = list(dict.fromkeys(t for k in keys for t in LAUNCHES[k].tests))
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "launches.pkl")
        proc = subprocess.run([sys.executable, "-m", __name__, "--record", out, *tests],
                              cwd=REPO, env=env, timeout=timeout, capture_output=True, text=True)
        if not os.path.exists(out):
            raise RuntimeError(f"recording the launches failed (exit {proc.returncode}):\n"
                               f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
        with open(out, "rb") as fh:
            return pickle.load(fh)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--record"]:
        return _record_here(argv[1], argv[2:])
    found = discover()
    for key in sorted(set(found) | set(LAUNCHES)):
        launch = LAUNCHES.get(key)
        where = "not covered" if launch is None else (
            f"block {'<= ' if launch.upto else ''}{block_of(launch)}, launched by "
            + ", ".join(launch.tests))
        print(f"{key}: {where}" + ("" if key in found else " (not found in the tree)"))
    return 0 if set(found) == set(LAUNCHES) else 1


if __name__ == "__main__":
    # run as the package's module, so the pickled records name its classes
    from tensorsched.bench.cuda_kernels import main as _main
    sys.exit(_main())
