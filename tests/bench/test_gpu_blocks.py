"""``bench.gpu_blocks``: its record, and ``--learn`` (FGD learning its
typical pods) placing alike on numpy and numba, without blocks."""

from tensorsched.bench import gpu_blocks


def test_learning_record_same_placements_on_numpy_and_numba():
    recs = [gpu_blocks.bench(6, 40, backend=b, learn=True) for b in ("numpy", "numba")]
    for r in recs:
        assert r["learn_typical_pods"] and r["block_pods"] == 0
        assert r["scheduled"] > 0 and r["cpu_seconds"] > 0
    assert recs[0]["digest"] == recs[1]["digest"]
    assert recs[0]["gpu_sha256"] == recs[1]["gpu_sha256"]


def test_given_typical_pods_go_through_blocks_learning_them_does_not():
    given = gpu_blocks.bench(6, 40, backend="numba")
    learnt = gpu_blocks.bench(6, 40, backend="numba", learn=True)
    assert not given["learn_typical_pods"] and given["block_pods"] > 0
    assert given["scheduled"] == learnt["scheduled"]
