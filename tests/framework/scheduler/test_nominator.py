"""The nominator: one node per nominated pod, pods per node in nomination
order, and a version that moves with every change."""

from tensorsched.framework.parsing.manifests import parse_pod
from tensorsched.generators.clusters import pod_dict
from tensorsched.framework.scheduler.nominator import Nominator


def test_nominations_per_node_and_version():
    nom = Nominator()
    a, b = parse_pod(pod_dict("a")), parse_pod(pod_dict("b"))
    assert not nom and nom.version == 0
    nom.add(a, "n1")
    nom.add(b, "n1")
    assert nom and [p.name for p in nom.nominated_on("n1")] == ["a", "b"]
    nom.add(a, "n2")                                # renominated: moves
    assert [p.name for p in nom.nominated_on("n1")] == ["b"]
    assert nom.node_of == {"default/b": "n1", "default/a": "n2"}
    v = nom.version
    nom.update(parse_pod(pod_dict("c")))            # not nominated: nothing changes
    assert nom.version == v
    nom.update(a)
    assert nom.version == v + 1
    nom.delete("default/b")
    nom.delete("default/b")
    assert nom.version == v + 2 and nom.nominated_on("n1") == [] and "n1" not in nom.by_node
