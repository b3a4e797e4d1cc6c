"""The nominated pods of the batched openb engine's DefaultPreemption
(``_gpu_preempt``'s list in the nominator's order, kept by ``nom_add`` /
``nom_delete``, walked by ``nominees_on`` and ``nominate_to``):

- the compiled steps against a model of the nominator's rule (nodes in
  the order of their first current nomination, a node's pods in
  nomination order; a nomination ends the lower ones on its node; pods
  bound or deleted since forgotten at the next cycle; a node's deletion
  ends its nominations): random sequences of those operations, each
  cycle's overlay (``nominees_on``'s pods, in order) the model's;
- whole runs with many nominations -- bursts of high-priority preemptors
  of several tiers on few nodes, nominations replaced by higher ones,
  nominated pods binding elsewhere when a pod leaves, deleted while
  pending, victims terminating under a grace -- equal to their
  ``Simulation`` bit for bit (``test_batch_preempt.assert_simulation``),
  and the drawn runs do exercise those cases in the Simulation's
  nominator."""
import numpy as np
import test_batch_preempt
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from test_batch_preempt import assert_simulation, simulate, workload

from tensorsched.kernels.batch import _gpu_preempt as gp
from tensorsched.kernels.gpu.share import POLICIES
from tensorsched.topology.gpu import build_inventory
from tensorsched.topology.openb import batch as B

P_PENDING = 0           # any status but _queue's bound and gone


def _steps():
    from tensorsched.kernels.batch import cpu
    return cpu.preempt_ns


class NominatorModel:
    """The nominator's rule as the engine had it before the list: each
    node's first current nomination numbered, each nomination numbered;
    the overlay sorted by (node's number, pod's number)."""

    def __init__(self):
        self.node_of, self.seq, self.since, self.count, self.next = {}, {}, {}, {}, 0

    def delete(self, k):
        i = self.node_of.pop(k, None)
        if i is not None:
            self.count[i] -= 1

    def add(self, k, i):
        self.delete(k)
        if self.count.get(i, 0) == 0:
            self.since[i] = self.next
            self.next += 1
        self.count[i] = self.count.get(i, 0) + 1
        self.seq[k] = self.next
        self.next += 1
        self.node_of[k] = i

    def nominate_to(self, j, target, prio):
        for k in sorted(self.node_of):
            if self.node_of[k] == target and k != j and prio[k] < prio[j]:
                self.delete(k)
        self.add(j, target)

    def order(self):
        """Every nominated pod in the nominator's order."""
        return sorted(self.node_of, key=lambda k: (self.since[self.node_of[k]], self.seq[k]))

    def overlay(self, j, prio, pst):
        for k in sorted(self.node_of):
            if pst[k] in (gp.P_BOUND, gp.P_GONE):
                self.delete(k)
        return [k for k in self.order() if k != j and prio[k] >= prio[j]]


@st.composite
def nomination_ops(draw):
    p = draw(st.integers(2, 24))
    n = draw(st.integers(1, 5))
    prio = draw(st.lists(st.sampled_from([0, 5, 10, 10, 50, 100]), min_size=p, max_size=p))
    pod, node = st.integers(0, p - 1), st.integers(0, n - 1)
    # (mostly nominations and cycles: many outstanding at once)
    kinds = st.sampled_from(["add"] * 3 + ["nominate"] * 3 + ["cycle"] * 3
                            + ["delete", "gone", "bound", "drop_node"])
    ops = draw(st.lists(st.tuples(kinds, pod, node), min_size=1, max_size=60))
    return p, n, np.array(prio, np.int64), ops


