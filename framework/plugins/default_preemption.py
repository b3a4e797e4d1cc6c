"""DefaultPreemption (PostFilter): mirrors plugins/defaultpreemption/default_preemption.go.

The evaluator lives in ``tensorsched.framework.preemption.evaluator``; this plugin
holds the args (minCandidateNodesPercentage / minCandidateNodesAbsolute) and
the per-cluster pod table the victim kernel reads."""

from __future__ import annotations

from tensorsched.framework.config import plugin_names as names
from tensorsched.framework.config.plugin_args import DefaultPreemptionArgs
from tensorsched.framework.preemption.evaluator import preempt
from tensorsched.framework.runtime.plugin import Plugin


NAME = names.DEFAULT_PREEMPTION


class DefaultPreemption(Plugin):
    name = NAME
    # ``RepeatableFailurePlugin``: with no candidate, the dry run's answer
    # depends on the state and the preemptor's query, priority and policy
    # only (every potential node is visited, whatever the seeded offset),
    # and nothing was changed.
    repeats_failure = True

    def __init__(self, args: DefaultPreemptionArgs | None = None):
        self.args = args or DefaultPreemptionArgs()

    def post_filter(self, ctx, result, table, *, seed: int = 0, attempt: int = 0, **kw):
        """Run preemption for the failed cycle ``result``; a PreemptionResult."""
        return preempt(ctx.framework, ctx, result, self.args, table, plugin=self.name, seed=seed,
                       attempt=attempt, **kw)


def new(args, handle):
    return DefaultPreemption(args)
