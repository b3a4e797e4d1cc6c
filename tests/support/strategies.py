"""Hypothesis strategies for random clusters, pods and profiles.

Everything is generated as Kubernetes object dicts (what kubectl prints), so
the same example can be fed to the project's ``explain`` and to the oracle.
Objects stay inside what the API server accepts (label keys and values,
toleration shapes, matchFields on metadata.name only), except for a few
invalid node-selector requirements in required terms, which upstream's
plugin tests also exercise (they match no node).

``profiles()`` draws oracle-format profiles ({"filters", "scores", "args"});
``golden.golden_profile_to_config`` turns one into the equivalent
KubeSchedulerConfiguration, and ``None`` stands for the default profile
(``DEFAULT_PROFILE`` is its oracle equivalent).
"""

from __future__ import annotations

from hypothesis import strategies as st

GPU = "example.com/gpu"
MB = 1024 * 1024

FILTERS = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
           "NodePorts", "NodeResourcesFit")
SCORES = ("NodeResourcesFit", "NodeResourcesBalancedAllocation", "TaintToleration",
          "NodeAffinity", "ImageLocality")

# The default profile's node-level plugins, in upstream's order and weights
# (PodTopologySpread / InterPodAffinity skip for pods without constraints and
# clusters without pod affinity; the volume plugins accept every node).
DEFAULT_PROFILE = {
    "filters": list(FILTERS) + ["PodTopologySpread", "InterPodAffinity"],
    "scores": {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1,
               "PodTopologySpread": 2, "InterPodAffinity": 2,
               "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1},
    "args": {},
}

LABEL_KEYS = ("zone", "rack", "num", "topology.kubernetes.io/zone", "tier")
ZONES = ("z1", "z2", "z3")
RACKS = ("r1", "r2", "r3", "r4")
TAINT_KEYS = ("dedicated", "gpu", "spot", "node.kubernetes.io/unschedulable")
TAINT_VALUES = ("", "a", "b")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
IMAGES = ("nginx:1.25", "nginx", "redis:latest", "busybox", "registry.io/team/big:v1",
          "registry.io:5000/small", "gcr.io/x/ml@sha256:abc")
IMAGE_SIZES = (0, 10 * MB, 23 * MB, 50 * MB, 300 * MB, 999 * MB, 2000 * MB)
PORTS = (80, 443, 8080)
HOST_IPS = ("", "0.0.0.0", "10.0.0.1", "127.0.0.1")
PROTOCOLS = (None, "TCP", "UDP")


def _label_value(key: str):
    if key in ("zone", "topology.kubernetes.io/zone"):
        return st.sampled_from(ZONES)
    if key == "rack":
        return st.sampled_from(RACKS)
    if key == "num":
        return st.integers(0, 20).map(str)
    return st.sampled_from(("web", "db", "batch", "7"))


@st.composite
def labels(draw):
    out = {}
    for key in LABEL_KEYS:
        if draw(st.booleans()):
            out[key] = draw(_label_value(key))
    return out


taints = st.builds(
    lambda k, v, e: {"key": k, "value": v, "effect": e} if v else {"key": k, "effect": e},
    st.sampled_from(TAINT_KEYS), st.sampled_from(TAINT_VALUES), st.sampled_from(EFFECTS))


@st.composite
def node_images(draw):
    out = []
    for name in draw(st.lists(st.sampled_from(IMAGES), max_size=3, unique=True)):
        # Nodes report normalized names (":latest" added) and sometimes a digest alias.
        full = name if (name.rfind(":") > name.rfind("/")) else name + ":latest"
        names = [full]
        if draw(st.booleans()):
            names.append(name.split(":")[0].split("@")[0] + "@sha256:feed")
        out.append({"names": names, "sizeBytes": draw(st.sampled_from(IMAGE_SIZES))})
    return out


@st.composite
def nodes(draw, name: str):
    alloc = {
        "cpu": draw(st.sampled_from(("0", "500m", "1", "2", "3500m", "4", "16"))),
        "memory": draw(st.sampled_from(("0", "512Mi", "1Gi", "4Gi", "8Gi", "1000000000"))),
        "pods": draw(st.sampled_from(("0", "1", "2", "3", "110"))),
    }
    if draw(st.booleans()):
        alloc["ephemeral-storage"] = draw(st.sampled_from(("0", "1Gi", "10Gi", "100Gi")))
    if draw(st.booleans()):
        alloc[GPU] = draw(st.sampled_from(("0", "1", "2", "4", "8")))
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": draw(labels())},
            "spec": {}, "status": {"allocatable": alloc, "capacity": dict(alloc)}}
    if draw(st.integers(0, 5)) == 0:
        node["spec"]["unschedulable"] = True
    # The API server rejects two taints with the same key and effect.
    t = draw(st.lists(taints, max_size=3, unique_by=lambda x: (x["key"], x["effect"])))
    if t:
        node["spec"]["taints"] = t
    imgs = draw(node_images())
    if imgs:
        node["status"]["images"] = imgs
    return node


