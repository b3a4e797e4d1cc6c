"""The benchmark harness's tests (a package: ``test_workloads`` is also a
name under tests/framework/parsing/)."""
