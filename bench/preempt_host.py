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
to show the CPU path is not slower.

Before/after: this file run as a script by the base tree's interpreter
(``base-WORKLOAD-ROUND.json``) and by this tree's (``after-...``), each
run its own process, then ``--combine``.
"""

from __future__ import annotations

import os
import re

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import argparse      # noqa: E402
import importlib     # noqa: E402
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
    ("> run_cycle > InterPodAffinity.filter",
     "tensorsched.framework.plugins.inter_pod_affinity", "InterPodAffinity.filter"),
    ("> preempt", "tensorsched.framework.preemption.evaluator", "preempt"),
    ("> preempt > _codes_by_row", "tensorsched.framework.preemption.evaluator", "_codes_by_row"),
    ("> preempt > _codes_by_row > status_codes", "tensorsched.framework.preemption.evaluator",
     "status_codes"),
    ("> preempt > _candidates", "tensorsched.framework.preemption.evaluator", "_candidates"),
    ("> preempt > PodTable.sync", "tensorsched.framework.preemption.evaluator",
     "PodTable.sync"),
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


def run(workload: str, nodes: int, pods: int) -> dict:
    """The record of one itemized run (see the module doc)."""
    clock = _Clock()
    totals: dict = {}
    _patch_kernels(clock)
    from tensorsched.bench.harness import record_stamp
    from tensorsched.framework.scheduler.scheduler import Scheduler
    marks: dict = {}

    def progress(stage):
        if stage in ("warmed up", "warm"):
            marks["go"] = True
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


def numba_rounds(paths: list) -> dict:
    """The numba backend's one-at-a-time cycles beside the base tree's:
    per workload and round the records of ``tensorsched bench --backend
    numba --no-batch`` named ``numba-{base,after}-WORKLOAD-ROUND.json``
    (each its own process, alternated): p50 / p99 latency (wall
    microseconds a pod), the timed run's process CPU seconds, placements."""
    out: dict = {}
    for path in sorted(paths):
        m = re.match(r"numba-(base|after)-(.+)-(\d+)\.json$", os.path.basename(path))
        if not m:
            continue
        with open(path) as f:
            rec = json.load(f)
        w = out.setdefault(m.group(2), {"rounds": {}})
        w["rounds"].setdefault(int(m.group(3)), {})[m.group(1)] = {
            k: rec.get(k) for k in ("nodes", "pods", "p50_us", "p99_us", "cpu_seconds",
                                    "placements_sha256", "commit", "load")}
    for w in out.values():
        rounds = [r for r in w["rounds"].values() if "base" in r and "after" in r]
        w["same_placements"] = all(r["base"]["placements_sha256"] ==
                                   r["after"]["placements_sha256"] for r in rounds)
        for side in ("base", "after"):
            for k in ("p50_us", "cpu_seconds"):
                got = [r[side][k] for r in rounds if r[side][k] is not None]
                w[f"{side}_{k}_median_of_rounds"] = (round(float(np.median(got)), 4)
                                                     if got else None)
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
    args = ap.parse_args(argv)
    if args.tables_ab:
        rec = tables_ab(args.workload, args.nodes, args.pods)
    elif args.combine:
        from tensorsched.bench.harness import git_commit
        rec = combine(args.combine, args.base_commit, git_commit(), args.note)
        numba = numba_rounds(args.combine)
        if numba:
            rec["numba_no_batch"] = numba
    else:
        rec = run(args.workload, args.nodes, args.pods)
    text = json.dumps(rec, indent=1)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
