"""Hostile input on the batched surfaces: ``ts.simulate_batch``'s openb
nodes (a ``GpuInventory`` built by hand), its scenario steps, and the
vector environment's constructor and actions.  Each call either runs or
raises a ``TensorschedError`` naming the argument and field; never a bare
Python error or a number computed from nonsense; an object that refused
an input answers afterwards as one that never saw it."""

from __future__ import annotations

import copy
import dataclasses
import os
import tempfile
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.backends import cuda_available
from support.openb import openb_slice

import tensorsched as ts
from tensorsched.framework.errors import (ArgumentError, BackendError, ManifestError,
                                          TensorschedError)
from tensorsched.framework.parsing.meta import is_label_value
from tensorsched.framework.simulation.scenario import ScenarioError, load_scenario
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.topology.gpu import read_openb_nodes
from tensorsched.topology.openb import batch as B
from tensorsched.topology.openb import replay as R
from tensorsched.topology.openb import trace as T
from tensorsched.topology.openb.vector_env import OpenbVectorEnv

pytestmark = [pytest.mark.filterwarnings("error::RuntimeWarning"), pytest.mark.timeout(600)]
# FUZZ_N=2000 for a longer search than CI's
SETTINGS = dict(max_examples=int(os.environ.get("FUZZ_N", 25)), deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))

NODES, PODS = openb_slice(Path(tempfile.mkdtemp(prefix="fuzz-batch-")), "default", 4, 12,
                          leave_every=2)
INV = read_openb_nodes(NODES)
NAMES = list(INV.names)


def _placements(runs) -> list:
    """Each run's nodes and binding times (NaN: never bound, as -1)."""
    return [(r.node.tolist(), np.nan_to_num(r.bind, nan=-1.0).tolist()) for r in runs]


@pytest.fixture(scope="module")
def base() -> list:
    """The valid inventory's runs (FGD, seed 1).  A fixture, not computed at
    import: every xdist worker imports the module to collect it, and on an
    empty kernel cache each would compile the batched engine (about 100 CPU s)."""
    return _placements(ts.simulate_batch(INV, PODS, ["FGD"], [1], workers=1))

# (field, bad value as a function of the inventory): each a nonsense node list
BAD_FIELDS = {
    "names": [lambda i: i.names[:1] + i.names[:-1], lambda i: [""] + i.names[1:],
              lambda i: [5] + i.names[1:], lambda i: i.names[:-1], lambda i: "abc"],
    "models": [lambda i: [], lambda i: i.models * 2, lambda i: [None]],
    "gpu_count": [lambda i: i.gpu_count + 20, lambda i: -i.gpu_count,
                  lambda i: i.gpu_count.astype(float), lambda i: i.gpu_count.tolist()],
    "model": [lambda i: i.model + 5, lambda i: i.model - 5, lambda i: i.model[:-1]],
    "gpu_left": [lambda i: i.gpu_left * 5, lambda i: -i.gpu_left,
                 lambda i: np.full(i.gpu_left.shape, np.nan),
                 lambda i: np.full((len(i.names), 1), 1000)],
    "gpu_mem": [lambda i: -np.ones_like(i.gpu_mem), lambda i: i.gpu_mem[:, :1]],
    "cpu_left": [lambda i: i.cpu_left - 10**9, lambda i: i.cpu_cap + 1,
                 lambda i: i.cpu_left * 1.0],
    "mem_cap": [lambda i: i.mem_cap * 0, lambda i: np.full(len(i.names), np.nan)],
}


@settings(**SETTINGS)
@given(field=st.sampled_from(sorted(BAD_FIELDS)), k=st.integers(0, 4))
def test_a_nonsense_inventory_is_refused_by_field(base, field, k):
    """A hand-built ``GpuInventory`` whose field is nonsense (duplicate or
    missing names, GPU counts past 16, a model index past ``models``, GPU
    milli past 1000 or NaN, free past capacity, a wrong shape): an
    ``ArgumentError`` naming ``nodes[0].<field>`` (the names, when they are
    what is off), and the inventory unchanged: the valid one still gives
    the same runs."""
    inv = INV.copy()
    bad = BAD_FIELDS[field][k % len(BAD_FIELDS[field])]
    setattr(inv, field, bad(inv))
    with pytest.raises(ArgumentError, match=r"^simulate_batch: nodes\[0\]\.(\w+)") as info:
        ts.simulate_batch(inv, PODS, ["FGD"], [1], workers=1)
    named = info.value.argument.split(".")[1].partition("[")[0]
    # the field itself, or one its shape or range no longer agrees with
    assert named == field or named in ("names", "gpu_count", "gpu_left", "gpu_mem", "model",
                                       "cpu_cap", "mem_left"), str(info.value)
    assert _placements(ts.simulate_batch(INV, PODS, ["FGD"], [1], workers=1)) == base


def _workload():
    return B.trace_workload(T.read_openb_trace(PODS))


def _nan_at(a, j=2):
    a = a.astype(np.float64)
    a[j] = np.nan
    return a


# (field of the TraceWorkload or of its pods, bad value as a function of it)
BAD_WORKLOAD = {
    "arrival": [lambda w: _nan_at(w.arrival), lambda w: w.arrival - 1e7,
                lambda w: w.arrival[::-1].copy(), lambda w: w.arrival[:-1],
                lambda w: w.arrival.tolist(), lambda w: w.arrival + np.inf],
    "departure": [lambda w: np.where(np.isfinite(w.departure), w.arrival - 1, np.inf),
                  lambda w: _nan_at(w.departure, 1), lambda w: w.departure[None, :]],
    "duration": [lambda w: np.full(len(w.arrival), -1.0), lambda w: _nan_at(w.duration)],
    "pods.names": [lambda w: w.pods.names[:1] * len(w.pods.names),
                   lambda w: [""] + w.pods.names[1:], lambda w: w.pods.names[:-1]],
    "pods.cpu": [lambda w: -w.pods.cpu, lambda w: w.pods.cpu * 1.0],
    "pods.num": [lambda w: w.pods.num + 20, lambda w: np.where(w.pods.milli < 1000, 2, 1)],
    "pods.milli": [lambda w: w.pods.milli * 7, lambda w: -w.pods.milli],
    "pods.spec": [lambda w: w.pods.spec[:-1], lambda w: [None] * len(w.pods.spec)],
}


@settings(**SETTINGS)
@given(field=st.sampled_from(sorted(BAD_WORKLOAD)), k=st.integers(0, 5))
def test_a_nonsense_trace_workload_is_refused_by_field(field, k):
    """A hand-built ``batch.TraceWorkload`` with NaN, negative, infinite
    or out-of-order arrivals, departures before arrivals, negative
    durations, duplicate or missing pod names, or pods asking for nonsense:
    ``ArgumentError`` naming ``traces[0].<field>`` and the pod (a number
    from it never reaches the kernel); the same call on the vector
    environment names it alike."""
    tw = _workload()
    bad = BAD_WORKLOAD[field][k % len(BAD_WORKLOAD[field])](tw)
    if field.startswith("pods."):
        tw = dataclasses.replace(tw, pods=dataclasses.replace(tw.pods, **{field[5:]: bad}))
    else:
        tw = dataclasses.replace(tw, **{field: bad})
    with pytest.raises(ArgumentError, match=r"^simulate_batch: traces\[0\][.:]") as info:
        ts.simulate_batch(INV, tw, ["FGD"], [1], workers=1)
    assert info.value.argument.startswith(("traces[0].", "traces[0]")), str(info.value)
    if find_spec("gymnasium") is not None:
        with pytest.raises(ArgumentError, match=r"^OpenbVectorEnv: traces\[0\]"):
            OpenbVectorEnv(INV, [tw], [(0, "FGD", 1)])


def test_one_item_or_a_list_takes_ranges_arrays_and_generators():
    """Seeds as a range, a NumPy array or a generator give the runs of the
    same seeds as a list; an empty one of each is refused by name."""
    want = _placements(ts.simulate_batch(NODES, PODS, ["FGD"], [0, 1], workers=1))
    for seeds in (range(2), np.arange(2), (s for s in (0, 1))):
        assert _placements(ts.simulate_batch(NODES, PODS, ["FGD"], seeds, workers=1)) == want
    for name in ("nodes", "traces", "configs", "seeds"):
        kw = dict(nodes=NODES, traces=PODS, configs=["FGD"], seeds=[1])
        kw[name] = (x for x in ())
        with pytest.raises(ArgumentError, match=rf"^simulate_batch: {name}: empty"):
            ts.simulate_batch(**kw, workers=1)


