"""Scalar reference implementation (the oracle) of kube-scheduler's rules."""
