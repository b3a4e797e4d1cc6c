"""DRA test builders: GPU slices, partitioned (counter-set) node pools,
claims, and random clusters for the allocator's property tests."""

from __future__ import annotations

from hypothesis import strategies as st

from tensorsched.framework.parsing.dra import (
    parse_device_class,
    parse_resource_claim,
    parse_resource_slice,
)
from tensorsched.framework.state.dra_devices import AllocatedState, DeviceColumns

DRIVER = "gpu.example.com"
CLASS = parse_device_class(
    {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
)


def gpu_slice(name, devices, node=None, all_nodes=False, pool=None):
    spec = {
        "driver": DRIVER,
        "pool": {"name": pool or name, "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {"name": f"gpu-{i}", "attributes": {"model": {"string": m}, "numa": {"int": i % 2}}}
            for i, m in enumerate(devices)
        ],
    }
    if all_nodes:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node
    return parse_resource_slice(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": spec,
        }
    )


def claim(name, *requests, constraints=()):
    reqs = []
    for i, (count, model) in enumerate(requests):
        exact = {"deviceClassName": "gpu", "count": count}
        if model:
            exact["selectors"] = [
                {"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}
            ]
        reqs.append({"name": f"r{i}", "exactly": exact})
    spec = {"devices": {"requests": reqs, "constraints": list(constraints)}}
    return parse_resource_claim(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": spec,
        }
    )


MODELS = ("H200", "A100")


@st.composite
def clusters(draw):
    n = draw(st.integers(1, 5))
    slices = [
        gpu_slice(f"n{i}", draw(st.lists(st.sampled_from(MODELS), max_size=5)), node=f"n{i}")
        for i in range(n)
    ]
    if draw(st.booleans()):
        slices.append(
            gpu_slice(
                "shared", draw(st.lists(st.sampled_from(MODELS), max_size=3)), all_nodes=True
            )
        )
    claims = [
        claim(
            f"c{k}",
            *draw(
                st.lists(
                    st.tuples(st.integers(1, 3), st.sampled_from((None, *MODELS))),
                    min_size=1,
                    max_size=2,
                )
            ),
        )
        for k in range(draw(st.integers(1, 2)))
    ]
    cols = DeviceColumns(slices, [f"n{i}" for i in range(n)])
    held = draw(st.lists(st.integers(0, max(cols.n - 1, 0)), max_size=4)) if cols.n else []
    state = AllocatedState(devices={cols.device_id(r) for r in held})
    return cols, claims, state, [(f"n{i}", {}) for i in range(n)]


def partitioned_node(name, cap, uses):
    """A node-local pool: a counter set ``mem`` of ``cap`` and devices that
    each consume some of it (MIG-like partitions)."""
    pool = {"name": name, "generation": 1, "resourceSliceCount": 2}
    devices = [
        {
            "name": f"part-{i}",
            "attributes": {"model": {"string": MODELS[i % 2]}, "numa": {"int": i % 2}},
            "consumesCounters": [{"counterSet": "mem", "counters": {"mem": {"value": str(u)}}}],
        }
        for i, u in enumerate(uses)
    ]
    return [
        parse_resource_slice(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-{k}"},
                "spec": {"driver": DRIVER, "nodeName": name, "pool": pool, **spec},
            }
        )
        for k, spec in enumerate(
            (
                {"devices": devices},
                {"sharedCounters": [{"name": "mem", "counters": {"mem": {"value": str(cap)}}}]},
            )
        )
    ]


@st.composite
def constrained_clusters(draw):
    n = draw(st.integers(1, 4))
    slices = []
    for i in range(n):
        if draw(st.booleans()):
            slices += partitioned_node(
                f"n{i}", draw(st.integers(1, 8)), draw(st.lists(st.integers(1, 4), max_size=5))
            )
        else:
            slices.append(
                gpu_slice(
                    f"n{i}", draw(st.lists(st.sampled_from(MODELS), max_size=5)), node=f"n{i}"
                )
            )
    claims = []
    for k in range(draw(st.integers(1, 2))):
        reqs = draw(
            st.lists(
                st.tuples(st.integers(1, 2), st.sampled_from((None, *MODELS))),
                min_size=1,
                max_size=3,
            )
        )
        cons = draw(
            st.lists(
                st.sampled_from(
                    (
                        {"matchAttribute": f"{DRIVER}/numa"},
                        {"distinctAttribute": f"{DRIVER}/numa"},
                        {"matchAttribute": f"{DRIVER}/model", "requests": ["r0", "r1"]},
                        {"distinctAttribute": "other.example.com/x"},
                    )
                ),
                max_size=2,
            )
        )
        cons = [c for c in cons if "requests" not in c or len(reqs) >= 2]
        claims.append(claim(f"c{k}", *reqs, constraints=cons))
    cols = DeviceColumns(slices, [f"n{i}" for i in range(n)])
    held = draw(st.lists(st.integers(0, max(cols.n - 1, 0)), max_size=3)) if cols.n else []
    state = AllocatedState(devices={cols.device_id(r) for r in held})
    return cols, claims, state, [(f"n{i}", {}) for i in range(n)]
