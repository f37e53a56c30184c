"""The Python interpreters of this machine the wheel is tested on, found at run time."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess

# The versions the package's classifiers name, each tested by tests/e2e/test_dist.py.
MINORS = (10, 11, 12, 13)


def run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)


def pyenv_root() -> str | None:
    if os.environ.get("PYENV_ROOT"):
        return os.environ["PYENV_ROOT"]
    if shutil.which("pyenv") is None:
        return None
    found = run(["pyenv", "root"])
    return found.stdout.strip() if found.returncode == 0 else None


def interpreter(minor: int) -> str | None:
    """A Python 3.<minor> that runs: python3.<minor> on PATH (a pyenv shim only answers
    for the selected versions), else the newest of pyenv's versions/3.<minor>.*."""
    candidates = [shutil.which(f"python3.{minor}")]
    root = pyenv_root()
    if root:
        pattern = os.path.join(root, "versions", f"3.{minor}.*", "bin", f"python3.{minor}")
        found = glob.glob(pattern)
        # Newest first, by number: 3.10.13 before 3.10.9.
        candidates += sorted(found, key=lambda p: [int(n) for n in re.findall(r"\d+", p)])[::-1]
    for candidate in filter(None, candidates):
        probe = run([candidate, "-c", "import sys; print(sys.version_info[:2])"])
        if probe.returncode == 0 and probe.stdout.strip() == f"(3, {minor})":
            return candidate
    return None
