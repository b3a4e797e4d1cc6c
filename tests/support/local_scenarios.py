"""Random scenarios of node steps for the node-local trace kernel's node
events (``experiments/sweep_events.py``): cordon, uncordon, drain,
addNodes from a template, Node creates, removeNodes and Node deletes at
times among a
trace's arrivals (ties with them included), on the nodes of a
``local_traces`` cluster."""

from __future__ import annotations

import numpy as np
import yaml

from tensorsched.generators.clusters import node_dict


def _template(rng, name: str) -> dict:
    return node_dict(name, cpu=str(rng.choice(["1", "2", "4"])),
                     memory=str(rng.choice(["2Gi", "4Gi"])), pods=str(int(rng.integers(2, 7))),
                     labels={"zone": str(rng.choice(["a", "b"]))},
                     unschedulable=bool(rng.random() < 0.2))


def scenario_steps(rng, n_nodes: int, n_steps: int, removals: bool = True) -> list:
    """``n_steps`` steps on nodes n0..n{n_nodes-1} (and those added), the
    cluster never left without a node (a node added after a removal takes
    the freed row); ``removals``: nodes may be removed."""
    live = [f"n{i}" for i in range(n_nodes)]
    added = 0
    steps = []
    t = 0
    for _ in range(n_steps):
        t += int(rng.choice([0, 1, 3, 20, 300]))
        kind = str(rng.choice(["cordon", "uncordon", "drain", "addNodes", "removeNodes",
                               "delete"]))
        if kind in ("removeNodes", "delete") and (not removals or len(live) < 2):
            kind = "cordon"
        if kind == "addNodes" and rng.random() < 0.3:
            # a Node create: one node of its own name
            name = f"c{len(steps)}"
            steps.append({"at": t, "create": _template(rng, name)})
            live.append(name)
            continue
        if kind == "addNodes":
            count = int(rng.integers(1, 3))
            steps.append({"at": t, "addNodes": {"template": _template(rng, "x"),
                                                "count": count}})
            live += [f"x-{added + k}" for k in range(count)]
            added += count
            continue
        name = str(rng.choice(live))
        if kind in ("removeNodes", "delete"):
            live.remove(name)
            steps.append({"at": t, "removeNodes": [name]} if kind == "removeNodes"
                         else {"at": t, "delete": {"kind": "Node", "name": name}})
            continue
        steps.append({"at": t, kind: name})
    return steps


def write_scenario(tmp, seed: int, n_nodes: int, n_steps: int, removals: bool = True) -> str:
    """A scenario file of ``scenario_steps``."""
    rng = np.random.default_rng(seed + 7919)
    path = tmp / f"scenario{seed}.yaml"
    path.write_text(yaml.safe_dump({"steps": scenario_steps(rng, n_nodes, n_steps, removals)}))
    return str(path)
