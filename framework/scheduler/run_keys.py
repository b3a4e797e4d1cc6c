"""The key alike pods share, by which the queue hands out runs of them
(``runs``): the profile and the pod's scheduling signature, or, for a pod
whose failure is remembered (``failure_memory``), the failure it will meet
again; None for a pod that must be scheduled on its own."""

from __future__ import annotations

from tensorsched.framework.runtime.clock import Clock
from tensorsched.framework.state.cluster_state import ClusterState

from .counters import CycleCounters
from .failure_memory import FailureMemory, failure_stamp
from .nominator import Nominator
from .profiles import Profiles


class RunKeys:
    """``key(pod)``: the pod's run key (module doc), read only from what the
    pod's memo covers, the profiles, the failure memory (or None) under the
    current stamp of ``state`` and ``nominator``, and where the next cycle
    starts (``counters``).  Remembered failures form runs only on a
    simulated ``clock`` whose unschedulable pods wait a while
    (``max_in_unschedulable`` > 0 seconds).

    ``unrunnable``: keys whose run did not compile (a host plugin runs for
    them), not handed out as runs again until cleared; ``recalled``: the
    ``(pod, failure, stamp, start index)`` the last key found remembered,
    for the caller that pops the run to check and take."""

    def __init__(self, state: ClusterState, profiles: Profiles, nominator: Nominator,
                 counters: CycleCounters, clock: Clock, *,
                 failure_memory: FailureMemory | None = None,
                 max_in_unschedulable: float = 0.0):
        self.state = state
        self.profiles = profiles
        self.nominator = nominator
        self.counters = counters
        self.clock = clock
        self.failure_memory = failure_memory
        self.max_in_unschedulable = float(max_in_unschedulable)
        self.unrunnable: set = set()
        self.recalled: tuple | None = None

    def key(self, pod):
        """The pod's run key, or None when it must be scheduled on its own."""
        profiles = self.profiles
        if pod.scheduler_name not in profiles.names:
            return None
        fw = profiles.of(pod)
        if not fw.run_safe or not hasattr(fw.backend, "place_run"):
            return None
        sig = fw.signature(pod)
        if sig is None:
            return None
        memory = self.failure_memory
        if memory is not None:
            fkey = memory.key(fw, pod)
            if fkey is not None:
                stamp = failure_stamp(self.state, self.nominator)
                start = self.counters.next_start_index
                got = memory.recall(fkey, stamp, start)
                if got is not None:
                    # It fails again (``failure_memory``): handed on (checked
                    # again there) to ``CompiledRuns`` if it is the head.
                    self.recalled = (pod, got, stamp, start)
                    # On a simulated clock alike heads fail as a stretch
                    # (``CompiledRuns``); otherwise each on its own.
                    return (("failure", fkey) if self.clock.simulated
                            and self.max_in_unschedulable > 0 else None)
        key = (pod.scheduler_name, sig)
        # A signature that could not be compiled (a host plugin runs for it)
        # is not popped as a run again until idle: popping and putting back
        # the rest of the queue for every pod would cost O(pods^2).
        return None if key in self.unrunnable else key
