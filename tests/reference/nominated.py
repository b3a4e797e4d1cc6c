"""Scalar reference of upstream's rule for nominated pods while filtering
(pkg/scheduler/framework/runtime/framework.go, RunFilterPluginsWithNominatedPods
and addGENominatedPods), over the object dicts of ``oracle``.

Filtering node N for pod P: the pods nominated to N (and only to N) whose
priority is at least P's, never P itself, are added to N (its bound pods,
and so to every count a PreFilter extension keeps for N's topology values);
the filter runs with them and, when any were added, once more without them.
N passes only if both pass; a failure reports the first failing pass.
"""

from __future__ import annotations

from .oracle import _name, pod_key, pod_priority_of


def nominated_to(pod: dict, node: dict, nominated: list) -> list[dict]:
    """The pods of ``nominated`` ([(pod dict, node name)]) counted on
    ``node`` when filtering it for ``pod``."""
    prio = pod_priority_of(pod)
    me = pod_key(pod)
    name = _name(node)
    return [p for p, on in nominated
            if on == name and pod_key(p) != me and pod_priority_of(p) >= prio]


def filter_with_nominated(filter_fn, pod: dict, node: dict, ctx: dict, nominated: list):
    """``filter_fn(pod, node, ctx)`` (an ``oracle`` filter reading
    ``ctx["bound"]``: node name -> bound pod dicts) under the rule above:
    None when ``node`` passes, else the status of the first failing pass."""
    added = nominated_to(pod, node, nominated)
    if added:
        bound = dict(ctx["bound"])
        bound[_name(node)] = list(bound.get(_name(node), [])) + added
        got = filter_fn(pod, node, dict(ctx, bound=bound))
        if got is not None:
            return got
    return filter_fn(pod, node, ctx)
