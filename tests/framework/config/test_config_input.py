"""Configuration input refused cleanly: one ConfigError naming the file (and
the field path), never a traceback or Python's internals."""

from __future__ import annotations

import pytest

from tensorsched.framework.config import plugin_args
from tensorsched.framework.config.kube_config import DEFAULT_PLUGIN_POINTS, load_config
from tensorsched.framework.config.plugin_args import (
    check_qualified_name,
    decode_args,
    default_args,
    register_args_decoder,
)
from tensorsched.framework.errors import ConfigError
from tensorsched.framework.parsing.manifests import MAX_DEPTH

API = "kubescheduler.config.k8s.io/v1"
HEAD = f"apiVersion: {API}\nkind: KubeSchedulerConfiguration\n"
NAME_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', "
             "'_' or '.', and must start and end with an alphanumeric character (e.g. "
             "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
             "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def file_error(path, points=DEFAULT_PLUGIN_POINTS) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(str(path), points)
    return info.value


# --------------------------------------------------------------------------
# reading


@pytest.mark.parametrize("name", ["c.yaml", "c.json"])
def test_not_utf8(tmp_path, name):
    f = tmp_path / name
    f.write_bytes(HEAD.encode() + b"parallelism: \xe9\n")
    e = file_error(f)
    assert (e.source, e.field) == (str(f), "")
    assert str(e) == f"{f}: not UTF-8 text (byte 0xe9 at offset {len(HEAD) + 13} cannot be decoded)"


@pytest.mark.parametrize("text, got", [("- a\n- b\n", "list"), ("just text\n", "str"),
                                       ("42\n", "int")])
def test_not_a_mapping(tmp_path, text, got):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    assert str(file_error(f)) == f"{f}: must hold one object (a mapping), got {got}"


