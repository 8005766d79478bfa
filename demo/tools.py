"""Tool calls: realistic JSON parameters and results per tool, and the errors tools fail with.

Like the texts, payloads are built into small pools once per build and picked per call.
"""

import json
import random

PAYLOADS_PER_TOOL = 40
FAILURE_RATE = 0.05

PATHS = (
    "sessions/tree.py", "pipeline/charts.py", "pipeline/views.py", "ledgerweb/settings.py",
    "templates/sessions/session_detail.html", "tests/test_turn_tree.py", "static/js/charts.js",
    "app/electron/ipc/webserver/auth-utils.ts", "README.md", "pyproject.toml",
)  # fmt: skip
COMMANDS = (
    "pytest -q tests/test_turn_tree.py", "ruff check .", "git status --short",
    "python manage.py ledger_check var/demo.sqlite3", "npm run build", "ls -la var/",
)  # fmt: skip
QUERIES = (
    "speculative decoding survey 2025", "sqlite WAL checkpoint starvation",
    "django 6.1 partial templates", "context compaction agents benchmark",
    "restaurants near union square open friday",
)  # fmt: skip
URLS = (
    "https://arxiv.org/abs/2401.07851", "https://sqlite.org/wal.html",
    "https://docs.djangoproject.com/en/6.1/ref/templates/language/",
    "https://www.anthropic.com/news", "https://example.com/menu",
)  # fmt: skip
ERRORS = {
    "read_file": ("ENOENT: no such file or directory, open '{path}'",),
    "edit_file": ("old_string not found in {path}", "File changed on disk since it was read"),
    "run_terminal_command_v2": (
        "Command timed out after 120000 ms", "exit code 1: 3 failed, 41 passed",
    ),
    "grep": ("regex parse error: unclosed group",),
    "apply_patch": ("Patch does not apply: hunk #2 FAILED at 57",),
    "web_fetch": ("HTTP 403 Forbidden", "Timeout after 30 s fetching {url}"),
    "web_search": ("Search provider rate limit exceeded (429)",),
    "gog": ("Gmail API error 401: invalid_grant (token expired)",),
    "imsg_send": ("AppleScript error -1743: not authorised to send Apple events to Messages",),
    "calendar_list": ("Google Calendar API quota exceeded",),
}  # fmt: skip
DEFAULT_ERRORS = ("Tool crashed: unexpected EOF", "Tool execution cancelled by user")


def _read_file(rng):
    path = rng.choice(PATHS)
    lines = rng.randint(20, 1500)
    return (
        {"relativeWorkspacePath": path, "readEntireFile": True, "maxLines": 1500},
        {"contents": f"# {path}\nimport sqlite3\n...", "totalLines": lines},
    )


def _edit_file(rng):
    path = rng.choice(PATHS)
    return (
        {"relativeWorkspacePath": path, "old_string": "size=20", "new_string": "size=50"},
        {"applied": True, "linesChanged": rng.randint(1, 40)},
    )


def _terminal(rng):
    command = rng.choice(COMMANDS)
    output = f"{rng.randint(10, 400)} passed in {rng.random() * 40:.2f}s"
    return (
        {"command": command, "cwd": "", "parsingResult": {"executableCommands": [
            {"name": command.split()[0], "args": command.split()[1:]}]}},
        {"rejected": False, "exitCode": 0, "output": output},
    )  # fmt: skip


def _grep(rng):
    pattern = rng.choice(("def build_tree", "stage_timings", "TODO", "routing_key", "class .*View"))
    return (
        {"pattern": pattern, "path": rng.choice(("sessions/", "pipeline/", "."))},
        {"matches": [{"file": rng.choice(PATHS), "line": rng.randint(1, 400)}
                     for _ in range(rng.randint(0, 5))]},
    )  # fmt: skip


def _glob(rng):
    pattern = rng.choice(("**/*.py", "templates/**/*.html", "tests/test_*.py"))
    return {"pattern": pattern}, {"files": rng.sample(PATHS, rng.randint(1, 5))}


def _todo_write(rng):
    todos = [
        {"id": str(i), "content": c, "status": rng.choice(("pending", "in_progress", "completed"))}
        for i, c in enumerate(rng.sample(("Reproduce bug", "Write test", "Fix", "Update docs",
                                          "Run full suite"), 3), start=1)
    ]  # fmt: skip
    return {"todos": todos, "merge": False}, {"ok": True, "count": len(todos)}


def _apply_patch(rng):
    path = rng.choice(PATHS)
    patch = f"--- a/{path}\n+++ b/{path}\n@@ -10,3 +10,4 @@\n-    size = 20\n+    size = 50\n"
    return {"patch": patch}, {"applied": True, "files": [path]}


