"""What ledger_import does with input it cannot use: a refused input leaves nothing behind, a bad
line costs that line only (and a non-zero exit), and an empty file is said to be empty whatever
the format."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from importing import IMPORT_FIXTURES, json_objects, one, run_import

CLAUDE = IMPORT_FIXTURES / "claude-code"
CODEX_ROLLOUT = next((IMPORT_FIXTURES / "codex").glob("rollout-*.jsonl"))
NOT_A_TRANSCRIPT = CLAUDE / "not-a-transcript.txt"
DEEP = 100_000


def refused_run(fmt: str, *paths, ledger) -> str:
    out = StringIO()
    with pytest.raises(CommandError, match="refused"):
        call_command("ledger_import", fmt, *map(str, paths), "--ledger", str(ledger), stdout=out)
    return out.getvalue()


# ----- a refused import -------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_a_refused_import_leaves_no_ledger_and_no_folder_behind(tmp_path, fmt):
    dest = tmp_path / "new-folder" / "mine.sqlite3"
    out = refused_run(fmt, NOT_A_TRANSCRIPT, ledger=dest)
    assert not dest.parent.exists()
    assert list(tmp_path.iterdir()) == []
    first = out.splitlines()[0]
    assert first == f"Nothing imported: no ledger was created at {dest}"
    assert "Created a new ledger" not in out and "Imported" not in out
    assert f"Refused {NOT_A_TRANSCRIPT}" in out


def test_a_refused_import_leaves_an_existing_ledger_as_it_was(tmp_path):
    dest = tmp_path / "l.sqlite3"
    run_import("claude-code", CLAUDE / "rewind.jsonl", ledger=dest)
    before = dest.read_bytes()
    out = refused_run("claude-code", NOT_A_TRANSCRIPT, ledger=dest)
    assert dest.exists() and one(dest, "SELECT count(*) FROM sessions") == 1
    assert out.splitlines()[0] == f"Imported claude-code into {dest}"
    assert "sessions added: 0" in out
    assert len(dest.read_bytes()) == len(before)


def test_sessions_added_counts_only_new_sessions(tmp_path):
    dest = tmp_path / "l.sqlite3"
    first = run_import(
        "claude-code", CLAUDE / "rewind.jsonl", CLAUDE / "compaction.jsonl", ledger=dest
    )
    second = run_import("claude-code", CLAUDE / "rewind.jsonl", ledger=dest)
    assert "sessions added: 2" in first
    assert "sessions added: 0" in second
    assert "sessions: 0 added, 1 already there" in second


# ----- one bad line loses one line --------------------------------------------------------------


def with_bad_lines(source, folder, *bad: str):
    """A copy of `source` with each bad line inserted after its first line."""
    lines = source.read_text().splitlines()
    copy = folder / source.name
    copy.write_text("\n".join([lines[0], *bad, *lines[1:]]) + "\n")
    return copy


BAD_LINES = {
    "nested": "[" * DEEP + "]" * DEEP,
    "nested object": '{"a": ' * DEEP + "1" + "}" * DEEP,
    "lone surrogate": json.dumps({"type": "user", "uuid": "x", "text": "\\ud800"}).replace(
        "\\\\ud800", "\\ud800"
    ),
}


@pytest.mark.parametrize(("fmt", "source"), [("claude-code", CLAUDE / "rewind.jsonl"),
                                             ("codex", CODEX_ROLLOUT)])  # fmt: skip
def test_a_bad_line_is_skipped_and_reported_and_its_session_kept(tmp_path, fmt, source):
    clean = tmp_path / "clean.sqlite3"
    run_import(fmt, source, ledger=clean)
    copy = with_bad_lines(source, tmp_path, *BAD_LINES.values())
    assert "\\ud800" in copy.read_text()  # the surrogate is in the file as JSON writes it

    dest = tmp_path / "l.sqlite3"
    out = StringIO()
    with pytest.raises(CommandError, match="3 malformed record\\(s\\) skipped"):
        call_command("ledger_import", fmt, str(copy), "--ledger", str(dest), stdout=out)
    summary = out.getvalue()
    assert "Sessions left out entirely" not in summary
    assert f"{copy}:2: nested too deeply to read" in summary
    assert f"{copy}:3: nested too deeply to read" in summary
    assert f"{copy}:4: holds a lone surrogate" in summary
    for table in ("sessions", "turns", "messages", "tool_calls"):
        count = f"SELECT count(*) FROM {table}"
        assert one(dest, count) == one(clean, count) > 0, table


def test_a_surrogate_pair_is_text_and_imported(tmp_path):
    """An emoji written as a JSON surrogate pair is text, not a bad line."""
    source = CLAUDE / "rewind.jsonl"
    lines = source.read_text().splitlines()
    first_prompt = next(i for i, line in enumerate(lines) if '"type": "user"' in line)
    data = json.loads(lines[first_prompt])
    data["message"]["content"] = "Fix it \U0001f600"
    lines[first_prompt] = json.dumps(data)  # ensure_ascii: written as \ud83d\ude00
    assert "\\ud83d\\ude00" in lines[first_prompt]
    copy = tmp_path / source.name
    copy.write_text("\n".join(lines) + "\n")
    dest = tmp_path / "l.sqlite3"
    run_import("claude-code", copy, ledger=dest)
    assert one(dest, "SELECT content FROM messages WHERE id = ?", data["uuid"]) == "Fix it 😀"


# ----- empty files ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
@pytest.mark.parametrize("content", ["", "\n  \n"])
def test_an_empty_file_is_said_to_be_empty_in_every_format(tmp_path, fmt, content):
    empty = tmp_path / "rollout-empty.jsonl"
    empty.write_text(content)
    dest = tmp_path / "out" / "l.sqlite3"
    out = run_import(fmt, empty, ledger=dest)  # not refused: exit 0
    assert f"Empty files (nothing to import): 1\n  {empty}\n" in out
    assert "Refused" not in out
    assert not dest.exists()


@pytest.mark.parametrize(("fmt", "source"), [("claude-code", CLAUDE / "rewind.jsonl"),
                                             ("codex", CODEX_ROLLOUT)])  # fmt: skip
def test_an_empty_file_in_a_folder_is_listed_and_the_others_imported(tmp_path, fmt, source):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / source.name).write_bytes(source.read_bytes())
    (folder / "rollout-2025-empty.jsonl").write_text("")
    dest = tmp_path / "l.sqlite3"
    out = run_import(fmt, folder, ledger=dest)
    assert f"Empty files (nothing to import): 1\n  {folder / 'rollout-2025-empty.jsonl'}" in out
    sessions = {r.get("sessionId") or r.get("payload", {}).get("id") for r in json_objects(source)}
    assert one(dest, "SELECT count(*) FROM sessions") == 1
    assert one(dest, "SELECT id FROM sessions") in sessions


@pytest.mark.parametrize("written_before", [0, 1])
def test_an_interrupted_import_into_a_new_ledger_keeps_what_it_wrote(
    tmp_path, monkeypatch, written_before
):
    """Ctrl-C halfway: sessions already written stay (a rerun adds the rest); a new ledger
    with nothing in it yet is taken away."""
    from importers.management.commands import ledger_import

    calls = []

    def write_then_interrupt(conn, bundle, report):
        if len(calls) == written_before:
            raise KeyboardInterrupt
        calls.append(bundle)
        real_write(conn, bundle, report)

    real_write = ledger_import.write
    monkeypatch.setattr(ledger_import, "write", write_then_interrupt)
    dest = tmp_path / "l.sqlite3"
    with pytest.raises(KeyboardInterrupt):
        run_import("claude-code", CLAUDE / "rewind.jsonl", CLAUDE / "compaction.jsonl", ledger=dest)
    if written_before:
        assert one(dest, "SELECT count(*) FROM sessions") == written_before
    else:
        assert not dest.exists()
