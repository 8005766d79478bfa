"""An issue's lifecycle (issue 30, item 2): operators resolve, ignore (for a time, or until N more
failures) and merge issues; a resolved issue that fails again is regressed and rises to the top;
each change is kept with who, when and a note, on the issue and in the admin log; viewers see
everything and change nothing. Rows are written between page views, so each view reads its own
snapshot (transactional tests)."""

import re
import time

import pytest
from builders import parse_html
from django.contrib.admin.models import LogEntry
from django.urls import reverse

from issues import lifecycle
from issues.figures import issue_id
from issues.models import Issue, IssueChange
from ledgerfacts.timestamps import now_ms
from pipeline import rollups
from pipeline.signatures import signature

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
H = rollups.HOUR
CRASH = "Tool crashed: run_terminal_command killed after 5012 ms"
LIMIT = "Discord API 429: retry after 3 s"
CRASH_ID = issue_id("runAgent", signature(CRASH))
LIMIT_ID = issue_id("deliverResponse", signature(LIMIT))


@pytest.fixture(autouse=True)
def fresh_plans(monkeypatch):
    monkeypatch.setattr(rollups, "_plans", rollups.sqlite.WhileUnchanged(keep=64))


def fail(ledger, at: int, message: str = CRASH, stage: str = "runAgent", **fields) -> dict:
    return ledger.request(started_at=at, status="failed", error_stage=stage,
                          error_message=message, **fields)  # fmt: skip


def just_now() -> int:
    """A moment after every change made so far (a failure then comes after a resolution)."""
    time.sleep(0.01)
    return now_ms() - 1


def change(client, key: str, action: str, **fields):
    return client.post(reverse("issues:change", args=[key]), {"action": action, **fields})


def inbox(client, **query) -> list[dict]:
    return client.get(reverse("issues:inbox"), {"format": "json", **query}).json()["issues"]


def issue(client, key: str, **query) -> dict:
    response = client.get(reverse("issues:issue", args=[key]), {"format": "json", **query})
    assert response.status_code == 200, response.content[:300]
    return response.json()


@pytest.fixture
def operator_client(client, operator):
    client.force_login(operator)
    return client


def test_resolved_issue_failing_again_is_regressed_and_rises_to_the_top(operator_client, ledger):
    now = now_ms()
    fail(ledger, now - 3 * H)
    fail(ledger, now - 2 * H, LIMIT, "deliverResponse")
    assert [i["id"] for i in inbox(operator_client)] == [LIMIT_ID, CRASH_ID]  # last seen first

    response = change(operator_client, CRASH_ID, "resolve", note="fixed in 1.4.2: more memory")
    assert response.status_code == 302 and response["Location"].endswith(f"/{CRASH_ID}/")
    assert issue(operator_client, CRASH_ID)["status"] == "resolved"
    assert [i["id"] for i in inbox(operator_client)] == [LIMIT_ID]  # resolved: not unresolved
    assert [i["id"] for i in inbox(operator_client, status="resolved")] == [CRASH_ID]

    fail(ledger, just_now(), message="Tool crashed: run_terminal_command killed after 77 ms")
    found = issue(operator_client, CRASH_ID)
    assert found["status"] == "regressed" and found["decision"]["decision"] == "resolved"
    # Regressed issues come first, whatever else was seen later.
    fail(ledger, just_now(), LIMIT, "deliverResponse")
    assert [i["id"] for i in inbox(operator_client)][:2] == [CRASH_ID, LIMIT_ID]
    assert [i["id"] for i in inbox(operator_client, sort="count")][0] == CRASH_ID

    page = operator_client.get(reverse("issues:issue", args=[CRASH_ID])).content.decode()
    assert "failed again" in page and "fixed in 1.4.2: more memory" in page and "otto" in page
    (entry,) = LogEntry.objects.filter(object_id=str(Issue.objects.get(issue_id=CRASH_ID).pk))
    assert entry.user.username == "otto"
    assert entry.change_message == "Resolved: fixed in 1.4.2: more memory"


