"""The digest of the sources a device check ran, to tie its record to a commit.

A device machine gets a copy of the working tree without ``.git``, so
``bench/gpu_check.sh`` cannot ask git which commit it runs (it takes
``GPU_CHECK_COMMIT`` when given).  This digest names the tree either way:
sha256 over every ``.py``, ``.sh`` and ``.toml`` file (path, NUL, bytes; in
path order) below the repository root, no path part starting with ``.``
(the carried ``.golden``, ``.openb``, ``.whl``, a virtualenv) or named
``__pycache__``.  Run in a checkout it reads the files git would send
(tracked, and untracked ones git does not ignore), so the two agree for
the same tree::

    python bench/gpu_check_digest.py [ROOT]     # prints the hex digest
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

SUFFIXES = (".py", ".sh", ".toml")


def _kept(rel: str) -> bool:
    parts = rel.split("/")
    return (rel.endswith(SUFFIXES) and not any(p.startswith(".") for p in parts)
            and "__pycache__" not in parts)


def source_files(root: Path) -> list[str]:
    """The digested files' paths relative to ``root``, sorted: git's list
    where ``root`` is a checkout, else a walk of the tree."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, timeout=30)
        listed = out.stdout.decode().split("\0") if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        listed = None
    if listed is None:
        listed = []
        for base, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
            rel = os.path.relpath(base, root)
            listed += [f if rel == "." else f"{rel}/{f}" for f in files]
    return sorted(p for p in listed if p and _kept(p) and (root / p).is_file())


def digest(root: Path) -> str:
    """The hex sha256 of the source files below ``root`` (see the module doc)."""
    h = hashlib.sha256()
    for rel in source_files(root):
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes())
    return h.hexdigest()


if __name__ == "__main__":
    print(digest(Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
