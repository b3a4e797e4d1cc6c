"""Victim tables for the victim kernels' tests: per-node pod lists as
``VictimPods``, node columns whose requested / port columns are the sums of
the table's pods, and a random case (columns, query, visiting order,
preemptor priority, table)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from support.kernel_inputs import cols, query

from tensorsched.kernels import layout as L
from tensorsched.kernels.victims import search as V

NOW = V.START_NOW


def pod_table(nodes, n_pdb=1):
    """VictimPods from per node lists of pods: dict(prio, start, cpu, ports, pdb)."""
    n = len(nodes)
    c = max([len(p) for p in nodes] + [0])
    t = V.VictimPods(
        pod_count=np.array([len(p) for p in nodes], np.int64),
        pod_prio=np.zeros((n, c), np.int64), pod_start=np.zeros((n, c), np.int64),
        pod_req=np.zeros((n, c, 4), np.int64), pod_ports=np.zeros((n, c, 1), np.int64),
        pod_pdb=np.zeros((n, c, 1), np.int64), pdb_allowed=np.zeros(max(n_pdb, 1), np.int64))
    for i, pods in enumerate(nodes):
        for s, p in enumerate(pods):
            t.pod_prio[i, s] = p.get("prio", 0)
            t.pod_start[i, s] = p.get("start", NOW)
            t.pod_req[i, s] = [p.get("cpu", 0), p.get("mem", 0), 0, 1]
            t.pod_ports[i, s, 0] = p.get("ports", 0)
            t.pod_pdb[i, s, 0] = p.get("pdb", 0)
    return t


def node_cols(pods: V.VictimPods, alloc, **kw):
    """Columns whose requested / port columns are the sums of the table's pods."""
    n = pods.pod_count.shape[0]
    req = np.zeros((n, 4), np.int64)
    ports = np.zeros((n, 1), np.int64)
    for i in range(n):
        for s in range(pods.pod_count[i]):
            req[i] += pods.pod_req[i, s]
            ports[i, 0] |= pods.pod_ports[i, s, 0]
    return cols(n, alloc=alloc, req=req, ports=ports, **kw)


POD = st.fixed_dictionaries({
    "prio": st.sampled_from([-1, 0, 2, 5]), "start": st.sampled_from([0, 1, 2, NOW]),
    "cpu": st.sampled_from([0, 500, 1000]), "mem": st.sampled_from([0, 100]),
    "ports": st.integers(0, 3), "pdb": st.integers(0, 3)})


@st.composite
def victim_case(draw, max_nodes=5, alike=False):
    """``alike``: some nodes also hold a run of identical pods (the alike
    tails ``on_counts`` searches in O(victims))."""
    n = draw(st.integers(1, max_nodes))
    nodes = [draw(st.lists(POD, max_size=4)) for _ in range(n)]
    if alike:
        for pods in nodes:
            if draw(st.booleans()):
                one = draw(POD)
                if draw(st.booleans()):
                    one = dict(one, ports=0, pdb=0)
                pods.extend(dict(one, start=draw(st.sampled_from([0, 1, 2, NOW])))
                            for _ in range(draw(st.integers(1, 5))))
    pods = pod_table(nodes, n_pdb=2)
    pods.pdb_allowed[:] = draw(st.lists(st.integers(0, 2), min_size=2, max_size=2))
    alloc = [[draw(st.sampled_from([1000, 2000, 4000])), draw(st.sampled_from([100, 1000])),
              0, draw(st.sampled_from([2, 3, 110]))] for _ in range(n)]
    c = node_cols(pods, alloc, taints=[[draw(st.integers(0, 1))] for _ in range(n)],
                  unsched=[draw(st.integers(0, 4)) == 0 for _ in range(n)])
    flags = L.F_FIT | draw(st.sampled_from([0, L.F_PORTS, L.F_TAINT | L.F_UNSCHEDULABLE,
                                            L.F_PORTS | L.F_TAINT | L.F_UNSCHEDULABLE]))
    q = query(filter_flags=flags, request=[draw(st.sampled_from([500, 1000, 2000])),
                                           draw(st.sampled_from([0, 50])), 0, 0],
              taint_reject=[draw(st.integers(0, 1))], port_conflicts=[draw(st.integers(0, 3))])
    rows = draw(st.permutations(list(range(n))))
    prio = draw(st.sampled_from([1, 3]))
    return c, q, rows, prio, pods