def test_resolving_a_regressed_issue_again_makes_it_resolved(operator_client, ledger):
    now = now_ms()
    fail(ledger, now - 2 * H)
    change(operator_client, CRASH_ID, "resolve")
    fail(ledger, just_now())
    assert issue(operator_client, CRASH_ID)["status"] == "regressed"
    change(operator_client, CRASH_ID, "resolve", note="really fixed")
    assert issue(operator_client, CRASH_ID)["status"] == "resolved"
    history = issue(operator_client, CRASH_ID)["history"]
    assert [(h["action"], h["note"]) for h in history] == [
        ("resolved", "really fixed"), ("resolved", "")
    ]  # fmt: skip


def test_an_issue_ignored_until_three_more_failures_comes_back_with_the_third(
    operator_client, ledger, monkeypatch
):
    now = now_ms()
    ignored_at = (now - 3 * H) // H * H + 30 * 60_000  # half past, three hours ago
    fail(ledger, ignored_at - 60_000)
    monkeypatch.setattr(lifecycle, "now_ms", lambda: ignored_at)
    change(operator_client, CRASH_ID, "ignore", hours="0", count="3", note="flaky, watching")
    monkeypatch.undo()
    assert issue(operator_client, CRASH_ID)["status"] == "ignored"
    assert inbox(operator_client) == []

    fail(ledger, ignored_at + 60_000)  # the same hour: counted in the ledger
    fail(ledger, ignored_at + H)  # a later hour: from the records
    assert issue(operator_client, CRASH_ID)["status"] == "ignored"
    fail(ledger, now - 60_000)
    found = issue(operator_client, CRASH_ID)
    assert found["status"] in ("open", "new")
    assert found["status_why"] == "3 more failures since it was ignored"
    assert [i["id"] for i in inbox(operator_client)] == [CRASH_ID]


def test_an_issue_ignored_for_an_hour_is_open_once_the_hour_is_up(
    operator_client, ledger, monkeypatch
):
    now = now_ms()
    fail(ledger, now - 30 * H)
    monkeypatch.setattr(lifecycle, "now_ms", lambda: now - 2 * H)
    change(operator_client, CRASH_ID, "ignore", hours="1")
    monkeypatch.undo()
    found = issue(operator_client, CRASH_ID, window="7d")
    assert found["status"] == "open" and found["status_why"] == "its time ignored is up"
    change(operator_client, CRASH_ID, "ignore", hours="24")
    assert issue(operator_client, CRASH_ID, window="7d")["status"] == "ignored"


def test_merging_two_issues_counts_both_under_one_and_splitting_them_undoes_it(
    operator_client, ledger
):
    now = now_ms()
    for i in range(3):
        fail(ledger, now - (i + 1) * H)
    for i in range(2):
        fail(ledger, now - (i + 1) * H - 60_000, LIMIT, "deliverResponse")

    response = change(operator_client, LIMIT_ID, "merge", into=CRASH_ID, note="one OOM")
    assert response.status_code == 302 and response["Location"].endswith(f"/{CRASH_ID}/")
    (merged,) = inbox(operator_client)
    assert merged["id"] == CRASH_ID and merged["count"] == 5 and len(merged["groups"]) == 2
    # The merged issue's own address leads to the one it went into.
    response = operator_client.get(reverse("issues:issue", args=[LIMIT_ID]))
    assert response.status_code == 302 and f"/{CRASH_ID}/" in response["Location"]
    found = issue(operator_client, CRASH_ID)
    assert [m["id"] for m in found["merged"]] == [LIMIT_ID]
    assert [r["signature"] for r in found["requests"]] == [signature(CRASH), signature(LIMIT)]

    change(operator_client, CRASH_ID, "unmerge", issue=LIMIT_ID)
    assert sorted(i["id"] for i in inbox(operator_client)) == sorted([CRASH_ID, LIMIT_ID])


