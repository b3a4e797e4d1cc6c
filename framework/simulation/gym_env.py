"""``SchedulingEnv``: a Gymnasium environment for learning schedulers (the
``gym`` extra), stepping the same ``Simulation`` and ``Scheduler``.

Each step is one scheduling decision: the scheduler's cycle for a pod found
feasible nodes, the agent picks one, and the pod goes on through the
normal binding cycle (Reserve, Permit, Bind, events) on that node.  The
agent is the Scheduler's ``choose_node`` hook: the simulation runs on a
worker thread that blocks in the hook until ``step`` hands it the action,
so between two decisions the simulation runs its events (arrivals,
departures, node changes, backoff) exactly as ``Simulation.run()`` does.
A pod that fits nowhere takes the normal failure path (FailedScheduling,
PostFilter/preemption, backoff, the unschedulable pool) without asking the
agent.  Compiled runs are off (one cycle per pod).  The two threads never
run at once: the state is read only while the simulation waits.

Spaces (``F`` = ``len(features)``, ``N`` = ``max_nodes``; an action is a
node row of the cluster state, rows stay with their node while it lives):

- ``"nodes"``: Box [N, 2F] float32 in [0, 1]: allocatable of each feature
  resource, then what is free (allocatable - requested), each divided by
  the largest allocatable of that resource among the live nodes; rows
  without a live node are 0;
- ``"pod"``: Box [F] float32 in [0, 1]: the pending pod's requests, divided
  the same way (``pods`` counts 1);
- ``"action_mask"``: MultiBinary [N] int8: 1 on the nodes that pass every
  filter for the pod (as ``explain`` evaluates them: every node, with the
  pods nominated by preemption counted);
- ``"scores"`` (``scores=True``): Box [N] float32 in [0, 1]: the default
  scheduler's weighted total score per feasible node over the best one's.

Action: Discrete(N), a node row.  An action outside the mask costs
``invalid_action_penalty`` (subtracted from the reward) and the default
scheduler's choice is applied instead (the pod is not retried).

Rewards of a step (from its decision to the next decision or the end):

- ``"allocation"``: the change of the allocation fraction (the mean over
  the feature resources with capacity of requested / allocatable, summed
  over the live nodes); an episode's rewards sum to the allocation at its
  end minus at its first decision;
- ``"fragmentation"``: minus the change of ``fragmentation(cluster)`` (a
  callable, or the name of one of ``metrics``, e.g. ``gpu_frag_pct`` of
  ``tensorsched.topology.sim_metrics.gpu_metrics(typical)``; None counts 0);
- ``"latency"``: minus the pod-seconds spent pending during the step (each
  pod from its arrival until bound or deleted); an episode's rewards sum to
  minus the pending time accrued after its first decision;
- a callable ``reward(sim, info) -> float``.

``info`` (new dicts each call): ``time`` (simulated seconds), ``pod`` (the
pending pod's ``namespace/name``, None at the end), ``default_action`` and
``default_node`` (the default scheduler's choice for it: the row and node
its own cycle selected, seeded tie-break included; -1/None at the end),
``decisions`` (made so far); after a step also ``chosen_pod``,
``chosen_node``, ``chosen_default_node`` and ``invalid_action`` for the
decision the step applied.

Episodes end (``terminated``) when ``Simulation.run()`` would return: the
trace is exhausted and nothing can change any more; ``truncated`` when
``max_steps`` decisions were made or ``max_time`` simulated seconds passed
with something still to come.  An episode that ends before its first
decision is returned by ``reset`` as final (pod zeros, empty mask): a
``step`` then returns ``terminated`` at once.
"""

from __future__ import annotations

import contextlib
import copy
import os
import queue
import threading
from collections.abc import Callable, Mapping
from typing import ClassVar

import numpy as np
import pyarrow as pa

from tensorsched.framework.arguments import MAX_LISTED_PODS, MAX_OBJECTS, Arguments
from tensorsched.framework.parsing.manifests import load_objects
from tensorsched.framework.scheduler.cluster import Cluster, build_cluster

