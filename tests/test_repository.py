"""What the repository holds: the shared virtualenv is a symlink in each worktree, never a file
of the repository (committed twice, landing it replaced the real venv with a link to itself)."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_no_virtualenv_is_committed():
    tracked = subprocess.run(
        ["git", "ls-files", ".venv", ".venv/*"], cwd=ROOT, capture_output=True, text=True
    )
    if tracked.returncode:  # not a git checkout (an unpacked release): nothing to check
        return
    assert tracked.stdout == ""
