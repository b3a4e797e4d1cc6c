"""A placement cycle ranked on the host (a host plugin runs, e.g.
PodTopologySpread's filter) takes the tie rule's node among the top rows in
one compiled pass (``_core.tied_position``): the backend answers that one
position, not every tied one for the framework to rank in NumPy (thousands
of equal nodes at 10,000), and places every pod as before."""

import numpy as np
import pytest
from cycle_cases import cycles, numba_answer
from hypothesis import given, settings
from support.backends import backend_params

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.framework.runtime.framework import tied_node
from tensorsched.framework.scheduler.cluster import build_cluster
from tensorsched.framework.scheduler.scheduler import Scheduler
from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.kernels.fused import _numba as FN

ZONE = "topology.kubernetes.io/zone"
SPREAD = {"topologySpreadConstraints": [
    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
     "labelSelector": {"matchLabels": {"app": "web"}}}]}


@settings(max_examples=150, deadline=None)
@given(cycles())
def test_tied_position_is_the_tie_rule_among_the_tied_positions(case):
    """``tied_position`` over ``finalize_rows``' tied positions takes the
    position ``ties.pick_tied`` (NumPy) takes among their rows."""
    rows, start, reasons, raw, num_to_find, active, norm, weights, mix, requested = case
    _row, _processed, _found, pos = numba_answer(*case)
    m, s = rows.shape[0], raw.shape[1]
    ties = np.zeros(m, np.int64)
    n_ties, _, _ = FN.finalize_rows(rows, start, reasons, raw, num_to_find, active, norm,
                                    weights, False, np.zeros((m, s), np.int64),
                                    np.zeros(m, np.int64), ties, np.zeros(2 * s, np.int64))
    got = FN.tied_position(ties, n_ties, rows, start, np.uint64(mix), requested)
    assert got == pos


def _nodes(n=60):
    # alike nodes in three zones: every feasible node ties on the scores
    return [node_dict(f"n{i:03d}", cpu="4", labels={ZONE: f"z{i % 3}"}) for i in range(n)]


def _pods(k=12):
    return [pod_dict(f"web-{i:02d}", cpu="250m", created=i, labels={"app": "web"}, spec=SPREAD)
            for i in range(k)]


@pytest.mark.parametrize("backend", backend_params(("numba", "cuda")))
def test_host_ranked_placements_answer_one_tied_position(backend):
    """Through a Scheduler with batching off every spread pod's cycle runs
    the host filter; each placement cycle's answer holds one tied position,
    its node is the one an explain cycle (every tied position, ranked by
    ``framework.tied_node``) selects, and the placements are the numpy
    backend's (which ranks every tie in NumPy)."""
    pods = _pods()
    cluster = build_cluster(_nodes(), None)
    fw = cluster.framework_for(parse_pod(pods[0]), backend)
    real = fw.backend.evaluate
    answers = []
    checks = []

    def evaluate(source, rows, start, q, num_to_find, active, norm, weights, n_slots,
                 extra=None, want_scores=True, seed=None):
        res = real(source, rows, start, q, num_to_find, active, norm, weights, n_slots,
                   extra, want_scores, seed)
        if extra is not None and not want_scores:
            answers.append(len(res.ties))
            # the same cycle, every score wanted: every tied position back
            ties = np.array(res.ties)
            full = real(source, rows, start, q, num_to_find, active, norm, weights, n_slots,
                        extra, True, seed)
            every = full.ties.copy()
            n = rows.shape[0]
            # the state as the cycle reads it (the pods each tied node holds now)
            checks.append((every.shape[0], int(rows[(ties[0] + start) % n]),
                           tied_node(source, 7, rows[(every + start) % n])))
            res = res._replace(ties=ties)
        return res
    fw.backend.evaluate = evaluate
    out = Scheduler(cluster, backend, seed=7, batch=False).schedule_pending(pods)[0]
    placed = [(b.pod, b.node) for b in out]
    assert answers and set(answers) == {1}, answers
    assert all(one == ranked for _n, one, ranked in checks), checks
    assert max(n for n, _one, _ranked in checks) > 1      # ties were there to rank
    ref = build_cluster(_nodes(), None)
    want = [(b.pod, b.node) for b in
            Scheduler(ref, "numpy", seed=7, batch=False).schedule_pending(_pods())[0]]
    assert placed == want
