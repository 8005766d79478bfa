"""Every query parameter of every view, read strictly: a hostile value is never a 500, and a bad
value is said, in one wording, inline on the page and in its JSON twin (`errors`), or as a 400
where no page makes sense. Never a filter silently dropped."""

import re
from datetime import date
from urllib.parse import urljoin

import pytest
from builders import LEDGER_DB, T0, parse_fragment, parse_html

from ledgerweb.params import Invalid, cursor, iso_date, moment_ms
from pipeline.charts import CHARTS

pytestmark = LEDGER_DB

HOSTILE = {
    "superscript two": "²",  # str.isdigit() says yes, int() says no
    "30 digits": "9" * 30,  # int() reads it; SQLite cannot hold it
    "the last day": "9999-12-31",  # a date whose next day does not exist
    "minus one": "-1",
    "1e999": "1e999",  # float() says inf
    "NUL byte": "a\x00b",
    "10 KB": "x" * 10_000,
    "hex": "0x10",
}

# Parameters that filter a list or a window: a bad value is reported inline, with a 200.
# Text filters accept any text but a 10 KB one; the others accept none of the hostile values but
# the last day of 9999 as a date or a time.
TIME = ("since", "until")
REQUEST_FILTERS = ("q", "status", "source", "persona", "signature", "hook", "source__exact")
INLINE = {
    "/pipeline/requests/": {
        "text": REQUEST_FILTERS,
        "strict": ("window", "hook_state", "delivered", "status__isnull"),
        "time": TIME,
    },
    "/pipeline/": {"text": ("source", "persona"), "strict": ("window",), "time": TIME},
    "/sessions/": {
        "text": ("q", "persona", "status", "channel"),
        "strict": ("kind", "sort"),
        "time": TIME,
    },
}
for slug in CHARTS:  # the dashboard's filters, read by the same code: the window is enough
    INLINE[f"/pipeline/charts/{slug}/"] = {"strict": ("window",), "time": TIME}
# Parameters that have no sensible page when bad: a 400 that names them.
REFUSED = {
    "/pipeline/requests/": ("live", "after"),
    "/sessions/": ("after",),
    "/pipeline/": ("refresh",),
    "/sessions/S1/": ("unfold",),
    "/sessions/S1/turns/T1/": ("unfold",),
    "/sessions/S1/turns/T1/thread/": ("all", "folded"),
    "/sessions/S1/turns/T1/export.json": ("download",),
    "/sessions/S1/compare/": ("a", "b"),
}


def _is_bad(path: str, name: str, kind: str, value: str) -> bool:
    if kind == "text":
        return len(value) > 1000
    if kind == "time":
        charted = path.startswith("/pipeline/") and path != "/pipeline/requests/"
        # A chart's window ends now at the latest: one that starts in 9999 is empty.
        return value != "9999-12-31" or (charted and name == "since")
    return True


@pytest.fixture
def small_ledger(ledger):
    s = ledger.session(id="S1")
    t = ledger.turn(s, id="T1")
    ledger.set_head(s, t, t)
    ledger.request(id="R1", started_at=T0)
    return ledger


INLINE_CASES = [
    pytest.param(path, name, kind, value, id=f"{path} {name}={label}")
    for path, kinds in INLINE.items()
    for kind, names in kinds.items()
    for name in names
    for label, value in HOSTILE.items()
]


@pytest.mark.parametrize(("path", "name", "kind", "value"), INLINE_CASES)
def test_a_hostile_filter_is_read_or_reported_never_a_500(
    viewer_client, small_ledger, path, name, kind, value
):
    page = viewer_client.get(path, {name: value})
    assert page.status_code == 200
    data = viewer_client.get(path, {name: value, "format": "json"})
    if path == "/pipeline/":  # the dashboard's data is its charts' JSON
        said = _notices(page.content.decode())
    elif path.startswith("/pipeline/charts/"):  # the dashboard around it shows the notices
        said = data.json()["errors"]
    else:  # a list: its page, its JSON twin and its filter form's htmx answer say the same
        said = _notices(page.content.decode())
        assert data.json()["errors"] == said
        results = viewer_client.get(path, {name: value}, headers={"HX-Request": "true"})
        assert _notices(results.content.decode()) == said
    if _is_bad(path, name, kind, value):
        assert said[name].startswith(f"{name}=")
    else:
        assert name not in said


