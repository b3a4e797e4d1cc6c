"""``tensorsched capacity``: capacity planning with the real scheduler.

Three questions, one per invocation (the README's "Capacity planning"):

- ``--pod pod.yaml [--pod b.yaml ...]``: how many more of each template fit
  (round-robin until each stops, with the stop reason and the count per
  node); with ``--replicas N`` (one per ``--pod``, in order) whether that
  set fits and what does not;
- ``--workloads DIR --node-template node.yaml [...]``: the fewest template
  nodes to add so every pod of the workloads schedules (a template file
  holds one Node and, for DRA devices, its ResourceSlices);
- ``--drain [--nodes a,b]``: the nodes that can be removed, one by one and
  as a set.

A table on stdout; ``--output report.json|yaml`` writes the
``CapacityReport`` document too.  The scheduler is imported when the
command runs (the parser reads only the bounds, ``capacity.limits``).
"""

from __future__ import annotations

import json
import sys

from tensorsched.framework.capacity.limits import EXACT_LIMIT, MAX_EXACT_LIMIT, MAX_NODES
from tensorsched.framework.errors import StateError, TensorschedError

from .cli_args import (BACKENDS, SEED, Help, add_feature_gates, int_in, load, load_cluster,
                       output_file, progress)

__all__ = ["add_parser", "cmd_capacity"]


def _build(path: str, config, pods=(), feature_gates=None):
    """The cluster of the manifests at ``path`` (warnings for what its
    profiles cannot see of its pending pods and ``pods``) under
    ``feature_gates`` (``--feature-gates``)."""
    return load_cluster(load(path), config, pods, feature_gates)


def _one(path: str, kind: str) -> dict:
    """The one object of ``kind`` in the file ``path``."""
    objs = load(path)
    if len(objs) != 1 or objs[0].get("kind") != kind:
        kinds = ", ".join(sorted({str(o.get("kind")) for o in objs})) or "nothing"
        raise TensorschedError(f"{path}: expected exactly one {kind}, found {len(objs)} "
                               f"object(s) ({kinds})")
    return objs[0]


def _node_template(path: str) -> tuple[dict, list]:
    """The one Node of a node template file and the ResourceSlices that come
    with it (DRA devices every added node publishes)."""
    objs = load(path)
    nodes = [o for o in objs if o.get("kind") == "Node"]
    slices = [o for o in objs if o.get("kind") == "ResourceSlice"]
    if len(nodes) != 1 or len(nodes) + len(slices) != len(objs):
        kinds = ", ".join(sorted({str(o.get("kind")) for o in objs})) or "nothing"
        raise TensorschedError(f"{path}: expected exactly one Node (and its ResourceSlices), "
                               f"found {len(objs)} object(s) ({kinds})")
    return nodes[0], slices



def _bar(what: str, unit: str, total=None):
    return progress(total, what, unit)


def _write(doc: dict, path: str) -> None:
    import yaml
    with open(path, "w") as f:
        if path.endswith(".json"):
            json.dump(doc, f, indent=2)
            f.write("\n")
        else:
            yaml.safe_dump(doc, f, sort_keys=False)


def _node_names(given) -> list | None:
    """``--nodes`` (comma-separated, repeatable) as a list of names, each
    once; None when not given (every node a candidate)."""
    if not given:
        return None
    names = [n.strip() for part in given for n in part.split(",") if n.strip()]
    if not names:
        raise TensorschedError(f"capacity --nodes {','.join(given)!r}: no node name "
                               "(comma-separated names; leave it out for every node)")
    seen = set()
    for n in names:
        if n in seen:
            raise TensorschedError(f"capacity --nodes: node {n} is given twice")
        seen.add(n)
    return names


