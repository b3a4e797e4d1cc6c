"""Benchmarks behind ``tensorsched bench`` and the scripts that record
``bench/results/*.json``.  The library never imports this package.
"""