def _notices(page: str) -> dict[str, str]:
    """The parameter notices of a page (templates/param_errors.html), as the reader sees them."""
    tree = parse_html(page) if page.lstrip().startswith("<!doctype") else parse_fragment(page)
    notices = tree.iterfind(".//p[@data-param]")
    # The page shows a control character as its picture (ControlCharactersMiddleware).
    return {p.get("data-param"): p.text.replace("\u2400", "\x00") for p in notices}


@pytest.mark.parametrize(
    ("path", "name", "value"),
    [
        pytest.param(path, name, value, id=f"{path} {name}={label}")
        for path, names in REFUSED.items()
        for name in names
        for label, value in HOSTILE.items()
    ],
)
def test_a_hostile_flag_or_cursor_is_a_400_that_names_it(
    viewer_client, small_ledger, path, name, value
):
    if name in ("a", "b") and len(value) <= 1000:
        return  # any text names a turn to compare; none of these exist, which the page says
    page = viewer_client.get(path, {name: value, "keep": "me"})
    assert page.status_code == 400
    assert f"{name}=" in page.content.decode()
    # The way on: the same page without that parameter (and with the others).
    link = parse_html(page.content).find(".//section[@role='alert']//a")
    assert link.text == f"Open the page without {name}"
    assert link.get("href") == f"{path}?keep=me"
    assert viewer_client.get(urljoin(path, link.get("href"))).status_code == 200
    data = viewer_client.get(path, {name: value, "format": "json"})
    assert data.status_code == 400 and data.json()["errors"][name].startswith(f"{name}=")
    if path == "/sessions/S1/turns/T1/":
        return  # its htmx answer is the turn's panel, which does not unfold anything
    partial = viewer_client.get(path, {name: value}, headers={"HX-Request": "true"})
    assert partial.status_code == 400 and "<html" not in partial.content.decode()
    parse_fragment(partial.content)


def test_a_bad_window_or_time_is_said_on_the_request_list_as_on_the_session_list(
    viewer_client, small_ledger
):
    requests = viewer_client.get("/pipeline/requests/?window=99y&since=abc")
    said = _notices(requests.content.decode())
    assert said == {
        "window": "window=99y: choose 1h, 24h, 7d or 30d; this filter is not applied",
        "since": "since=abc: not a time; give Unix milliseconds or YYYY-MM-DDTHH:MM;"
        " this filter is not applied",
    }
    sessions = viewer_client.get("/sessions/?since=abc")
    assert _notices(sessions.content.decode()) == {
        "since": "since=abc: not a date; give YYYY-MM-DD; this filter is not applied"
    }


def test_a_window_that_ends_before_it_starts_is_said(viewer_client, small_ledger):
    requests = viewer_client.get(f"/pipeline/requests/?since={T0}&until={T0 - 1}&format=json")
    assert requests.json()["errors"] == {
        "until": f"until={T0 - 1}: not after since; this filter is not applied"
    }
    sessions = viewer_client.get("/sessions/?since=2025-11-24&until=2025-11-23&format=json")
    assert sessions.json()["errors"] == {
        "until": "until=2025-11-23: before since; this filter is not applied"
    }


@pytest.mark.parametrize("path", ["/pipeline/requests/", "/sessions/"])
def test_pages_chain_across_a_row_whose_time_is_a_real_number(viewer_client, ledger, path):
    for i in range(60):  # REAL where INTEGER is declared: the first page ends on a fraction
        stamp = T0 + i + 0.5
        if path == "/sessions/":
            ledger.session(id=f"S{i:02d}", updated_at=stamp)
        else:
            ledger.request(id=f"R{i:02d}", started_at=stamp)
    first = viewer_client.get(f"{path}?format=json").json()
    assert "." in first["next"]
    second = viewer_client.get(path, {"format": "json", "after": first["next"]}).json()
    assert second["errors"] == {}
    rows = first.get("requests", first.get("sessions")) + second.get(
        "requests", second.get("sessions")
    )
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)) == 60


ODD_TIMES = (
    [T0 + i for i in range(40)]
    + [T0 + i + 0.5 for i in range(20)]  # REAL
    + [f"2025-11-24T10:00:{i:02d}" for i in range(60)]  # ISO text, sorted after the numbers:
    + ["", "yesterday"]  # the first page ends on a text time
)


