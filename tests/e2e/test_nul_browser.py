"""A turn whose message and tool result hold a NUL, in Chromium (docs/decisions.md, "A NUL
inside a value is read as bytes"): the panel shows the text after the NUL (the NUL as ␀), "Load
all" and "Download the whole result" give the rest, and "Export thread" saves every value
whole. Before, each stopped at the NUL, and the panel offered no "Load all" at all."""

import json

import pytest

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
MESSAGE = "before\x00after, in Ελληνικά and 日本語"
RESULT = '{"log": "start\x00' + "é" * 1_100_000 + ' the end"}'  # past a page: a download


@pytest.fixture
def nul_turn(ledger):
    s = ledger.session(id="S1", label="NUL values")
    t = ledger.turn(s, id="T1")
    ledger.message(t, 1, id="M1", content=MESSAGE)
    ledger.tool_call(t, 2, id="C1", tool_name="read_log", parameters='{"path": "a\x00b"}',
                     result=RESULT)  # fmt: skip
    ledger.set_head(s, t, t)
    return t


def saved(download) -> str:
    with open(download.value.path(), encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize("window", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_turn_holding_nuls_shows_loads_downloads_and_exports_them_whole(
    page, live_server, viewer, nul_turn, sign_in, window, tmp_path
):
    page.set_viewport_size(window)
    sign_in("vera", next_url="/sessions/S1/turns/T1/")
    text = page.locator("#panel").inner_text()
    # Markdown shows a NUL as U+FFFD (CommonMark's rule); the text after it is there.
    assert "before\ufffdafter, in Ελληνικά and 日本語" in text
    assert '{"path": "a␀b"}' in text  # not JSON (a raw control character): shown as stored
    page.screenshot(path=str(tmp_path / f"turn-{window['width']}.png"))  # to look at

    with page.expect_download() as export:
        page.get_by_role("link", name="Export thread").click()
    messages = json.loads(saved(export))["messages"]
    assert [m["content"] for m in messages if m["role"] == "user"] == [MESSAGE]
    assert [m["content"] for m in messages if m["role"] == "tool"] == [RESULT]
    arguments = [c["function"]["arguments"] for m in messages for c in m.get("tool_calls", [])]
    assert arguments == ['{"path": "a\x00b"}']

    call = page.locator("details", has_text="read_log").first
    if call.get_attribute("open") is None:
        call.locator("summary").first.click()
    call.get_by_role("link", name="Load all").first.click()
    page.get_by_role("link", name="Download the whole result").wait_for()
    assert "of 2,200,025 characters: too long for a page" in page.locator("#panel").inner_text()
    with page.expect_download() as whole:
        page.get_by_role("link", name="Download the whole result").click()
    assert saved(whole) == RESULT