from .simulation import Simulation, SimulationError, check_scheduler_options
from .trace import MAX_SECONDS, Trace, read_trace

try:
    import gymnasium as gym
    from gymnasium import spaces
except ModuleNotFoundError:       # the optional extra: one line, no chained traceback
    raise ImportError("tensorsched.SchedulingEnv needs gymnasium: "
                      "pip install 'tensorsched[gym]'") from None

ENV_ID = "tensorsched/Scheduling-v0"
REWARDS = ("allocation", "fragmentation", "latency")


class _Aborted(BaseException):
    """Unwinds the simulation thread when an episode is abandoned (a
    BaseException, so no ``except Exception`` on the way swallows it)."""


class _Decision:
    """What the hook saw for one pod: its record, the default row, the
    feasible rows and their weighted totals (numpy arrays over state rows)."""

    __slots__ = ("default_row", "pod", "rows", "totals")

    def __init__(self, pod, default_row, rows, totals):
        self.pod, self.default_row, self.rows, self.totals = pod, default_row, rows, totals


def _decide(sched, pod, fw, result) -> _Decision:
    """The feasible nodes and scores of ``pod`` on every node (``explain``'s
    evaluation), with the nominated pods counted as the cycle counted them."""
    state = sched.cluster.state
    with sched.nominated_counted(pod):
        full = fw.run_cycle(state, pod, seed=sched.seed, all_nodes=True, want_scores=True)
    ok = np.asarray(full.reasons) == 0
    rows = np.asarray(full.rows, np.int64)[ok]
    totals = np.asarray(full.total, np.int64)[ok]
    return _Decision(pod, int(result.selected_row), rows, totals)


class _Episode:
    """One Simulation run on a worker thread, paused in the Scheduler's
    ``choose_node`` hook at every decision (lockstep with the caller)."""

    def __init__(self, sim: Simulation, until: float | None):
        self.sim = sim
        self._to_env: queue.SimpleQueue = queue.SimpleQueue()
        self._to_sim: queue.SimpleQueue = queue.SimpleQueue()
        self.waiting = False              # the worker waits in the hook for an action
        self.finished = False
        sim.scheduler.choose_node = self._choose
        self._thread = threading.Thread(target=self._main, args=(until,), daemon=True,
                                        name="tensorsched-gym-episode")

    def start(self) -> _Decision | None:
        self._thread.start()
        return self._receive()

    def act(self, row: int) -> _Decision | None:
        """Bind the pending pod on ``row``; the next decision (None: the run ended)."""
        self.waiting = False
        self._to_sim.put(row)
        return self._receive()

    def abort(self) -> None:
        """Abandon the episode: unwind the worker and wait for it."""
        while self._thread.is_alive():
            if not self.waiting:
                kind, _ = self._to_env.get()      # it was running: its next message
                if kind != "decide":
                    break
            self.waiting = False
            self._to_sim.put(None)
            self._thread.join()
        self.finished = True

    # ------------------------------------------------------ worker side
    def _main(self, until) -> None:
        try:
            self.sim.run(until)
        except _Aborted:
            return
        except BaseException as exc:          # noqa: BLE001 - re-raised by the caller
            self._to_env.put(("error", exc))
            return
        self._to_env.put(("done", None))

    def _choose(self, pod, fw, result) -> int:
        self._to_env.put(("decide", _decide(self.sim.scheduler, pod, fw, result)))
        row = self._to_sim.get()
        if row is None:
            raise _Aborted
        return row

    # ------------------------------------------------------ caller side
    def _receive(self) -> _Decision | None:
        kind, payload = self._to_env.get()
        if kind == "decide":
            self.waiting = True
            return payload
        self._thread.join()
        self.finished = True
        if kind == "error":
            raise payload
        return None


