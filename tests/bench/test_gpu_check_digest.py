"""``bench/gpu_check_digest.py``: a checkout and a copy of its working tree
without ``.git`` (what a device gets) have the same digest; a changed
source changes it; carried dot folders and caches do not count."""

import shutil
import subprocess

import pytest

from tensorsched.bench.gpu_check_digest import digest, source_files


def _tree(root):
    (root / "pkg").mkdir()
    (root / "pkg" / "a.py").write_text("A = 1\n")
    (root / "run.sh").write_text("echo hi\n")
    (root / "pyproject.toml").write_text("[project]\n")
    (root / "notes.md").write_text("not a source\n")


def test_a_copy_without_git_has_the_checkouts_digest(tmp_path):
    if shutil.which("git") is None:
        pytest.fail("git is needed to build the checkout")
    repo = tmp_path / "repo"
    repo.mkdir()
    _tree(repo)
    (repo / ".gitignore").write_text("ignored.py\n")
    (repo / "ignored.py").write_text("X = 0\n")           # git would not send it
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "pkg", "run.sh", "pyproject.toml"],
                   check=True)
    copy = tmp_path / "copy"
    copy.mkdir()
    _tree(copy)
    for folder in (".golden", ".whl", "pkg/__pycache__"):   # carried or written there
        (copy / folder).mkdir()
        (copy / folder / "x.py").write_text("Y = 2\n")
    assert source_files(repo) == ["pkg/a.py", "pyproject.toml", "run.sh"]
    assert source_files(copy) == source_files(repo)
    assert digest(copy) == digest(repo)
    (copy / "pkg" / "a.py").write_text("A = 2\n")
    assert digest(copy) != digest(repo)
