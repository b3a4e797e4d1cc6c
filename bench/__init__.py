"""Benchmarks behind ``tensorsched bench`` and the scripts that record
``bench/results/*.json``.  Neither the framework, the kernels nor the
topology import this package; the CLI does (``harness`` and ``workloads``
for ``tensorsched bench``, ``harness.peak_rss_bytes`` for ``simulate``).
"""
