"""The scheduling queue's door: the PreEnqueue plugins of a pod's profile
(upstream's runPreEnqueuePlugins), asked when a pod is added or updated."""

from __future__ import annotations

from collections.abc import Callable


class PreEnqueueGate:
    """``pre_enqueue(pod) -> Status`` runs the PreEnqueue plugins of the
    pod's profile (None: every pod is let in); ``gate_free(pod) -> bool``
    says True when they certainly let the pod in (no plugin to ask: the
    call is left out; None: always ask)."""

    def __init__(self, pre_enqueue: Callable | None = None, gate_free: Callable | None = None):
        self.pre_enqueue = pre_enqueue
        self.gate_free = gate_free

    def admits(self, pi) -> bool:
        """Run PreEnqueue for ``pi``'s pod and record the answer on ``pi``
        (``gated``, ``gated_message``, the rejecting plugin); True when the
        pod may enter activeQ."""
        if self.pre_enqueue is None:
            pi.gated = False
            return True
        st = self.pre_enqueue(pi.pod)
        pi.gated = not st.ok
        pi.gated_message = "; ".join(st.reasons) if pi.gated else ""
        if pi.gated:
            pi.unschedulable_plugins = frozenset({st.plugin}) if st.plugin else frozenset()
        return not pi.gated
