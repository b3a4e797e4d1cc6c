"""The host's share of a preemptor (and of a one-at-a-time cycle) on the
cuda backend, itemized.

Under Numba's CUDA simulator (set here when no GPU is asked for) every
kernel is slow Python, so a preemptor's wall time says nothing about the
host.  This bench times each top-level kernel launch (the simulator's
``FakeCUDAKernel.__call__``; the device functions it calls are inside)
and takes it out: what is left is the host's Python and NumPy work and
the simulator's copies (plain NumPy copies here).  Times are the
scheduling thread's CPU time (``time.thread_time``: a shared, loaded
machine stretches wall time, not this; the simulator's block threads
are other threads).  Listed host functions
are timed the same way (their time less the kernels launched inside), so
the record itemizes where a preemptor's host microseconds go; an item
includes the items listed under it (their names start with the parent's
after ``>``).

Workloads: ``preemption``, ``preemption-spread``, ``preemption-antiaffinity``
(``bench.preemption``, one ``schedule_one`` a preemptor: the failed cycle,
PostFilter with the device search, the evictions and the retry) and
``basic-nobatch`` and ``spread-nobatch`` (``bench.workloads``' basic and
spread workloads with batching off: one cycle a pod; the spread one runs
PodTopologySpread's filter on the host).  Per attempt: the host microseconds (wall less the
kernels), the kernels launched, copies each way; per item: calls and host
microseconds per attempt (median and mean over the timed attempts, the
warm-up excluded).

python -m tensorsched.bench.preempt_host --workload preemption-spread
        [--nodes 10000] [--pods 4] [--output FILE]
python -m tensorsched.bench.preempt_host --combine DIR/*.json --base-commit C
        --output bench/results/preempt-host-per-preemptor-before-after.json

``--combine`` also takes the numba backend's records of the same cycles
(``tensorsched bench --backend numba --no-batch``, each tree's in its own
process, alternated) named ``numba-{base,after}-WORKLOAD-ROUND.json``:
their p50 latency and CPU seconds beside each other (``numba_rounds``),
to show the CPU path is not slower; and the attempts timed whole
(``--no-item-wrappers``) named ``whole-{base,after}-WORKLOAD-ROUND.json``
(``whole_rounds``).

``--no-items`` (a ``-nobatch`` workload, ``--backend cuda|numba``): the
whole cycle's host work without the items' tracing (``run_totals``): the
scheduling thread's CPU a cycle with the kernels, the simulator's array
machinery (allocations, copies, device array views, syncs: a GPU's
driver calls, counted a cycle) and the collector taken out; per cycle
medians of that, of ``evaluate``'s share and of the framework's rest.
The simulator's block of threads leaves the host's caches cold for the
code after a launch (the numba backend's framework share doubles with a
like thread storm after each cycle), so ``--stub-kernel`` replaces the
placement cycle's launch by a host stand-in (other placements, the same
host path): the host's own work as a GPU's host would do it.  ``--combine``
puts ``totals-{base,after}-{cuda,cuda-stub,numba}-WORKLOAD-ROUND.json``
records beside each other (``totals_rounds``).  ``--stub-cycle`` (an
itemized run, any workload) replaces that launch by one computing the
same outputs on the host (``_stub_cycle_same``: the numba twins), so a
preemptor's cycle fails as it must and the placements are the
workload's; with ``--stub-victims`` no simulated block of threads runs in
a preemptor's cycle and victim search (``--stub-all``: nor in its search
on counts or its tables' row scatters, ``_stub_rest``).

Before/after: this file run as a script by the base tree's interpreter
(``base-WORKLOAD-ROUND.json``) and by this tree's (``after-...``), each
run its own process, then ``--combine``.
"""

from __future__ import annotations

import os
import re

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import argparse      # noqa: E402
import gc            # noqa: E402
import importlib     # noqa: E402
import inspect       # noqa: E402
import json          # noqa: E402
import time          # noqa: E402

import numpy as np   # noqa: E402

# (label, module, attribute path): the host functions itemized.
ITEMS = (
    ("> attempt", "tensorsched.framework.scheduler.schedule_one", "SchedulingCycle.attempt"),
    ("> _preempt_and_retry", "tensorsched.framework.scheduler.schedule_one",
     "SchedulingCycle._preempt_and_retry"),
    ("> fits_on_row (the retry)", "tensorsched.framework.preemption.evaluator", "fits_on_row"),
    ("> run_cycle", "tensorsched.framework.runtime.framework", "Framework.run_cycle"),
    ("> run_cycle > plan_cycle", "tensorsched.framework.runtime.framework",
     "Framework.plan_cycle"),
    ("> run_cycle > fused evaluate (cuda)", "tensorsched.kernels.fused.backends",
     "CudaBackend.evaluate"),
    ("> run_cycle > evaluate > _staged_cache", "tensorsched.kernels.fused.backends",
     "CudaBackend._staged_cache"),
    ("> run_cycle > evaluate > _device_pick", "tensorsched.kernels.fused.backends",
     "CudaBackend._device_pick"),
    ("> run_cycle > evaluate > _rules_pick", "tensorsched.kernels.fused.backends",
     "CudaBackend._rules_pick"),
    ("> run_cycle > evaluate > _rules_pick > stage the rules",
     "tensorsched.kernels.domain_rules_cycle", "DeviceRuleTable.stage"),
    ("> run_cycle > PodTopologySpread.cycle_rules",
     "tensorsched.framework.plugins.pod_topology_spread", "SpreadCycleRules.__call__"),
    ("> run_cycle > evaluate > _ranked_rows", "tensorsched.kernels.fused.backends",
     "CudaBackend._ranked_rows"),
    ("> run_cycle > evaluate > _host_rows", "tensorsched.kernels.fused.backends",
     "CudaBackend._host_rows"),
    ("> run_cycle > evaluate > host finalize", "tensorsched.kernels.fused.backends",
     "CudaBackend._host_finalize"),
    ("> assume_and_permit", "tensorsched.framework.scheduler.binding",
     "BindingCycle.assume_and_permit"),
    ("> assume_and_permit > _binding_cycle", "tensorsched.framework.scheduler.binding",
     "BindingCycle._binding_cycle"),
    ("queue pop (outside the attempt)", "tensorsched.framework.scheduler.queue",
     "SchedulingQueue.pop"),
    ("> run_cycle > PodTopologySpread.filter",
     "tensorsched.framework.plugins.pod_topology_spread", "PodTopologySpread.filter"),
    ("> run_cycle > PodTopologySpread.filter > codes_by_row",
     "tensorsched.framework.plugins.pod_topology_spread", "PodTopologySpread.codes_by_row"),
    ("> PresentMinimum.read (spread's least sums)", "tensorsched.framework.state.domain_minimum",
     "PresentMinimum.read"),
    ("> PresentMinimum.read > _rebuild", "tensorsched.framework.state.domain_minimum",
     "PresentMinimum._rebuild"),
    ("> run_cycle > InterPodAffinity.filter",
     "tensorsched.framework.plugins.inter_pod_affinity", "InterPodAffinity.filter"),
    ("> preempt", "tensorsched.framework.preemption.evaluator", "preempt"),
    ("> preempt > _codes_by_row", "tensorsched.framework.preemption.evaluator", "_codes_by_row"),
    ("> preempt > _codes_by_row > status_codes", "tensorsched.framework.preemption.evaluator",
     "status_codes"),
    ("> preempt > _helpful_by_row", "tensorsched.framework.preemption.evaluator",
     "_helpful_by_row"),
    ("> preempt > _helpful_by_row > status_codes_and_helpful",
     "tensorsched.framework.preemption.evaluator", "status_codes_and_helpful"),
    ("> preempt > _candidates", "tensorsched.framework.preemption.evaluator", "_candidates"),
    ("> preempt > PodTable.sync", "tensorsched.framework.preemption.evaluator",
     "PodTable.sync"),
    ("> preempt > PodTable.sync > _write_rows", "tensorsched.framework.preemption.evaluator",
     "PodTable._write_rows"),
    ("> preempt > active_host_filters", "tensorsched.framework.preemption.evaluator",
     "active_host_filters"),
    ("> preempt > _device_visit", "tensorsched.framework.preemption.evaluator",
     "_device_visit"),
    ("> preempt > _device_counts_visit", "tensorsched.framework.preemption.evaluator",
     "_device_counts_visit"),
    ("> preempt > PodTable.device (sync_pods)", "tensorsched.framework.preemption.evaluator",
     "PodTable.device"),
    ("> preempt > DeviceVictims.sync_index", "tensorsched.kernels.victims.device",
     "DeviceVictims.sync_index"),
    ("> preempt > device_stage", "tensorsched.kernels.fused.backends",
     "CudaBackend.device_stage"),
    ("> preempt > nominated_lowering", "tensorsched.framework.preemption.evaluator",
     "nominated_lowering"),
    ("> preempt > HostVictimSearch.device_counts", "tensorsched.framework.preemption.host_search",
     "HostVictimSearch.device_counts"),
    ("> preempt > device_counts > PodTopologySpread.victim_probe",
     "tensorsched.framework.plugins.pod_topology_spread", "PodTopologySpread.victim_probe"),
    ("> preempt > device_counts > InterPodAffinity.victim_probe",
     "tensorsched.framework.plugins.inter_pod_affinity", "InterPodAffinity.victim_probe"),
    ("> preempt > device_counts > victim_probe > SpreadProbe.__init__",
     "tensorsched.framework.plugins.pod_topology_spread", "SpreadProbe.__init__"),
    ("> preempt > device_counts > victim_probe > _filter_sums",
     "tensorsched.framework.plugins.pod_topology_spread", "PodTopologySpread._filter_sums"),
    ("> preempt > device_counts > _class_matches", "tensorsched.framework.preemption.host_search",
     "HostVictimSearch._class_matches"),
    ("> preempt > device_counts > ProbeTables.update",
     "tensorsched.framework.preemption.probe_tables", "ProbeTables.update"),
    ("> preempt > HostVictimSearch.__init__", "tensorsched.framework.preemption.host_search",
     "HostVictimSearch.__init__"),
    ("> preempt > DeviceVictims.search_and_pick", "tensorsched.kernels.victims.device",
     "DeviceVictims.search_and_pick"),
    ("> preempt > DeviceVictims.counts_search_and_pick", "tensorsched.kernels.victims.device",
     "DeviceVictims.counts_search_and_pick"),
    ("> preempt > counts_search_and_pick > _resident (probe tables before; visit order)",
     "tensorsched.kernels.victims.device", "DeviceVictims._resident"),
    ("> preempt > counts_search_and_pick > _following (probe tables)",
     "tensorsched.kernels.victims.device", "DeviceVictims._following"),
    ("> preempt > search_and_pick > _visit_order", "tensorsched.kernels.victims.device",
     "DeviceVictims._visit_order"),
    ("> evict", "tensorsched.framework.scheduler.schedule_one", "SchedulingCycle._evict"),
)


