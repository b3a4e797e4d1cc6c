"""The Scheduler's stall stop in the node-local trace engines
(``ts.simulate_batch`` on a manifest cluster, ``kernels/batch/_local_trace``
and ``_local_preempt`` over ``_queue.q_next``): pods that never fit keep
retrying each other under ``max_unsched`` below the longest backoff; each
run stops where its Simulation does, with its bindings and attempts."""
import pytest
from support.local_clusters import config

import tensorsched as ts
from tensorsched.experiments import simulate_run as run
from tensorsched.generators.clusters import node_dict


@pytest.mark.timeout(240)           # (a cold compile included; warm: about a second)
@pytest.mark.parametrize("preempt", [False, True])
def test_stalled_manifest_runs_stop_as_the_simulation(tmp_path, preempt):
    objs = [node_dict("n0", cpu="1", memory="4Gi")]
    tr = tmp_path / "t.csv"
    tr.write_text("name,arrival,departure,cpu\n" + "".join(
        f"p{j},{t},{d},1\n" for j, (t, d) in enumerate(
            [(2, ""), (7, ""), (9, 29), (11, ""), (14, ""), (17, 25)])))
    cfg = config(0)
    if not preempt:
        cfg["profiles"][0]["plugins"] = {
            "postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}
    (r,) = ts.simulate_batch(objs, [str(tr)], [cfg], seeds=[0], max_unsched=4.0)
    sim = ts.Simulation(objs, cfg, "numba", 0, pod_max_in_unschedulable_seconds=4.0)
    bound, tries = {}, {}
    sim.scheduler.subscribe("Bound", lambda e: bound.__setitem__(
        e["pod"].split("/", 1)[1], (e["node"], sim.clock.now())))
    for ev in ("Bound", "FailedScheduling"):
        sim.scheduler.subscribe(ev, lambda e: tries.__setitem__(
            e["pod"], tries.get(e["pod"], 0) + 1))
    sim.submit(run.read_trace_file(str(tr)))
    sim.run()
    names = [f"p{j}" for j in range(6)]
    got = {names[j]: (r.node_names[n], float(t))
           for j, (n, t) in enumerate(zip(r.node, r.bind)) if n >= 0}
    assert got == bound == {"p0": ("n0", 2.0)}
    assert r.tries.tolist() == [tries.get(f"default/{k}", 0) for k in names]
    assert sum(r.tries.tolist()) > 6           # they did retry each other