def test_several_documents(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(HEAD + "---\n" + HEAD)
    assert str(file_error(f)) == f"{f}: must hold one object, got 2 documents"


def test_empty_file_is_the_defaults_less_type_meta(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("")
    assert file_error(f).field == "apiVersion"


@pytest.mark.parametrize("text, suffix", [
    ("apiVersion: " + "[" * 100_000 + "]" * 100_000, ".yaml"),
    ('{"apiVersion": ' + "[" * 100_000 + "]" * 100_000 + "}", ".json"),
    ("x:\n" + "- " * 100_000 + "1", ".yaml"),
    ('{"x": ' + "[" * 300 + "]" * 300 + "}", ".json"),
    ("x: &a [*a]\n", ".yaml"),
])
def test_deeply_nested(tmp_path, text, suffix):
    f = tmp_path / f"c{suffix}"
    f.write_text(text)
    assert str(file_error(f)) == f"{f}: nested too deeply (more than {MAX_DEPTH} levels)"


def test_deeply_nested_mapping_source():
    deep: dict = {}
    cur = deep
    for _ in range(100_000):
        cur["a"] = {}
        cur = cur["a"]
    with pytest.raises(ConfigError) as info:
        load_config({"apiVersion": API, "kind": "KubeSchedulerConfiguration", "x": deep})
    assert str(info.value) == f"nested too deeply (more than {MAX_DEPTH} levels)"


def test_duplicate_keys_name_file_field_and_line(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(HEAD + "profiles:\n- schedulerName: a\n  pluginConfig:\n"
                 "  - name: InterPodAffinity\n"
                 "    args: {hardPodAffinityWeight: 1, hardPodAffinityWeight: 2}\n")
    e = file_error(f)
    assert (e.field, e.problem) == ("profiles[0].pluginConfig[0].args.hardPodAffinityWeight",
                                    "duplicate field 'hardPodAffinityWeight' (line 7)")
    assert str(e) == f"{f}: {e.field}: {e.problem}"
    j = tmp_path / "c.json"
    j.write_text('{"apiVersion": "%s", "kind": "KubeSchedulerConfiguration", '
                 '"kind": "KubeSchedulerConfiguration"}' % API)
    e = file_error(j)
    assert (e.field, e.problem) == ("kind", "duplicate field 'kind' (line 1)")


def test_invalid_yaml_and_missing_file(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(HEAD + "profiles: [unclosed\n")
    e = file_error(f)
    assert e.source == str(f) and e.problem.startswith("not valid YAML/JSON: ")
    e = file_error(tmp_path / "nope.yaml")
    assert str(e) == f"{tmp_path / 'nope.yaml'}: cannot read file: No such file or directory"


def test_later_errors_of_a_file_name_it(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(HEAD + "parallelism: 0\n")
    e = file_error(f)
    assert str(e) == f"{f}: parallelism: 0: should be an integer value greater than zero"
    with pytest.raises(ConfigError) as info:       # a mapping: no file to name
        load_config({"apiVersion": API, "kind": "KubeSchedulerConfiguration", "parallelism": 0})
    assert info.value.source is None


# --------------------------------------------------------------------------
# plugin args: field paths, shared validators, out-of-tree decoders


def test_out_of_tree_decoder_failures_become_config_errors(monkeypatch):
    monkeypatch.setattr(plugin_args, "_DECODERS", dict(plugin_args._DECODERS))

    def typical_pods(raw, path):
        if raw is None:
            return []
        return [p.get("cpu") for p in raw.get("typicalPods", [])]   # no type checks

    def picky(raw, path):
        if raw is not None:
            raise ValueError("policy must be one of A, B")
        return None

    register_args_decoder("Typical", typical_pods)
    register_args_decoder("Picky", picky)
    path = "profiles[0].pluginConfig[2].args"
    with pytest.raises(ConfigError) as info:
        decode_args("Typical", {"typicalPods": "abc"}, path)
    assert info.value.field == path
    assert info.value.problem == ("invalid Typical args: not what the plugin expects "
                                  "(its decoder failed with AttributeError)")
    assert "attribute" not in str(info.value)
    with pytest.raises(ConfigError) as info:
        decode_args("Typical", "abc", path)
    assert (info.value.field, "str" in info.value.problem) == (path, False)
    with pytest.raises(ConfigError) as info:
        decode_args("Picky", {}, path)
    assert str(info.value) == f"{path}: invalid Picky args: policy must be one of A, B"
    assert default_args("Typical") == []
    # through a configuration
    points = {**DEFAULT_PLUGIN_POINTS, "Typical": frozenset({"score"})}
    with pytest.raises(ConfigError) as info:
        load_config({"apiVersion": API, "kind": "KubeSchedulerConfiguration", "profiles": [{
            "pluginConfig": [{"name": "Typical", "args": {"typicalPods": [1]}}]}]}, points)
    assert info.value.field == "profiles[0].pluginConfig[0].args"


def test_added_affinity_uses_upstream_label_messages():
    base = "profiles[0].pluginConfig[0].args"

    def added(expr):
        return {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [expr]}]}}}

    term = f"{base}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution." \
           "nodeSelectorTerms[0].matchExpressions[0]"
    with pytest.raises(ConfigError) as info:
        decode_args("NodeAffinity", added({"key": "bad key", "operator": "Exists"}), base)
    assert (info.value.field, info.value.problem) == (f"{term}.key",
                                                      f'Invalid value: "bad key": {NAME_MSG}')
    with pytest.raises(ConfigError) as info:
        decode_args("NodeAffinity", added({"key": "zone", "operator": "In",
                                           "values": ["{{.bad-value.}}"]}), base)
    assert (info.value.field, info.value.problem) == (
        f"{term}.values[0]", f'Invalid value: "{{{{.bad-value.}}}}": {VALUE_MSG}')
    for v in ("1_000", " 1", "9223372036854775808"):       # strconv.ParseInt rejects these
        with pytest.raises(ConfigError) as info:
            decode_args("NodeAffinity", added({"key": "cores", "operator": "Gt",
                                               "values": [v]}), base)
        assert info.value.field == f"{term}.values[0]"
    decode_args("NodeAffinity", added({"key": "cores", "operator": "Lt", "values": ["5"]}), base)
    with pytest.raises(ConfigError) as info:    # a label value too (labels.NewRequirement)
        decode_args("NodeAffinity", added({"key": "cores", "operator": "Lt", "values": ["-5"]}),
                    base)
    assert info.value.problem.startswith('Invalid value: "-5": a valid label must be')


def test_check_qualified_name_is_the_shared_one():
    with pytest.raises(ConfigError) as info:
        check_qualified_name("a\n", "x")
    assert info.value.problem == f'Invalid value: "a\\n": {NAME_MSG}'
    check_qualified_name("example.com/ok", "x")
    assert plugin_args.LABEL_VALUE.match("ok") and not plugin_args.LABEL_VALUE.match("ok\n")
    assert not plugin_args.LABEL_VALUE.match("a b")


# --------------------------------------------------------------------------
# strict decoding everywhere: an unknown field at any level names its path


@pytest.mark.parametrize("body, field", [
    ("foo: 1\n", "foo"),
    ("profiles:\n- {schedulerName: a, foo: 1}\n", "profiles[0].foo"),
    ("profiles:\n- plugins: {foo: {}}\n", "profiles[0].plugins.foo"),
    ("profiles:\n- plugins: {score: {enabled: [], foo: 1}}\n", "profiles[0].plugins.score.foo"),
    ("profiles:\n- plugins: {score: {enabled: [{name: ImageLocality, foo: 1}]}}\n",
     "profiles[0].plugins.score.enabled[0].foo"),
    ("profiles:\n- pluginConfig: [{name: NodeResourcesFit, args: {foo: 1}}]\n",
     "profiles[0].pluginConfig[0].args.foo"),
    ("profiles:\n- pluginConfig: [{name: DefaultPreemption, foo: 1}]\n",
     "profiles[0].pluginConfig[0].foo"),
    ("leaderElection: {leaderElect: false, foo: 1}\n", "leaderElection.foo"),
    ("leaderElection: {LeaderElect: false}\n", "leaderElection.LeaderElect"),
    ("clientConnection: {qps: 5, foo: 1}\n", "clientConnection.foo"),
])
def test_unknown_fields_are_refused_at_every_level(tmp_path, body, field):
    f = tmp_path / "c.yaml"
    f.write_text(HEAD + body)
    e = file_error(f)
    assert (e.source, e.field) == (str(f), field), str(e)
    assert e.problem.startswith("unknown field") and str(e).startswith(f"{f}: {field}: ")


@pytest.mark.parametrize("body, field, words", [
    ("leaderElection: {leaderElect: 'yes'}\n", "leaderElection.leaderElect", "must be a boolean"),
    ("leaderElection: {leaseDuration: 15}\n", "leaderElection.leaseDuration", "must be a string"),
    ("leaderElection: {leaseDuration: 15 s}\n", "leaderElection.leaseDuration",
     "invalid duration '15 s'"),
    ("leaderElection: {retryPeriod: -2s}\n", "leaderElection.retryPeriod",
     "Invalid value: '-2s': must be greater than zero"),
    ("leaderElection: {leaseDuration: 5s}\n", "leaderElection.leaseDuration",
     "must be greater than renewDeadline (10s)"),
    ("leaderElection: {leaseDuration: 20s, renewDeadline: 20s}\n", "leaderElection.leaseDuration",
     "must be greater than renewDeadline (20s)"),
    ("leaderElection: {resourceName: 5}\n", "leaderElection.resourceName", "must be a string"),
    ("clientConnection: {qps: fast}\n", "clientConnection.qps", "must be a number"),
    ("clientConnection: {qps: .nan}\n", "clientConnection.qps", "must be a number"),
    ("clientConnection: {qps: 1e39}\n", "clientConnection.qps", "a float32"),
    ("clientConnection: {burst: -1}\n", "clientConnection.burst", "must be non-negative"),
    ("clientConnection: {burst: 2147483648}\n", "clientConnection.burst", "not in valid range"),
    ("clientConnection: {kubeconfig: [a]}\n", "clientConnection.kubeconfig", "must be a string"),
])
def test_leader_election_and_client_connection_are_validated(tmp_path, body, field, words):
    f = tmp_path / "c.yaml"
    f.write_text(HEAD + body)
    e = file_error(f)
    assert e.field == field and words in e.problem, str(e)


def test_leader_election_and_client_connection_that_kube_scheduler_takes(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(HEAD + "leaderElection: {leaderElect: true, leaseDuration: 30s,"
                 " renewDeadline: 0s, retryPeriod: 1m, resourceLock: leases, resourceName: s,"
                 " resourceNamespace: n}\n"
                 "clientConnection: {kubeconfig: /etc/k, qps: 50.5, burst: 100, contentType: x,"
                 " acceptContentTypes: y}\n")
    assert load_config(str(f)).profiles[0].scheduler_name == "default-scheduler"
    # leader election off: its durations are not checked against each other
    f.write_text(HEAD + "leaderElection: {leaderElect: false, leaseDuration: 1s}\n")
    load_config(str(f))


@pytest.mark.parametrize("text, seconds", [("10s", 10.0), ("-1m30s", -90.0), ("+1.5h", 5400.0),
                                           ("0", 0.0), ("2562047h", 2562047 * 3600.0)])
def test_durations_read_as_go_reads_them(text, seconds):
    assert plugin_args.duration_seconds(text, "f") == seconds


@pytest.mark.parametrize("text, words", [
    ("+-5s", "invalid duration '+-5s'"), ("--5s", "invalid duration"),
    ("5", "invalid duration"), ("1e3s", "invalid duration"),
    ("2562048h", "out of range"),
])
def test_durations_go_refuses_are_refused(tmp_path, text, words):
    f = tmp_path / "c.yaml"
    f.write_text(HEAD + "profiles:\n- pluginConfig:\n  - name: DynamicResources\n"
                 f"    args: {{filterTimeout: '{text}'}}\n")
    e = file_error(f)
    assert e.field == "profiles[0].pluginConfig[0].args.filterTimeout", str(e)
    assert words in e.problem, str(e)