def _requests(resources=("cpu", "memory", "ephemeral-storage", GPU)):
    values = {
        "cpu": ("0", "10m", "100m", "250m", "1", "1500m", "3"),
        "memory": ("0", "1Mi", "200Mi", "256Mi", "1Gi", "3Gi"),
        "ephemeral-storage": ("0", "1Gi", "5Gi"),
        GPU: ("0", "1", "2"),
        "example.com/fpga": ("1",),
    }

    @st.composite
    def draw_requests(draw):
        out = {}
        for r in resources:
            if draw(st.integers(0, 2)) == 0:          # often missing
                continue
            out[r] = draw(st.sampled_from(values[r]))
        return out
    return draw_requests()


@st.composite
def ports(draw):
    out = []
    for i in range(draw(st.integers(0, 2))):
        p = {"containerPort": 1000 + i}
        if draw(st.integers(0, 3)):
            p["hostPort"] = draw(st.sampled_from(PORTS))
        proto = draw(st.sampled_from(PROTOCOLS))
        if proto:
            p["protocol"] = proto
        ip = draw(st.sampled_from(HOST_IPS))
        if ip:
            p["hostIP"] = ip
        out.append(p)
    return out


def _without_host_port_repeats(spec: dict) -> dict:
    """``spec`` with the ``hostPort`` taken off each port that repeats an
    earlier one's (protocol, hostIP, hostPort) where the API server refuses
    that (across the regular containers; within one init container)."""
    groups = [spec.get("containers", [])] + [[c] for c in spec.get("initContainers", [])]
    for group in groups:
        held = set()
        for c in group:
            for p in c.get("ports", []):
                if not p.get("hostPort"):
                    continue
                key = (p.get("protocol") or "TCP", p.get("hostIP", ""), p["hostPort"])
                if key in held:
                    del p["hostPort"]
                held.add(key)
    return spec


@st.composite
def container(draw, name: str, init: bool = False, with_ports: bool = False,
              extra_resources: bool = False):
    res = ("cpu", "memory", "ephemeral-storage", GPU) + (("example.com/fpga",) if extra_resources else ())
    c = {"name": name, "image": draw(st.sampled_from(IMAGES))}
    resources = {}
    req = draw(_requests(res))
    if req:
        resources["requests"] = req
    if draw(st.integers(0, 4)) == 0:
        resources["limits"] = draw(_requests(("cpu", "memory")))
    if resources:
        c["resources"] = resources
    if init and draw(st.booleans()):
        c["restartPolicy"] = "Always"
    if with_ports:
        p = draw(ports())
        if p:
            c["ports"] = p
    return c


@st.composite
def bound_pods(draw, node_names, max_pods: int):
    out = []
    n = draw(st.integers(0, max_pods))
    for i in range(n):
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"bound-{i}", "namespace": "default"},
               "spec": {"nodeName": draw(st.sampled_from(node_names)),
                        "containers": [draw(container("c0", with_ports=True))]}}
        if draw(st.integers(0, 3)) == 0:
            pod["spec"]["initContainers"] = [draw(container("i0", init=True, with_ports=True))]
        _without_host_port_repeats(pod["spec"])
        out.append(pod)
    return out