_LABELS = frozenset(label for label, _m, _p in ITEMS)


class _Clock:
    """Kernel seconds so far (top-level launches only) and launches."""

    def __init__(self):
        self.kernel = 0.0
        self.launches = 0
        self.depth = 0
        self.up = 0
        self.down = 0
        self.stub_cycles = 0        # launches ``_stub_cycle_same`` answered


def _stand_in_launch(clock: _Clock, fn, *args) -> None:
    """A host stand-in ``fn(*args)`` run as a launch: counted and timed as
    a kernel (taken out).  (Run on a thread of its own while this one
    waits, as a GPU's host waits, the preemptor's host items came out the
    same at 10,000 nodes: the stand-ins' sweeps do not chill this core's
    caches more than the host's own work does.)"""
    clock.launches += 1
    clock.depth += 1            # inside a kernel: its reads and writes are not calls
    t = time.thread_time()
    try:
        fn(*args)
    finally:
        clock.kernel += time.thread_time() - t
        clock.depth -= 1


def _patch_kernels(clock: _Clock) -> None:
    from numba.cuda.simulator import kernel as SK
    from numba.cuda.simulator.cudadrv import devicearray as DA
    call = SK.FakeCUDAKernel.__call__

    def timed(self, *args):
        if clock.depth:             # a device function inside a kernel
            return call(self, *args)
        clock.depth += 1
        t = time.thread_time()
        try:
            return call(self, *args)
        finally:
            clock.depth -= 1
            clock.kernel += time.thread_time() - t
            clock.launches += 1
    SK.FakeCUDAKernel.__call__ = timed
    to_dev, up, down = DA.to_device, DA.FakeCUDAArray.copy_to_device, \
        DA.FakeCUDAArray.copy_to_host

    def counted(fn, field):
        def inner(*a, **k):
            if not clock.depth:
                setattr(clock, field, getattr(clock, field) + 1)
            return fn(*a, **k)
        return inner
    DA.to_device = counted(to_dev, "up")
    DA.FakeCUDAArray.copy_to_device = counted(up, "up")
    DA.FakeCUDAArray.copy_to_host = counted(down, "down")
    import numba.cuda
    numba.cuda.to_device = DA.to_device
    from numba.cuda.cudadrv import driver       # a prefix's copy (no device view)
    driver.host_to_device = counted(driver.host_to_device, "up")


def _wrap_items(clock: _Clock, totals: dict) -> None:
    for label, mod, path in ITEMS:
        try:
            owner = importlib.import_module(mod)
        except ImportError:
            continue
        *outer, name = path.split(".")
        for part in outer:      # a class the tree timed lacks: not itemized
            owner = getattr(owner, part, None)
        fn = getattr(owner, name, None)
        if fn is None:
            continue
        totals[label] = [0, 0.0]

        def timed(*a, __fn=fn, __label=label, **k):
            k0, t0 = clock.kernel, time.thread_time()
            try:
                return __fn(*a, **k)
            finally:
                got = totals[__label]
                got[0] += 1
                got[1] += (time.thread_time() - t0) - (clock.kernel - k0)
        setattr(owner, name, timed)
        if not outer:               # a module function: callers import it by name
            for other in ("tensorsched.framework.preemption.evaluator",
                          "tensorsched.framework.plugins.default_preemption",
                          "tensorsched.framework.scheduler.schedule_one"):
                m = importlib.import_module(other)
                if getattr(m, name, None) is fn:
                    setattr(m, name, timed)


