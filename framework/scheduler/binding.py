"""The binding cycle (upstream ``schedule_one.go``'s bindingCycle and the
framework's Reserve/Permit/Bind runners): assume (the state counts the pod
at once), Reserve (Unreserve in reverse on failure), Permit (``permit(ctx,
node) -> Status`` or ``(Status, timeout_seconds)``: Allow, Reject, or Wait
until ``allow``/``reject`` or the timeout on the clock), then PreBind (a
plugin may say Wait, ``(Status, timeout_seconds)``: the pod then waits with
the Permit waiters and PreBind is asked again on each timer tick until it
answers or the timeout passes), Bind, PostBind.  A failure after assume (Reserve, Permit reject or timeout,
PreBind, Bind, including the injectable binder failure: ``binder_fault_rate``
with a seeded RNG or a ``binder(pod, node)`` callback) unreserves, forgets
the pod (the state no longer counts it), and requeues it with backoff:
nothing is counted twice and nothing is lost.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tensorsched.framework.records.records import PodRecord
from tensorsched.framework.runtime.clock import Clock
from tensorsched.framework.runtime.framework import Framework
from tensorsched.framework.runtime.plugin import CycleContext
from tensorsched.framework.runtime.status import Code, Status
from tensorsched.framework.state.cluster_state import ClusterState

from .events import BOUND, Binding, EventBus, Outcomes
from .metrics import CYCLE_PATH, MetricsRecorder
from .nominator import Nominator
from .queue import POD_DELETE, QueuedPodInfo, SchedulingQueue

DEFAULT_PERMIT_TIMEOUT = 60.0
_WAIT, _SKIP = Code.WAIT, Code.SKIP


@dataclass
class WaitingPod:
    """An assumed pod between Permit and its binding cycle."""

    pod: PodRecord
    node: str
    fw: Framework
    ctx: CycleContext
    pi: QueuedPodInfo | None
    deadline: float = 0.0
    timeout: float = 0.0
    pending: set = field(default_factory=set)       # plugins that said Wait
    at_prebind: int = -1        # waiting in PreBind: the index of the plugin that said Wait


class BindingCycle:
    """Assume, Reserve, Permit (waiting pods), PreBind, Bind, PostBind for
    the pods the scheduling cycle placed, on ``state``; a pod that fails
    after assume goes back to ``queue``.

    It owns the pods between a placement and its end: ``waiting`` (key ->
    WaitingPod, in Permit or PreBind), ``to_bind`` (allowed, binding after
    the current step), ``assumed`` (key -> expiry on the clock, with
    ``assume_ttl``), ``preempted_for`` (key -> (nominated node, victims) of
    a preemptor, reported with its binding) and ``bound_log`` (when set, a
    dict ``schedule_pending`` reads: key -> BOUND per binding, in order;
    a compiled run logs a pod bound without a nomination as its node's name)."""

    def __init__(self, state: ClusterState, clock: Clock, queue: SchedulingQueue,
                 metrics: MetricsRecorder, events: EventBus, outcomes: Outcomes,
                 nominator: Nominator, *, binder: Callable | None = None,
                 binder_fault_rate: float = 0.0, seed: int = 0,
                 assume_ttl: float | None = None):
        self.state = state
        self.clock = clock
        self.queue = queue
        self.metrics = metrics
        self.events = events
        self.outcomes = outcomes
        self.nominator = nominator
        self.binder = binder
        self.binder_fault_rate = float(binder_fault_rate)
        self.assume_ttl = assume_ttl
        self._rng = random.Random(seed)
        self.waiting: dict[str, WaitingPod] = {}
        self.to_bind: list[WaitingPod] = []
        self.assumed: dict[str, float] = {}            # key -> expiry (unconfirmed binds)
        self.preempted_for: dict[str, tuple] = {}      # key -> (node, victims)
        self.bound_log: dict | None = None
        # A pod whose binding points have nothing to call
        # (``Framework.quiet_binding``) binds without calling them; False:
        # every plugin is called (the tests' oracle)
        self.quiet_bindings = True
        self.longest_permit_wait = 0.0                 # seconds, the longest Permit Wait seen

    def may_fail(self) -> bool:
        """A binder that may fail is set (``binder`` or a fault rate)."""
        return self.binder is not None or self.binder_fault_rate > 0

    def unreserve(self, fw, ctx, node, upto=None) -> None:
        """Unreserve (reverse order) and forget the assumed pod."""
        plugins = fw.plugins_at("reserve")
        if upto is not None:
            plugins = plugins[: upto + 1]
        for q in reversed(plugins):
            q.unreserve(ctx, node)
        key = ctx.pod.key
        self.assumed.pop(key, None)
        if key in self.state.pods:
            self.state.remove_pod(key)

    def _requeue_after_assume(self, pod, pi, status: Status, error: bool,
                              in_cycle: bool = False) -> None:
        """Forgotten after assume: the freed room is a move request (an
        assigned-pod delete) and the pod goes back to the queue.  As
        upstream, a failure inside the scheduling cycle (Reserve, Permit)
        requeues the pod first and then moves every other pod, so a pod a
        plugin rejected waits in the unschedulable pool; a failure in the
        binding cycle moves first, so the pod itself backs off."""
        q = self.queue
        if not in_cycle:
            q.move_all(POD_DELETE)
        if pi is None:
            now = self.clock.now()
            pi = QueuedPodInfo(pod, now, now, attempts=1, cycle=q.scheduling_cycle)
        else:
            pi.pod = pod
        q.requeue(pi, {status.plugin} if status.plugin else (), error=error)
        if in_cycle:
            q.move_all(POD_DELETE, exclude=pod.key)

    def assume_and_permit(self, fw: Framework, pod: PodRecord, node: str,
                          pi: QueuedPodInfo | None) -> Binding:
        """Assume ``pod`` on ``node``, then Reserve and Permit; binds it now
        (``binding_cycle``) unless a Permit plugin makes it wait."""
        state = self.state
        state.add_pod(pod, node)                       # assume: counted at once
        if pi is not None:
            self.queue.done(pod.key)
        # per plugin: its seconds into the metrics under its key (``time_plugin``)
        seconds, clock = self.metrics.plugin_seconds, time.perf_counter
        ctx = CycleContext(state, pod, fw)
        if self.quiet_bindings and not self.may_fail() and fw.quiet_binding(ctx):
            # run-safe plugins only, none with work for this pod: each keeps
            # its key in the metrics, with no seconds spent
            fw.reserve_quietly(ctx, state.node_rows[node])
            for k in fw.binding_keys:
                if k not in seconds:
                    seconds[k] = 0.0
            self.events.emit("Scheduled", pod.key, node)
            return self._bound(pod, node, pi)
        for i, (p, k) in enumerate(fw.timed_plugins["reserve"]):
            t = clock()
            st = p.reserve(ctx, node)
            seconds[k] = seconds.get(k, 0.0) + (clock() - t)
            if not st.ok:
                self.unreserve(fw, ctx, node, upto=i)
                msg = f"running Reserve plugin {p.name!r}: " + "; ".join(st.reasons)
                self.metrics.result("error")
                if pi is not None:
                    self._requeue_after_assume(pod, pi, st.with_plugin(p.name), error=True,
                                               in_cycle=True)
                self.events.emit("FailedScheduling", pod.key, node, msg)
                return Binding(pod.key, None, msg)
        self.events.emit("Scheduled", pod.key, node)
        permits = fw.timed_plugins["permit"]
        if permits:
            w = WaitingPod(pod, node, fw, ctx, pi)
            timeout = None
            for p, k in permits:
                t = clock()
                r = p.permit(ctx, node)
                seconds[k] = seconds.get(k, 0.0) + (clock() - t)
                st, to = r if isinstance(r, tuple) else (r, DEFAULT_PERMIT_TIMEOUT)
                if st.code == Code.WAIT:
                    w.pending.add(p.name)
                    timeout = to if timeout is None else min(timeout, to)
                elif not st.ok:
                    st = st if st.plugin else st.with_plugin(p.name)
                    msg = "; ".join(st.reasons) or f"rejected by Permit plugin {p.name!r}"
                    self._fail_permit(w, st, msg, in_cycle=True)
                    return Binding(pod.key, None, msg)
            if w.pending:
                w.timeout = float(timeout)
                self.longest_permit_wait = max(self.longest_permit_wait, w.timeout)
                w.deadline = self.clock.now() + w.timeout
                self.waiting[pod.key] = w
                return Binding(pod.key, None, "waiting on permit plugin(s) "
                               + ", ".join(sorted(w.pending)))
            return self._binding_cycle(w)
        return self._binding_cycle(WaitingPod(pod, node, fw, ctx, pi))

    def allow(self, key: str, plugin: str) -> None:
        """A Permit plugin lets a waiting pod go (it binds when every
        waiting plugin has allowed it; the binding cycle runs after the
        current step)."""
        w = self.waiting.get(key)
        if w is None:
            return
        w.pending.discard(plugin)
        if not w.pending:
            del self.waiting[key]
            self.to_bind.append(w)

    def reject(self, key: str, plugin: str, message: str) -> None:
        """Reject a waiting pod: unreserve, forget, requeue."""
        w = self.waiting.pop(key, None)
        if w is None:
            return
        self._fail_permit(w, Status(Code.UNSCHEDULABLE, (message,), plugin), message)

    def waiting_pods(self) -> list[str]:
        return list(self.waiting)

    def forget(self, key: str) -> None:
        """The pod was deleted: out of Permit (unreserved), the pods due to
        bind, the assumed ones and the preemptors."""
        w = self.waiting.pop(key, None)
        if w is not None:
            self.unreserve(w.fw, w.ctx, w.node)
        if self.to_bind:
            self.to_bind[:] = [x for x in self.to_bind if x.pod.key != key]
        self.assumed.pop(key, None)
        self.preempted_for.pop(key, None)

    def _fail_permit(self, w: WaitingPod, st: Status, msg: str, in_cycle: bool = False) -> None:
        self.unreserve(w.fw, w.ctx, w.node)
        self.metrics.result("unschedulable")
        self._requeue_after_assume(w.pod, w.pi, st, error=False, in_cycle=in_cycle)
        b = Binding(w.pod.key, None, msg)
        self.outcomes[w.pod.key] = b
        self.events.emit("FailedScheduling", w.pod.key, w.node, msg)

    def drain(self) -> None:
        """Bind the pods every Permit plugin allowed since the last step."""
        while self.to_bind:
            self._binding_cycle(self.to_bind.pop(0))

    def expire(self, now: float) -> None:
        """Timer tick at ``now``: ask the pods waiting in PreBind again,
        reject the Permit waits past their deadline, and forget (and
        requeue) the assumed pods whose TTL ran out."""
        if self.waiting:
            self._poll_prebind(now)
            for key, w in sorted(self.waiting.items(), key=lambda kv: kv[1].deadline):
                if w.deadline <= now and key in self.waiting and w.at_prebind < 0:
                    self.reject(key, ",".join(sorted(w.pending)),
                                f"rejected due to timeout after waiting {w.timeout:g}s at "
                                f"plugin {','.join(sorted(w.pending))}")
        if self.assumed:
            state = self.state
            for key, dl in sorted(self.assumed.items(), key=lambda kv: kv[1]):
                if dl <= now:
                    self.assumed.pop(key)
                    entry = state.remove_pod(key)
                    node = state.node_name(entry.node_row)
                    self.queue.move_all(POD_DELETE)
                    pi = QueuedPodInfo(entry.record, now, now, attempts=1)
                    self.queue.requeue(pi, error=True)
                    self.events.emit("AssumeExpired", key, node, "assumed pod expired")

    def _binder_fails(self, pod, node) -> Status | None:
        if self.binder is not None:
            r = self.binder(pod, node)
            if isinstance(r, Status):
                return None if r.ok else r
            return None if r in (True, None) else Status(Code.ERROR, ("binder failed",),
                                                         "binder")
        if self.binder_fault_rate > 0 and self._rng.random() < self.binder_fault_rate:
            return Status(Code.ERROR, ("injected binder failure",), "binder")
        return None

    def _wait_in_prebind(self, w: WaitingPod, index: int, plugin: str,
                         timeout: float | None) -> Binding:
        """A PreBind plugin said Wait (DynamicResources until its devices'
        binding conditions hold): the pod stays assumed and waits with the
        Permit waiters; each timer tick asks the plugin again from there
        (``_poll_prebind``), until it lets the pod go, fails it, or the
        deadline (set on the first Wait) passes."""
        if w.at_prebind < 0:
            w.timeout = float(timeout if timeout is not None else DEFAULT_PERMIT_TIMEOUT)
            w.deadline = self.clock.now() + w.timeout
            self.longest_permit_wait = max(self.longest_permit_wait, w.timeout)
        w.at_prebind = index
        w.pending = {plugin}
        self.waiting[w.pod.key] = w
        return Binding(w.pod.key, None, f"waiting on PreBind plugin {plugin}")

    def _poll_prebind(self, now: float) -> None:
        """Ask the pods waiting in PreBind again (timer tick); one past its
        deadline that is still told to wait fails as a PreBind error."""
        waiting = [(key, w) for key, w in self.waiting.items() if w.at_prebind >= 0]
        for key, w in sorted(waiting, key=lambda kv: kv[1].deadline):
            if self.waiting.get(key) is not w:
                continue
            del self.waiting[key]
            self._binding_cycle(w)
            if self.waiting.get(key) is w and w.deadline <= now:
                del self.waiting[key]
                name = next(iter(w.pending))
                st = Status(Code.ERROR, (f"timed out after waiting {w.timeout:g}s",), name)
                self._fail_binding(w, st, "PreBind", name)

    def _fail_binding(self, w: WaitingPod, st: Status, point: str, name: str) -> Binding:
        """A PreBind or Bind failure: unreserve, forget, requeue with backoff."""
        pod, node = w.pod, w.node
        msg = f"running {point} plugin {name!r}: " + "; ".join(st.reasons)
        self.unreserve(w.fw, w.ctx, node)
        self.metrics.bind_failures += 1
        self.metrics.result("error")
        self._requeue_after_assume(pod, w.pi, st, error=True)
        self.events.emit("BindFailed", pod.key, node, msg)
        b = Binding(pod.key, None, msg)
        self.outcomes[pod.key] = b
        return b

    def _binding_cycle(self, w: WaitingPod) -> Binding:
        fw, ctx, node, pod = w.fw, w.ctx, w.node, w.pod
        seconds, clock = self.metrics.plugin_seconds, time.perf_counter
        failed = None
        first = max(w.at_prebind, 0)
        pre_binds = fw.timed_plugins["preBind"]
        for i, (p, k) in enumerate(pre_binds[first:] if first else pre_binds, first):
            t = clock()
            r = p.pre_bind(ctx, node)
            seconds[k] = seconds.get(k, 0.0) + (clock() - t)
            st, timeout = r if isinstance(r, tuple) else (r, None)
            if st.code == _WAIT:
                return self._wait_in_prebind(w, i, p.name, timeout)
            if not st.ok:
                failed = (st if st.plugin else st.with_plugin(p.name), "PreBind", p.name)
                break
        w.at_prebind = -1
        if failed is None and (self.binder is not None or self.binder_fault_rate > 0):
            st = self._binder_fails(pod, node)
            if st is not None:
                failed = (st, "Bind", "binder")
        if failed is None:
            for p, k in fw.timed_plugins["bind"]:
                t = clock()
                st = p.bind(ctx, node)
                seconds[k] = seconds.get(k, 0.0) + (clock() - t)
                if st.code == _SKIP:
                    continue
                if not st.ok:
                    failed = (st if st.plugin else st.with_plugin(p.name), "Bind", p.name)
                break
        if failed is not None:
            return self._fail_binding(w, *failed)
        for p, k in fw.timed_plugins["postBind"]:
            t = clock()
            p.post_bind(ctx, node)
            seconds[k] = seconds.get(k, 0.0) + (clock() - t)
        return self._bound(pod, node, w.pi)

    def _bound(self, pod: PodRecord, node: str, pi: QueuedPodInfo | None) -> Binding:
        """The end of a binding cycle that bound ``pod`` on ``node``: the
        assumed TTL, counters, nomination, latency, events and outcome."""
        if self.assume_ttl is not None:
            self.assumed[pod.key] = self.clock.now() + self.assume_ttl
        metrics = self.metrics
        metrics.scheduled_by(CYCLE_PATH)
        if self.nominator:
            self.nominator.delete(pod.key)
        if pi is not None:
            metrics.e2e_latencies.append(self.clock.now() - pi.initial_timestamp)
        b = Binding(pod.key, node)
        pre = self.preempted_for.pop(pod.key, None) if self.preempted_for else None
        if pre is not None:
            b.nominated_node, b.victims = pre[0], list(pre[1])
        events = self.events
        if events.active:
            events.emit("Bound", pod.key, node)
        log = self.bound_log
        if log is not None:
            log.pop(pod.key, None)          # re-insert: dict order = outcome order
            log[pod.key] = BOUND
        if pi is not None or self.waiting or events.active or log is not None:
            self.outcomes[pod.key] = b
        return b
