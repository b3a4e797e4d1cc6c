"""The scheduler's profiles: the ``Framework`` of a pod's profile (its
``spec.schedulerName``) on the scheduler's backend, made on first use and
handed to its plugins' ``set_handle``, and what the queue asks of them
(PreEnqueue, the QueueSort plugin, a rejecting plugin by name)."""

from __future__ import annotations

from types import SimpleNamespace

from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.runtime.framework import Framework
from tensorsched.framework.runtime.handle import Handle
from tensorsched.framework.runtime.status import Status

from .cluster import Cluster


class Profiles:
    """The profiles of ``cluster`` run on ``backend``; ``handle`` is given to
    each plugin with a ``set_handle`` when its Framework is first used."""

    def __init__(self, cluster: Cluster, backend: str, handle: Handle):
        self.cluster = cluster
        self.backend = backend
        self.handle = handle
        # spec.schedulerName of every profile
        self.names = frozenset(p.scheduler_name for p in cluster.config.profiles)
        self._by_name: dict[str, Framework] = {}     # schedulerName -> its Framework
        self._handled: set = set()
        self._gates_only: dict = {}     # framework -> (reads gates only, plugins to ask)

    def of(self, pod) -> Framework:
        """The Framework of ``pod``'s profile (anything with a
        ``scheduler_name``)."""
        fw = self._by_name.get(pod.scheduler_name)
        if fw is not None:
            return fw
        fw = self.cluster.framework_for(pod, self.backend)
        self._by_name[pod.scheduler_name] = fw
        if id(fw) not in self._handled:
            self._handled.add(id(fw))
            for p in fw.plugins.values():
                hook = getattr(p, "set_handle", None)
                if hook is not None:
                    hook(self.handle)
        return fw

    def queue_sort(self):
        """The QueueSort plugin: the first profile's (upstream requires it
        be the same in all; the configuration has checked that every
        profile has exactly one)."""
        first = self.cluster.config.profiles[0].scheduler_name
        fw = self.of(SimpleNamespace(scheduler_name=first))
        (sort,) = fw.plugins_at("queueSort")
        return sort

    def plugin_of(self, name: str):
        """The plugin called ``name`` in any profile built so far, or None."""
        for fw in self.cluster.frameworks.values():
            if name in fw.plugins:
                return fw.plugins[name]
        return None

    def gate_free(self, pod: PodRecord) -> bool:
        """No PreEnqueue plugin of the pod's profile needs asking: it has no
        scheduling gates and every plugin there reads gates only or, asked
        ``lets_in(pod)`` (DynamicResources: the pod has no claims), admits
        it for sure."""
        if pod.scheduling_gates:
            return False
        fw = self.of(pod)
        got = self._gates_only.get(fw)
        if got is None:
            # (every plugin reads gates only or can say per pod, the ones that can)
            plugins = [p for p in fw.plugins_at("preEnqueue") if hasattr(p, "pre_enqueue")]
            got = (all(getattr(p, "gates_only", False) or hasattr(p, "lets_in")
                       for p in plugins),
                   [p for p in plugins if hasattr(p, "lets_in")])
            self._gates_only[fw] = got
        free, askers = got
        return free and all(p.lets_in(pod) for p in askers)

    def pre_enqueue(self, pod: PodRecord) -> Status:
        """The PreEnqueue plugins of the pod's profile, in order: the first
        rejection (named after its plugin), else OK."""
        fw = self.of(pod)
        gated = bool(pod.scheduling_gates)
        for p in fw.plugins_at("preEnqueue"):
            if hasattr(p, "pre_enqueue") and (gated or not getattr(p, "gates_only", False)):
                st = p.pre_enqueue(pod)
                if not st.ok:
                    return st if st.plugin else st.with_plugin(p.name)
        return Status.OK
