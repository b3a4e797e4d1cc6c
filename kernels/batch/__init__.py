"""Many independent clusters advanced by one kernel call (no Kubernetes
objects): B clusters with a leading cluster axis, each through its own
stream of arriving and departing pods under the openb profile
(NodeResourcesFit's cpu, memory and pod count, GpuShareFit,
GpuShareScore's six policies, a fixed per-node tie rank, the seeded
tie-break), pods that fit nowhere retried as the Simulation's scheduling
queue retries them.

- ``arrays``: the inputs of one call (node sets, workloads of pod classes
  and typical pods, runs, events) and their checks;
- ``_rules``: the per-node and per-pod rules in plain Python, compiled with
  ``njit`` for the CPU twin and with ``cuda.jit(device=True)`` for the
  CUDA kernel;
- ``_queue``: one cluster's clock and scheduling queue (the agenda,
  activeQ, backoffQ, the unschedulable pool), compiled for both;
- ``cpu``: the CPU twin (``_cluster``'s serial loop over nodes, one
  cluster per ``prange`` iteration of ``_driver``);
- ``cuda``: one thread block per cluster, threads over its nodes;
- ``pairwise``: the summation tree both use to total the cluster's
  fragmentation exactly as ``numpy.sum`` does;
- ``local_cpu`` (``_local_core``, ``_local_driver``): the default
  profile's node-local plugins (NodeResourcesFit's three strategies,
  BalancedAllocation, TaintToleration, NodeAffinity, NodeUnschedulable,
  NodeName, ImageLocality) for pods placed one after another on clusters
  cut from a shared universe of nodes (capacity probes), on the fused
  rules; ``local_cuda``: the same, one thread block per cluster;
- ``local_cpu``'s trace form (``_local_trace``, on ``_queue``): runs of
  a trace through the node-local rules on the Simulation's clock;
  ``local_trace_cuda``: the same source, thread 0 of a block per run;
- ``local_events`` (``_local_preempt_events_driver``): the trace form with timed
  node events and a scenario's Pod steps, on ``_local_preempt_events``'
  cluster function, which ``local_preempt_events`` (``_cuda``) runs with
  DefaultPreemption too;
- ``local_preempt`` (``_local_preempt``, ``_local_preempt_driver``;
  ``local_preempt_cuda``): the trace form with DefaultPreemption in its
  queue (victims, PodDisruptionBudgets, nominations);
- ``_candidates``: DefaultPreemption's numCandidates and seeded offset,
  and each row's list of its bound pods the victim search reads,
  compiled under both preemption forms (``_gpu_preempt``,
  ``_local_preempt``) for the CPU and the CUDA engines;
- ``openb_events`` (``_openb_events``, ``_openb_events_driver``;
  ``openb_events_cuda``): the openb profile's runs with timed node events;
- ``env_step``: the vectorized environment (one decision per environment
  per call: ``_env`` on the same rules, driven by ``_env_driver``;
  ``env_cuda``: its CUDA step);
- ``warp``: warp and block reductions and scans the CUDA kernels share;
  ``device_memory``: the device memory budget the cuda engines chunk by.
"""
