"""The README's import commands work as written on a fresh checkout: no SECRET_KEY, no var/."""

import os
import re
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

from importing import IMPORT_FIXTURES, home_with_history

PROJECT = Path(__file__).resolve().parent.parent
SECTION = re.compile(r"^## Import your agent history\n(.*?)^## ", re.S | re.M)
SHELL_BLOCK = re.compile(r"```sh\n(.*?)```", re.S)


def readme_import_commands() -> list[str]:
    section = SECTION.search((PROJECT / "README.md").read_text()).group(1)
    block = SHELL_BLOCK.search(section).group(1)
    return [line for line in block.splitlines() if "ledger_import" in line]


def fresh_checkout(folder: Path) -> Path:
    """A checkout without var/: manage.py and the venv, linked (Python finds the project
    through manage.py's real path)."""
    checkout = folder / "checkout"
    checkout.mkdir()
    (checkout / "manage.py").symlink_to(PROJECT / "manage.py")
    (checkout / ".venv").symlink_to(PROJECT / ".venv")
    return checkout


def test_the_readme_import_commands_work_on_a_fresh_checkout(tmp_path):
    commands = readme_import_commands()
    assert len(commands) == 2
    checkout, home = fresh_checkout(tmp_path), home_with_history(tmp_path)
    unset = {"SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE", "LEDGER_DB", "DJANGO_DB"}
    env = {k: v for k, v in os.environ.items() if k not in unset} | {"HOME": str(home)}
    for command in commands:
        result = subprocess.run(
            ["bash", "-c", command], cwd=checkout, env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, (command, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
    ledger = checkout / "var" / "mine.sqlite3"
    with closing(sqlite3.connect(ledger)) as conn:
        personas = dict(conn.execute("SELECT persona, count(*) FROM sessions GROUP BY persona"))
    claude_sessions = len(list((IMPORT_FIXTURES / "samples" / "claude-code").glob("*.jsonl")))
    assert personas == {"claude-code": claude_sessions, "codex": 1}


def test_a_command_that_serves_still_needs_the_secret_key(tmp_path):
    checkout = fresh_checkout(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run(
        [".venv/bin/python", "manage.py", "check"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr
