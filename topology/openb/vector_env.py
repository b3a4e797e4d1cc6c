"""``OpenbVectorEnv``: a Gymnasium vector environment (the ``gym`` extra) of
``num_envs`` openb clusters on one node list, each environment one run of
the batched experiment (``batch``: its trace, policy and seed fix its
arrival sequence, tie rank and tie-breaks), all stepped by one call of the
batched kernel per step (``kernels.batch.env_step``, numba ``prange`` over
environments; ``backend="cuda"``: ``kernels.batch.env_cuda``, a thread
block per environment, the state kept in device memory, observations
and actions as device or host arrays).

Each step is one decision per environment: the pending pod (the next of
its run's arrivals that some node takes; pods no node takes are skipped
and recorded unplaced, as the batched engine and the Simulation leave
them) goes to the node the action names.  With traces of pods at their
own times (``batch.TraceWorkload``), the run goes through its queue
between decisions as ``batch.trace_batch`` runs it: bound pods leave at
their departure (freeing their node; the reward counts it), pods that fit
nowhere wait and retry as the Simulation's scheduling queue lets them, and
the pending pod is the next attempt some node takes: the head of activeQ,
in PrioritySort's order when the trace's pods have unequal priorities
(``TraceWorkload.rank``: the higher priority first, then the earlier
creation, then first in first out), else first in first out.  Conventions as the single
environment ``SchedulingEnv``'s where they apply:

- ``observation`` (a dict of arrays with a leading axis ``num_envs``):
  ``"nodes"`` [B, N, 6] float32 in [0, 1]: per node the allocatable cpu,
  memory and GPU milli, then what is free of each, each divided by the
  largest allocatable of that resource among the nodes; ``"pod"`` [B, 3]
  float32: the pending pod's cpu, memory and GPU milli (GPUs x milli per
  GPU) divided the same way (zeros when the episode is over);
  ``"action_mask"`` [B, N] int8: 1 on the nodes that pass the profile's
  filters for the pod (NodeResourcesFit's cpu, memory and pod count,
  GpuShareFit);
- action [B]: a node row per environment; an action outside the mask
  costs ``invalid_action_penalty`` (subtracted from the reward) and the
  default choice is applied instead;
- reward: the change of the cluster's GPU allocation (allocated GPU milli
  over the cluster's GPU milli) the decision made, less the penalty;
- ``info`` (arrays [B], each with its ``_key`` mask as Gymnasium's vector
  infos have): ``default_action`` (the row the batched engine -- and so
  the Simulation -- places the pending pod on; -1 at the end),
  ``invalid_action``, ``chosen_node`` (the row the step applied, -1 none),
  ``frag`` (the cluster's GPU fragmentation in milli), ``pod_index`` (the
  pending pod's index in the run's arrival sequence);
- ``terminated`` when a run has no pod left that a node takes;
  ``truncated`` after ``max_steps`` decisions (None: never).

Autoreset is Gymnasium 1.x's next-step mode: the step after an
environment's episode ended ignores its action, starts its run again and
returns the first observation with reward 0 and neither flag set.  Every
episode of an environment replays its run (``reset``'s ``seed`` does not
change it: the run's seed does); ``options={"reset_mask": m}`` restarts
only the environments where ``m`` is true.  Stepping every environment
with ``info["default_action"]`` reproduces ``batch.replay_batch``'s
placements (``placements``), and so ``simulate_replay``'s.
"""

from __future__ import annotations

import numpy as np

from tensorsched.framework.arguments import MAX_SEED, Arguments
from tensorsched.framework.errors import BackendError, TensorschedError
from tensorsched.kernels._errors import BackendUnavailable

from ..gpu import MILLI, GpuInventory
from . import batch as B
from . import replay as R
from .batch_sim import check_inventory, check_pods, check_workload

try:
    import gymnasium as gym
    from gymnasium import spaces
    from gymnasium.vector.utils import batch_space
except ModuleNotFoundError:       # the optional extra: one line, no chained traceback
    raise ImportError("tensorsched.topology.openb.vector_env needs gymnasium: "
                      "pip install 'tensorsched[gym]'") from None

try:
    from gymnasium.vector import AutoresetMode
    _NEXT_STEP = AutoresetMode.NEXT_STEP
except ImportError:               # gymnasium 1.0 names the mode by a string
    _NEXT_STEP = "NextStep"


BACKENDS = ("numba", "cuda")


