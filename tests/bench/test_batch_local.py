"""The node-local parts of the batched device check at a few nodes on
numba: their inputs carry what they say (InterPodAffinity's static
columns, several configurations and seeds, several templates), a run's
answers compare equal to themselves and differ from another input's."""

import numpy as np

from tensorsched.bench import batch_local as BL


def test_the_probe_part_filters_by_affinity_and_places_every_pod():
    batch, sizes = BL.probe_inputs(12, 3, 6)
    assert sizes["ipa_filtered_nodes"] == 2 and sizes["attempts"] == 18
    got, metrics = BL.run_probe("numba", batch)
    again, _ = BL.run_probe("numba", batch)
    assert BL.same_probe(got, again) and metrics["bound"] == 18
    rows, _bound = got
    assert rows.shape == (18,) and (rows >= 0).all()
    other, _ = BL.run_probe("numba", BL.probe_inputs(12, 3, 6, seed=1)[0])
    assert not BL.same_probe(got, other)


def test_the_trace_part_runs_both_clusters_every_config_and_seed():
    groups, sizes = BL.trace_inputs(4, 6, 2)
    assert sizes["runs"] == 2 * 3 * 2 and len(groups) == 2
    aff = groups[1][0][0].prober
    # the guard's required anti-affinity to web pods on its node
    assert (aff.base["static_bits"] != 0).any()
    runs, metrics = BL.run_trace("numba", groups)
    assert len(runs) == 12 and metrics["scheduled"] == 72
    assert BL.same_trace(runs, BL.run_trace("numba", groups)[0])
    assert not BL.same_trace(runs, runs[1:] + runs[:1])


def test_the_fit_part_fills_then_asks_for_more_than_fits():
    inputs, sizes = BL.fit_inputs(3)
    assert len(sizes["templates"]) == 3
    docs, metrics = BL.run_fit("numba", inputs)
    fill, rep = docs
    assert "backend" not in fill["spec"] and fill["status"]["total"] == metrics["fill_total"]
    counts = [t["count"] for t in fill["status"]["templates"]]
    assert metrics["replicas"] == [counts[0], counts[1], counts[2] + 5]
    assert rep["status"]["fits"] is False and np.sum(counts) > 0
