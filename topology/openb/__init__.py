"""The openb GPU-sharing experiment (Alibaba's openb traces, FGD paper):
trace CSVs, the workload draw and the replay of its six score policies.
"""