@settings(max_examples=60, deadline=None)
@given(case=nomination_ops())
def test_the_nominated_list_keeps_the_nominators_order(case):
    p, n, prio, ops = case
    f = _steps()
    pw = np.empty((p, gp.PW_N), np.int64)
    nw = np.empty((n, gp.NW_N), np.int64)
    ps = np.empty(gp.PS_N, np.int64)
    victim = np.empty(p, np.int64)
    f["preempt_init"](pw, nw, ps, victim)
    pst = np.full(p, P_PENDING, np.int64)
    model = NominatorModel()
    # a cluster the overlay can count pods on: pods of no request, no GPUs
    zeros = np.zeros(1, np.int64)
    cls = np.zeros(p, np.int64)
    state = (np.zeros(n, np.int64), np.zeros((n, 16), np.int64), np.zeros(n, np.int64),
             np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros((n, 18), np.int64),
             np.zeros(n, np.int64), np.zeros(1, np.int64), np.zeros(16, np.int64))
    for op in ops:
        what = op[0]
        if what == "add":
            f["nom_add"](op[1], op[2], pw, nw, ps)
            model.add(op[1], op[2])
        elif what == "nominate":
            f["nominate_to"](op[1], op[2], prio, pw, nw, ps)
            model.nominate_to(op[1], op[2], prio)
        elif what == "delete":
            f["nom_delete"](op[1], pw, nw, ps)
            model.delete(op[1])
        elif what in ("gone", "bound"):
            # (a pod bound or deleted stays so: its nomination forgotten later)
            pst[op[1]] = gp.P_GONE if what == "gone" else gp.P_BOUND
        elif what == "drop_node":
            # the node events' engine: a deleted node's nominations end, in pod order
            for k in range(p):
                if pw[k, gp.W_NOM] == op[2]:
                    f["nom_delete"](k, pw, nw, ps)
            for k in [k for k, i in model.node_of.items() if i == op[2]]:
                model.delete(k)
        else:
            j = op[1]
            if pst[j] != P_PENDING:
                continue
            want = model.overlay(j, prio, pst)
            na = f["nominees_on"](j, prio, pst, cls, zeros, zeros, zeros, zeros, *state[:5],
                                  state[5], state[6], state[7], state[8], pw, nw, ps)
            assert pw[:na, gp.W_ADDED].tolist() == want
            f["nominees_off"](cls, zeros, zeros, zeros, zeros, state[1], state[2], state[3],
                              state[4], state[5], state[6], state[7], pw, ps)
        walk, k = [], ps[gp.S_NHEAD]
        while k >= 0:
            walk.append(int(k))
            k = f["link_next"](k, pw)
        assert walk == model.order()
        assert ps[gp.S_NNOM] == len(model.node_of)
        assert [pw[k, gp.W_NOM] for k in range(p)] == [model.node_of.get(k, -1)
                                                       for k in range(p)]
        for i in range(n):
            assert nw[i, gp.N_CNT] == model.count.get(i, 0)


@st.composite
def nominating_clusters(draw):
    """Few nodes of 1 or 2 whole GPUs filled by low-priority pods, then a
    burst of GPU preemptors of four tiers arriving close together (often
    rising: later tiers replace earlier nominations), some deleted soon after they come
    (often while nominated), some fillers leaving (room elsewhere: a
    nominated pod may bind there)."""
    n = draw(st.integers(1, 4))
    counts = draw(st.lists(st.sampled_from([1, 2]), min_size=n, max_size=n))
    inv = build_inventory([f"node-{i}" for i in range(n)], [32000] * n, [65536] * n, counts,
                          ["T4"] * n)
    fill = sum(counts)
    burst = draw(st.integers(3, 12))
    p = fill + burst
    asks = [(1, 1000)] * fill + draw(st.lists(st.sampled_from([(1, 1000), (1, 1000), (1, 500),
                                                               (2, 1000)]),
                                              min_size=burst, max_size=burst))
    arrival = [0.0] * fill + list(1.0 + np.cumsum(draw(st.lists(
        st.sampled_from([0, 0, 1, 2]), min_size=burst, max_size=burst))).astype(float))
    stay = draw(st.lists(st.sampled_from([None, None, None, 3, 12]), min_size=fill,
                         max_size=fill)) + draw(st.lists(
                             st.sampled_from([None, None, None, 1, 2, 5]), min_size=burst,
                             max_size=burst))
    departure = [np.inf if s is None else a + s for a, s in zip(arrival, stay)]
    tiers = draw(st.lists(st.sampled_from([10, 20, 30, 100]), min_size=burst, max_size=burst))
    prio = [0] * fill + (sorted(tiers) if draw(st.booleans()) else tiers)
    names = [f"pod-{(11 * j) % 37:02d}-{j}" for j in range(p)]
    tw = workload(names, [1000] * p, [1024] * p, asks, arrival, departure, prio)
    return inv, tw


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=nominating_clusters(), seed=st.integers(0, 2**20),
       policies=st.lists(st.sampled_from(POLICIES), min_size=1, max_size=2, unique=True),
       args=st.sampled_from([(10, 100), (0, 1)]), grace=st.sampled_from([0.0, 0.0, 2.0, 6.0]))
