"""Markdown in messages: rendered (and sanitized) on the thread page as in the turn panel, and
shown as plain words in the one-line previews of the turn tree."""

import random

import nh3
import pytest
from builders import LEDGER_DB, T0, parse_html

from ledgerweb.text import (
    ALLOWED_URL_SCHEMES,
    _markdown,
    _plain_paragraphs,
    plain_preview,
    render_markdown,
)

SANITIZER = {"url_schemes": ALLOWED_URL_SCHEMES, "link_rel": "noopener noreferrer nofollow"}

pytestmark = LEDGER_DB

ANSWER = """## Flights found

| flight | time |
|---|---|
| AF 123 | 07:00 |

```
book --flight AF123
```

**Booked** <script>alert(1)</script>"""


@pytest.fixture
def markdown_thread(ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1", started_at=T0)
    ledger.message(t, 1, content="# Trip\n\nFind me a **morning** flight")
    ledger.message(t, 2, role="assistant", content=ANSWER)
    ledger.compaction(t, "## Conversation summary\n\n- The user *wants* a `morning` flight")
    ledger.set_head(s, t, t)


def test_the_thread_page_renders_markdown_like_the_turn_panel(viewer_client, markdown_thread):
    page = viewer_client.get("/sessions/S1/turns/T1/thread/").content.decode()
    tree = parse_html(page)
    excerpts = [div for div in tree.iter("div") if "excerpt" in (div.get("class") or "")]
    answer = excerpts[1]
    assert answer.find(".//h2").text == "Flights found"
    assert [td.text for td in answer.iter("td")] == ["AF 123", "07:00"]
    assert answer.find(".//pre/code").text == "book --flight AF123\n"
    assert answer.find(".//strong").text == "Booked"
    assert "```" not in page and "|---|" not in page and "## Flights" not in page
    assert "<script>alert(1)" not in page  # shown as text, never run


def test_tree_rows_preview_markdown_as_plain_words(viewer_client, markdown_thread):
    page = viewer_client.get("/sessions/S1/").content.decode()
    row = next(a for a in parse_html(page).iter("a") if a.get("data-turn") == "T1")
    preview = "".join(next(s for s in row.iter("span") if s.get("class") == "preview").itertext())
    assert preview == "Conversation summary — The user wants a morning flight"


def test_the_thread_previews_a_folded_turn_as_plain_words(viewer_client, ledger):
    s = ledger.session(id="S1")
    old = ledger.turn(s, id="T0", started_at=T0)
    ledger.message(old, 1, content="## Plan\n\nGo to **Rome**")
    compaction = ledger.turn(s, old, id="T1", started_at=T0 + 1)
    ledger.compaction(compaction, "short", summarized=["T0"])
    ledger.set_head(s, old, compaction)
    page = viewer_client.get("/sessions/S1/turns/T1/thread/").content.decode()
    assert "Plan — Go to Rome" in page and "**Rome**" not in page


@pytest.mark.parametrize(
    ("text", "preview"),
    [
        ("## Summary\n\nThey planned a trip", "Summary — They planned a trip"),
        ("```python\nprint(1)\n```", "print(1)"),
        ("| a | b |\n|---|:--:|\n| 1 | 2 |", "a · b"),
        ("- [ ] call *Dad* about the `7am` flight", "call Dad about the 7am flight"),
        ("> see [the docs](https://x.test/a_(b)) and ![img](y.png)", "see the docs and img"),
        ("---\nsnake_case_name and 2*3*4", "snake_case_name and 2*3*4"),
        ("1. first\n2. second", "first"),
        ("# Only a heading", "Only a heading"),
        ("<b>html stays text</b>", "<b>html stays text</b>"),
        (None, ""),
        (42, ""),
        ("   \n\n", ""),
    ],
)
def test_a_preview_is_the_plain_words_of_the_first_lines(text, preview):
    assert plain_preview(text) == preview


def test_a_preview_is_one_line_within_its_limit():
    assert plain_preview("# " + "word " * 100, 40) == "word " * 7 + "word…"


# Characters of plain chat text and of Markdown, mixed at random: the fast path for plain text
# (text._plain_paragraphs) must give exactly what the parser and the sanitizer give.
MIXED = list("abcXYZ019é ✓ .,;:?!'\"()/@%$+=-_*#`|[]<>&~\\\t\r\x00") + ["\n", "\n\n", "  "]
# Mostly plain, with what plain text can still trip on: list numbers, blank lines, double spaces.
PLAINISH = list("abcXYZ019é✓ .,;:?!'\"()/@%$+=-") + ["\n", "\n\n", "\n\n\n", "  ", "1.", "2)"]


@pytest.mark.parametrize("alphabet", [MIXED, PLAINISH], ids=["mixed", "plainish"])
@pytest.mark.parametrize("seed", range(40))
def test_plain_text_renders_as_the_markdown_parser_renders_it(alphabet, seed):
    rng = random.Random(seed)
    for _ in range(100):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        fast = _plain_paragraphs(text)
        if fast is not None:
            assert fast == nh3.clean(_markdown().render(text), **SANITIZER), repr(text)


@pytest.mark.parametrize(
    "text",
    [
        "Text Jordan that I'm running 10 minutes late",
        "Sure, watching it.\nI'll tell you at 9.\n\n\nDone (really): 50% off!",
        '"Quoted" words, costs $5 = 3+2 - 0 @ home/office',
        "\n\nleading and trailing blank lines\n\n",
        "",
    ],
)
def test_everyday_messages_take_the_plain_path_and_render_the_same(text):
    assert _plain_paragraphs(text) is not None
    assert render_markdown(text) == nh3.clean(_markdown().render(text), **SANITIZER)


@pytest.mark.parametrize(
    "text",
    ["- a list", "1. first", "Title\n===", "a  \nhard break", "    code", "x & y", "**b**"],
)
def test_text_that_may_hold_markdown_goes_to_the_parser(text):
    assert _plain_paragraphs(text) is None