@st.composite
def clusters(draw, min_nodes: int = 3, max_nodes: int = 40):
    n = draw(st.integers(min_nodes, max_nodes))
    names = [f"node-{i}" for i in range(n)]
    objs = [draw(nodes(name)) for name in names]
    objs += draw(bound_pods(names, max_pods=min(2 * n, 30)))
    return objs


# ---------------------------------------------------------------------------
# node selectors
# ---------------------------------------------------------------------------

@st.composite
def requirement(draw, allow_invalid: bool = False):
    key = draw(st.sampled_from(LABEL_KEYS + ("absent",)))
    op = draw(st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")))
    if op in ("In", "NotIn"):
        values = draw(st.lists(_label_value(key), min_size=1, max_size=3, unique=True))
    elif op in ("Gt", "Lt"):
        values = [str(draw(st.integers(0, 20)))]
    else:
        values = []
    # values the API server lets through but kube-scheduler cannot match
    # (an In without values, Exists with some or a bad key are load errors)
    if allow_invalid and draw(st.integers(0, 15)) == 0:
        bad = draw(st.sampled_from(("bad-value", "gt-text")))
        if bad == "bad-value":
            values = ["not a label value!"]
            op = draw(st.sampled_from(("In", "NotIn")))
        else:
            op, values = draw(st.sampled_from(("Gt", "Lt"))), ["ten"]
    req = {"key": key, "operator": op}
    if values:
        req["values"] = values
    return req


@st.composite
def field_requirement(draw, node_names):
    return {"key": "metadata.name", "operator": draw(st.sampled_from(("In", "NotIn"))),
            "values": [draw(st.sampled_from(list(node_names) + ["no-such-node"]))]}


@st.composite
def selector_term(draw, node_names, allow_invalid: bool = False):
    term = {}
    exprs = draw(st.lists(requirement(allow_invalid), max_size=3))
    if exprs or draw(st.booleans()):
        term["matchExpressions"] = exprs
    if draw(st.integers(0, 3)) == 0:
        term["matchFields"] = draw(st.lists(field_requirement(node_names), min_size=1, max_size=2))
    return term


@st.composite
def preferred_terms(draw, node_names, min_size: int = 0):
    return [{"weight": draw(st.integers(1, 100)),
             "preference": draw(selector_term(node_names))}
            for _ in range(draw(st.integers(min_size, 3)))]


@st.composite
def node_affinity(draw, node_names):
    na = {}
    if draw(st.booleans()):
        na["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": draw(
            st.lists(selector_term(node_names, allow_invalid=True), min_size=1, max_size=3))}
    if draw(st.booleans()):
        na["preferredDuringSchedulingIgnoredDuringExecution"] = draw(preferred_terms(node_names))
    return na


# ---------------------------------------------------------------------------
# the incoming pod
# ---------------------------------------------------------------------------

@st.composite
def toleration(draw):
    kind = draw(st.integers(0, 5))
    if kind == 0:
        tol = {"operator": "Exists"}                     # empty key: tolerates everything
    elif kind == 1:
        tol = {"key": draw(st.sampled_from(TAINT_KEYS)), "operator": "Exists"}
    else:
        tol = {"key": draw(st.sampled_from(TAINT_KEYS))}
        if draw(st.booleans()):
            tol["operator"] = "Equal"
        v = draw(st.sampled_from(TAINT_VALUES))
        if v:
            tol["value"] = v
    if draw(st.booleans()):
        tol["effect"] = draw(st.sampled_from(EFFECTS))
    return tol


@st.composite
def pods(draw, node_names):
    spec = {"containers": [draw(container(f"c{i}", with_ports=True, extra_resources=True))
                           for i in range(draw(st.integers(0, 3)))]}
    if draw(st.integers(0, 2)) == 0:
        spec["initContainers"] = [draw(container(f"i{i}", init=True, with_ports=True))
                                  for i in range(draw(st.integers(1, 2)))]
    tols = draw(st.lists(toleration(), max_size=3))
    if tols:
        spec["tolerations"] = tols
    if draw(st.integers(0, 3)) == 0:
        sel = {}
        for key in draw(st.lists(st.sampled_from(LABEL_KEYS), max_size=2, unique=True)):
            sel[key] = draw(_label_value(key))
        spec["nodeSelector"] = sel
    if draw(st.booleans()):
        na = draw(node_affinity(node_names))
        spec["affinity"] = {"nodeAffinity": na}
    if draw(st.integers(0, 9)) == 0:
        spec["nodeName"] = draw(st.sampled_from(list(node_names) + ["elsewhere"]))
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "incoming", "namespace": "default"},
            "spec": _without_host_port_repeats(spec)}