def run(workload: str, nodes: int, pods: int, stub_victims: bool = False,
        stub_cycle: bool = False, stub_rest: bool = False, items: bool = True) -> dict:
    """The record of one itemized run (see the module doc); ``stub_victims``:
    the victim search's and pick's launches host stand-ins
    (``_stub_victims``); ``stub_cycle``: the placement cycle's launch a
    host stand-in with the same outputs (``_stub_cycle_same``);
    ``stub_rest``: the search on counts and the tables' scatters too
    (``_stub_rest``); ``items`` False: no item wrapped (the attempt's host
    microseconds without the items' own clock reads: ``_clock_cost``)."""
    clock = _Clock()
    totals: dict = {}
    _patch_kernels(clock)
    if stub_victims:
        _stub_victims(clock)
    if stub_cycle:
        _stub_cycle_same(clock)
    if stub_rest:
        _stub_rest(clock)
    from tensorsched.bench.harness import record_stamp
    from tensorsched.framework.scheduler.scheduler import Scheduler
    marks: dict = {}

    def progress(stage):
        if stage in ("warmed up", "warm"):
            marks["go"] = True
            if items:
                _wrap_items(clock, totals)
            per.clear()
            steps.clear()
            seen.clear()
    per: list = []
    steps: list = []            # per attempt: item -> (calls, host seconds)
    seen: dict = {}
    one = Scheduler.schedule_one

    def attempt(self, pod=None):
        k0, l0, u0, d0 = clock.kernel, clock.launches, clock.up, clock.down
        t0 = time.thread_time()
        try:
            return one(self, pod)
        finally:
            if marks.get("go"):
                per.append(((time.thread_time() - t0 - (clock.kernel - k0)) * 1e6,
                            clock.launches - l0, clock.up - u0, clock.down - d0))
                now = {k: tuple(v) for k, v in totals.items()}
                steps.append({k: (c - seen.get(k, (0, 0.0))[0], s - seen.get(k, (0, 0.0))[1])
                              for k, (c, s) in now.items()})
                seen.clear()
                seen.update(now)
    Scheduler.schedule_one = attempt
    if workload.endswith("-nobatch"):
        from tensorsched.bench.workloads import BENCH_STAGES, run_workload

        def progress_basic(stage):
            progress("warm" if stage == BENCH_STAGES[1] else stage)
        rec = run_workload(workload.removesuffix("-nobatch"), nodes, pods, "cuda", batch=False,
                           progress=progress_basic)
    else:
        from tensorsched.bench.preemption import run_preemption
        rec = run_preemption(nodes, pods, "cuda", variant=workload.partition("-")[2],
                             progress=progress)
    n = max(len(per), 1)
    host = [p[0] for p in per]
    if not per and totals.get("> attempt", (0,))[0]:
        # through the queue (basic-nobatch): per cycle from the totals
        n = totals["> attempt"][0]
        host = [totals["> attempt"][1] * 1e6 / n]
    # schedule_one's own wrapper counts the same attempts
    items = {k: {"calls": round(c / n, 2),
                 "host_us": round(float(np.median([st.get(k, (0, 0.0))[1] for st in steps]))
                                  * 1e6, 1) if steps else round(s * 1e6 / n, 1),
                 "host_us_mean": round(s * 1e6 / n, 1)}
             for k, (c, s) in totals.items() if c}
    return {
        "workload": workload, "nodes": nodes, "pods": pods, "backend": "cuda",
        "simulator": os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
        **({"stub_victims": True} if stub_victims else {}),
        **({"stub_cycle": True, "stub_cycle_launches": clock.stub_cycles}
           if stub_cycle else {}),
        **({"stub_rest": True} if stub_rest else {}),
        **({} if items else {"items_wrapped": False}),
        # each item call reads the thread clock twice inside its parents
        # (their figures hold that much of the bench's own time)
        "item_calls_per_attempt": round(sum(c for c, _s in totals.values()) / n, 1),
        "thread_time_call_us": _clock_cost(),
        "attempts": len(per),
        "host_us_per_attempt": {"p50": round(float(np.median(host)), 1) if host else None,
                                "mean": round(float(np.mean(host)), 1) if host else None,
                                "each": [round(h, 1) for h in host]},
        "kernels_per_attempt": round(sum(p[1] for p in per) / n, 2),
        "copies_up_per_attempt": round(sum(p[2] for p in per) / n, 2),
        "copies_back_per_attempt": round(sum(p[3] for p in per) / n, 2),
        # per item (module doc): the same attempts' host microseconds
        "items": items,
        "placements_sha256": rec.get("placements_sha256"),
        # through the queue: the cuda backend's counters per cycle (node
        # rows uploaded, row cache rows recomputed and copied back, launches)
        **({"device_counters_per_cycle": {k: round(v / n, 2) for k, v in
                                          rec["device_counters"].items()}}
           if rec.get("device_counters") and not per else {}),
        "preemptions": rec.get("preemptions"),
        "victim_device_counters": rec.get("victim_device_counters"),
        **record_stamp(0),
    }


# The simulator's array machinery (``--no-items``): (kind, owner, name);
# owner "module" is ``numba.cuda`` (the simulator's, as the backends call
# it), "array" its ``FakeCUDAArray``, "stream" its ``stream``, "driver"
# its ``cudadrv.driver`` (copies of a prefix).  On a GPU
# each of these is a driver call (or a device array object's Python):
# an allocation, a copy each way, a view of a device array, a sync.
MACHINERY = (
    ("alloc", "module", "device_array"), ("alloc", "module", "device_array_like"),
    ("alloc", "module", "pinned_array"), ("alloc", "module", "pinned_array_like"),
    ("alloc", "module", "mapped_array"),
    ("up", "module", "to_device"), ("up", "array", "copy_to_device"),
    ("down", "array", "copy_to_host"),
    ("up", "driver", "host_to_device"), ("down", "driver", "device_to_host"),
    ("view", "array", "__getitem__"),
    ("sync", "module", "synchronize"), ("sync", "stream", "synchronize"),
)


class _Machinery:
    """Calls of the simulator's array machinery by kind (outside kernels)
    and the scheduling thread's CPU seconds inside them; ``to_device``
    counts as an allocation and a copy up."""

    KINDS = ("alloc", "up", "down", "view", "sync")

    def __init__(self):
        self.calls = dict.fromkeys(self.KINDS, 0)
        self.seconds = 0.0
        self.depth = 0

    def snapshot(self) -> tuple:
        return dict(self.calls), self.seconds


def _patch_machinery(clock: _Clock, mach: _Machinery) -> None:
    """Count and time ``MACHINERY`` (``_patch_kernels`` first: a call
    inside a kernel is the kernel's)."""
    import numba.cuda
    from numba.cuda.cudadrv import driver
    from numba.cuda.simulator import api as sim_api
    from numba.cuda.simulator.cudadrv import devicearray as DA
    owners = {"module": numba.cuda, "array": DA.FakeCUDAArray, "stream": sim_api.stream,
              "driver": driver}

    def counted(fn, kind, name):
        def inner(*a, **k):
            if clock.depth or mach.depth:
                return fn(*a, **k)
            mach.depth += 1
            t = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                mach.seconds += time.thread_time() - t
                mach.depth -= 1
                mach.calls[kind] += 1
                if name == "to_device" and k.get("to") is None and len(a) < 4:
                    mach.calls["alloc"] += 1
        return inner
    for kind, owner, name in MACHINERY:
        obj = owners[owner]
        fn = getattr(obj, name, None)
        if fn is not None:
            setattr(obj, name, counted(fn, kind, name))
    numba.cuda.simulator.to_device = numba.cuda.to_device
    DA.to_device = numba.cuda.to_device