class _PendingTime:
    """Pod-seconds spent pending: each pod from its arrival until it is
    bound or leaves (fed the simulation's events on its thread)."""

    def __init__(self, state):
        self.state = state
        self.since: dict[str, float] = {}       # pending pod -> when it started waiting
        self.sum_since = 0.0
        self.closed = 0.0

    def __call__(self, e: dict) -> None:
        ev, key, t = e["event"], e["pod"], e["time"]
        if ev == "Arrived":
            if key not in self.state.pods:          # a pod that arrives bound never waits
                self._open(key, t)
        elif ev == "AssumeExpired":                 # forgotten and requeued: waits again
            self._open(key, t)
        elif ev in ("Bound", "Departed", "Deleted", "Evicted", "Preempted"):
            t0 = self.since.pop(key, None)
            if t0 is not None:
                self.sum_since -= t0
                self.closed += t - t0

    def _open(self, key: str, t: float) -> None:
        if key not in self.since:
            self.since[key] = t
            self.sum_since += t

    def total(self, now: float) -> float:
        return self.closed + len(self.since) * now - self.sum_since


MAX_NODES = 10_000_000      # observation rows (the largest cluster the bench builds)


class SchedulingEnv(gym.Env):
    """A cluster and its scheduler as a Gymnasium environment (module doc).

    ``cluster``: Kubernetes objects, a manifest path, or a factory
    ``() -> Cluster | objects`` called for every episode (a ``Cluster``
    itself is changed by a run: pass a factory); ``config`` (with objects
    or a path) a KubeSchedulerConfiguration.  ``trace``: what arrives: an
    Arrow table of the trace schema (``templates`` beside it), a ``Trace``,
    a trace file path, Pod dicts (all at time 0), or ``trace(rng) -> one of
    those`` called per episode with the environment's
    ``numpy.random.Generator``.  ``setup(sim)``: called on every new
    Simulation before it runs (scenario steps, more submissions, ``sim.on``
    subscriptions).

    ``seed``: the Simulation's seed (tie-breaks) of the first episode and
    the environment generator's until ``reset(seed=s)`` (then ``s``); a
    later ``reset()`` without a seed draws the episode's seed from that
    generator, so a sequence of episodes is a function of the seeds given.

    ``max_nodes``: node rows in the observation (default: the nodes of the
    cluster at construction).  ``features``: resource names (each a column
    of the cluster state).  ``reward``, ``fragmentation``: see the module
    doc; ``scores``: add the ``"scores"`` observation.
    ``invalid_action_penalty``: subtracted from the reward of an action
    outside the mask.  ``max_steps`` (decisions), ``max_time`` (simulated
    seconds): truncation.  ``backend``, ``interval``, ``metrics``,
    ``registry`` and other keyword arguments go to the ``Simulation``
    (``batch`` is always False: pod by pod)."""

    metadata: ClassVar[dict] = {"render_modes": []}

    def __init__(self, cluster, trace=None, *, config=None, backend: str = "numba",
                 seed: int = 0, max_nodes: int | None = None,
                 features=("cpu", "memory"), reward="allocation", fragmentation=None,
                 metrics: dict | None = None, scores: bool = True,
                 invalid_action_penalty: float = 1.0, max_steps: int | None = None,
                 max_time: float | None = None, setup: Callable | None = None,
                 templates=None, interval: float | None = 60.0, registry=None,
                 **scheduler_options):
        if isinstance(cluster, Cluster):
            raise SimulationError("SchedulingEnv: a Cluster is changed by a run; pass its "
                                  "objects, a path, or a factory that builds a fresh one")
        args = Arguments("SchedulingEnv")
        check_scheduler_options(args, scheduler_options)
        if "batch" in scheduler_options:
            raise args.error("batch", "the environment decides one pod at a time (no "
                             "compiled runs): it takes no batch")
        if isinstance(cluster, (str, os.PathLike)):
            cluster = load_objects(args.path("cluster", cluster))
        elif not callable(cluster):
            cluster = args.sequence("cluster", cluster, items="object dicts (or a path of "
                                    "manifests, or a factory of a Cluster)", limit=MAX_OBJECTS)
        if isinstance(trace, (str, os.PathLike)):
            trace = args.path("trace", trace)
        elif trace is not None and not callable(trace) and not isinstance(
                trace, (pa.Table, pa.RecordBatch, Trace, dict)):
            trace = args.sequence("trace", trace, items="Pod dicts (or a trace table, a Trace, "
                                  "a path, or a function of the episode's generator)",
                                  limit=MAX_LISTED_PODS)
        templates = args.sequence("templates", templates, item="a pod spec", items="pod specs",
                                  optional=True, limit=MAX_LISTED_PODS)
        backend, seed = args.backend(backend), args.seed(seed)
        max_nodes = args.integer("max_nodes", max_nodes, 1, MAX_NODES, optional=True)
        features = args.names("features", features, nonempty=True)
        invalid_action_penalty = args.number("invalid_action_penalty", invalid_action_penalty)
        max_steps = args.integer("max_steps", max_steps, 1, optional=True)
        max_time = args.number("max_time", max_time, 0.0, MAX_SECONDS, optional=True,
                               unit="seconds")
        args.callback("setup", setup, optional=True)
        args.flag("scores", scores)
        # the caller's dicts as they are now: changed later (between resets),
        # they would make later episodes another environment's
        self._cluster = cluster if callable(cluster) else copy.deepcopy(cluster)
        self._config = copy.deepcopy(config) if isinstance(config, Mapping) else config
        self._trace = copy.deepcopy(trace) if isinstance(trace, (list, dict)) else trace
        self._templates = copy.deepcopy(templates)
        self._setup = setup
        self._backend = backend
        self._seed = seed
        self._sim_options = dict(scheduler_options, interval=interval, metrics=metrics,
                                 registry=registry, batch=False)
        self._reward = self._reward_fn(reward, fragmentation, metrics)
        self.invalid_action_penalty = invalid_action_penalty
        self.max_steps = max_steps
        self.max_time = max_time

        probe = self._source()
        if not isinstance(probe, Cluster):
            probe = build_cluster(probe, config, registry)
        names = probe.state.resources.index
        self.features = tuple(features)
        unknown = [f for f in self.features if f not in names]
        if not self.features or unknown:
            raise SimulationError(f"features: {unknown or 'none given'}; the cluster's "
                                  f"resources are {', '.join(names)}")
        self._cols = np.array([names[f] for f in self.features], np.int64)
        self.max_nodes = max_nodes if max_nodes is not None else max(probe.state.n_rows, 1)
        f, n = len(self.features), self.max_nodes
        obs = {"nodes": spaces.Box(0.0, 1.0, (n, 2 * f), np.float32),
               "pod": spaces.Box(0.0, 1.0, (f,), np.float32),
               "action_mask": spaces.MultiBinary(n)}
        if scores:
            obs["scores"] = spaces.Box(0.0, 1.0, (n,), np.float32)
        self.observation_space = spaces.Dict(obs)
        self.action_space = spaces.Discrete(n)
        self._episode: _Episode | None = None
        self._decision: _Decision | None = None
        self._pending: _PendingTime | None = None
        self._decisions = 0
        self._measure = 0.0
        self._mask = np.zeros(n, np.int8)

    # ------------------------------------------------------------ inputs
    def _source(self):
        """What a new episode's Simulation is made of: a Cluster, or objects
        (then the Simulation builds it, and its snapshots carry them)."""
        if not callable(self._cluster):
            return list(self._cluster)
        c = self._cluster()
        return c if isinstance(c, Cluster) else Arguments("SchedulingEnv").sequence(
            "cluster()", c, items="object dicts (or a Cluster) from the factory",
            limit=MAX_OBJECTS)

    def _submit(self, sim: Simulation) -> None:
        tr = self._trace
        if callable(tr) and not isinstance(tr, Trace):
            tr = tr(self.np_random)
        if tr is None:
            return
        if isinstance(tr, (str, os.PathLike)):
            tr = read_trace(tr, self._templates)
        if isinstance(tr, (pa.Table, pa.RecordBatch, Trace)):
            if len(tr):                  # an empty trace: nothing arrives
                sim.submit(tr, templates=self._templates)
        else:
            pods = [tr] if isinstance(tr, dict) else Arguments("SchedulingEnv").sequence(
                "trace(rng)", tr, items="Pod dicts (or a trace table, a Trace or a path)",
                limit=MAX_LISTED_PODS)
            if pods:
                sim.submit(pods)

    @staticmethod
    def _reward_fn(reward, fragmentation, metrics):
        """(kind, callable): the measure a step's reward is the change of, or
        the user's reward."""
        if callable(reward):
            return "callable", reward
        if reward not in REWARDS:
            raise SimulationError(f"reward must be one of {', '.join(REWARDS)} or a callable "
                                  f"(sim, info) -> float, got {reward!r}")
        if reward != "fragmentation":
            return reward, None
        fn = fragmentation
        if fn is None and metrics and "gpu_frag_pct" in metrics:
            fn = "gpu_frag_pct"
        if isinstance(fn, str):
            if not metrics or fn not in metrics:
                raise SimulationError(f"fragmentation={fn!r} is not one of metrics "
                                      f"({', '.join(metrics or {}) or 'none given'})")
            fn = metrics[fn]
        if not callable(fn):
            raise SimulationError("reward='fragmentation' needs fragmentation=fn(cluster) -> "
                                  "float or the name of one of metrics (e.g. tensorsched."
                                  "topology.sim_metrics.gpu_metrics(typical), gpu_frag_pct)")
        return reward, fn

    # ------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """A new episode (a fresh Simulation of the same inputs) up to its
        first decision: (observation, info)."""
        if seed is not None:
            seed = Arguments("SchedulingEnv.reset").seed(seed)
            super().reset(seed=seed)
            self._seed = seed
        elif self._np_random is None:
            # never seeded: the constructor's seed, which later episodes follow
            super().reset(seed=self._seed)
        else:
            self._seed = int(self.np_random.integers(2**31))
        self._close_episode()
        source = self._source()
        config = None if isinstance(source, Cluster) else self._config
        sim = Simulation(source, config, self._backend, self._seed, **self._sim_options)
        self._pending = _PendingTime(sim.cluster.state)
        sim.on("*", self._pending)
        self._submit(sim)
        if self._setup is not None:
            self._setup(sim)
        self._episode = _Episode(sim, self.max_time)
        self._decisions = 0
        self._decision = self._episode.start()
        self._measure = self._measured()
        return self._observation(), self._info()

    def step(self, action):
        """Apply ``action`` (a node row) to the pending pod and run to the
        next decision: (observation, reward, terminated, truncated, info)."""
        ep = self._episode
        if ep is None:
            raise SimulationError("SchedulingEnv: call reset() before step()")
        d = self._decision
        if d is None or ep.finished:     # the episode is over (or ended before a decision)
            return self._observation(), 0.0, True, False, self._info()
        # a row outside the mask (or the rows) is an invalid action, not an error
        row = Arguments("SchedulingEnv.step").integer("action", action)
        valid = 0 <= row < self.max_nodes and bool(self._mask[row])
        if not valid:
            row = d.default_row
        state = ep.sim.cluster.state
        chosen = {"chosen_pod": d.pod.key, "chosen_node": state.node_name(row),
                  "chosen_default_node": state.node_name(d.default_row),
                  "invalid_action": not valid}
        self._decisions += 1
        self._decision = ep.act(row)
        info = self._info()
        info.update(chosen)
        before, self._measure = self._measure, self._measured()
        if self._reward[0] == "callable":
            r = float(self._reward[1](ep.sim, info))
        elif self._reward[0] == "allocation":
            r = self._measure - before
        else:                            # fragmentation, latency: less is better
            r = before - self._measure
        if not valid:
            r -= self.invalid_action_penalty
        terminated = truncated = False
        if self._decision is None:
            sim = ep.sim
            more = bool(sim.agenda) or len(sim.scheduler.queue) + len(sim.scheduler.waiting) > 0
            truncated = self.max_time is not None and more
            terminated = not truncated
        elif self.max_steps is not None and self._decisions >= self.max_steps:
            truncated = True
        return self._observation(), float(r), terminated, truncated, info

    def close(self):
        self._close_episode()
        super().close()

    def __del__(self):
        # a dropped environment lets its simulation thread go (at interpreter
        # shutdown the queues may be gone already)
        with contextlib.suppress(Exception):
            self._close_episode()

    def _close_episode(self) -> None:
        ep = getattr(self, "_episode", None)
        if ep is not None:
            ep.abort()
            self._decision = None

    # ------------------------------------------------------- observations
    @property
    def simulation(self) -> Simulation | None:
        """The current episode's Simulation (read it between steps)."""
        return self._episode.sim if self._episode is not None else None

    @property
    def pending_pod(self):
        """The PodRecord the agent decides on now (None when the episode ended)."""
        return self._decision.pod if self._decision is not None else None

    def _measured(self) -> float:
        """The quantity whose change is a step's reward (0 for a callable)."""
        kind, fn = self._reward
        sim = self._episode.sim
        if kind == "allocation":
            return self.allocation()
        if kind == "fragmentation":
            v = fn(sim.cluster)
            return 0.0 if v is None else float(v)
        if kind == "latency":
            return self._pending.total(sim.now)
        return 0.0

    def allocation(self) -> float:
        """The allocation fraction now: the mean over the feature resources
        with capacity of requested / allocatable over the live nodes."""
        state = self._episode.sim.cluster.state
        rows = state.valid_rows()
        alloc = state.allocatable[rows][:, self._cols].sum(axis=0)
        req = state.requested[rows][:, self._cols].sum(axis=0)
        has = alloc > 0
        return float(np.mean(req[has] / alloc[has])) if has.any() else 0.0

    def _observation(self) -> dict:
        state = self._episode.sim.cluster.state
        n, f = self.max_nodes, len(self.features)
        if state.n_rows > n:
            raise SimulationError(f"SchedulingEnv: the cluster has {state.n_rows} node rows, "
                                  f"more than max_nodes={n}; raise max_nodes")
        rows = state.valid_rows()
        alloc = state.allocatable[rows][:, self._cols].astype(np.float64)
        free = np.maximum(alloc - state.requested[rows][:, self._cols], 0)
        top = alloc.max(axis=0) if len(rows) else np.zeros(f)
        scale = np.divide(1.0, top, out=np.zeros(f), where=top > 0)
        nodes = np.zeros((n, 2 * f), np.float32)
        nodes[rows, :f] = alloc * scale
        nodes[rows, f:] = free * scale
        pod = np.zeros(f, np.float32)
        mask = np.zeros(n, np.int8)
        scores = np.zeros(n, np.float32)
        d = self._decision
        if d is not None:
            req = np.array([1 if name == "pods" else d.pod.requests.get(name, 0)
                            for name in self.features], np.float64)
            pod[:] = np.clip(req * scale, 0.0, 1.0)
            mask[d.rows] = 1
            best = d.totals.max() if len(d.totals) else 0
            if best > 0:
                scores[d.rows] = np.clip(d.totals / best, 0.0, 1.0)
        self._mask = mask
        obs = {"nodes": nodes, "pod": pod, "action_mask": mask.copy()}
        if "scores" in self.observation_space.spaces:
            obs["scores"] = scores
        return obs

    def _info(self) -> dict:
        sim = self._episode.sim
        d = self._decision
        info = {"time": float(sim.now), "pod": None, "default_action": -1,
                "default_node": None, "decisions": self._decisions}
        if d is not None:
            info.update(pod=d.pod.key, default_action=d.default_row,
                        default_node=sim.cluster.state.node_name(d.default_row))
        return info


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="tensorsched.framework.simulation.gym_env:SchedulingEnv")
