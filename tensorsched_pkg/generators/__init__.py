"""Seeded synthetic clusters and workloads as manifest dicts, the ones
``tensorsched.synthetic`` serves by name: ``clusters`` (scheduler_perf-like
basic, pod-to-pod and preemption workloads, the README sample,
StatefulSets, and the ``node_dict`` / ``pod_dict`` builders),
``dra_clusters`` (ResourceSlices, DeviceClasses, claim templates) and
``gpu_clusters`` (DGX-like GPU nodes and GPU-sharing pods).

May import: ``topology``, ``framework``, ``kernels``; the library never
imports this package (benchmarks, the CLI and the tests do).
"""
