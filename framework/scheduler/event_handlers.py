"""Informer-style event handlers of the Scheduler: nodes and pods added,
updated or deleted through the embedding API, each a cluster event that may
move pods out of the unschedulable pool (upstream ``eventhandlers.go``)."""

from __future__ import annotations

from tensorsched.framework.parsing.manifests import parse_node
from tensorsched.framework.records.records import NodeRecord

from .binding import BindingCycle
from .cluster import Cluster
from .nominator import Nominator
from .profiles import Profiles
from .queue import (
    NODE_ADD,
    NODE_DELETE,
    NODE_UPDATE,
    POD_ADD,
    POD_DELETE,
    POD_UPDATE,
    UNSCHEDULED_POD_ADD,
    SchedulingQueue,
)


class EventHandlers:
    """``add_node`` / ``update_node`` / ``delete_node``, ``add_pod`` /
    ``update_pod`` / ``delete_pod`` and ``confirm``: each changes
    ``cluster``'s state, ``queue``, ``binding``'s pods or ``nominator`` and
    tells the queue the cluster event.  ``ignored``: key -> why no profile
    (``profiles``) takes a pending pod left alone."""

    def __init__(self, cluster: Cluster, queue: SchedulingQueue, profiles: Profiles,
                 binding: BindingCycle, nominator: Nominator):
        self.cluster = cluster
        self.state = cluster.state
        self.queue = queue
        self.profiles = profiles
        self.binding = binding
        self.nominator = nominator
        self.ignored: dict[str, str] = {}

    @staticmethod
    def _node(node) -> NodeRecord:
        return node if isinstance(node, NodeRecord) else parse_node(node)

    def add_node(self, node) -> None:
        self.state.add_node(self._node(node))
        self.queue.move_all(NODE_ADD)

    def update_node(self, node) -> None:
        self.state.update_node(self._node(node))
        self.queue.move_all(NODE_UPDATE)

    def delete_node(self, name: str) -> None:
        state, binding = self.state, self.binding
        for key, w in list(binding.waiting.items()):
            if w.node == name:
                binding.reject(key, "", f"node {name!r} deleted")
        row = state.node_rows.get(name)
        if row is not None:
            for key in list(state.pods_on_node[row]):
                binding.assumed.pop(key, None)
        state.remove_node(name)
        for pod in self.nominator.nominated_on(name):
            self.nominator.delete(pod.key)
        self.queue.move_all(NODE_DELETE)

    def add_pod(self, pod) -> None:
        """A pod bound with spec.nodeName joins the state (an assigned-pod
        add event); a pending one joins the scheduling queue when a profile
        has its schedulerName, else it is left alone (``ignored``), as
        kube-scheduler leaves other schedulers' pods."""
        pod = self.cluster.resolve(pod)
        if pod.node_name:
            self.state.add_pod(pod)
            self.queue.move_all(POD_ADD)
        elif pod.scheduler_name not in self.profiles.names:
            self.ignored[pod.key] = (f"not scheduled here: no profile has schedulerName "
                                     f"{pod.scheduler_name!r}")
        else:
            self.queue.add(pod)
            if self.queue.unschedulable:
                self.queue.move_all(UNSCHEDULED_POD_ADD)

    def update_pod(self, pod) -> None:
        """A pending pod is re-evaluated by the queue (PreEnqueue: gates);
        a bound one is replaced in the state (confirming it when assumed)."""
        pod = self.cluster.resolve(pod)
        key = pod.key
        if key in self.queue:
            self.queue.update(pod)
            return
        state, binding = self.state, self.binding
        if key in state.pods:
            if key in binding.assumed and pod.node_name:
                binding.assumed.pop(key)
            state.update_pod(pod, pod.node_name or None)
            self.queue.move_all(POD_UPDATE)
            return
        if key in binding.waiting:
            binding.waiting[key].pod = pod
            return
        raise KeyError(f"Pod {key}: not known to the scheduler")

    def delete_pod(self, key: str) -> None:
        """Delete a pod wherever it is (queue, permit wait, assumed, bound)."""
        if not isinstance(key, str):
            key = self.cluster.resolve(key).key
        self.nominator.delete(key)
        self.binding.forget(key)
        self.queue.delete(key)
        self.ignored.pop(key, None)
        if key in self.state.pods:
            self.state.remove_pod(key)
            self.queue.move_all(POD_DELETE)

    def confirm(self, key: str) -> None:
        """The binding of an assumed pod is confirmed (informer add)."""
        self.binding.assumed.pop(key, None)
