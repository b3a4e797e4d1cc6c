"""How the batched twin is compiled (``kernels.batch.cpu``): the cluster
loop and the vector environment keep every rule and queue step inlined,
DefaultPreemption's steps call the ones named in ``COLD_CALLED`` (one
compiled copy each) and inline the rest, and the loop runs the
preemption's steps of that namespace.  Nothing here compiles (the
answers: ``tests/topology/openb/test_batch_preempt.py`` and the other
twin tests)."""
from tensorsched.kernels._compile import KEY, module_functions
from tensorsched.kernels.batch import _gpu_preempt, _queue, _rules, cpu


def _inline(ns, name):
    return ns[name].targetoptions["inline"]


def test_the_loop_inlines_every_rule_and_queue_step():
    for name in module_functions(_rules) + module_functions(_queue):
        assert _inline(cpu.env_ns, name) == "always", name
        assert _inline(cpu._cluster_ns, name) == "always", name


def test_preemption_calls_the_cold_steps_and_inlines_the_rest():
    assert set(cpu.COLD_CALLED) <= set(module_functions(_rules) + module_functions(_queue))
    for name in module_functions(_rules) + module_functions(_queue):
        want = "never" if name in cpu.COLD_CALLED else "always"
        assert _inline(cpu.preempt_ns, name) == want, name


def test_the_loop_runs_the_preemption_namespace_steps():
    for name in module_functions(_gpu_preempt):
        assert cpu._cluster_ns[name] is cpu.preempt_ns[name], name


def test_every_choice_has_its_own_cache_key():
    keys = {cpu.compile_twin(c)[-2][KEY] for c in (None, cpu.COLD_CALLED, cpu.COLD_CALLED[:1])}
    # (all None where the cache directory cannot be written: nothing is kept)
    assert keys == {None} or (len(keys) == 3 and None not in keys)
