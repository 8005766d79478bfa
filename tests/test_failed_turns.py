"""A failed turn says why where it is shown (its pipeline request's failed stage and message, its
failed tool calls, or that the ledger records no reason), and the "N failed turns" pill walks
the session's failed turns."""

import re

import pytest
from builders import LEDGER_DB, T0, parse_fragment, parse_html
from django.urls import reverse

pytestmark = LEDGER_DB


@pytest.fixture
def failures(ledger):
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="T-root", started_at=T0)
    # Failed although its tool call completed: only the pipeline knows why.
    quiet = ledger.turn(s, root, id="T-quiet", status="failed", started_at=T0 + 1)
    ledger.tool_call(quiet, 1)
    ledger.request(
        id="R1",
        turn_id="T-quiet",
        status="failed",
        stage="runAgent",
        error_stage="runAgent",
        error_message="Anthropic API 529: <overloaded>",
    )
    tooled = ledger.turn(s, quiet, id="T-tool", status="failed", started_at=T0 + 2)
    ledger.tool_call(tooled, 1, status="failed", error="calendar 503", result=None)
    silent = ledger.turn(s, tooled, id="T-silent", status="failed", started_at=T0 + 3)
    head = ledger.turn(s, silent, id="T-head", started_at=T0 + 4)
    ledger.set_head(s, root, head)
    return s


def panel(client, turn_id: str) -> str:
    url = reverse("sessions:turn", args=["S1", turn_id])
    body = client.get(url, headers={"HX-Request": "true"}).content.decode()
    parse_fragment(body)
    return body


def failure_text(body: str) -> str:
    sections = [s for s in parse_fragment(body).iter("section") if s.get("class") == "turn-failure"]
    return " ".join(" ".join("".join(s.itertext()).split()) for s in sections)


def test_a_failed_turn_shows_its_requests_failed_stage_and_message(viewer_client, failures):
    text = failure_text(panel(viewer_client, "T-quiet"))
    assert "Why this turn failed" in text
    assert "Pipeline request R1 failed at stage runAgent:" in text
    assert "Anthropic API 529: <overloaded>" in text  # escaped, shown as text
    section = next(parse_fragment(panel(viewer_client, "T-quiet")).iter("section"))
    link = next(a for a in section.iter("a") if "".join(a.itertext()) == "R1")
    assert link.get("href") == "/pipeline/requests/R1/"
    request_page = viewer_client.get(link.get("href")).content.decode()
    assert "Anthropic API 529: &lt;overloaded&gt;" in request_page


def test_a_failed_turn_points_at_its_failed_tool_calls(viewer_client, failures):
    text = failure_text(panel(viewer_client, "T-tool"))
    assert "1 of its 1 tool call failed" in text


def test_a_failed_turn_without_any_reason_says_so(viewer_client, failures):
    text = failure_text(panel(viewer_client, "T-silent"))
    assert "The ledger records no reason" in text
    assert "no pipeline request points at this turn" in text


def test_a_completed_turn_has_no_failure_section(viewer_client, failures):
    assert failure_text(panel(viewer_client, "T-head")) == ""


def test_a_huge_request_error_is_cut_in_the_panel(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1", status="failed")
    ledger.set_head(s, t, t)
    ledger.request(id="R1", turn_id="T1", status="failed", error_message="x" * 1_000_000)
    body = panel(viewer_client, "T1")
    assert len(body) < 20_000
    assert "The first 2,000 of 1,000,000 characters" in failure_text(body)


def test_the_failed_turns_pill_opens_the_first_and_the_panel_walks_them(viewer_client, failures):
    page = viewer_client.get("/sessions/S1/").content.decode()
    pill = next(a for a in parse_html(page).iter("a") if (a.text or "").startswith("3 failed"))
    first = viewer_client.get(pill.get("href")).content.decode()
    assert pill.get("href") == "/sessions/S1/turns/T-quiet/"
    assert "Failed turn 1 of 3 in this session" in first
    walked = []
    url = pill.get("href")
    while url:
        body = panel(viewer_client, url.split("/")[-2])
        position = re.search(r"Failed turn (\d+ of \d+)", failure_text(body)).group(1)
        walked.append((url.split("/")[-2], position))
        nav = next(
            n for n in parse_fragment(body).iter("nav") if n.get("class") == "failed-walk small"
        )
        following = [a for a in nav.iter("a") if a.get("rel") == "next"]
        url = following[0].get("hx-get") if following else None
        if url:
            assert following[0].get("href") == url
    assert walked == [
        ("T-quiet", "1 of 3"),
        ("T-tool", "2 of 3"),
        ("T-silent", "3 of 3"),
    ]


def test_a_session_without_failures_has_a_plain_pill(viewer_client, ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    ledger.set_head(s, t, t)
    page = viewer_client.get("/sessions/S1/").content.decode()
    assert "0 failed turns" in page and "0 failed turns →" not in page


def test_the_turn_json_twin_carries_the_failed_requests(viewer_client, failures):
    data = viewer_client.get("/sessions/S1/turns/T-quiet/?format=json").json()
    assert data["failed_pipeline_requests"][0]["error_message"] == "Anthropic API 529: <overloaded>"
    assert data["failed_pipeline_requests"][0]["error_stage"] == "runAgent"
