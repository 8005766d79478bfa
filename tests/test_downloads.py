"""Downloads and JSON twins of rows whose ids hold anything: a quote and a semicolon cannot choose
the saved file's name, a line break or a NUL still answers (no BadHeaderError, no 500), and the
file holds the whole value (issue 25, item 3): every download of a turn's payloads and of a
request's long fields. export.json and the payloads of odd ids are tested with their pages too
(tests/test_turn_and_thread.py)."""

import re

import pytest
from builders import LEDGER_DB
from django.urls import reverse

from ledgerweb.db import is_postgres_url
from ledgerweb.downloads import safe_filename

pytestmark = LEDGER_DB

ODD_IDS = {
    "quote-and-semicolon": "x\"; filename*=UTF-8''evil.html; x=\"",
    "newline": "line\nbreak",
    "carriage-return": "carriage\rreturn",
    "nul": "nul\x00byte",
    "3000-characters": "L" * 3_000,
    "path": "../../etc/passwd",
    "cyrillic": "ид-запроса",
}
# What a browser may save: a plain name with the download's extension, nothing it could read
# as a second parameter, a path or a hidden file.
SAFE_DISPOSITION = re.compile(
    r'attachment; filename="([A-Za-z0-9_-][A-Za-z0-9._-]{0,119}\.(json|txt))"'
)
RESULT = '{"html": "<script>alert(1)</script>"}'


@pytest.fixture(params=ODD_IDS, ids=list(ODD_IDS))
def odd(request, ledger):
    odd_id = ODD_IDS[request.param]
    if "\x00" in odd_id and is_postgres_url(ledger.path):
        pytest.skip("PostgreSQL's text holds no NUL: ledger_ship leaves such a row out")
    s = ledger.session(id=f"S{odd_id}")
    t = ledger.turn(s, id=f"T{odd_id}")
    ledger.set_head(s, t, t)
    ledger.message(t, 1, id=f"M{odd_id}", content="the whole message")
    ledger.tool_call(t, 1, id=f"C{odd_id}", parameters='{"q": 1}', result=RESULT)
    ledger.request(id=f"R{odd_id}", turn_id=t["id"], status="failed", error_stage="runAgent",
                   error_message="boom", error_stack="Traceback: boom",
                   request_snapshot='{"snap": true}', hooks_context="{}",
                   permissions="{}")  # fmt: skip
    return odd_id


def downloads_of(odd_id: str) -> dict[str, tuple[str, str]]:
    """Every download of the rows: its URL and the whole value it must hold."""
    s, t, m, c, r = (f"{p}{odd_id}" for p in "STMCR")
    payload = lambda kind, item: reverse("sessions:payload", args=[s, t, kind, item])  # noqa: E731
    request = reverse("pipeline:request", args=[r])
    return {
        "message": (payload("message", m) + "?download=1", "the whole message"),
        "parameters": (payload("parameters", c) + "?download=1", '{"q": 1}'),
        "result": (payload("result", c) + "?download=1", RESULT),
        "request_snapshot": (request + "?download=request_snapshot", '{"snap": true}'),
        "error_stack": (request + "?download=error_stack", "Traceback: boom"),
        "error_message": (request + "?download=error_message", "boom"),
        "hooks_context": (request + "?download=hooks_context", "{}"),
        "permissions": (request + "?download=permissions", "{}"),
    }


def test_every_download_is_named_safely_and_holds_the_whole_value(viewer_client, odd):
    for what, (url, whole) in downloads_of(odd).items():
        response = viewer_client.get(url)
        assert response.status_code == 200, what
        disposition = response["Content-Disposition"]
        assert SAFE_DISPOSITION.fullmatch(disposition), (what, disposition)
        assert "evil" not in disposition.split("filename=", 1)[1].split(".")[-1]
        assert b"".join(response.streaming_content).decode() == whole, what


def test_every_json_twin_of_the_rows_answers_with_their_ids(viewer_client, odd):
    s, t, c, r = (f"{p}{odd}" for p in "STCR")

    def last_step(d):
        return d["steps"][-1]["turn"]["id"]

    twins = {
        "session": (reverse("sessions:detail", args=[s]), lambda d: d["session"]["id"] == s),
        "turn": (reverse("sessions:turn", args=[s, t]), lambda d: d["turn"]["id"] == t),
        "thread": (reverse("sessions:thread", args=[s, t]), lambda d: last_step(d) == t),
        "request": (reverse("pipeline:request", args=[r]), lambda d: d["request"]["id"] == r),
        "requests": (reverse("pipeline:requests"), lambda d: r in {x["id"] for x in d["requests"]}),
        "sessions": (
            reverse("sessions:list") + "?status=all",
            lambda d: s in {x["id"] for x in d["sessions"]},
        ),
    }  # fmt: skip
    for what, (url, holds) in twins.items():
        response = viewer_client.get(url + ("&" if "?" in url else "?") + "format=json")
        assert response.status_code == 200, what
        assert holds(response.json()), what
    pages = [
        reverse("sessions:detail", args=[s]),
        reverse("sessions:turn", args=[s, t]),
        reverse("sessions:call", args=[s, t, c]),
        reverse("pipeline:request", args=[r]),
    ]
    for url in pages:
        assert viewer_client.get(url).status_code == 200, url


@pytest.mark.parametrize(
    ("stem", "name"),
    [
        (
            "result-Cx\"; filename*=UTF-8''evil.html; x=\"",
            "result-Cx_filename_UTF-8_evil_html_x.json",
        ),
        ("message-M\nline", "message-M_line.json"),
        ("../../etc/passwd", "etc_passwd.json"),
        ("....", "download.json"),
        ("запрос", "download.json"),
    ],
)
def test_a_file_name_keeps_only_plain_characters(stem, name):
    assert safe_filename(stem, "json") == name