# ---------------------------------------------------------------------------
# profiles
# ---------------------------------------------------------------------------

_RESOURCE_NAMES = ("cpu", "memory", "ephemeral-storage", GPU)


@st.composite
def resource_specs(draw):
    names = draw(st.lists(st.sampled_from(_RESOURCE_NAMES), min_size=1, max_size=4, unique=True))
    return [{"name": n, "weight": draw(st.integers(1, 5))} for n in names]


@st.composite
def shape(draw):
    utils = sorted(draw(st.lists(st.integers(0, 100), min_size=1, max_size=4, unique=True)))
    return [{"utilization": u, "score": draw(st.integers(0, 10))} for u in utils]


@st.composite
def fit_args(draw):
    args = {}
    kind = draw(st.sampled_from((None, "LeastAllocated", "MostAllocated",
                                 "RequestedToCapacityRatio")))
    if kind is not None:
        ss = {"type": kind}
        if draw(st.integers(0, 3)):
            ss["resources"] = draw(resource_specs())
        if kind == "RequestedToCapacityRatio":
            ss["requestedToCapacityRatio"] = {"shape": draw(shape())}
        args["scoringStrategy"] = ss
    ignored = draw(st.integers(0, 5))
    if ignored == 0:
        args["ignoredResources"] = [GPU]
    elif ignored == 1:
        args["ignoredResourceGroups"] = ["example.com"]
    return args


@st.composite
def profiles(draw, node_names):
    """An oracle-format profile, or None for the default configuration."""
    if draw(st.integers(0, 5)) == 0:
        return None
    filters = draw(st.lists(st.sampled_from(FILTERS), unique=True, max_size=len(FILTERS)))
    scores = {}
    for s in draw(st.lists(st.sampled_from(SCORES), unique=True, max_size=len(SCORES))):
        scores[s] = draw(st.integers(1, 10))
    args = {}
    if "NodeResourcesFit" in filters or "NodeResourcesFit" in scores:
        a = draw(fit_args())
        if a:
            args["NodeResourcesFit"] = a
    if "NodeResourcesBalancedAllocation" in scores and draw(st.booleans()):
        res = draw(resource_specs())
        if draw(st.integers(0, 9)):
            for r in res:            # BalancedAllocation weights must be 1 (0 defaults to 1)
                r["weight"] = draw(st.sampled_from((0, 1)))
        args["NodeResourcesBalancedAllocation"] = {"resources": res}
    if ("NodeAffinity" in filters or "NodeAffinity" in scores) and draw(st.integers(0, 2)) == 0:
        added = {}
        if draw(st.booleans()):
            added["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": draw(
                st.lists(selector_term(node_names), min_size=1, max_size=2))}
        if draw(st.booleans()):
            added["preferredDuringSchedulingIgnoredDuringExecution"] = draw(
                preferred_terms(node_names, min_size=1))
        args["NodeAffinity"] = {"addedAffinity": added}
    return {"filters": filters, "scores": scores, "args": args}


@st.composite
def scenarios(draw, min_nodes: int = 3, max_nodes: int = 40):
    """(objects, pod, profile or None, seed)."""
    objs = draw(clusters(min_nodes, max_nodes))
    names = [o["metadata"]["name"] for o in objs if o["kind"] == "Node"]
    pod = draw(pods(names))
    profile = draw(profiles(names))
    seed = draw(st.integers(0, 2**32))
    return objs, pod, profile, seed