def _write(rng):
    path = rng.choice(("docs/decisions.md", "notes/brief.md", "tests/test_new.py"))
    return {"path": path, "contents": "# Notes\n\n- first point\n"}, {
        "bytesWritten": rng.randint(40, 9000)
    }


def _read_lints(rng):
    return {"paths": rng.sample(PATHS, 2)}, {"diagnostics": [
        {"code": rng.choice(("E501", "F401", "B008")), "line": rng.randint(1, 300)}
        for _ in range(rng.randint(0, 3))]}  # fmt: skip


def _web_search(rng):
    query = rng.choice(QUERIES)
    return {"query": query, "count": 5}, {
        "results": [
            {"title": f"Result {i} for {query}", "url": rng.choice(URLS)} for i in range(1, 4)
        ]
    }


def _web_fetch(rng):
    url = rng.choice(URLS)
    return {"url": url, "format": "markdown"}, {"status": 200, "length": rng.randint(2_000, 90_000)}


def _gog(rng):
    query = rng.choice(("from:amazon subject:verification code", "is:unread newer_than:1d",
                        "from:alex lease", "has:attachment invoice"))  # fmt: skip
    return {"action": "search", "query": query}, {"messages": [
        {"subject": "Amazon: 847291 is your code", "snippet": "..."}]}  # fmt: skip


def _imsg_send(rng):
    to = f"+1555{rng.randrange(10**7):07d}"
    return {"to": to, "text": "Running 10 minutes late, sorry!"}, {
        "sent": True,
        "guid": f"p:{to}/{rng.getrandbits(40)}",
    }


def _calendar_list(rng):
    return {"calendarId": "primary", "timeMin": "today", "maxResults": 10}, {
        "events": [
            {"summary": "Dentist — Dr. Lee", "start": "14:30"},
            {"summary": "1:1 with Alex", "start": "16:00"},
        ]
    }


def _memory_search(rng):
    return {"query": rng.choice(("mom birthday", "preferred airline", "ledger bug"))}, {"hits": [
        {"id": f"mem_{rng.getrandbits(32):08x}", "score": round(rng.random(), 3)}]}  # fmt: skip


_MAKERS = {
    "read_file": _read_file, "edit_file": _edit_file, "run_terminal_command_v2": _terminal,
    "grep": _grep, "glob_file_search": _glob, "todo_write": _todo_write,
    "apply_patch": _apply_patch, "write": _write, "read_lints": _read_lints,
    "web_search": _web_search, "web_fetch": _web_fetch, "gog": _gog, "imsg_send": _imsg_send,
    "calendar_list": _calendar_list, "memory_search": _memory_search,
}  # fmt: skip

SUBAGENT_TASKS = {
    "echo": (
        (
            "Find all callers of build_tree",
            "List every call site of build_tree and how it is used.",
            "Explore",
        ),
        (
            "Write tests for the paginator",
            "Write pytest tests for keyset pagination edge cases.",
            "general-purpose",
        ),
        (
            "Audit templates for autoescape",
            "Check every template for |safe and mark_safe uses.",
            "code-reviewer",
        ),
    ),
    "sage": (
        (
            "Survey recent benchmarks",
            "Collect benchmark numbers from 2024–2025 papers.",
            "research",
        ),
        (
            "Verify citations",
            "Check that every cited URL exists and supports the claim.",
            "fact-checker",
        ),
    ),
}


class ToolPools:
    """(parameters JSON, result JSON) pairs per tool, and error messages."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.payloads = {
            name: [tuple(json.dumps(part) for part in make(rng)) for _ in range(PAYLOADS_PER_TOOL)]
            for name, make in _MAKERS.items()
        }

    def call(self, tool: str) -> tuple[str, str | None, str | None, str]:
        """(parameters, result, error, status) for one call of a tool."""
        parameters, result = self.rng.choice(self.payloads[tool])
        if self.rng.random() < FAILURE_RATE:
            return parameters, None, self.error(tool), "failed"
        return parameters, result, None, "completed"

    def error(self, tool: str) -> str:
        template = self.rng.choice(ERRORS.get(tool, DEFAULT_ERRORS))
        return template.format(path=self.rng.choice(PATHS), url=self.rng.choice(URLS))

    def task(self, persona: str) -> tuple[str, str, str]:
        """(description, prompt, subagent_type) for a Task call that spawns a subagent."""
        return self.rng.choice(SUBAGENT_TASKS[persona])


def task_parameters(description: str, prompt: str, subagent_type: str) -> str:
    return json.dumps(
        {"description": description, "prompt": prompt, "subagent_type": subagent_type}
    )


def task_result(child_session_id: str, summary: str) -> str:
    return json.dumps({"session_id": child_session_id, "status": "completed", "summary": summary})
