"""NodePorts alone (PreFilter/Filter), after upstream's node_ports_test.go.

A wanted host port (protocol, hostIP, hostPort) conflicts with one in use
on the node when the protocol and port are equal and either IP is 0.0.0.0
(the default for an empty hostIP) or the IPs are equal; the protocol
defaults to TCP.  Container ports without a hostPort are ignored (PreFilter
Skips a pod without host ports).  Conflict: Unschedulable, "node(s) didn't
have free ports for the requested pod ports"."""

from __future__ import annotations

import pytest
from support.builders import case, node, one_plugin_config, pod, run

NP = "NodePorts"
REJECTED = {"code": "Unschedulable", "plugin": NP,
            "reasons": ["node(s) didn't have free ports for the requested pod ports"]}


def port(host_port, protocol=None, ip=None, container_port=80):
    p = {"containerPort": container_port}
    if host_port:
        p["hostPort"] = host_port
    if protocol:
        p["protocol"] = protocol
    if ip:
        p["hostIP"] = ip
    return p


CASES = [
    # a: 8080/TCP on 0.0.0.0 in use; wanted 8080/TCP -> conflict; b is free
    case(name="same port and protocol conflict", used=[port(8080)], wanted=[port(8080)],
         conflict=True),
    # wanted 8080/UDP: another protocol -> no conflict
    case(name="other protocol is free", used=[port(8080)], wanted=[port(8080, "UDP")],
         conflict=False),
    # protocol defaults to TCP: unset vs explicit TCP -> conflict
    case(name="protocol defaults to TCP", used=[port(8080)], wanted=[port(8080, "TCP")],
         conflict=True),
    # SCTP 9000 vs TCP 9000 -> no conflict
    case(name="SCTP and TCP do not conflict", used=[port(9000, "SCTP")], wanted=[port(9000)],
         conflict=False),
    # wanted 8081 -> another port
    case(name="other port is free", used=[port(8080)], wanted=[port(8081)], conflict=False),
    # 127.0.0.1:8080 in use; wanted 127.0.0.2:8080 -> different IPs, no conflict
    case(name="different host IPs do not conflict", used=[port(8080, ip="127.0.0.1")],
         wanted=[port(8080, ip="127.0.0.2")], conflict=False),
    # 127.0.0.1:8080 in use; wanted 127.0.0.1:8080 -> same IP
    case(name="same host IP conflicts", used=[port(8080, ip="127.0.0.1")],
         wanted=[port(8080, ip="127.0.0.1")], conflict=True),
    # 127.0.0.1:8080 in use; wanted 0.0.0.0:8080 (every IP) -> conflict
    case(name="wanted 0.0.0.0 conflicts with a specific IP", used=[port(8080, ip="127.0.0.1")],
         wanted=[port(8080, ip="0.0.0.0")], conflict=True),
    # 8080 on an empty hostIP (0.0.0.0) in use; wanted 10.0.0.1:8080 -> conflict
    case(name="used 0.0.0.0 conflicts with a specific IP", used=[port(8080)],
         wanted=[port(8080, ip="10.0.0.1")], conflict=True),
    # a containerPort 8080 without hostPort uses no host port -> no conflict
    case(name="container port without host port", used=[port(0, container_port=8080)],
         wanted=[port(8080, container_port=8080)], conflict=False),
    # two wanted ports, the second (8080/TCP) in use -> conflict
    case(name="one of several ports conflicts", used=[port(8080)],
         wanted=[port(9090), port(8080, container_port=81)], conflict=True),
]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_filter(case, backend):
    objects = [node("a"), node("b"), pod("e1", on="a", ports=case["used"])]
    rec = run(objects, pod("p", ports=case["wanted"]), one_plugin_config(NP), backend)
    if case["conflict"]:
        assert rec["filter"] == {"a": REJECTED}
        assert rec["feasible"] == ["b"] and rec["selected"] == "b"
    else:
        assert rec["filter"] == {}
        assert sorted(rec["feasible"]) == ["a", "b"]


def test_pod_without_host_ports_fits_everywhere(backend):
    # both nodes have 8080 in use; the pod asks for no host port (PreFilter Skip)
    objects = [node("a"), node("b"), pod("e1", on="a", ports=[port(8080)]),
               pod("e2", on="b", ports=[port(8080)])]
    rec = run(objects, pod("p", ports=[port(0, container_port=8080)]),
              one_plugin_config(NP), backend)
    assert rec["filter"] == {} and sorted(rec["feasible"]) == ["a", "b"]


def test_every_node_in_conflict(backend):
    # 8080 in use on both nodes: nothing fits; Unschedulable (not
    # UnschedulableAndUnresolvable: preemption could free the port)
    objects = [node("a"), node("b"), pod("e1", on="a", ports=[port(8080)]),
               pod("e2", on="b", ports=[port(8080, ip="10.0.0.2")])]
    rec = run(objects, pod("p", ports=[port(8080)]), one_plugin_config(NP), backend)
    assert rec["filter"] == {"a": REJECTED, "b": REJECTED}
    assert rec["selected"] is None