def _device_dtype(x) -> np.dtype | None:
    """A device array's element type: its NumPy ``dtype`` (Numba, CuPy) or
    its ``__cuda_array_interface__`` type string (PyTorch, ...)."""
    dt = getattr(x, "dtype", None)
    try:
        return np.dtype(dt)
    except TypeError:
        face = getattr(x, "__cuda_array_interface__", None)
        return np.dtype(face["typestr"]) if face else None


class NotStartedError(TensorschedError, RuntimeError):
    """``step`` called before the first ``reset``."""


class OpenbVectorEnv(gym.vector.VectorEnv):
    """``num_envs = len(jobs)`` environments on ``nodes``: job ``(t, policy,
    seed)`` runs trace ``traces[t]`` under ``policy`` with ``seed`` as
    ``batch.replay_batch`` runs it (``tune`` its load); with ``traces`` of
    ``batch.TraceWorkload`` (pods arriving and leaving at their own times,
    ``trace_workload(read_openb_trace(path))``) as ``batch.trace_batch``
    runs it (the Simulation's queue: failed pods retry after departures,
    ``max_unsched`` its flush, seconds).  Arguments checked where they
    enter, a bad one an ``ArgumentError`` naming it (a hand-built node list
    or trace as ``simulate_batch`` checks it, ``batch_sim.check_inventory``
    and ``check_workload``); ``step`` refuses actions that are not
    integers.  ``backend``: ``numba`` (the CPU twin,
    ``threads`` cores) or ``cuda`` (a thread block per environment, the
    state in device memory; without a device ``BackendError``);
    ``device_arrays`` (cuda): observations as device arrays (CuPy when
    installed, else Numba device arrays) instead of host arrays, and
    actions may be given as device int64 arrays."""

    metadata = {"autoreset_mode": _NEXT_STEP, "render_modes": []}

    def __init__(self, nodes: GpuInventory, traces: list[R.TracePods], jobs: list[tuple],
                 tune: float = 1.3, invalid_action_penalty: float = 1.0,
                 max_steps: int | None = None, threads: int | None = None,
                 backend: str = "numba", device_arrays: bool = False,
                 max_unsched: float = B.DEFAULT_MAX_UNSCHED):
        args = Arguments("OpenbVectorEnv")
        if not isinstance(backend, str) or backend not in BACKENDS:
            raise args.error("backend", f"unknown backend {backend!r} for the vector "
                             f"environment; choose one of {', '.join(BACKENDS)}")
        args.flag("device_arrays", device_arrays)
        if device_arrays and backend != "cuda":
            raise args.error("device_arrays", "the observations are on the device with "
                             "backend 'cuda' only")
        args.instance("nodes", nodes, GpuInventory, "a GpuInventory (read_openb_nodes)")
        check_inventory(nodes, "nodes", function="OpenbVectorEnv")
        traces = args.sequence("traces", traces, (R.TracePods, B.TraceWorkload),
                               "TracePods (read_openb_pods) or a batch.TraceWorkload",
                               "traces", nonempty=True)
        jobs = args.sequence("jobs", jobs, (tuple, list), "a (trace index, policy, seed) tuple",
                             "(trace index, policy, seed) tuples", nonempty=True)
        for i, job in enumerate(jobs):
            if len(job) != 3:
                raise args.error(f"jobs[{i}]", f"must be a (trace index, policy, seed) tuple, "
                                 f"got {job!r}")
            t, policy, seed = job
            if not isinstance(policy, str) or policy not in R.POLICY_SEL:
                raise args.error(f"jobs[{i}]", f"unknown policy {policy!r}; choose one of "
                                 f"{', '.join(R.POLICY_SEL)}")
            args.integer(f"jobs[{i}]: trace index", t, 0, len(traces) - 1)
            args.seed(seed, f"jobs[{i}]: seed")
        try:
            tune = R.check_tune(tune)
        except ValueError as exc:
            raise args.error("tune", str(exc).removeprefix("tune ")) from None
        max_unsched = args.number("max_unsched", max_unsched, 0.0, infinite=True,
                                  unit="seconds (inf: never)")
        invalid_action_penalty = args.number("invalid_action_penalty", invalid_action_penalty)
        max_steps = args.integer("max_steps", max_steps, 1, optional=True)
        threads = args.integer("threads", threads, 1, optional=True)
        if backend == "cuda":
            try:
                from tensorsched.kernels.batch.env_cuda import EnvBatchCuda as Engine
                from tensorsched.kernels.batch.env_cuda import on_device
            except BackendUnavailable as exc:
                raise BackendError(str(exc)) from None
        else:
            from tensorsched.kernels.batch.env_step import EnvBatch as Engine
            on_device = None
        timed = [isinstance(x, B.TraceWorkload) for x in traces]
        if any(timed) and not all(timed):
            raise args.error("traces", "all TracePods (the experiment's draw) or all "
                             "TraceWorkload (pods at their own times), not a mix")
        for i, x in enumerate(traces):
            if isinstance(x, B.TraceWorkload):
                check_workload(x, f"traces[{i}]", "OpenbVectorEnv")
            else:
                check_pods(x, f"traces[{i}]", "OpenbVectorEnv")
            try:
                R.check_inputs(nodes, x.pods if isinstance(x, B.TraceWorkload) else x)
            except ValueError as exc:
                raise args.error(f"traces[{i}]", str(exc)) from None
        used = sorted({t for t, _, _ in jobs})
        index = {t: i for i, t in enumerate(used)}
        self.runs = []
        if all(timed):
            pairs = [(B.workload_of(nodes, traces[t].pods, traces[t].typical), traces[t])
                     for t in used]
            self.workloads = [wl for wl, _ in pairs]
            for t, policy, seed in jobs:
                seq = np.arange(len(traces[t].arrival), dtype=np.int64)
                self.runs.append(B.Run(index[t], policy, int(seed), seq, None))
            self.arrays = B.trace_arrays([nodes], pairs, {(0, t): index[t] for t in used},
                                         [(0, t, p, int(sd)) for t, p, sd in jobs],
                                         float(max_unsched), (1.0, 10.0))
        else:
            self.workloads = [B.workload_of(nodes, traces[t]) for t in used]
            drawn: dict = {}        # (trace, seed) -> its arrivals and ties, drawn once
            for t, policy, seed in jobs:
                key = (t, int(seed))
                if key not in drawn:
                    drawn[key] = B.arrival_and_ties(nodes, traces[t], int(seed), tune)
                seq, tie = drawn[key]
                self.runs.append(B.Run(index[t], policy, int(seed), seq, tie))
            self.arrays = B.batch_arrays(nodes, self.workloads, self.runs)
        scale = np.array([max(1, int(nodes.cpu_cap.max(initial=0))),
                          max(1, int(nodes.mem_cap.max(initial=0))),
                          max(1, int(nodes.gpu_count.max(initial=0)) * MILLI)], np.float64)
        self.engine = Engine(self.arrays, scale, threads)
        self.backend = backend
        self.device_arrays = device_arrays
        self._on_device = on_device
        self.nodes = nodes
        self.tune = tune
        self.penalty = float(invalid_action_penalty)
        self.max_steps = None if max_steps is None else int(max_steps)
        self.num_envs = len(jobs)
        n = nodes.n_nodes
        self.total_milli = float(max(1, int(nodes.gpu_count.sum()) * MILLI))
        self.single_observation_space = spaces.Dict({
            "nodes": spaces.Box(0.0, 1.0, (n, 6), np.float32),
            "pod": spaces.Box(0.0, 1.0, (3,), np.float32),
            "action_mask": spaces.MultiBinary(n),
        })
        self.single_action_space = spaces.Discrete(n)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._autoreset = np.zeros(self.num_envs, bool)
        self._steps = np.zeros(self.num_envs, np.int64)
        self._all = np.ones(self.num_envs, bool)
        self._started = False

    # -- gymnasium API ---------------------------------------------------
    def reset(self, *, seed=None, options=None):
        """Every environment's run from its start (or those of
        ``options["reset_mask"]``): (observation, info)."""
        args = Arguments("OpenbVectorEnv.reset")
        args.integer("seed", seed, 0, MAX_SEED, optional=True)
        args.mapping("options", options, optional=True)
        mask = self._all
        if options and options.get("reset_mask") is not None:
            mask = np.asarray(options["reset_mask"])
            if mask.dtype.kind not in "biu" or ((mask != 0) & (mask != 1)).any():
                raise args.error("options: reset_mask", f"must be an array of booleans, got "
                                 f"dtype {mask.dtype}")
            mask = mask.astype(bool)
            if mask.shape != (self.num_envs,):
                raise args.error("options: reset_mask", f"shape {mask.shape}, expected "
                                 f"({self.num_envs},)")
            if not self._started and not mask.all():
                raise args.error("options: reset_mask", "the first reset starts every "
                                 "environment")
        super().reset(seed=seed)            # (after the checks: a refusal changes nothing)
        self.engine.step(mask, np.zeros(self.num_envs, np.int64), hold=~mask)
        self._started = True
        self._autoreset[mask] = False
        self._steps[mask] = 0
        return self._observation(), self._info()

    def step(self, actions):
        """One decision in every environment (next-step autoreset, module
        doc): (observation, reward, terminated, truncated, info)."""
        if not self._started:
            raise NotStartedError("OpenbVectorEnv.step before reset")
        on_device = self.backend == "cuda" and self._on_device(actions)
        if not on_device:
            actions = self._host_actions(actions)
        elif _device_dtype(actions) != np.int64:
            raise Arguments("OpenbVectorEnv.step").error(
                "actions", f"a device array must hold int64 node rows, got "
                f"{_device_dtype(actions)}")
        if tuple(actions.shape) != (self.num_envs,):
            raise Arguments("OpenbVectorEnv.step").error(
                "actions", f"shape {tuple(actions.shape)}, expected ({self.num_envs},)")
        was_done = self.engine.ist[:, 2] == 1
        used0 = self.engine.fst[:, 1].copy()
        resetting = self._autoreset.copy()
        self.engine.step(resetting, actions if on_device else actions.astype(np.int64))
        ist = self.engine.ist
        invalid = ist[:, 3] == 1
        reward = (self.engine.fst[:, 1] - used0) / self.total_milli - self.penalty * invalid
        reward[resetting] = 0.0
        self._steps[resetting] = 0
        acted = ~resetting & ~was_done
        self._steps[acted] += 1
        terminated = ~resetting & (ist[:, 2] == 1)
        truncated = ~resetting & ~terminated & (
            self._steps >= self.max_steps if self.max_steps is not None
            else np.zeros(self.num_envs, bool))
        self._autoreset = terminated | truncated
        return (self._observation(), reward.astype(np.float64), terminated, truncated,
                self._info())

    # -- helpers ----------------------------------------------------------
    def _host_actions(self, actions) -> np.ndarray:
        """``actions`` as int64 node rows, refused (``ArgumentError``) unless
        integers: a float, bool, NaN or string action is a bug in the
        caller, not a node; an integer outside 0..N-1 is an invalid action
        (the penalty and the default choice, as ``SchedulingEnv``)."""
        try:
            a = np.asarray(actions)
        except (TypeError, ValueError) as exc:   # ragged nested lists
            raise Arguments("OpenbVectorEnv.step").error(
                "actions", f"must be an integer array, got {type(actions).__name__} ({exc})"
            ) from None
        if a.dtype.kind not in "iu":
            raise Arguments("OpenbVectorEnv.step").error(
                "actions", f"must be an integer array of node rows, got dtype {a.dtype}")
        if a.dtype.kind == "u":                  # past int64: outside the rows as well
            a = np.minimum(a, self.single_action_space.n).astype(np.int64)
        return a

    def _observation(self) -> dict:
        return self.engine.observation(self.device_arrays)

    def _info(self) -> dict:
        ist = self.engine.ist
        info = {"default_action": ist[:, 1].copy(), "invalid_action": ist[:, 3] == 1,
                "chosen_node": ist[:, 4].copy(), "frag": self.engine.fst[:, 0].copy(),
                "pod_index": ist[:, 0].copy()}
        for k in list(info):
            info[f"_{k}"] = self._all.copy()
        return info

    def placements(self, env: int) -> list:
        """Environment ``env``'s placements of its current episode, as
        ``ReplayResult.placements``: (pod name, row or -1, [GPU indices])
        for the pods up to the pending one (every pod once the episode is
        over; with departures a pod keeps the row it was bound to after it
        left, and a pod still waiting shows -1; with retries or ranks a pod
        after the pending one in trace order may be bound already, listed
        once the episode is over)."""
        env = Arguments("OpenbVectorEnv.placements").integer("env", env, 0, self.num_envs - 1)
        r = self.runs[env]
        off = int(self.arrays.ev_off[env])
        k = int(self.engine.ist[env, 0]) if self.engine.ist[env, 2] == 0 else len(r.seq)
        names = self.workloads[r.workload].pods.names
        node, gmask = self.engine.out_node, self.engine.out_gmask    # (cuda: downloaded once)
        out = []
        for i, j in enumerate(r.seq[:k].tolist()):
            gm = int(gmask[off + i])
            out.append((names[j], int(node[off + i]),
                        [g for g in range(16) if (gm >> g) & 1]))
        return out
