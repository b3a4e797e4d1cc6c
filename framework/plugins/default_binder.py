"""DefaultBinder: binding confirms the pod assumed on its node.

kube-scheduler's binder posts a Binding to the API server; here the state
already counts the pod from Reserve (assume), so binding records it."""

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.runtime.plugin import Plugin
from tensorsched.framework.runtime.status import Status


NAME = names.DEFAULT_BINDER


class DefaultBinder(Plugin):
    name = NAME
    run_safe = True             # binding always succeeds and changes nothing read later

    def sign(self, pod) -> tuple:
        return ()

    def bind(self, ctx, node_name: str) -> Status:
        ctx.bound_node = node_name
        return Status.OK


def new(args, handle):
    return DefaultBinder()
