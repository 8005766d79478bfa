"""`ledger_demo --extra-requests-scale`: the benchmark ledger's knob for the requests that run no
agent (hooks, denials, early failures, timers, webhooks), leaving everything else as it was."""

import sqlite3
from contextlib import closing

import pytest
from django.core.management import CommandError, call_command

NOW = 1_760_000_000_000
AGENT_TABLES = ("sessions", "turns", "messages", "tool_calls", "compactions")


def build(path, *extra):
    call_command("ledger_demo", str(path), "--scale", "0.2", "--seed", "7", "--now", str(NOW),
                 *extra, verbosity=0)  # fmt: skip
    return path


def snapshot(path) -> dict[str, object]:
    """What a reader sees: the Agents Ledger's ids, and the requests split by agent or none."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        out: dict[str, object] = {
            t: conn.execute(f"SELECT group_concat(rowid || ':' || {key}) FROM {t}").fetchone()[0]
            for t, key in zip(AGENT_TABLES, ("id", "id", "id", "id", "turn_id"), strict=True)
        }
        out["agent requests"] = conn.execute(
            "SELECT group_concat(id) FROM nexus_requests WHERE turn_id IS NOT NULL"
        ).fetchone()[0]
        out["other requests"] = conn.execute(
            "SELECT count(*) FROM nexus_requests WHERE turn_id IS NULL"
        ).fetchone()[0]
    return out


def test_it_changes_only_the_requests_that_run_no_agent(tmp_path):
    default = snapshot(build(tmp_path / "default.sqlite3"))
    fewer = snapshot(build(tmp_path / "fewer.sqlite3", "--extra-requests-scale", "0.05"))
    assert {k: v for k, v in fewer.items() if k != "other requests"} == {
        k: v for k, v in default.items() if k != "other requests"
    }
    # At scale 0.2 the demo writes round(3,850 × 0.2) = 770 such requests, at 0.05 only 192;
    # the few still in flight (not reached an agent yet) do not depend on it.
    assert default["other requests"] - fewer["other requests"] == 770 - 192


def test_a_negative_value_is_refused(tmp_path):
    with pytest.raises(CommandError, match="--extra-requests-scale"):
        build(tmp_path / "x.sqlite3", "--extra-requests-scale", "-1")
    assert not (tmp_path / "x.sqlite3").exists()
