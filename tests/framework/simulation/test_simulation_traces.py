"""Trace readers: the generic schema (CSV, Parquet, Arrow) and its errors
naming file, line or row and column; the openb adapter."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tensorsched.generators.clusters import node_dict
from tensorsched.framework.errors import ArgumentError
from tensorsched.framework.parsing.meta import NameRules
from tensorsched.framework.simulation.simulation import Simulation
from tensorsched.framework.simulation.trace import TraceError, read_trace, trace_from_table
from tensorsched.topology.gpu import CsvError
from tensorsched.topology.openb.trace import read_openb_trace

HEAD = "name,namespace,arrival,departure,duration,cpu,memory,labels,annotations,priority\n"


def test_csv_trace_reads_and_sorts(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text(HEAD + "b,,5,,10,500m,1Gi,app=web;tier=fe,,\n"
                 'a,ns1,1,3,,2,2Gi,"{""app"": ""db""}",alibabacloud.com/gpu-milli=500,7\n')
    tr = read_trace(p)
    assert tr.table.column("name").to_pylist() == ["a", "b"]
    assert tr.where(0) == f"{p}:3"
    recs = tr.records(0, 2)
    assert recs[0].key == "ns1/a" and recs[0].requests["cpu"] == 2000 and recs[0].priority == 7
    assert recs[0].obj["metadata"]["annotations"] == {"alibabacloud.com/gpu-milli": "500"}
    assert recs[1].labels == {"app": "web", "tier": "fe"} and recs[1].requests["memory"] == 1 << 30
    assert tr.departure[0] == 3 and tr.duration[1] == 10


@pytest.mark.parametrize("body, expect", [
    ("a,,soon,,,1,1Gi,,,\n", ":2: arrival: must be a number of seconds"),
    ("a,,nan,,,1,1Gi,,,\n", ":2: arrival: must be a number of seconds 0..1e+15, got 'nan'"),
    ("a,,1,inf,,1,1Gi,,,\n", ":2: departure: must be a number of seconds"),
    ("a,,5,4,,1,1Gi,,,\n", ":2: departure: 4 is before the arrival 5"),
    ("a,,5,6,7,1,1Gi,,,\n", ":2: duration: give departure or duration, not both"),
    ("a,,1,,,abc,1Gi,,,\n", ":2: cpu: "),
    ("a,,1,,,1,1Gi,noequals,,\n", ":2: labels: expected key=value"),
    # annotation keys as the API server has them: qualified names (any case)
    ("a,,1,,,1,1Gi,,Example.com/Ok=1,\nb,,2,,,1,1Gi,,bad key=x,\n",
     ':3: annotations: Invalid value: "bad key"'),
    ("a,,1,,,1,1Gi,,,1e99\n", ":2: priority: must be an integer"),
    ("a,,1,,,1,1Gi,,,\na,,2,,,1,1Gi,,,\n", ":3: name: duplicate pod default/a"),
    (",,1,,,1,1Gi,,,\n", ":2: name: required"),
    ("a,,1,,,1\n", ":2: 6 fields; the header has 10"),
])
def test_csv_errors_name_file_line_column(tmp_path, body, expect):
    p = tmp_path / "bad.csv"
    p.write_text(HEAD + body)
    with pytest.raises(TraceError) as e:
        read_trace(p)
    assert str(e.value).startswith(str(p)) and expect in str(e.value)


@pytest.mark.parametrize("annotations, row, words", [
    ([[("ok", "v")], [("a/b/c", "v")]], 1, 'Invalid value: "a/b/c"'),
    ([[("k", "v" * (256 * 1024))], None], 0, "Too long: may not be more than 262144 bytes"),
    ([None, [("k", "é" * (128 * 1024))]], 1, "got 262145"),
])
def test_trace_annotations_are_checked_as_the_api_server_does(tmp_path, annotations, row, words):
    table = pa.table({"name": ["a", "b"], "arrival": [0.0, 1.0], "cpu": [100, 200],
                      "annotations": pa.array(annotations, pa.map_(pa.string(), pa.string()))})
    p = tmp_path / "t.parquet"
    pq.write_table(table, p)
    with pytest.raises(TraceError) as e:
        read_trace(p)
    assert str(e.value).startswith(f"{p}: row {row}: annotations: ") and words in str(e.value)
    sim = Simulation([node_dict("n1")], backend="numpy")
    queued = len(sim.agenda)
    with pytest.raises(TraceError):
        sim.submit(table)
    assert len(sim.agenda) == queued
    sim.step(until=5)                   # a refused trace adds nothing
    assert not sim.cluster.state.pods
    ok = table.set_column(3, "annotations", pa.array(
        [[("Example.com/Owner", "v" * (256 * 1024 - 17))], None],
        pa.map_(pa.string(), pa.string())))
    assert len(trace_from_table(ok)) == 2


def test_header_and_file_errors(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text("name,arrival,colour\na,1,red\n")
    with pytest.raises(TraceError, match=r"h.csv:1: colour: unknown column"):
        read_trace(p)
    p.write_text("name\na\n")
    with pytest.raises(TraceError, match=r"h.csv:1: arrival: missing"):
        read_trace(p)
    p.write_bytes(b"name,arrival\n\xff,1\n")
    with pytest.raises(TraceError, match="not UTF-8"):
        read_trace(p)
    with pytest.raises(TraceError, match="expected a .csv or .parquet"):
        read_trace(tmp_path / "h.txt") if (tmp_path / "h.txt").write_text("x") else None
    with pytest.raises(TraceError, match="no such file"):
        read_trace(tmp_path / "missing.csv")


def test_parquet_and_table_errors(tmp_path):
    good = pa.table({"name": ["a", "b"], "arrival": [0.0, 1.5], "cpu": [100, 200],
                     "annotations": pa.array([[("k", "v")], None], pa.map_(pa.string(),
                                                                           pa.string()))})
    p = tmp_path / "t.parquet"
    pq.write_table(good, p)
    assert len(read_trace(p)) == 2
    for table, expect in [
        (good.set_column(1, "arrival", pa.array([0.0, -1.0])), "row 1: arrival"),
        (good.set_column(1, "arrival", pa.array(["x", "y"])), "arrival: must be a numeric"),
        (good.set_column(2, "cpu", pa.array([100, -5])), "row 1: cpu"),
        (good.append_column("departure", pa.array([None, 1.0])), "row 1: departure"),
        (good.set_column(0, "name", pa.array(["a", "a"])), "row 1: name: duplicate"),
        (good.append_column("template", pa.array([0, 1])), "template: cannot be combined"),
    ]:
        pq.write_table(table, p)
        with pytest.raises(TraceError) as e:
            read_trace(p)
        assert str(e.value).startswith(str(p)) and expect in str(e.value), str(e.value)
    with pytest.raises(TraceError, match="trace table: name: missing"):
        trace_from_table(good.drop(["name"]))


@pytest.mark.parametrize("column, values, expect", [
    ("arrival", [0.0, float("nan")], "row 1: arrival: must be a number of seconds 0..1e+15, got nan"),
    ("arrival", [0.0, float("inf")], "row 1: arrival: must be a number of seconds"),
    ("departure", [float("nan"), None], "row 0: departure: must be a number of seconds"),
    ("duration", [None, float("-inf")], "row 1: duration: must be a number of seconds"),
])
def test_parquet_non_finite_times_are_refused_not_dropped(tmp_path, column, values, expect):
    table = pa.table({"name": ["a", "b"], "arrival": [0.0, 1.0], "cpu": [100, 200]})
    if column == "arrival":
        table = table.set_column(1, "arrival", pa.array(values, pa.float64()))
    else:
        table = table.append_column(column, pa.array(values, pa.float64()))
    p = tmp_path / "nan.parquet"
    pq.write_table(table, p)
    with pytest.raises(TraceError) as e:
        read_trace(p)
    assert str(e.value).startswith(f"{p}: {expect}"), str(e.value)
    # null is "not given": the same table with a null departure reads
    ok = pa.table({"name": ["a"], "arrival": [0.0], "departure": pa.array([None], pa.float64())})
    assert len(trace_from_table(ok)) == 1


_BIG = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "64"}}}]}


@pytest.mark.parametrize("template", [
    _BIG,                                                          # a pod spec
    {"spec": _BIG},                                                # a Pod, kind left out
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"t": "x"}}, "spec": _BIG},
])
def test_json_template_is_a_spec_or_a_pod_read_in_full(template):
    tr = trace_from_table(pa.table({"name": ["a"], "arrival": [0.0],
                                    "template": [json.dumps(template)]}))
    rec = tr.records(0, 1)[0]
    assert rec.requests["cpu"] == 64000
    assert rec.obj["kind"] == "Pod" and rec.obj["spec"]["containers"] == _BIG["containers"]
    # the 64-cpu pod fits on no 8-cpu node
    sim = Simulation([node_dict("n1", cpu="8", memory="32Gi")], backend="numpy")
    sim.submit(tr)
    sim.run()
    assert len(sim.cluster.state.pods) == 0


@pytest.mark.parametrize("template, expect", [
    ({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}},
     "row 0: template: spec.containers[0].resources.requests.cpu: invalid quantity 'lots'"),
    ({"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]},
     "row 0: template: spec.containers[0].resources.requests.cpu: invalid quantity 'lots'"),
    ({"spec": _BIG, "containers": []}, "row 0: template: a pod spec or a Pod, not both"),
    ({"kind": "Node", "spec": _BIG}, "row 0: template: kind: a template must be a Pod"),
    ({"metadata": {"name": "x"}}, "row 0: template: spec: required"),
    ({"spce": _BIG}, "row 0: template: spce: unknown field of a pod spec"),
    (dict(_BIG, nodeSelecter={"a": "b"}), "row 0: template: nodeSelecter: unknown field"),
    ({"spec": dict(_BIG, nodeSelecter={"a": "b"})},
     "row 0: template: spec.nodeSelecter: unknown field"),
])
def test_json_template_errors_alike_in_both_forms(template, expect):
    with pytest.raises(TraceError) as e:
        trace_from_table(pa.table({"name": ["a"], "arrival": [0.0],
                                   "template": [json.dumps(template)]}), source="t.parquet")
    assert str(e.value).startswith(f"t.parquet: {expect}"), str(e.value)


def test_templates_by_id():
    tmpl = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"app": "x"}},
             "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}]}}]
    tr = trace_from_table(pa.table({"name": ["a", "b"], "arrival": [0, 1], "template": [0, 0]}),
                          tmpl)
    assert [r.requests["cpu"] for r in tr.records(0, 2)] == [3000, 3000]
    with pytest.raises(TraceError, match="row 1: template: no template 3"):
        trace_from_table(pa.table({"name": ["a", "b"], "arrival": [0, 1], "template": [0, 3]}),
                         tmpl)


def test_templates_from_an_endless_generator_are_refused_not_listed(tmp_path):
    import itertools

    from tensorsched.framework.arguments import MAX_LISTED_PODS
    path = tmp_path / "t.csv"
    path.write_text("name,arrival,template\na,0,0\n")
    table = pa.table({"name": ["a"], "arrival": [0.0], "template": [0]})
    for read, name in ((lambda t: read_trace(path, t), "read_trace"),
                       (lambda t: trace_from_table(table, t), "trace_from_table")):
        with pytest.raises(ArgumentError, match=f"^{name}: templates: at most "
                           f"{MAX_LISTED_PODS:,} pod specs, got more$"):
            read(itertools.repeat({"spec": {}}))


def test_openb_trace_adapter(tmp_path):
    tr = read_openb_trace("data/openb/csv/openb_pod_list_default.csv")
    assert len(tr) == 8152 and tr.lines
    r = tr.records(0, 1)[0]
    assert r.name == "openb-pod-0000" and r.requests["cpu"] == 12000
    assert r.obj["metadata"]["annotations"]["alibabacloud.com/gpu-milli"] == "1000"
    assert tr.departure[0] == 12537496
    p = tmp_path / "o.csv"
    p.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n"
                 "x,1000,1024,1,500,10,5\n")
    with pytest.raises(CsvError, match=r"o.csv:2: deletion_time: 5 is before creation_time 10"):
        read_openb_trace(p)


def test_trace_arrivals_in_the_past_are_refused():
    sim = Simulation([node_dict("n")], backend="numpy")
    sim.step(until=10)
    from_table = pa.table({"name": ["a"], "arrival": [1.0]})
    with pytest.raises(Exception, match="before the simulation's time"):
        sim.submit(from_table)


# --------------------------------------------------------------------------
# pod names: DNS-1123 subdomains, as a manifest's, checked for every row
# when the trace is read (not as the run reaches the row)


@pytest.mark.parametrize("name, words", [
    ("Web-1", "a lowercase RFC 1123 subdomain"),
    ("web_1", "a lowercase RFC 1123 subdomain"),
    ("web-", "must start and end with an alphanumeric character"),
    ("a" * 254, "must be no more than 253 characters"),
])
def test_csv_trace_names_are_pod_names(tmp_path, name, words):
    p = tmp_path / "names.csv"
    # the bad row, on line 3, arrives last (rows are sorted by arrival):
    # the message names its line
    p.write_text(HEAD + "ok-1,,5,,,1,1Gi,,,\n"
                 f" {name} ,,9,,,1,1Gi,,,\nok.2,,1,,,1,1Gi,,,\n")
    with pytest.raises(TraceError) as e:
        read_trace(p)
    assert (e.value.where, e.value.column) == (f"{p}:3", "name"), str(e.value)
    assert e.value.problem.startswith(f'Invalid value: "{name}": ') and words in e.value.problem


def test_table_trace_names_are_pod_names(tmp_path):
    table = pa.table({"name": ["a", "b.c", "B"], "arrival": [0.0, 1.0, 2.0], "cpu": [100] * 3})
    p = tmp_path / "t.parquet"
    pq.write_table(table, p)
    for read, where in [(lambda: read_trace(p), f"{p}: row 2"),
                        (lambda: trace_from_table(table), "trace table: row 2"),
                        (lambda: trace_from_table(table.set_column(
                            0, "name", pa.array(["a", "b.c", "B"]).dictionary_encode())),
                         "trace table: row 2")]:
        with pytest.raises(TraceError) as e:
            read()
        assert (e.value.where, e.value.column) == (where, "name"), str(e.value)
        assert e.value.problem.startswith('Invalid value: "B": ')


def test_name_rules_off_let_free_trace_names_through(monkeypatch):
    # the golden cases' harness turns the name rules off, as for manifests
    monkeypatch.setattr(NameRules, "enforced", False)
    tr = trace_from_table(pa.table({"name": ["Pod_1"], "arrival": [0.0], "cpu": [100]}))
    assert tr.records(0, 1)[0].name == "Pod_1"


def test_a_trace_with_a_bad_name_leaves_the_simulation_unchanged(tmp_path):
    sim = Simulation([node_dict("n1")], backend="numpy", seed=1)
    sim.submit([{"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "first", "namespace": "default"},
                 "spec": {"containers": [{"name": "c", "image": "x",
                                          "resources": {"requests": {"cpu": "100m"}}}]}}], at=1)
    agenda = list(sim.agenda)
    # the bad row is the last to arrive: refused at submit, not at 50s mid-run
    table = pa.table({"name": ["a", "b", "Bad_Name"], "arrival": [2.0, 3.0, 50.0],
                      "cpu": [100, 100, 100]})
    with pytest.raises(TraceError) as e:
        sim.submit(table)
    assert str(e.value).startswith('trace table: row 2: name: Invalid value: "Bad_Name"')
    p = tmp_path / "bad.csv"
    p.write_text("name,arrival,cpu\na,2,100m\nBad_Name,50,100m\n")
    with pytest.raises(TraceError, match=r"bad.csv:3: name: Invalid value"):
        sim.submit(read_trace(p))
    assert list(sim.agenda) == agenda
    sim.step(until=100)
    assert set(sim.cluster.state.pods) == {"default/first"}
    assert sim.submit(table.set_column(0, "name", pa.array(["a", "b", "bad-name"])),
                      at=100) == 3
    sim.step(until=200)
    assert set(sim.cluster.state.pods) == {"default/first", "default/a", "default/b",
                                           "default/bad-name"}