def cmd_capacity(args) -> int:
    from tensorsched.framework.capacity import how_many_fit, nodes_to_add, removable_nodes
    from tensorsched.framework.parsing.controllers import expand_workloads
    from tensorsched.framework.parsing.manifests import parse_objects
    modes = [m for m, on in (("--pod", bool(args.pod)), ("--workloads", bool(args.workloads)),
                             ("--drain", args.drain)) if on]
    if len(modes) != 1:
        raise TensorschedError("capacity: give exactly one of --pod, --workloads or --drain"
                               + (f" (got {', '.join(modes)})" if modes else ""))
    if args.replicas and not args.pod:
        raise TensorschedError("capacity: --replicas needs --pod")
    if args.node_template and not args.workloads:
        raise TensorschedError("capacity: --node-template needs --workloads")
    if args.workloads and not args.node_template:
        raise TensorschedError("capacity: --workloads needs at least one --node-template")
    if args.replicas and len(args.replicas) != len(args.pod):
        raise TensorschedError(f"capacity: --replicas: {len(args.replicas)} given for "
                               f"{len(args.pod)} --pod (one per --pod, in order)")
    if args.nodes and not args.drain:
        raise TensorschedError("capacity: --nodes needs --drain")
    # templates are read before the cluster: a bad file fails fast
    pods = [_one(p, "Pod") for p in args.pod or ()]
    node_files = [_node_template(p) for p in args.node_template or ()]
    node_templates = [n for n, _ in node_files]
    template_slices = [s for _, s in node_files]
    workloads = None
    if args.workloads:
        objs = load(args.workloads)
        workloads, ignored = expand_workloads(objs)
        if ignored:
            parts = ", ".join(f"{k} ({n})" for k, n in sorted(ignored.items()))
            print(f"warning: {args.workloads}: ignored objects that are neither pods nor "
                  f"controllers: {parts}", file=sys.stderr)
        if not workloads:
            raise TensorschedError(f"{args.workloads}: no pods (Pods, Deployments, "
                                   "ReplicaSets, StatefulSets, Jobs) to place")
        workloads = parse_objects(workloads).pods
    cluster = _build(args.cluster, args.config, pods + list(workloads or ()),
                     args.feature_gates)
    if pods:
        with _bar("capacity", "pod", sum(args.replicas) if args.replicas else None) as bar:
            report = how_many_fit(cluster, pods, replicas=args.replicas, backend=args.backend,
                                  seed=args.seed, limit=args.limit, progress=bar.update)
    elif workloads is not None:
        with _bar("probes", "probe") as bar:
            report = nodes_to_add(cluster, workloads, node_templates, backend=args.backend,
                                  template_slices=template_slices,
                                  seed=args.seed, max_nodes=args.max_nodes,
                                  progress=lambda n: (bar.set_postfix_str(f"{n} nodes"),
                                                      bar.update(1)))
    else:
        names = _node_names(args.nodes)
        try:
            with _bar("drain", "trial") as bar:
                report = removable_nodes(cluster, nodes=names, backend=args.backend,
                                         seed=args.seed, exact_limit=args.exact_limit,
                                         progress=bar.update)
        except StateError as exc:
            raise TensorschedError(f"capacity --nodes: {exc}") from exc
    print("\n".join(report.table()))
    if args.output:
        _write(report.to_dict(), args.output)
    path = getattr(report, "probe_path", None)
    print(f"capacity {report.to_dict()['spec']['mode']}: {report.seconds:.2f}s, backend "
          f"{args.backend}" + (f", probes {path}" if path else "")
          + (f"; wrote {args.output}" if args.output else ""), file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    """Add the ``capacity`` subcommand to ``tensorsched``'s subparsers."""
    text = ("capacity planning with the real scheduler: how many pods fit, nodes to add, "
            "nodes to remove")
    c = sub.add_parser("capacity", help=text, description=text, formatter_class=Help)
    c.add_argument("--cluster", required=True,
                   help="file or directory of manifests (kubectl get ... -o yaml|json)")
    c.add_argument("--config", help="KubeSchedulerConfiguration (v1) file; default: "
                   "kube-scheduler's default profile")
    c.add_argument("--backend", choices=BACKENDS, default="numba", help="kernel backend")
    c.add_argument("--seed", type=SEED, default=0, help="seed of the tie-breaks")
    c.add_argument("--pod", action="append", metavar="POD_YAML",
                   help="a Pod template: how many more fit (repeat for round-robin over "
                   "several)")
    c.add_argument("--replicas", action="append", type=int_in(0, 10_000_000),
                   help="with --pod: replicas of each template (one per --pod, in order): "
                   "does that set fit")
    c.add_argument("--limit", type=int_in(1), default=None,
                   help="with --pod: try at most this many pods per template")
    c.add_argument("--workloads", metavar="PATH",
                   help="Pods, Deployments, ReplicaSets, StatefulSets, Jobs to place: the "
                   "fewest --node-template nodes to add")
    c.add_argument("--node-template", action="append", metavar="NODE_YAML",
                   help="with --workloads: a Node template (repeat for several; the one "
                   "needing the fewest nodes wins)")
    c.add_argument("--max-nodes", type=int_in(0, MAX_NODES), default=None,
                   help="with --workloads: most nodes to add (default: the resource bound "
                   "plus the number of pods)")
    c.add_argument("--drain", action="store_true",
                   help="which nodes can be removed, one by one and as a set")
    c.add_argument("--nodes", action="append",
                   help="with --drain: comma-separated candidate nodes, repeatable "
                   "(default: all)")
    c.add_argument("--exact-limit", type=int_in(0, MAX_EXACT_LIMIT), default=EXACT_LIMIT,
                   help="with --drain: up to this many candidates, every subset is tried "
                   "(else cluster-autoscaler's greedy order)")
    c.add_argument("--output", type=output_file,
                   help="write the CapacityReport (JSON for *.json, else YAML)")
    add_feature_gates(c)
    c.set_defaults(func=cmd_capacity)
