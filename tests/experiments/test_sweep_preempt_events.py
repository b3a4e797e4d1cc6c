"""DefaultPreemption together with a scenario's node and pod steps inside
the batched node-local trace kernel (``kernels/batch/_local_preempt_events.py``,
``experiments/sweep_preempt.py``'s event arrays and row): on small random
clusters with priorities, PodDisruptionBudgets and low-priority bound pods,
under cordon, uncordon, drain, addNodes, Node creates, removeNodes and
Node deletes and Pod creates / deletes, every batched row equals the row
of the job's own Simulation (``batch=False``) but ``wall_seconds``;
targeted cases: a nominated node deleted or cordoned before its preemptor
binds, a drain evicting a node whose bound pods were victims' neighbours,
a pod the usage-independent filters reject everywhere while others
preempt; what stays refused is refused by name."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorsched as ts
from tensorsched.experiments import simulate_run as run
from tensorsched.experiments import sweep as S
from tensorsched.experiments import sweep_local as SL
from tensorsched.framework.capacity.batch_probe import BatchProfileError
from tensorsched.generators.clusters import node_dict, pod_dict

from support.local_scenarios import scenario_steps
from support.preempt_inputs import write_inputs

DAEMON = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u1",
           "controller": True}]


def _rows(jobs, batch: bool):
    jobs = [dataclasses.replace(j, batch=batch) for j in jobs]
    return S.run_sweep(jobs, workers=1).drop(["wall_seconds"]).to_pylist()


def _batched(jobs) -> tuple[list, list]:
    inputs = S.load_inputs(jobs)
    got: dict = {}
    rest = SL.batched_local(jobs, inputs, 1, lambda i, row, e: got.__setitem__(i, row))
    rows = [got.get(i) for i in range(len(jobs))]
    for r in rows:
        if r is not None:
            r.pop("wall_seconds")
    return rows, rest


def _pod_steps(rng, node_steps: list, cluster: str, n_pods: int) -> list:
    """Pod creates of priorities 0, 10, 1000 (some a DaemonSet's, some
    leaving a ``duration`` after binding) and deletes of pods no preemption
    can remove first (created ones of priority 1000, bound ones of 5000),
    where the Simulation finds them then."""
    objs = list(yaml.safe_load_all(open(cluster)))
    bound = {o["metadata"]["name"]: o["spec"]["nodeName"] for o in objs
             if o.get("kind") == "Pod" and o["spec"].get("nodeName")
             and o["spec"].get("priority", 0) >= 5000}
    times = sorted({int(s["at"]) for s in node_steps} | {0, 1, 40})

    def leaves(s):
        for k in ("drain", "removeNodes"):
            if k in s:
                return [s[k]] if k == "drain" else list(s[k])
        return [s["delete"]["name"]] if "delete" in s else []

    gone = [(int(s["at"]), leaves(s)) for s in node_steps if leaves(s)]
    steps, alive = [], {}
    for k in range(n_pods):
        t = int(rng.choice(times)) + int(rng.choice([0, 1, 30]))
        prio = int(rng.choice([0, 10, 1000]))
        pod = pod_dict(f"s{k}", cpu=str(rng.choice(["300m", "1", "2"])), memory="512Mi",
                       priority=prio)
        if rng.random() < 0.25:
            pod["metadata"]["ownerReferences"] = DAEMON
        step = {"at": t, "create": pod}
        if rng.random() < 0.3:
            step["duration"] = int(rng.choice([5, 100]))
        elif prio == 1000:
            alive[f"s{k}"] = t
        steps.append(step)
    for _ in range(int(rng.integers(0, 3))):
        t = int(rng.choice(times)) + int(rng.choice([1, 3, 60]))
        cands = [n for n, t0 in alive.items() if t0 < t and not any(t0 < g < t for g, _ in gone)]
        cands += [n for n, node in bound.items()
                  if not any(g < t and node in names for g, names in gone)]
        if cands:
            name = str(rng.choice(sorted(cands)))
            alive.pop(name, None)
            bound.pop(name, None)
            steps.append({"at": t, "delete": {"kind": "Pod", "name": name}})
    return steps


def _jobs(tmp_path, seed, n_nodes, n_pods, n_bound, n_steps, n_created, interval=60.0,
          configs=None):
    cluster, trace, cfgs = write_inputs(tmp_path, seed, n_nodes, n_pods, n_bound)
    rng = np.random.default_rng(seed + 7919)
    steps = scenario_steps(rng, n_nodes, n_steps)
    steps += _pod_steps(rng, steps, cluster, n_created)
    sc = tmp_path / f"scenario{seed}.yaml"
    sc.write_text(yaml.safe_dump({"steps": steps}))
    return S.make_jobs([trace], [0, 1 + seed % 7], configs=cfgs[:configs], cluster=cluster,
                       scenario=str(sc), interval=interval)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), n_nodes=st.integers(1, 4), n_pods=st.integers(1, 25),
       n_bound=st.integers(0, 3), n_steps=st.integers(1, 5), n_created=st.integers(0, 3),
       interval=st.sampled_from([7.0, 60.0]))
def test_preempting_rows_with_node_events_equal_each_simulation(tmp_path, seed, n_nodes, n_pods,
                                                               n_bound, n_steps, n_created,
                                                               interval):
    jobs = _jobs(tmp_path, seed, n_nodes, n_pods, n_bound, n_steps, n_created, interval)
    got, rest = _batched(jobs)
    want = _rows(jobs, False)
    # a job whose samples the agenda does not cover goes the per-run way
    assert len(rest) < len(jobs)
    for i, (g, w) in enumerate(zip(got, want)):
        if i not in rest:
            assert g == w


def test_random_inputs_preempt_and_meet_node_events(tmp_path):
    # the inputs above do both (the equality is not vacuous): preemptions,
    # evictions and deletions in the same runs
    totals = {"preemptions": 0, "evicted": 0, "deleted": 0, "both": 0}
    for seed in range(6):
        jobs = _jobs(tmp_path, seed, 3, 25, 2, 5, 2, configs=1)
        got, rest = _batched(jobs)
        assert rest == []
        for g in got:
            for k in ("preemptions", "evicted", "deleted"):
                totals[k] += g[k]
            totals["both"] += bool(g["preemptions"] and (g["evicted"] or g["deleted"]))
    assert all(v > 0 for v in totals.values()), totals