def _stub_cycle_pick(clock: _Clock) -> None:
    """Replace the placement cycle's launch (``_cuda_cycle.launch_cycle_pick``)
    with a host stand-in that takes the first evaluated row (as if every row
    were feasible and equal) and writes nothing else: the simulator's
    block of threads does not run between the host's steps (its thread
    storm slows the host code after it: cold caches), so the host's own
    work is timed as a GPU's host would do it.  Counted as a launch; the
    placements are not the workload's."""
    # by name, as ``ITEMS``: the launcher is the cuda backend's own
    launcher = importlib.import_module("tensorsched.kernels.fused._cuda_cycle")

    def stand_in(n_rows, staged, k, packs, qbuf, rows, reasons_by_row, raw_by_row, sparams,
                 start, num_to_find, seed_mix, pods_at, out, rules=None):
        # ``rules`` (a spread cycle's rule table) is read by no stand-in:
        # every row counts as feasible and equal
        clock.launches += 1
        clock.depth += 1            # as inside a kernel: its reads and writes are not calls
        try:
            got = min(int(num_to_find), int(n_rows))
            out[:4] = (int(rows[start]), got, got, 0)
        finally:
            clock.depth -= 1
    launcher.launch_cycle_pick = stand_in


def _stub_cycle_same(clock: _Clock) -> None:
    """Replace the placement cycle's launch (``_cuda_cycle.launch_cycle_pick``)
    with a host stand-in writing the same outputs into the same device
    arrays: the staged rows written into the packs and recomputed in the
    row cache (``_cuda.write_staged_values``' source and the stage's
    unpacking, over the numba twins of ``fused._core``'s rules), the
    moved domain sums written into the rule table, then the pick of the
    numba twin (``fused.cycle.pick``, the same ``_cycle_core`` source).
    Unlike ``_stub_cycle_pick`` the placements are the workload's (a
    preemptor's cycle fails as it must; tests), and no simulated block of
    threads runs between the host's steps.  Counted as a launch and timed
    as a kernel (taken out)."""
    from numba import njit

    from tensorsched.kernels import domain_rules_cycle as DRC
    from tensorsched.kernels._compile import KEY, compile_source
    from tensorsched.kernels.fused.cycle import pick as host_pick
    from tensorsched.kernels.fused import stage_args as SA
    FCU = importlib.import_module("tensorsched.kernels.fused._cuda")
    FN = importlib.import_module("tensorsched.kernels.fused._numba")
    FCORE = importlib.import_module("tensorsched.kernels.fused._core")
    launcher = importlib.import_module("tensorsched.kernels.fused._cuda_cycle")
    dev = FCU.write_staged_values
    values = inspect.getsource(getattr(dev, "py_func", None) or dev.fn)
    values = values[values.index("def "):]          # the decorator off
    src = "\n\n".join((values, FCU.STAGE_TEMPLATE.format(
        packed=SA.PACKED_PARAMETERS, unpack=SA.unpack_source("    "),
        reasons_args=SA.call_arguments(FCORE.node_reasons, 1),
        scores_args=SA.call_arguments(FCORE.node_raw_scores, 3)), """
def write_rows(k, staged, node_i64, node_flags, label_vals, qbuf, reasons_by_row, raw_by_row):
    for j in range(k):
        i = write_staged_values(j, k, staged, node_i64, node_flags, label_vals, qbuf)
        r = stage_reasons(i, node_i64, node_flags, label_vals, qbuf)
        reasons_by_row[i] = r
        if r == 0:
            stage_raw_scores(i, i, raw_by_row, node_i64, node_flags, label_vals, qbuf)
"""))
    host = compile_source(
        "tensorsched.bench.cycle_rows_host", src, njit,
        ("write_staged_values", "stage_reasons", "stage_raw_scores", "write_rows"),
        {"node_reasons": FN.node_reasons, "node_raw_scores": FN.node_raw_scores,
         "_NCOLS": FCU._NCOLS, "_STAGED_ORDER": FCU._STAGED_ORDER,
         "_STAGED_PACK": FCU._STAGED_PACK},
        options={"nogil": True}, cache=True, depends=(FN.core[KEY],))["write_rows"]

    def stand_in(n_rows, staged, k, packs, qbuf, rows, reasons_by_row, raw_by_row, sparams,
                 start, num_to_find, seed_mix, pods_at, out, rules=None):
        if not 0 < n_rows <= launcher.MAX_ROWS:     # as the launcher refuses
            raise ValueError(f"a device cycle takes 1 to {launcher.MAX_ROWS} rows, "
                             f"got {n_rows}")
        clock.stub_cycles += 1
        _stand_in_launch(clock, cycle, staged, k, packs, qbuf, rows, reasons_by_row,
                         raw_by_row, sparams, start, num_to_find, seed_mix, pods_at, out, rules)

    def cycle(staged, k, packs, qbuf, rows, reasons_by_row, raw_by_row, sparams, start,
              num_to_find, seed_mix, pods_at, out, rules):
        h = _host_array
        i64, flags, labels = (h(p) for p in packs)
        reasons, raw = h(reasons_by_row), h(raw_by_row)
        if k:
            host(np.int64(k), h(staged), i64, flags, labels, h(qbuf), reasons, raw)
        table = None
        if rules is not None:
            table, rbuf, n_upd = rules
            rbuf, sums = h(rbuf), h(table.sums)
            n_rules = table.n_rules
            at = rbuf[n_rules:n_rules + n_upd]      # flat r x D + d
            sums[at // sums.shape[1], at % sums.shape[1]] = \
                rbuf[n_rules + n_upd:n_rules + 2 * n_upd]
            table = DRC.HostRules(n_rules, h(table.domp1), sums, h(table.params), rbuf)
        got = host_pick(h(rows), int(start), reasons, raw, int(num_to_find), h(sparams),
                      int(seed_mix), i64, int(pods_at), rules=table)
        h(out)[:4] = got[:4]
    launcher.launch_cycle_pick = stand_in


def _clock_cost() -> float:
    """Microseconds one ``time.thread_time`` call takes here (median of
    a few thousand; a system call on some virtual machines)."""
    got = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(2000):
            time.thread_time()
        got.append((time.perf_counter() - t) / 2000)
    return round(float(np.median(got)) * 1e6, 2)


def _host_array(a):
    """The host array behind a simulator device array (``a`` itself when
    it is one already): writes to it are the device array's."""
    return getattr(a, "_ary", a)


def _stub_victims(clock: _Clock) -> None:
    """Replace the victim search's launches (``victims._cuda.launch``: one
    simulated thread per visited node, almost all of a simulated
    preemptor's time at thousands of nodes) and the visit-and-pick's
    (``victims._pick_cuda.launch_pick``: one block) with host stand-ins
    writing the same outputs into the same device arrays: the numba twin
    of ``victims._core.victims_node`` over the positions
    (``victims._cuda.host_loop_source``, compiled once, cached on disk)
    and ``victims.pick.visit_and_pick``.  The host work around them runs
    as before, so the record's items are the simulator's; the placements
    are the same (tests).  Counted as launches and timed as kernels (taken
    out)."""
    from numba import njit

    from tensorsched.kernels._compile import KEY, compile_source
    VC = importlib.import_module("tensorsched.kernels.victims._cuda")
    VN = importlib.import_module("tensorsched.kernels.victims._numba")
    PC = importlib.import_module("tensorsched.kernels.victims._pick_cuda")
    from tensorsched.kernels.victims import pick as VP
    from tensorsched.kernels.victims import search as V
    # the kernel's body as a host loop over the positions (same unpacking)
    src = VC.host_loop_source("victims_host")
    host = compile_source("tensorsched.bench.victims_host", src, njit, ("victims_host",),
                          {"victims_node": VN.victims_node}, options={"nogil": True},
                          cache=True, depends=(VN.core[KEY],))["victims_host"]

    def as_kernel(fn):
        def inner(*a):
            _stand_in_launch(clock, fn, *a)
        return inner

    def search(n_rows, visit, offset, prio, packs, qbuf, allocatable, tables, pdb_allowed,
               work):
        h = _host_array
        host(h(visit)[:n_rows], np.int64(offset), np.int64(prio), *(h(p) for p in packs),
             h(qbuf), h(allocatable), *(h(t) for t in tables), h(pdb_allowed), h(work))

    def pick(stats, victims, m, cap, out):
        st, vi, o = _host_array(stats)[:m], _host_array(victims), _host_array(out)
        got = VP.visit_and_pick(st, int(cap))
        o[PC.OUT_VISITED], o[PC.OUT_CALLS], o[PC.OUT_CHOSEN] = got.visited, got.calls, \
            got.chosen
        o[PC.OUT_STATS:PC.OUT_STATS + V.N_STATS] = st[got.chosen] if got.chosen >= 0 else 0
        if got.chosen >= 0:
            o[PC.OUT_VICTIMS:PC.OUT_VICTIMS + vi.shape[1]] = vi[got.chosen]
    VC.launch = as_kernel(search)
    PC.launch_pick = as_kernel(pick)


def _grid_loop(source: str, name: str) -> str:
    """A one-thread-per-item kernel's source (``i = cuda.grid(1)``, then
    ``if i >= BOUND: return``) as the source of a host function ``name``
    with the same parameters: the lines before the guard once, then the
    rest in ``for i in range(BOUND)`` (thread order; each item writes its
    own outputs, so any order gives the kernel's)."""
    source = source[source.index("def "):]          # the decorator off
    source = re.sub(r"^def \w+\(", f"def {name}(", source, count=1)
    grid = re.search(r"^( +)(\w+) = cuda\.grid\(1\)\n", source, re.M)
    ind, var = grid.group(1), grid.group(2)
    guard = re.search(rf"^{ind}if {var} >= (.+):\n{ind}    return\n", source, re.M)
    if grid is None or guard is None or guard.start() < grid.end():
        raise ValueError(f"not a one-thread-per-item kernel: {name}")
    body = "".join("    " + line if line.strip() else line
                   for line in source[guard.end():].splitlines(True))
    return (source[:grid.start()] + source[grid.end():guard.start()]
            + f"{ind}for {var} in range({guard.group(1)}):\n" + body)


def _stub_rest(clock: _Clock) -> None:
    """Replace the launches a preemptor makes besides the cycle's and the
    victim search's (``_stub_cycle_same``, ``_stub_victims``) by host
    stand-ins writing the same outputs into the same device arrays: the
    search on counts (``victims._counts_cuda.launch``: one simulated thread
    per position of the whole visiting order, minutes a preemptor at
    10,000 nodes) and the pod and probe tables' row scatters
    (``victims._pick_cuda.launch_scatter_packed`` / ``launch_scatter_flat_rows``),
    each the kernel's own source as a host loop (``_grid_loop``) compiled
    with ``njit`` over the numba twins of the device functions it calls.
    Counted as launches and timed as kernels (taken out)."""
    from numba import njit

    CC = importlib.import_module("tensorsched.kernels.victims._counts_cuda")
    PC = importlib.import_module("tensorsched.kernels.victims._pick_cuda")
    VN = importlib.import_module("tensorsched.kernels.victims._numba")

    def py(kernel):
        return inspect.getsource(getattr(kernel, "py_func", None) or kernel.fn)
    CCORE = importlib.import_module("tensorsched.kernels.victims._counts_core")
    counts_src = _grid_loop(CC.kernel_source(), "counts_host")
    # position_kind itself a call (the numba visit inlines it into a loop
    # of its own; the rules it calls are inlined as there)
    ns = {"position_kind": njit(VN.counts_core["position_kind"].py_func, nogil=True),
          "F_PORTS": CCORE.F_PORTS, "F_FIT": CCORE.F_FIT, "KIND_OK": CCORE.KIND_OK,
          "CODE_KIND_BASE": CC.CODE_KIND_BASE}
    exec(compile(counts_src, "<counts search (host loop)>", "exec"), ns)
    counts = njit(ns["counts_host"], nogil=True)
    scatter = {}
    for kernel in ("scatter_packed_kernel", "scatter_flat_rows_kernel"):
        ns = {}
        exec(compile(_grid_loop(py(getattr(PC, kernel)), kernel), f"<{kernel} (host loop)>",
                     "exec"), ns)
        scatter[kernel] = njit(ns[kernel], nogil=True)

    def as_kernel(fn):
        def inner(*a):
            _stand_in_launch(clock, fn, *(_host_array(x) for x in a))
        return inner

    def counts_launch(n_pos, prio, packs, qbuf, allocatable, tables, pdb_allowed, index,
                      probe_nodes, probe_doms, visit, per, work):
        counts(np.int64(prio), *packs, qbuf, allocatable, *tables, pdb_allowed, index,
               probe_nodes, probe_doms, visit, per, work)

    def host_args(fn):
        def inner(*a):
            h = _host_array
            fn(*(tuple(h(t) for t in x) if isinstance(x, tuple) else h(x) for x in a))
        return inner
    CC.launch = as_kernel(host_args(counts_launch))
    PC.launch_scatter_packed = as_kernel(
        lambda packed, d_rows, *tables: scatter["scatter_packed_kernel"](
            packed, np.int64(d_rows), *tables))
    PC.launch_scatter_flat_rows = as_kernel(
        lambda packed, d_rows, table: scatter["scatter_flat_rows_kernel"](
            packed, np.int64(d_rows), table))


def _p50(xs: list) -> float | None:
    """The median of seconds ``xs`` in microseconds (None: none)."""
    return round(float(np.median(xs)) * 1e6, 1) if xs else None


def run_totals(workload: str, nodes: int, pods: int, backend: str = "cuda",
               stub_kernel: bool = False) -> dict:
    """A one-at-a-time cycle's whole host work without the items
    (``--no-items``): the scheduling thread's CPU microseconds a cycle
    over the timed run (``Scheduler.schedule_pending``: queue, cycle,
    assume, bind), with the cuda backend's kernels and the simulator's
    array machinery (``MACHINERY``) taken out and counted: what a GPU's
    host would still do.  Only ``Framework.run_cycle`` (a counter) and the
    backend's ``evaluate`` (its share, timed) are wrapped.  For the numba
    backend the same totals (no device calls): ``framework_us`` (the
    cycle less ``evaluate``) is its framework share."""
    from tensorsched.bench.harness import record_stamp
    from tensorsched.bench.workloads import BENCH_STAGES, run_workload
    from tensorsched.framework.runtime.framework import Framework
    from tensorsched.framework.scheduler.scheduler import Scheduler
    from tensorsched.kernels.fused import backends as FB
    clock, mach = _Clock(), _Machinery()
    if backend == "cuda":
        _patch_kernels(clock)
        _patch_machinery(clock, mach)
        if stub_kernel:
            _stub_cycle_pick(clock)
    go = {"on": False}
    acc = {"cycles": 0, "total": 0.0, "kernel": 0.0, "mach": 0.0, "launches": 0,
           "calls": dict.fromkeys(_Machinery.KINDS, 0), "eval": 0.0, "eval_kernel": 0.0,
           "eval_mach": 0.0, "gc": 0.0, "gc_at": 0.0}

    def gc_clock(phase, _info):
        # the collector's time apart: the simulator's kernels leave garbage
        # (thread objects, frames) that a GPU's launch does not
        if not go.get("in") or clock.depth:
            return
        if phase == "start":
            acc["gc_at"] = time.thread_time()
        else:
            acc["gc"] += time.thread_time() - acc["gc_at"]
    gc.callbacks.append(gc_clock)
    pending, cycle = Scheduler.schedule_pending, Framework.run_cycle
    evaluate = (FB.CudaBackend if backend == "cuda" else FB.NumbaBackend).evaluate

    def timed_pending(self, *a, **k):
        if not go["on"]:
            return pending(self, *a, **k)
        calls0, m0 = mach.snapshot()
        k0, l0, t0 = clock.kernel, clock.launches, time.thread_time()
        go["in"] = True
        try:
            return pending(self, *a, **k)
        finally:
            go["in"] = False
            acc["total"] += time.thread_time() - t0
            acc["kernel"] += clock.kernel - k0
            acc["launches"] += clock.launches - l0
            acc["mach"] += mach.seconds - m0
            for kind, v in mach.calls.items():
                acc["calls"][kind] += v - calls0[kind]

    def counted_cycle(self, *a, **k):
        if go["on"]:
            acc["cycles"] += 1
        return cycle(self, *a, **k)

    def sampled_head(self, *a, **k):
        # one head popped and scheduled: its host microseconds outside the
        # kernels, the machinery and the collector, and its evaluate's share
        if not go.get("in"):
            return head(self, *a, **k)
        m0, k0, g0, e0 = (mach.seconds, clock.kernel, acc["gc"],
                          acc["eval"] - acc["eval_kernel"] - acc["eval_mach"])
        t0 = time.thread_time()
        try:
            return head(self, *a, **k)
        finally:
            took = (time.thread_time() - t0 - (mach.seconds - m0) - (clock.kernel - k0)
                    - (acc["gc"] - g0))
            ev = acc["eval"] - acc["eval_kernel"] - acc["eval_mach"] - e0
            if ev:                      # a head that ran a cycle
                samples.append((took, ev))
    samples: list = []
    head = Scheduler.schedule_head

    def timed_evaluate(self, *a, **k):
        if not go["on"]:
            return evaluate(self, *a, **k)
        m0, k0, t0 = mach.seconds, clock.kernel, time.thread_time()
        try:
            return evaluate(self, *a, **k)
        finally:
            acc["eval"] += time.thread_time() - t0
            acc["eval_kernel"] += clock.kernel - k0
            acc["eval_mach"] += mach.seconds - m0
    Scheduler.schedule_pending = timed_pending
    Scheduler.schedule_head = sampled_head
    Framework.run_cycle = counted_cycle
    (FB.CudaBackend if backend == "cuda" else FB.NumbaBackend).evaluate = timed_evaluate

    def progress(stage):
        if stage == BENCH_STAGES[1]:
            go["on"] = True
    rec = run_workload(workload.removesuffix("-nobatch"), nodes, pods, backend, batch=False,
                       progress=progress)
    n = max(acc["cycles"], 1)

    def us(x):
        return round(x * 1e6 / n, 1)
    gc.callbacks.remove(gc_clock)
    total = acc["total"]
    outside = total - acc["kernel"] - acc["mach"] - acc["gc"]
    return {
        "workload": workload, "nodes": nodes, "pods": pods, "backend": rec["backend"],
        "mode": "no-items" + (", cycle kernel stubbed" if stub_kernel else ""),
        "simulator": os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and backend == "cuda",
        "cycles": acc["cycles"],
        # thread CPU microseconds a cycle (schedule_pending over the cycles)
        "cycle_us": us(total),
        "kernels_us": us(acc["kernel"]),
        "machinery_us": us(acc["mach"]),
        "gc_us": us(acc["gc"]),
        # what a GPU's host would still do: the cycle less the kernels, the
        # simulator's array machinery (the driver calls counted below) and
        # the collector (outside kernels)
        "host_outside_machinery_us": us(outside),
        "evaluate_us": us(acc["eval"] - acc["eval_kernel"] - acc["eval_mach"]),
        "framework_us": us(outside - (acc["eval"] - acc["eval_kernel"] - acc["eval_mach"])),
        # per cycle (a head popped and scheduled), medians: a loaded machine's
        # slow cycles weigh less than in the means above
        "per_cycle_p50_us": {
            "host_outside_machinery": _p50([h for h, _ in samples]),
            "evaluate": _p50([e for _, e in samples]),
            "framework": _p50([h - e for h, e in samples])},
        "device_calls_per_cycle": {"launches": round(acc["launches"] / n, 2),
                                   **{k: round(v / n, 2) for k, v in acc["calls"].items()}},
        "p50_us": rec.get("p50_us"), "cpu_seconds": rec.get("cpu_seconds"),
        "placements_sha256": rec.get("placements_sha256"),
        **({"device_counters_per_cycle": {k: round(v / n, 2) for k, v in
                                          rec["device_counters"].items()}}
           if rec.get("device_counters") else {}),
        **record_stamp(0),
    }


def _probe_table_work(items: dict) -> float | None:
    """The host microseconds of the probes' tables (built and compared, or
    kept and updated, and sent): ``device_counts`` less the probe and the
    class matches, plus ``_resident`` (before) or ``_following`` (after);
    None without a search on counts."""
    def us(key):
        return sum(v["host_us"] for k, v in items.items() if k.startswith(key))
    if not us("> preempt > HostVictimSearch.device_counts"):
        return None
    return round(us("> preempt > HostVictimSearch.device_counts")
                 - us("> preempt > device_counts > PodTopologySpread.victim_probe")
                 - us("> preempt > device_counts > InterPodAffinity.victim_probe")
                 - us("> preempt > device_counts > _class_matches")
                 + us("> preempt > counts_search_and_pick > _resident")
                 + us("> preempt > counts_search_and_pick > _following"), 1)


def combine(paths: list, base_commit: str, after_commit: str, note: str = "") -> dict:
    """The before/after record from ``run`` records named
    ``{base,after}-WORKLOAD-ROUND.json`` (each its own process, the base
    tree's beside this one's): per workload and round the host
    microseconds a preemptor (or cycle), p50 and mean, and both sides'
    items (every round's medians)."""
    from tensorsched.bench.harness import machine_info
    out: dict = {}
    for path in sorted(paths):
        m = re.match(r"(base|after)-(.+)-(\d+)\.json$", os.path.basename(path))
        if not m:
            continue
        side, workload, rnd = m.group(1), m.group(2), int(m.group(3))
        with open(path) as f:
            rec = json.load(f)
        w = out.setdefault(workload, {"rounds": {}})
        items = rec["items"]
        if not rec["attempts"] and "> attempt" in items:
            # through the queue (basic-nobatch): no schedule_one call; per
            # cycle from the items' totals (means, no median)
            calls = items["> attempt"]["calls"]
            items = {k: {"calls": round(v["calls"] / calls, 2),
                         "host_us": round(v["host_us_mean"] / calls, 1)}
                     for k, v in items.items()}
            rec["host_us_per_attempt"] = {"p50": None,
                                          "mean": items["> attempt"]["host_us"]}
            rec["attempts"] = calls
        w["rounds"].setdefault(rnd, {})[side] = {
            "host_us_p50": rec["host_us_per_attempt"]["p50"],
            "host_us_mean": rec["host_us_per_attempt"]["mean"],
            "attempts": rec["attempts"], "kernels": rec["kernels_per_attempt"],
            "copies_up": rec["copies_up_per_attempt"],
            "copies_back": rec["copies_back_per_attempt"],
            "placements_sha256": rec["placements_sha256"],
            "device_counters_per_cycle": rec.get("device_counters_per_cycle"),
            "victim_device_counters": rec.get("victim_device_counters"),
            "commit": rec.get("commit", "unrecorded"),
            "load": rec.get("load"),
            "probe_tables_host_us": _probe_table_work(items),
            # the items this file itemizes now (an earlier record may hold more)
            "items_host_us": {k: v["host_us"] for k, v in items.items() if k in _LABELS}}
    for w in out.values():
        rounds = [r for r in w["rounds"].values() if "base" in r and "after" in r]
        w["same_placements"] = all(r["base"]["placements_sha256"] ==
                                   r["after"]["placements_sha256"] for r in rounds)
        for side in ("base", "after"):
            got = [r[side]["host_us_p50"] for r in rounds if r[side]["host_us_p50"] is not None]
            w[f"{side}_host_us_p50_median_of_rounds"] = (
                round(float(np.median(got)), 1) if got else None)
            probe = [r[side]["probe_tables_host_us"] for r in rounds
                     if r[side]["probe_tables_host_us"] is not None]
            if probe:
                w[f"{side}_probe_tables_host_us_by_round"] = probe
    return {"bench": "host CPU microseconds a preemptor (one-at-a-time cycle: "
                     "basic-nobatch) on the cuda backend at the given nodes, kernels "
                     "taken out (bench.preempt_host, under the CUDA simulator)",
            "base_commit": base_commit, "commit": after_commit, "note": note,
            "machine": machine_info(), "load": [round(x, 2) for x in os.getloadavg()],
            "workloads": out}


def _paired_rounds(paths: list, pattern: str, label, fields) -> dict:
    """The records among ``paths`` whose file names match ``pattern`` (its
    first group the side, ``base`` or ``after``; its last the round),
    grouped by ``label(match)``: ``{label: {"rounds": {round: {side:
    {field: value}}}, "same_placements": ..., "paired": [the rounds with
    both sides]}}`` (``paired`` for the caller's medians)."""
    out: dict = {}
    for path in sorted(paths):
        m = re.match(pattern, os.path.basename(path))
        if not m:
            continue
        with open(path) as f:
            rec = json.load(f)
        w = out.setdefault(label(m), {"rounds": {}})
        w["rounds"].setdefault(int(m.group(m.lastindex)), {})[m.group(1)] = {
            k: rec.get(k) for k in fields}
    for w in out.values():
        rounds = [r for r in w["rounds"].values() if "base" in r and "after" in r]
        w["same_placements"] = all(r["base"]["placements_sha256"] ==
                                   r["after"]["placements_sha256"] for r in rounds)
        w["paired"] = rounds
    return out


def numba_rounds(paths: list) -> dict:
    """The numba backend's one-at-a-time cycles beside the base tree's:
    per workload and round the records of ``tensorsched bench --backend
    numba --no-batch`` named ``numba-{base,after}-WORKLOAD-ROUND.json``
    (each its own process, alternated): p50 / p99 latency (wall
    microseconds a pod), the timed run's process CPU seconds, placements."""
    out = _paired_rounds(paths, r"numba-(base|after)-(.+)-(\d+)\.json$",
                         lambda m: m.group(2),
                         ("nodes", "pods", "p50_us", "p99_us", "cpu_seconds",
                          "cpu_per_attempt_us", "placements_sha256", "commit", "load"))
    for w in out.values():
        rounds = w.pop("paired")
        for side in ("base", "after"):
            for k in ("p50_us", "cpu_seconds"):
                got = [r[side][k] for r in rounds if r[side][k] is not None]
                w[f"{side}_{k}_median_of_rounds"] = (round(float(np.median(got)), 4)
                                                     if got else None)
            # the scheduling thread's CPU a preemptor (``bench.preemption``)
            got = [r[side]["cpu_per_attempt_us"]["p50"] for r in rounds
                   if (r[side]["cpu_per_attempt_us"] or {}).get("p50") is not None]
            w[f"{side}_cpu_per_attempt_us_p50_median_of_rounds"] = (
                round(float(np.median(got)), 1) if got else None)
    return out


def whole_rounds(paths: list) -> dict:
    """The attempts timed whole (``--no-item-wrappers``) beside each other:
    per workload and round the records named
    ``whole-{base,after}-WORKLOAD-ROUND.json`` (each its own process,
    alternated): the host microseconds a preemptor (p50, mean), with no
    item clock read inside, and each side's median of the rounds' p50."""
    out = _paired_rounds(paths, r"whole-(base|after)-(.+)-(\d+)\.json$",
                         lambda m: m.group(2),
                         ("host_us_per_attempt", "attempts", "placements_sha256", "commit",
                          "load"))
    for w in out.values():
        rounds = w.pop("paired")
        for r in w["rounds"].values():
            for got in r.values():
                got["host_us_per_attempt"] = {k: got["host_us_per_attempt"][k]
                                              for k in ("p50", "mean")}
        for side in ("base", "after"):
            got = [r[side]["host_us_per_attempt"]["p50"] for r in rounds]
            w[f"{side}_host_us_p50_median_of_rounds"] = (round(float(np.median(got)), 1)
                                                         if got else None)
    return out


def totals_rounds(paths: list) -> dict:
    """The ``--no-items`` records beside each other: per backend label
    (``cuda``: the simulator's kernels run, ``cuda-stub``: the cycle's
    launch a host stand-in, ``numba``) and workload, the records named
    ``totals-{base,after}-LABEL-WORKLOAD-ROUND.json`` (each its own
    process, alternated); per side the medians over rounds of the per-cycle
    medians (host outside the machinery, evaluate's share, the framework's)
    and the device calls a cycle.  ``gap_us``: a side's cuda-stub host
    outside the machinery less its numba framework share (what the cuda
    cycle's host does beyond the framework numba's cycle shares)."""
    out = _paired_rounds(paths, r"totals-(base|after)-(cuda-stub|cuda|numba)-(.+)-(\d+)\.json$",
                         lambda m: f"{m.group(2)} {m.group(3)}",
                         ("cycles", "cycle_us", "kernels_us", "machinery_us", "gc_us",
                          "host_outside_machinery_us", "evaluate_us", "framework_us",
                          "per_cycle_p50_us", "device_calls_per_cycle",
                          "placements_sha256", "commit", "load"))
    for w in out.values():
        rounds = w.pop("paired")
        for side in ("base", "after"):
            got = [r[side]["per_cycle_p50_us"] for r in rounds]
            w[f"{side}_per_cycle_p50_us_median_of_rounds"] = {
                k: round(float(np.median([g[k] for g in got])), 1)
                for k in ("host_outside_machinery", "evaluate", "framework")} if got else None
            w[f"{side}_device_calls_per_cycle"] = (rounds[-1][side]["device_calls_per_cycle"]
                                                   if rounds else None)
    for side in ("base", "after"):
        for wl in {k.split(" ", 1)[1] for k in out}:
            stub, numba = out.get(f"cuda-stub {wl}"), out.get(f"numba {wl}")
            a = stub and stub.get(f"{side}_per_cycle_p50_us_median_of_rounds")
            b = numba and numba.get(f"{side}_per_cycle_p50_us_median_of_rounds")
            if a and b:
                stub[f"{side}_gap_us"] = round(a["host_outside_machinery"] - b["framework"], 1)
    return out


def _tables_as_before(search, n_rows: int) -> tuple:
    """(nodes, doms) built whole as every preemptor built them before the
    kept tables (the A/B's "before"; the probes already built)."""
    sp = search.probe.parts if search.probe is not None else []
    ia = search.ia_probe.parts if search.ia_probe is not None else []
    s, p = len(sp), len(ia)
    nodes = np.full((n_rows, 3 * s + p), -1, np.int64)
    nodes[:, 2 * s:3 * s] = 0
    sums = [None] * (2 * s + p)

    def fill(out, values):
        k = min(out.shape[0], values.shape[0])
        out[:k] = values[:k]
    for c, part in enumerate(sp):
        if part is None:
            continue
        _, dom, ds, _, present, _, _, _, _, extra = part
        fill(nodes[:, c], dom)
        fill(nodes[:, s + c], ds.dom)
        if extra is not None:
            fill(nodes[:, 2 * s + c], extra)
        sums[c], sums[s + c] = ds.sums, present
    for j, part in enumerate(ia):
        if part[1] is not None:
            fill(nodes[:, 3 * s + j], part[1])
            sums[2 * s + j] = part[2].sums
    width = max([a.shape[0] for a in sums if a is not None], default=0)
    doms = np.zeros((max(width, 1), 2 * s + p), np.int64)
    for k, a in enumerate(sums):
        if a is not None:
            doms[:a.shape[0], k] = a
    return nodes, doms


def tables_ab(workload: str, nodes: int, pods: int) -> dict:
    """The probes' tables a preemptor, before and after, in one process:
    inside each preemptor's search on counts (probes built first, untimed)
    the tables built whole and compared with the last ones sent
    (``DeviceVictims._resident``, as before) and the kept tables updated
    and sent by their changed rows (``ProbeTables.update`` and
    ``DeviceVictims._following``), alternating which goes first; thread
    CPU microseconds of each (host work only: the scatter kernels these
    launch are taken out)."""
    clock = _Clock()
    _patch_kernels(clock)
    from tensorsched.bench.preemption import run_preemption
    from tensorsched.framework.preemption import host_search
    orig = host_search.HostVictimSearch.device_counts
    got: dict = {"before": [], "after": [], "after_rows_read": []}
    state = {"mirror": None, "k": 0}

    def timed(fn):
        k0, t0 = clock.kernel, time.thread_time()
        fn()
        return (time.thread_time() - t0 - (clock.kernel - k0)) * 1e6

    def ab(self, n_rows, tables=None):
        from tensorsched.kernels.victims.device import DeviceVictims
        if tables is None:
            return orig(self, n_rows, tables)
        pre = orig(self, n_rows, type(tables)())    # the probes, untimed
        dev = state["mirror"] = state["mirror"] or DeviceVictims()
        out: list = []

        def before():
            ia = self.ia_probe.parts if self.ia_probe is not None else []
            s = len(self.probe.parts) if self.probe is not None else 0
            self._class_matches(s, ia)          # in both, as device_counts makes them
            t_nodes, t_doms = _tables_as_before(self, n_rows)
            dev.probe_tables(pre._replace(nodes=t_nodes, doms=t_doms, tables=None))

        def after():
            c = orig(self, n_rows, tables)
            dev.probe_tables(c)
            out.append(c)
        read = tables.rows_read
        first = state["k"] % 2 == 0
        state["k"] += 1
        for side in (("before", "after") if first else ("after", "before")):
            got[side].append(timed(before if side == "before" else after))
        got["after_rows_read"].append(tables.rows_read - read)
        return out[0]
    host_search.HostVictimSearch.device_counts = ab
    try:
        rec = run_preemption(nodes, pods, "cuda", variant=workload.partition("-")[2])
    finally:
        host_search.HostVictimSearch.device_counts = orig
    # the warm-up's searches (the first builds and sends everything) are left out
    skip = len(got["before"]) - rec["preemptions"]
    med = {k: round(float(np.median(v[skip:])), 1) for k, v in got.items() if v[skip:]}
    return {"workload": workload, "nodes": nodes, "preemptors": rec["preemptions"],
            "probe_tables_us_median": med,
            "each": {k: [round(x, 1) for x in v[skip:]] for k, v in got.items()},
            "placements_sha256": rec["placements_sha256"],
            **{k: v for k, v in rec.items() if k in ("commit", "machine", "load", "timestamp")}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", default="preemption-spread",
                    choices=("preemption", "preemption-spread", "preemption-antiaffinity",
                             "basic-nobatch", "spread-nobatch"))
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--pods", type=int, default=4)
    ap.add_argument("--output")
    ap.add_argument("--combine", nargs="+", metavar="JSON",
                    help="write the before/after record of these run records instead")
    ap.add_argument("--base-commit", default="")
    ap.add_argument("--note", default="", help="a note kept in the combined record")
    ap.add_argument("--tables-ab", action="store_true",
                    help="the probes' tables before and after in one process (tables_ab)")
    ap.add_argument("--no-items", action="store_true",
                    help="a -nobatch workload's whole cycle, no items: kernels and the "
                         "simulator's array machinery taken out and counted (run_totals)")
    ap.add_argument("--backend", default="cuda", choices=("cuda", "numba"),
                    help="with --no-items: the backend (numba: its framework share)")
    ap.add_argument("--stub-kernel", action="store_true",
                    help="with --no-items on cuda: the cycle's launch a host stand-in "
                         "(_stub_cycle_pick: no simulator thread storm; other placements)")
    ap.add_argument("--stub-victims", action="store_true",
                    help="the victim search's and pick's launches host stand-ins "
                         "(_stub_victims: the numba twins, same outputs; minutes, not "
                         "tens of minutes, at 10,000 nodes)")
    ap.add_argument("--stub-cycle", action="store_true",
                    help="the placement cycle's launch a host stand-in with the same "
                         "outputs (_stub_cycle_same: the numba twins; the workload's "
                         "placements, a preemptor's cycle fails as it must)")
    ap.add_argument("--stub-all", action="store_true",
                    help="every launch of a preemptor a host stand-in with the same outputs: "
                         "--stub-victims, --stub-cycle and the search on counts and the "
                         "tables' scatters (_stub_rest)")
    ap.add_argument("--no-item-wrappers", action="store_true",
                    help="an itemized workload's attempts timed whole, no item wrapped "
                         "(no clock reads of the items inside the attempt)")
    args = ap.parse_args(argv)
    if args.stub_all:
        args.stub_victims = args.stub_cycle = True
    if args.stub_cycle and (args.no_items or args.tables_ab or args.combine):
        ap.error("--stub-cycle goes with an itemized run (no --no-items, --tables-ab, "
                 "--combine)")
    if args.no_items:
        if not args.workload.endswith("-nobatch"):
            ap.error("--no-items takes a -nobatch workload")
        rec = run_totals(args.workload, args.nodes, args.pods, args.backend,
                         args.stub_kernel)
    elif args.tables_ab:
        rec = tables_ab(args.workload, args.nodes, args.pods)
    elif args.combine:
        from tensorsched.bench.harness import git_commit
        rec = combine(args.combine, args.base_commit, git_commit(), args.note)
        numba = numba_rounds(args.combine)
        if numba:
            rec["numba_no_batch"] = numba
        totals = totals_rounds(args.combine)
        if totals:
            rec["no_items"] = totals
        whole = whole_rounds(args.combine)
        if whole:
            rec["whole_attempts"] = whole
    else:
        rec = run(args.workload, args.nodes, args.pods, args.stub_victims, args.stub_cycle,
                  args.stub_all, not args.no_item_wrappers)
    text = json.dumps(rec, indent=1)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