@pytest.fixture(params=["/pipeline/requests/", "/sessions/"])
def odd_list(request, ledger):
    path = request.param
    for i, stamp in enumerate(ODD_TIMES):
        if path == "/sessions/":
            ledger.session(id=f"X{i:03d}", updated_at=stamp)
        else:
            ledger.request(id=f"X{i:03d}", started_at=stamp)
    return path


def test_pages_reach_every_row_whatever_its_time(viewer_client, odd_list):
    seen, after = [], None
    for _ in range(10):
        query = {"format": "json"} | ({"after": after} if after else {})
        data = viewer_client.get(odd_list, query).json()
        assert data["errors"] == {}
        seen += [r["id"] for r in data.get("requests", data.get("sessions"))]
        after = data["next"]
        if after is None:
            break
    assert sorted(seen) == [f"X{i:03d}" for i in range(len(ODD_TIMES))]
    assert len(seen) == len(set(seen))


def test_the_older_link_follows_a_text_time_as_a_person_would(viewer_client, odd_list):
    page = viewer_client.get(odd_list)
    link = parse_html(page.content).find(".//tr[@class='more']//a")
    url = urljoin(odd_list, link.get("href"))
    first = _row_links(page.content.decode())
    for headers in ({}, {"HX-Request": "true"}):
        older = viewer_client.get(url, headers=headers).content.decode()
        assert 'data-param="after"' not in older
        assert _row_links(older) and not first & _row_links(older)


def _row_links(page: str) -> set[str]:
    return set(re.findall(r'href="/(?:pipeline/requests|sessions)/(X\d{3})/"', page))


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("/pipeline/?refresh=yes", "refresh=yes: give 1 or leave it out"),
        ("/pipeline/requests/?live=on", "live=on: choose 1 or 0"),
        ("/sessions/S1/?unfold=everything", "unfold=everything: give all or leave it out"),
    ],
)
def test_a_bad_flag_says_what_it_takes(viewer_client, small_ledger, url, said):
    page = viewer_client.get(url)
    assert page.status_code == 400
    assert parse_html(page.content).find(".//section[@role='alert']/p").text == said


def test_a_list_filter_the_charts_cannot_apply_is_said_not_dropped(viewer_client, small_ledger):
    said = "status=failed: the charts do not filter by this; this filter is not applied"
    page = viewer_client.get("/pipeline/?status=failed&source=imessage").content.decode()
    assert _notices(page) == {"status": said}
    chart = viewer_client.get("/pipeline/charts/throughput/?status=failed&format=json").json()
    assert chart["errors"] == {"status": said}


@pytest.mark.parametrize(
    ("parse", "raw", "value"),
    [
        (moment_ms, "1764000000000", 1_764_000_000_000),
        (moment_ms, "2025-11-24T16:00Z", 1_764_000_000_000),
        (moment_ms, "2025-11-24T17:00:00+01:00", 1_764_000_000_000),
        (moment_ms, "9999-12-31", 253_402_214_400_000),
        (iso_date, "9999-12-31", date.max),
        (cursor, "1764000000000:R1", (1_764_000_000_000, "R1")),
        (cursor, '["2025-11-24T10:00:00", "R:1"]', ("2025-11-24T10:00:00", "R:1")),
        (cursor, "1764000000000.5:R1", (1_764_000_000_000.5, "R1")),
    ],
)
def test_a_parameter_reads_as_what_it_says(parse, raw, value):
    assert parse(raw) == value


@pytest.mark.parametrize(
    ("parse", "raw", "why"),
    [
        (moment_ms, "²", "not a time"),
        (moment_ms, "١٢", "not a time"),  # Arabic-Indic digits: int() reads them, we do not
        (moment_ms, "9" * 30, "out of range"),
        (moment_ms, "2025-02-30", "no such date"),
        (moment_ms, "1e999", "not a time"),
        (iso_date, "0001-01-01", "out of range"),
        (
            iso_date,
            "20251124",
            "not a date",
        ),  # fromisoformat would read it; the form never sends it
        (cursor, "²:R1", "not a page link"),
        (cursor, f"{'9' * 30}:R1", "not a page link"),
        (cursor, '[Infinity, "R1"]', "not a page link"),
        (cursor, '[true, "R1"]', "not a page link"),
    ],
)
def test_a_parameter_that_does_not_say_it_is_refused_with_why(parse, raw, why):
    with pytest.raises(Invalid, match=why):
        parse(raw)