def test_a_huge_range_or_an_endless_generator_of_seeds_is_refused_by_name():
    """Past MAX_SEEDS seeds (the CLI's bound) is refused before any run,
    having read at most the bound + 1: no list of a trillion, no endless
    loop."""
    import itertools
    for seeds, got in ((range(10**12), str(10**12)), (itertools.count(), "more")):
        with pytest.raises(ArgumentError, match=rf"^simulate_batch: seeds: at most "
                           rf"{R.MAX_SEEDS} items, got {got}$"):
            ts.simulate_batch(NODES, PODS, ["FGD"], seeds, workers=1)


NODE = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "extra", "labels": {"alibabacloud.com/gpu-card-model": "P100"}},
        "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110",
                                   "nvidia.com/gpu": "2"}}}
POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "made", "namespace": "default",
                    "annotations": {"alibabacloud.com/gpu-milli": "500",
                                    "alibabacloud.com/gpu-count": "1"}},
       "spec": {"containers": [{"name": "c", "image": "i",
                                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}


@st.composite
def steps(draw):
    """A step on the openb slice's nodes, often naming a node or pod that
    is not there (or not yet, or no longer)."""
    at = draw(st.sampled_from([0, 1, 5, 30, 1e6]))
    node = draw(st.sampled_from(NAMES[:2] + ["extra", "nope"]))
    kind = draw(st.sampled_from(["cordon", "uncordon", "drain", "removeNodes", "deleteNode",
                                 "deletePod", "createNode", "createPod"]))
    if kind == "deleteNode":
        return {"at": at, "delete": {"kind": "Node", "name": node}}
    if kind == "deletePod":
        name = draw(st.sampled_from(["made", "openb-pod-0000", "nope"]))
        return {"at": at, "delete": {"kind": "Pod", "name": name}}
    if kind == "createNode":
        obj = copy.deepcopy(NODE)
        obj["metadata"]["name"] = node
        tie = draw(st.sampled_from([None, "3", "007", "-1", "abc", "99999999999", " 3", "+3",
                                    "1_000", "\u0663"]))
        if tie is not None:
            obj["metadata"]["labels"][T.TIE_LABEL] = tie
        return {"at": at, "create": obj}
    if kind == "createPod":
        return {"at": at, "create": copy.deepcopy(POD)}
    return {"at": at, kind: node}


def _simulation_refusal(sc) -> str | None:
    """What ``ts.Simulation`` says of the scenario (taken before the trace
    is submitted, as the batch's runs are defined), or None."""
    sim = Simulation(T.openb_node_objects(INV), T.openb_config("FGD", None, 0),
                     registry=T.experiment_registry(), interval=None)
    try:
        sim.scenario(copy.deepcopy(sc))
    except ScenarioError as exc:
        return str(exc)
    return None


@settings(**SETTINGS)
@given(st.lists(steps(), min_size=1, max_size=3))
def test_scenario_steps_the_simulation_refuses_are_refused_alike(raw):
    """Random steps naming absent nodes and pods: where ``ts.Simulation``
    refuses the scenario (``check_steps``), ``simulate_batch`` raises the
    same ``ScenarioError`` (bad input, not a kernel limit); else it runs
    or names what its engine does not cover; never a bare error."""
    sc = load_scenario({"steps": raw})
    want = _simulation_refusal({"steps": raw})
    try:
        ts.simulate_batch(NODES, PODS, ["GpuPacking"], [1], workers=1, scenario=sc)
    except ScenarioError as exc:
        # the batch names a bad tie label too (the Simulation only as it scores)
        assert str(exc) == want or T.TIE_LABEL in str(exc), (str(exc), want)
        return
    except TensorschedError as exc:
        assert want is None, (str(exc), want)
        assert str(exc).startswith("scenario: steps[")
        return
    assert want is None


@pytest.mark.skipif(find_spec("gymnasium") is None, reason="the gym extra")
def test_a_refused_action_leaves_the_environments_as_they_were():
    """Actions of the wrong shape or dtype (floats, NaN, bools, strings,
    objects, complex): ``ArgumentError`` naming ``actions``, the engine's
    state untouched; the next valid step gives what an environment that
    never saw them gives.  Integer rows outside 0..N-1 are invalid actions
    (the penalty, the default row), as ``SchedulingEnv``'s."""
    pods = R.read_openb_pods(PODS)
    jobs = [(0, "FGD", 1), (0, "BestFit", 2)]
    bad = [np.array([0.0, 1.0]), np.array([np.nan, 1]), np.array([True, False]),
           np.array(["0", "1"]), [None, 1], np.array([1j, 1]), np.array([0, 1, 2]),
           np.array([[0, 1]]), 3, [[0], [1, 2]]]
    env, ref = (OpenbVectorEnv(INV, [pods], jobs) for _ in range(2))
    obs, info = env.reset()
    ref.reset()
    for a in bad:
        before = (env.engine.ist.copy(), env.engine.fst.copy(), env._steps.copy())
        with pytest.raises(ArgumentError, match=r"^OpenbVectorEnv\.step: actions: "):
            env.step(a)
        for x, y in zip(before, (env.engine.ist, env.engine.fst, env._steps)):
            np.testing.assert_array_equal(x, y)
    for a in (info["default_action"], np.array([-1, 99]), np.array([2**62, 0], np.uint64)):
        got, want = env.step(a), ref.step(a)
        for k in got[0]:
            np.testing.assert_array_equal(got[0][k], want[0][k])
        np.testing.assert_array_equal(got[1], want[1])
    assert (want[4]["invalid_action"]).all()      # the last two: outside the rows


@pytest.mark.skipif(find_spec("gymnasium") is None, reason="the gym extra")
@settings(**SETTINGS)
@given(name=st.sampled_from(["nodes", "traces", "jobs", "tune", "invalid_action_penalty",
                             "max_steps", "threads", "backend", "device_arrays",
                             "max_unsched"]),
       value=st.sampled_from(["x", "", -1, 0, 1.5, float("nan"), float("inf"), True, None, [],
                              [(0, "FGD")], [(3, "FGD", 1)], [(0, "Nope", 1)],
                              [(0, "FGD", -1)], {"k": 1}, object()]))
def test_vector_environment_arguments_are_refused_by_name(name, value):
    kw = dict(nodes=INV, traces=[R.read_openb_pods(PODS)], jobs=[(0, "FGD", 1)], tune=1.3,
              invalid_action_penalty=1.0, max_steps=None, threads=None, backend="numba",
              device_arrays=False, max_unsched=300.0)
    kw[name] = value
    try:
        env = OpenbVectorEnv(**kw)
    except ArgumentError as exc:
        assert exc.argument.partition("[")[0] == name, str(exc)
        return
    except TensorschedError:
        return
    env.reset()
    env.step(np.zeros(env.num_envs, np.int64))


GENERIC = ["name,arrival,departure,duration,cpu,memory,annotations,priority"] + [
    f'g{j},{3 * j},{"" if j % 3 else 3 * j + 50},{60 if j % 3 == 1 else ""},1000m,2048Mi,'
    f'"alibabacloud.com/gpu-milli={250 * (1 + j % 4)};alibabacloud.com/gpu-count=1",{j % 2}'
    for j in range(8)]
OPENB = Path(PODS).read_text().splitlines()
NODE_LINES = Path(NODES).read_text().splitlines()
CELLS = ["abc", "", "-1", "-500", "1e30", "nan", "inf", "-inf", "99999999999999999999", "0",
         "3.5", "2000", "1e-300", "0x10", "１", '"a=b;c"', "{}"]


@st.composite
def mutated_csv(draw, lines):
    """``lines`` (a CSV with its header) with one to three changes: a cell
    replaced by a bad number or text, a column dropped, the rows cut, a
    row repeated or bytes that are not UTF-8; as bytes."""
    rows = [r.split(",") for r in lines]
    for _ in range(draw(st.integers(1, 3))):
        action = draw(st.sampled_from(("cell", "cell", "cell", "drop_col", "drop_rows", "dup",
                                       "bytes")))
        if action in ("cell", "dup", "bytes") and len(rows) < 2:
            action = "drop_col"
        if action == "cell":
            i = draw(st.integers(1, len(rows) - 1))
            j = draw(st.integers(0, len(rows[i]) - 1))
            rows[i][j] = draw(st.sampled_from(CELLS))
        elif action == "drop_col" and rows[0]:
            j = draw(st.integers(0, len(rows[0]) - 1))
            rows = [r[:j] + r[j + 1:] for r in rows]
        elif action == "drop_rows":
            rows = rows[:draw(st.integers(1, 3))]
        elif action == "dup":
            rows.append(list(rows[draw(st.integers(1, len(rows) - 1))]))
        elif action == "bytes":
            i = draw(st.integers(1, len(rows) - 1))
            rows[i][0] += "\udcff"
    return ("\n".join(",".join(r) for r in rows) + "\n").encode("utf-8", "surrogateescape")


@settings(**SETTINGS)
@given(pods=st.one_of(mutated_csv(OPENB), mutated_csv(GENERIC)),
       nodes=st.one_of(st.none(), mutated_csv(NODE_LINES)),
       scenario=st.booleans())
def test_mutated_csvs_run_or_are_refused_by_file_line_and_column(tmp_path_factory, pods,
                                                                 nodes, scenario):
    """Node and trace CSVs (openb's and the generic trace's: departures,
    durations, priorities, annotations) with bad numbers, missing columns,
    negative or non-finite times, repeated rows and bytes that are not
    UTF-8, with and without a scenario: each call runs or raises a
    ``TensorschedError`` whose message names the file; never a bare error
    or a NumPy warning (``filterwarnings``)."""
    tmp = tmp_path_factory.mktemp("csv")
    (tmp / "pods.csv").write_bytes(pods)
    node_path = NODES
    if nodes is not None:
        (tmp / "nodes.csv").write_bytes(nodes)
        node_path = str(tmp / "nodes.csv")
    sc = {"steps": [{"at": 4, "cordon": "openb-node-0000"}]} if scenario else None
    try:
        runs = ts.simulate_batch(node_path, str(tmp / "pods.csv"), ["FGD", "Random"], [1],
                                 workers=1, scenario=sc)
    except ArgumentError:
        raise                   # every argument here is of the right form
    except TensorschedError as exc:
        assert str(tmp) in str(exc) or "scenario" in str(exc), str(exc)
        return
    for r in runs:              # no number from nonsense: times finite or NaN (never bound)
        assert not np.isinf(r.bind).any() and (r.node >= -1).all()


EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples"
BOGUS = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
         "profiles": [{"plugins": {"score": {"enabled": [{"name": "Nope", "weight": 1}]}}}]}


@pytest.mark.parametrize("manifests", [False, True])
@pytest.mark.parametrize("config, match", [
    ("NAME", None),
    (BOGUS, r"^configs\[1\]: profiles\[0\]\.plugins\.score\.enabled\[0\]\.name: unknown "
            r"plugin 'Nope'"),
    (str(EXAMPLES / "cluster.yaml"), r"cluster\.yaml: apiVersion"),
    ("/no/such.yaml", r"configs\[1\]: .*/no/such\.yaml"),
    (5, r"configs\[1\]"),
])
def test_a_bad_config_is_named_by_its_index_or_file(manifests, config, match):
    """A config that is not one (an unknown plugin in a dict, a manifest
    file, a missing path, a number; on a manifest cluster a policy name):
    the error names ``configs[i]`` or the file, before any run (it named
    neither, or was a bare ``DocumentError``)."""
    if manifests:
        kw = dict(nodes=str(EXAMPLES / "cluster.yaml"), traces=str(EXAMPLES / "trace.csv"))
        first = None
    else:
        kw = dict(nodes=NODES, traces=PODS)
        first = "FGD"
    if config == "NAME":
        if not manifests:
            return                      # a policy name is an openb config
        config, match = "FGD", r"configs\[1\]: 'FGD' is not a file.*policy names go with openb"
    with pytest.raises(TensorschedError, match=match):
        ts.simulate_batch(**kw, configs=[first, config], seeds=[1], workers=1)


@pytest.mark.skipif(find_spec("gymnasium") is None, reason="the gym extra")
def test_a_refused_reset_changes_nothing():
    """``reset`` with a bad seed, options that are no mapping or a
    reset_mask of the wrong dtype, shape or values, and ``placements`` of
    an environment that is not there: ``ArgumentError``; the environments
    (and their generator) step on as one that never saw them."""
    pods = R.read_openb_pods(PODS)
    jobs = [(0, "FGD", 1), (0, "GpuPacking", 2)]
    env, ref = (OpenbVectorEnv(INV, [pods], jobs) for _ in range(2))
    _, info = env.reset(seed=5)
    ref.reset(seed=5)
    env.step(info["default_action"])
    ref.step(info["default_action"])
    for kw in ({"seed": -1}, {"seed": 1.5}, {"seed": "x"}, {"options": "reset_mask"},
               {"options": {"reset_mask": [1, 0, 1]}}, {"options": {"reset_mask": [0.5, 1]}},
               {"options": {"reset_mask": [2, 0]}}, {"options": {"reset_mask": ["a", "b"]}}):
        with pytest.raises(ArgumentError, match=r"^OpenbVectorEnv\.reset: (seed|options)"):
            env.reset(**kw)
    for bad in (-1, 2, 1.0, None):
        with pytest.raises(ArgumentError, match=r"^OpenbVectorEnv\.placements: env"):
            env.placements(bad)
    assert env.np_random.integers(1 << 30) == ref.np_random.integers(1 << 30)
    got, want = env.step(info["default_action"]), ref.step(info["default_action"])
    for k in got[0]:
        np.testing.assert_array_equal(got[0][k], want[0][k])
    assert env.placements(1) == ref.placements(1)


@pytest.mark.parametrize("label, rank", [
    ("0", 0), ("7", 7), ("007", 7), (str((1 << 24) - 1), (1 << 24) - 1), (str(1 << 24), None),
    ("-1", None), ("-0", None), (" 3", None), ("3 ", None), ("+3", None), ("1_000", None),
    ("\u0663", None), ("3.0", None), ("", None), ("9" * 40, None)])
def test_a_tie_label_is_a_decimal_rank(label, rank):
    """OpenbTieRank's label (``trace.tie_rank``, which the batch checks an
    added node's label with): ASCII decimal digits 0..2^24 - 1; Python's
    ``int`` would also take a sign, spaces, underscores and other
    scripts' digits.  On ``simulate_batch``'s scenario a refused label is
    a ``ScenarioError`` naming the step, the node and the label; under
    GpuShareScore alone it is unread, unless it is no label value at all
    (a sign, a space, another script's digit): the node is refused then."""
    if rank is None:
        with pytest.raises(ManifestError, match=r"Node n: metadata\.labels\["):
            T.tie_rank("n", {T.TIE_LABEL: label})
    else:
        assert T.tie_rank("n", {T.TIE_LABEL: label}) == rank
    node = copy.deepcopy(NODE)
    node["metadata"]["labels"][T.TIE_LABEL] = label
    sc = {"steps": [{"at": 5, "create": node}]}
    if not is_label_value(label):       # no label value: the node itself is refused
        for config in ("FGD", T.openb_config("FGD")):
            with pytest.raises(ScenarioError, match=r"^scenario: steps\[0\]\.create: Node extra: "
                                                    r"metadata\.labels\[.*Invalid value"):
                ts.simulate_batch(NODES, PODS, [config], [1], workers=1, scenario=sc)
        return
    if rank is None:
        with pytest.raises(ScenarioError, match=r"^scenario: steps\[0\]\.create: Node extra: "
                                                r"metadata\.labels\["):
            ts.simulate_batch(NODES, PODS, ["FGD"], [1], workers=1, scenario=sc)
    else:
        ts.simulate_batch(NODES, PODS, ["FGD"], [1], workers=1, scenario=sc)
    ts.simulate_batch(NODES, PODS, [T.openb_config("FGD")], [1], workers=1, scenario=sc)



@pytest.mark.parametrize("scenario", [None, {"steps": [{"at": 1, "cordon": "openb-node-0000"}]}])
def test_cuda_where_it_cannot_run_is_a_backend_error(scenario):
    """``backend='cuda'`` without a device: ``BackendError`` before any work,
    with a scenario too (a bare ``BackendUnavailable`` from the node-event
    engine's import before)."""
    if cuda_available():
        pytest.skip("a CUDA device (or the simulator) is here: cuda runs")
    with pytest.raises(BackendError, match="backend 'cuda' cannot run"):
        ts.simulate_batch(NODES, PODS, ["FGD"], [1], backend="cuda", scenario=scenario)


def test_a_step_one_of_several_clusters_refuses_names_it(tmp_path):
    """Two node lists, a step naming a node only the first has: the
    ``ScenarioError`` names the step and ``nodes[1]``."""
    other = tmp_path / "other.csv"
    other.write_text("sn,cpu_milli,memory_mib,gpu,model\nm0,64000,262144,2,P100\n")
    with pytest.raises(ScenarioError, match=r"^scenario: steps\[0\]\.drain: node "
                                            r"'openb-node-0000' is not in the cluster at 2s "
                                            r"\(on nodes\[1\]\)$"):
        ts.simulate_batch([NODES, str(other)], PODS, ["FGD"], [1], workers=1,
                          scenario={"steps": [{"at": 2, "drain": "openb-node-0000"}]})
