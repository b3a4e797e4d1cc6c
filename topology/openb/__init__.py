"""The openb GPU-sharing experiment (Alibaba's openb traces, FGD paper):
trace CSVs, the workload draw and the replay of its six score policies.

- ``replay``: the paper's experiment on the GPU kernels;
- ``trace``: openb traces for ``Simulation`` and the experiment through
  the framework (``simulate_replay``);
- ``batch``: many (trace, policy, seed) runs in one batched call;
- ``vector_env``: ``OpenbVectorEnv``, the Gymnasium vector environment;
- ``limits``: the bounds of a run's inputs, without NumPy.
"""
