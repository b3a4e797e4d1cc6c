"""``check_steps``: node names followed through the steps in time order,
pods deleted only when a step or the simulation has them before then,
nothing before now; errors name the file and the step."""

from __future__ import annotations

import pytest

from tensorsched.generators.clusters import node_dict, pod_dict
from tensorsched.framework.simulation.scenario import ScenarioError, check_steps, parse_scenario


def _sc(*steps):
    return parse_scenario({"steps": list(steps)}, "sc.yaml")


def _never(key, t):
    return False


def delete_at(t):
    return {"at": t, "delete": {"kind": "Pod", "name": "web"}}


def test_nodes_followed_in_time_order():
    ok = _sc({"at": 5, "create": node_dict("n2")}, {"at": 6, "cordon": "n2"},
             {"at": 7, "removeNodes": ["n1"]}, {"at": 8, "create": node_dict("n1")})
    check_steps(ok, {"n1": 0}, 0.0, _never)
    with pytest.raises(ScenarioError, match=r"sc.yaml: steps\[1\].cordon: node 'n2' is not"):
        check_steps(_sc({"at": 9, "create": node_dict("n2")}, {"at": 6, "cordon": "n2"}),
                    {"n1": 0}, 0.0, _never)
    with pytest.raises(ScenarioError, match="node 'n1' already exists"):
        check_steps(_sc({"at": 1, "create": node_dict("n1")}), {"n1": 0}, 0.0, _never)


def test_pods_deleted_must_be_there_before():
    create = {"at": 5, "create": pod_dict("web")}
    check_steps(_sc(create, delete_at(6)), {}, 0.0, _never)
    with pytest.raises(ScenarioError, match=r"pod default/web not found \(NotFound\)"):
        check_steps(_sc(create, delete_at(5)), {}, 0.0, _never)   # arrivals come after
    asked = []

    def known(key, t):
        asked.append((key, t))
        return t > 3

    check_steps(_sc(delete_at(4)), {}, 0.0, known)
    assert asked == [("default/web", 4.0)]
    with pytest.raises(ScenarioError, match="not found"):       # deleted twice
        check_steps(_sc(delete_at(4), delete_at(9)), {}, 0.0, known)


def test_nothing_before_now():
    with pytest.raises(ScenarioError, match="at 2 is before the simulation's time 3"):
        check_steps(_sc({"at": 2, "cordon": "n1"}), {"n1": 0}, 3.0, _never)
