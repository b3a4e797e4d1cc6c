"""ImageLocality alone (Score), after upstream's image_locality_test.go.

For each container and init container of the pod, the image name is
normalized (':latest' appended when the last ':' is not after the last
'/'); when the node lists it, add int64(size * nodes with the image / all
nodes).  The sum is clamped to [23MB, 1000MB * containers] and the score is
100 * (sum - 23MB) // (max - 23MB) (integer division); no NormalizeScore.
MB = 1024 * 1024.
"""

from __future__ import annotations

import pytest
from support.builders import case, node, one_plugin_config, plugin_scores, pod, run

IL = "ImageLocality"
MB = 1024 * 1024


def img(*names, mb):
    return {"names": list(names), "sizeBytes": mb * MB}


def containers(*images, init=()):
    spec = {"containers": [{"name": f"c{i}", "image": im} for i, im in enumerate(images)]}
    if init:
        spec["initContainers"] = [{"name": f"i{i}", "image": im} for i, im in enumerate(init)]
    return spec


NGINX = "docker.io/library/nginx:1.27"
REDIS = "docker.io/library/redis:7"

CASES = [
    # nginx (300MB) on a only, 2 nodes: scaled = 300MB * 1 / 2 = 150MB
    # a: 100 * (150 - 23) // (1000 - 23) = 12700 // 977 = 12
    # b: no image -> 0 clamped up to 23MB -> 0
    case(name="image on one of two nodes is scaled by spread",
         nodes=[node("a", images=[img(NGINX, mb=300)]), node("b")],
         pod=pod("p", image=NGINX), expected={"a": 12, "b": 0}),
    # nginx on both nodes: spread 2 / 2 -> 300MB
    # 100 * (300 - 23) // 977 = 27700 // 977 = 28 on both
    case(name="image on every node is not scaled down",
         nodes=[node("a", images=[img(NGINX, mb=300)]), node("b", images=[img(NGINX, mb=300)])],
         pod=pod("p", image=NGINX), expected={"a": 28, "b": 28}),
    # 20MB < 23MB minimum threshold -> clamped to 23MB -> 0
    case(name="image below the 23MB threshold scores 0",
         nodes=[node("a", images=[img(NGINX, mb=20)])],
         pod=pod("p", image=NGINX), expected={"a": 0}),
    # 3000MB on a, 2 nodes: 3000 / 2 = 1500MB > 1000MB * 1 container -> clamped -> 100
    case(name="sum above the per-container maximum is clamped",
         nodes=[node("a", images=[img(NGINX, mb=3000)]), node("b")],
         pod=pod("p", image=NGINX), expected={"a": 100, "b": 0}),
    # pod image 'busybox' (no tag) -> 'busybox:latest', listed on a (500MB, 1 node)
    # 100 * (500 - 23) // 977 = 47700 // 977 = 48
    case(name="untagged image matches its :latest name",
         nodes=[node("a", images=[img("busybox:latest", mb=500)])],
         pod=pod("p", image="busybox"), expected={"a": 48}),
    # 'registry:5000/busybox': the last ':' (port) is before the last '/' ->
    # normalized to 'registry:5000/busybox:latest'; a lists only
    # 'registry:5000/busybox:1.0' -> no match -> 0;
    # b lists 'registry:5000/busybox:latest' (500MB): spread 1/2 -> 250MB
    # 100 * (250 - 23) // 977 = 22700 // 977 = 23
    case(name="a registry port is not a tag",
         nodes=[node("a", images=[img("registry:5000/busybox:1.0", mb=500)]),
                node("b", images=[img("registry:5000/busybox:latest", mb=500)])],
         pod=pod("p", image="registry:5000/busybox"), expected={"a": 0, "b": 23}),
    # two containers -> max 2000MB; nginx 300MB on a, redis 600MB on b; 2 nodes
    # a: 300 / 2 = 150MB -> 100 * (150 - 23) // (2000 - 23) = 12700 // 1977 = 6
    # b: 600 / 2 = 300MB -> 100 * (300 - 23) // 1977 = 27700 // 1977 = 14
    case(name="two containers, images on different nodes",
         nodes=[node("a", images=[img(NGINX, mb=300)]), node("b", images=[img(REDIS, mb=600)])],
         pod=pod("p", spec=containers(NGINX, REDIS)), expected={"a": 6, "b": 14}),
    # init container counts like a container: init nginx 300MB + redis 600MB,
    # both on a (1 node): 900MB; max 1000MB * 2 = 2000MB
    # 100 * (900 - 23) // 1977 = 87700 // 1977 = 44
    case(name="init containers count",
         nodes=[node("a", images=[img(NGINX, mb=300), img(REDIS, mb=600)])],
         pod=pod("p", spec=containers(REDIS, init=(NGINX,))), expected={"a": 44}),
    # the same image in two containers is added twice: 300 + 300 = 600MB;
    # the node lists it under two names (one image): max 2000MB
    # 100 * (600 - 23) // 1977 = 57700 // 1977 = 29
    case(name="same image in two containers counts twice",
         nodes=[node("a", images=[img(NGINX, "nginx:1.27", mb=300)])],
         pod=pod("p", spec=containers(NGINX, "nginx:1.27")), expected={"a": 29}),
]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_score(case, backend):
    rec = run(case["nodes"], case["pod"], one_plugin_config(IL), backend)
    assert plugin_scores(rec, IL) == case["expected"]
    assert rec["total"] == case["expected"]
    best = max(case["expected"].values())
    assert case["expected"][rec["selected"]] == best


def test_weight_and_selection(backend):
    # weight 3: a 12 * 3 = 36, b 0 (see the first case); a selected
    rec = run([node("a", images=[img(NGINX, mb=300)]), node("b")], pod("p", image=NGINX),
              one_plugin_config(IL, weight=3), backend)
    assert rec["total"] == {"a": 36, "b": 0}
    assert rec["selected"] == "a"
    assert rec["filter"] == {}