@pytest.mark.parametrize(
    "action, fields, says",
    [
        ("merge", {"into": "ffffffffffffffff"}, "no issue 'ffffffffffffffff' to merge into"),
        ("merge", {"into": CRASH_ID}, "an issue cannot be merged into itself"),
        ("ignore", {"hours": "soon"}, "hours must be a whole number"),
        ("ignore", {"hours": "1", "count": "-3"}, "failures must be a whole number"),
        ("shred", {}, "unknown action 'shred'"),
        ("unmerge", {"issue": LIMIT_ID}, "that issue is not merged into this one"),
    ],
)
def test_a_change_that_cannot_be_made_says_why_and_changes_nothing(
    operator_client, ledger, action, fields, says
):
    fail(ledger, now_ms() - H)
    fail(ledger, now_ms() - H, LIMIT, "deliverResponse")
    response = change(operator_client, CRASH_ID, action, **fields)
    assert response.status_code == 302
    page = operator_client.get(response["Location"]).content.decode()
    assert f"Not changed: {says}" in page.replace("&#x27;", "'")
    assert not IssueChange.objects.exists() and not LogEntry.objects.exists()


def test_merging_back_into_an_issue_merged_into_this_one_is_refused(operator_client, ledger):
    fail(ledger, now_ms() - H)
    fail(ledger, now_ms() - H, LIMIT, "deliverResponse")
    change(operator_client, LIMIT_ID, "merge", into=CRASH_ID)
    response = change(operator_client, CRASH_ID, "merge", into=LIMIT_ID)
    page = operator_client.get(response["Location"]).content.decode()
    assert "that issue is already merged into this one" in page
    assert not Issue.objects.filter(issue_id=CRASH_ID).exclude(merged_into="").exists()


def test_viewers_see_every_issue_and_are_refused_every_change(client, viewer, ledger):
    fail(ledger, now_ms() - H)
    client.force_login(viewer)
    page = client.get(reverse("issues:issue", args=[CRASH_ID]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "your role can look only" in html and "Resolve" not in html
    parse_html(html)
    for action, fields in [("resolve", {}), ("ignore", {"hours": "1"}),
                           ("merge", {"into": CRASH_ID}), ("reopen", {})]:  # fmt: skip
        refused = change(client, CRASH_ID, action, **fields)
        assert refused.status_code == 403
        assert "Resolving, ignoring or merging an issue is not for your role" in refused.text
    assert not Issue.objects.exists() and not IssueChange.objects.exists()
    assert issue(client, CRASH_ID)["status"] == "new"


def test_the_failed_request_page_names_its_issue_and_its_status(operator_client, ledger):
    request = fail(ledger, now_ms() - 2 * H)
    page = operator_client.get(reverse("pipeline:request", args=[request["id"]])).content.decode()
    assert f'href="/pipeline/issues/{CRASH_ID}/"' in page  # at once, without JavaScript
    part = reverse("issues:of_request", args=[request["id"]])
    assert f'hx-get="{part}"' in page
    assert re.search(r"status-issue-new[^>]*>new<", operator_client.get(part).content.decode())
    change(operator_client, CRASH_ID, "resolve")
    assert ">resolved<" in operator_client.get(part).content.decode()
    fail(ledger, just_now())
    assert ">regressed<" in operator_client.get(part).content.decode()
    ok = ledger.request(started_at=now_ms() - 3, status="completed")
    assert operator_client.get(reverse("issues:of_request", args=[ok["id"]])).status_code == 404


def test_the_overview_shows_new_and_regressed_issues(operator_client, ledger):
    fail(ledger, now_ms() - 40 * H)
    fail(ledger, now_ms() - 2 * H)
    fail(ledger, now_ms() - 3 * H, LIMIT, "deliverResponse")
    change(operator_client, CRASH_ID, "resolve")
    fail(ledger, just_now())
    data = operator_client.get("/", {"format": "json"}).json()["issues"]
    assert data["counts"] == {"regressed": 1, "new": 1}
    assert [(i["id"], i["status"]) for i in data["issues"]] == [
        (CRASH_ID, "regressed"), (LIMIT_ID, "new")
    ]  # fmt: skip
    page = operator_client.get("/").content.decode()
    assert "Issues needing attention" in page and f"/pipeline/issues/{LIMIT_ID}/" in page