def test_runs_with_many_nominations_equal_their_simulations(case, seed, policies, args,
                                                            grace):
    inv, tw = case
    jobs = [(0, 0, pol, seed) for pol in policies]
    got = B.trace_batch([inv], [tw], jobs, workers=1, preempt=[args] * len(jobs),
                        termination_grace_seconds=grace)
    for res in got:
        assert_simulation(res, inv, tw, *args, grace=grace)


class RecordingSimulation(test_batch_preempt.Simulation):
    """The Simulation with its nominator watched: ``seen`` counts the
    nominations, those a higher one replaced, nominated pods bound on
    another node, nominated pods deleted while pending, and the most
    outstanding at once."""

    seen: dict = {}

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        seen = self.seen
        cycle = self.scheduler.cycle
        nom = cycle.nominator
        add, delete, clear = nom.add, nom.delete, cycle._clear_lower_nominations
        ended = {}          # pod -> the node of its nomination that just ended

        def deleted(key):
            if key in nom.node_of:
                ended[key] = nom.node_of[key]
            delete(key)

        def added(pod, node):
            seen["add"] += 1
            add(pod, node)
            ended.pop(pod.key, None)
            seen["most"] = max(seen["most"], len(nom.node_of))

        def cleared(node, prio):
            gone = [p.key for p in nom.nominated_on(node)]
            clear(node, prio)
            for key in gone:
                if ended.pop(key, None) is not None:
                    seen["replaced"] += 1

        def bound(e):
            was = ended.pop(e["pod"], None) or nom.node_of.get(e["pod"])
            if was is not None and was != e["node"]:
                seen["elsewhere"] += 1

        def removed(e):
            if ended.pop(e["pod"], None) is not None or e["pod"] in nom.node_of:
                seen["deleted"] += 1

        nom.add, nom.delete, cycle._clear_lower_nominations = added, deleted, cleared
        self.on("Bound", bound)
        self.on("Deleted", removed)


def test_the_drawn_runs_exercise_the_nominations(monkeypatch):
    """Of 12 draws of the strategy above (derandomized), the Simulation's
    nominator sees nominations in most, four or more outstanding at once,
    nominations replaced by higher ones, nominated pods binding on another
    node and nominated pods deleted while pending."""
    monkeypatch.setattr(test_batch_preempt, "Simulation", RecordingSimulation)
    total = dict.fromkeys(("add", "replaced", "elsewhere", "deleted", "most"), 0)
    nominating = []

    @settings(max_examples=12, deadline=None, derandomize=True, database=None,
              phases=[Phase.generate], suppress_health_check=[HealthCheck.too_slow])
    @given(case=nominating_clusters(), grace=st.sampled_from([0.0, 2.0, 6.0]))
    def draw(case, grace):
        RecordingSimulation.seen = dict.fromkeys(total, 0)
        simulate(*case, "FGD", 1, grace=grace)
        seen = RecordingSimulation.seen
        nominating.append(seen["add"] > 0)
        for k, v in seen.items():
            total[k] = max(total[k], v) if k == "most" else total[k] + v

    draw()
    assert sum(nominating) >= 10, nominating
    assert total["most"] >= 4 and total["replaced"] >= 2, total
    assert total["elsewhere"] >= 2 and total["deleted"] >= 4, total
