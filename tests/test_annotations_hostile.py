"""Annotations, preferences, review queues and datasets over the broken ledger (tests/hostile.py:
payloads in every text column, cycles, orphans, seconds for milliseconds, invalid JSON, text
times, a 1 MB message): every page answers and stays inert, the export says what it left out,
and a turn whose id is hostile is annotated through its page."""

import json

import pytest
from builders import LEDGER_DB, body_of, parse_html
from django.urls import reverse
from hostile import PAYLOAD, build_broken_ledger
from ledger_fingerprint import ledger_fingerprint
from test_hostile_ledger import assert_inert

from annotations.models import Annotation, Preference
from annotations.store import Marks, prefer, save_marks
from datasets.models import ExportRun

pytestmark = LEDGER_DB
ODD_ID = 'T"; DROP TABLE turns; --\n<b>Ω</b>'


@pytest.fixture
def broken(ledger, viewer):
    build_broken_ledger(ledger)
    s = ledger.session(id="S9", label=PAYLOAD)
    odd = ledger.turn(s, id=ODD_ID)
    ledger.message(odd, 1, content=PAYLOAD)
    ledger.message(odd, 2, role="assistant", content=f"answer {PAYLOAD}")
    ledger.set_head(s, odd, odd)
    for turn_id in ("T1", "T2", "T3", "C1", "ORPHAN", ODD_ID):
        session_id = "S9" if turn_id == ODD_ID else "S1"
        save_marks(viewer, session_id, turn_id,
                   Marks(thumb=1, labels=[PAYLOAD[:90]], note=PAYLOAD))  # fmt: skip
    prefer(viewer, "S1", "T1", ["T2"], ["GONE"])
    return ledger


def test_a_hostile_turn_id_is_annotated_through_its_page(viewer_client, viewer, broken):
    before = ledger_fingerprint(broken)
    url = reverse("sessions:annotate_turn", args=["S9", ODD_ID])
    response = viewer_client.post(url, {"thumb": "down", "labels": "x", "note": "n"})
    assert response.status_code == 303
    page = viewer_client.get(response["Location"])
    assert page.status_code == 200
    assert_inert(page, response["Location"])
    assert Annotation.objects.get(user=viewer, turn_id=ODD_ID).thumb == -1
    assert ledger_fingerprint(broken) == before


@pytest.mark.parametrize(
    "url",
    [
        "/sessions/?status=all",
        "/sessions/?status=all&label=" + PAYLOAD[:90],
        "/sessions/S1/turns/T1/",
        "/sessions/S1/turns/T2/thread/",
        "/sessions/S1/turns/T1/annotations/",
        "/search/?q=alert",
        "/search/?q=label:x",
        "/review/",
        "/datasets/",
    ],
)
def test_pages_with_annotations_of_a_broken_ledger_answer_and_stay_inert(
    viewer_client, broken, url
):
    response = viewer_client.get(url)
    assert response.status_code == 200, url
    parse_html(assert_inert(response, url))


def test_the_export_of_a_broken_ledger_says_what_it_left_out(viewer_client, broken):
    before = ledger_fingerprint(broken)
    body = body_of(viewer_client.get("/datasets/export.jsonl", {"kind": "chat"}))
    records = [json.loads(line) for line in body.decode().splitlines()]
    exported = sorted(r["ledger"]["turn_id"] for r in records)
    run = ExportRun.objects.get()
    left = {item["what"]: item["reason"] for item in run.report["left_out_named"]}
    # Every annotated turn is either a record or left out with a reason.
    assert sorted(exported + [w.removeprefix("turn ") for w in left]) == sorted(
        ["T1", "T2", "T3", "C1", "ORPHAN", ODD_ID]
    )
    assert "loops" in left["turn C1"] and "does not exist" in left["turn ORPHAN"]
    assert ODD_ID in exported
    page = viewer_client.get(f"/datasets/runs/{run.pk}/")
    assert_inert(page, "run page")
    body = body_of(viewer_client.get("/datasets/export.jsonl", {"kind": "preferences"}))
    assert body == b""  # the one pair names a turn that is not there: left out
    assert ExportRun.objects.latest("pk").report["left_out"] == 1
    assert ledger_fingerprint(broken) == before


def test_a_review_queue_over_a_broken_ledger(viewer_client, broken):
    response = viewer_client.post("/review/new/", {"source": "label", "label": PAYLOAD[:90]})
    queue_url = response["Location"]
    assert_inert(viewer_client.get(queue_url), queue_url)
    while True:
        response = viewer_client.post(queue_url + "next/")
        if response["Location"] == queue_url:
            break
        item = viewer_client.get(response["Location"])
        assert item.status_code == 200
        assert_inert(item, response["Location"])
        viewer_client.post(response["Location"], {"action": "done", "thumb": "up"})
    assert Preference.objects.count() == 1
