"""``bench.preempt_pdb``: the preemption workload with PDBs over its pods.
Every preemptor still preempts; the victims differ from the run without
PDBs where the budgets make evictions violate (the ``fixed`` PDB allows
2 disruptions, a preemptor needs 4 victims), and the numpy and numba
backends agree."""

from __future__ import annotations

import pytest

from tensorsched.bench import preempt_pdb


def test_budgets_change_the_victims_and_the_backends_agree():
    plain = preempt_pdb.run(12, 3, 0, "numba")
    numba = preempt_pdb.run(12, 3, 3, "numba")
    numpy = preempt_pdb.run(12, 3, 3, "numpy")
    assert plain["preemptions"] == numba["preemptions"] == 3
    assert numba["placements_sha256"] == numpy["placements_sha256"]
    assert numba["placements_sha256"] != plain["placements_sha256"]
    assert numba["pdbs"] == 3 and numba["p50_us"] > 0


def test_a_bad_size_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        preempt_pdb.main(["--nodes", "0"])
    assert exc.value.code == 2
    assert "--nodes must be at least 1 (got 0)" in capsys.readouterr().err
