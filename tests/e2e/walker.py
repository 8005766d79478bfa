"""The walker: opens pages in Chromium, collects every link, htmx trigger, form and button on
them, and follows each the way a person (or htmx) would, over HTTP with the browser's cookies.

What it checks on every control (see `Walker.check_control`):
- the written address has no `??` and, when the control changes the view of the page it is on
  (same page, other query; JSON twin), it keeps every filter of the page's own address;
- following it answers 2xx, or redirects to a page that answers 2xx (never to the login page);
- a JSON link answers JSON with the same filters as the page; an htmx request answers a partial,
  not a whole page (unless the trigger selects a part of the answer with hx-select);
- a control that claims to change the view (same page, other query) changes what the page says;
- a link whose text is a count ("42", "3 similar failures") leads to a list of that many rows.

Following is sampled: one control per (URL pattern, query keys, htmx or not), at most
MAX_FOLLOWS in all, so the walk stays a few seconds long while every kind of control is followed.
"""

import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import html5lib
from django.urls import Resolver404, resolve
from links import REQUEST_LINE_LIMIT, request_line_bytes

MAX_FOLLOWS = 400
# Links whose text is a count are checked beyond the sample (they are the numbers people trust),
# up to this many per page.
COUNT_LINKS_PER_PAGE = 8

# Every control of the page, as plain data. Addresses are resolved against the page's own URL
# the way the browser (and htmx) resolve them; `raw` is what the template wrote.
COLLECT_CONTROLS = """() => {
  const text = (el) => (el.innerText || el.value || el.getAttribute("aria-label") || el.title || "")
    .replace(/\\s+/g, " ").trim().slice(0, 60);
  const resolved = (raw) => {
    try { return new URL(raw, location.href).href; } catch (e) { return null; }
  };
  const fields = (form) => [...new FormData(form)].filter(([, v]) => typeof v === "string");
  // The element htmx swaps into, whose id it sends as HX-Target (hx-target is inherited).
  const targetId = (el) => {
    const spec = el.closest("[hx-target]")?.getAttribute("hx-target") || "this";
    let target = el;
    if (spec.startsWith("closest ")) target = el.closest(spec.slice(8));
    else if (spec !== "this") target = document.querySelector(spec);
    return target?.id || "";
  };
  const controls = [];
  const add = (el, kind, raw, extra) => controls.push(Object.assign({
    kind, raw, url: raw === null ? null : resolved(raw), text: text(el),
    tag: el.tagName.toLowerCase(), id: el.id || "",
    current: ["true", "page"].includes(el.getAttribute("aria-current")),
    selects: el.closest("[hx-select]")?.getAttribute("hx-select") || "",
    inMain: !!el.closest("#main"), target: "", fields: [], method: "get"},
    extra || {}));
  for (const el of document.querySelectorAll("a[href]")) add(el, "link", el.getAttribute("href"));
  for (const el of document.querySelectorAll("[hx-get]")) {
    add(el, "hx-get", el.getAttribute("hx-get"),
        Object.assign({target: targetId(el)}, el.tagName === "FORM" ? {fields: fields(el)} : {}));
  }
  for (const el of document.querySelectorAll("[hx-post], [hx-put], [hx-patch], [hx-delete]")) {
    add(el, "hx-post", el.getAttribute("hx-post") || "", {method: "post"});
  }
  for (const form of document.forms) {
    add(form, "form", form.getAttribute("action") || "",
        {method: (form.getAttribute("method") || "get").toLowerCase(), fields: fields(form)});
  }
  for (const el of document.querySelectorAll("button, input[type=submit], input[type=button]")) {
    add(el, "button", null, {method: el.type});
  }
  return controls;
}"""

# Query keys that say where in a list a page is, not what it shows: a link that changes the view
# may drop them (a new filter starts from the top).
POSITION_KEYS = {"after", "newer"}
# Keys a link may drop when it sets another: a preset window replaces a custom range.
REPLACED_BY = {"window": {"since", "until"}}
# Parts a page loads after itself (URL pattern → the page's pattern): they show the page's view,
# so they carry its filters, all but the keys that only say how the page itself behaves.
PARTS = {"pipeline:chart": "pipeline:dashboard"}
PAGE_ONLY_KEYS = {"refresh", "live"}
COUNT_TEXT = re.compile(r"^([\d,]+)(?: similar failures?| requests?| sessions?)?$")
LOGIN_PATH = "/accounts/login/"


@dataclass
class Control:
    kind: str  # link, hx-get, hx-post, form, button
    raw: str | None
    url: str | None
    text: str
    tag: str
    id: str
    current: bool
    selects: str  # hx-select (own or inherited): the part of the htmx answer that is swapped in
    inMain: bool  # in the page's main content (not the header's menu)
    target: str = ""  # the id of the element an htmx answer goes into (sent as HX-Target)
    fields: list = field(default_factory=list)
    method: str = "get"

    def __post_init__(self):
        self.fields = [tuple(pair) for pair in self.fields]  # from JSON lists

    @classmethod
    def loaded_by_htmx(cls, url: str, target: str) -> "Control":
        """A request htmx made by itself as the page loaded (its trigger may be gone)."""
        return cls("hx-get", url, url, "(loaded with the page)", "", "", False, "", True, target)

    @property
    def label(self) -> str:
        return f"{self.kind} {self.text!r}" + (f" #{self.id}" if self.id else "")


@dataclass
class Walker:
    """Follows controls with `http` (Playwright's APIRequestContext, logged in) and records
    what it did and what was wrong."""

    http: object
    base: str
    failures: list[str] = field(default_factory=list)
    visited: list[str] = field(default_factory=list)
    followed_from: Counter = field(default_factory=Counter)  # page → controls followed
    counts: Counter = field(default_factory=Counter)
    followed_keys: set = field(default_factory=set)
    reached: set = field(default_factory=set)  # URL patterns opened or followed
    follows: int = 0

    # -- recording ------------------------------------------------------------------------------

    def fail(self, where: str, what: str) -> None:
        self.failures.append(f"{self.short(where)}: {what}")

    def short(self, url: str | None) -> str:
        return (url or "").removeprefix(self.base)

    def summary(self) -> str:
        lines = [f"walker: {len(self.visited)} pages visited, {self.follows} controls followed"]
        lines += [f"  {kind:<28} {n:>5}" for kind, n in sorted(self.counts.items())]
        lines += ["  pages (controls followed from each):"]
        lines += [f"    {self.followed_from[url]:>3} {self.short(url)}" for url in self.visited]
        return "\n".join(lines)

    # -- HTTP -------------------------------------------------------------------------------------

    def get(self, url: str, *, htmx: bool = False, target: str = ""):
        """GET as a person's browser would, or as htmx would (its request headers)."""
        headers = {}
        if htmx:
            headers = {"HX-Request": "true", "HX-Current-URL": url}
            headers |= {"HX-Target": target} if target else {}
        return self.http.get(url, headers=headers, max_redirects=5)

    def json(self, url: str, where: str):
        response = self.get(url)
        if not response.ok or "json" not in response.headers.get("content-type", ""):
            self.fail(where, f"{self.short(url)} answers {response.status} "
                      f"{response.headers.get('content-type')}, not JSON")  # fmt: skip
            return None
        return response.json()

    def main_text(self, url: str) -> str | None:
        response = self.get(url)
        return main_text(response.text()) if response.ok else None

    def list_count(self, url: str, where: str) -> int | None:
        """The number of rows a list URL selects, from its JSON twin (None if capped)."""
        data = self.json(with_query(url, format="json"), where)
        if data is None or data.get("count_capped"):
            return None
        if data.get("filter_errors"):
            self.fail(where, f"{self.short(url)} has filter errors {data['filter_errors']}")
        return data.get("count")

    # -- one page's controls ----------------------------------------------------------------------

    def check_controls(self, page_url: str, controls: list[Control]) -> None:
        self.check_count_links(page_url, controls)
        page_text = None
        for control in controls:
            self.counts[f"{control.kind}s seen"] += 1
            if control.kind == "button":
                continue  # a button acts through its form, its hx-* or its script
            self.check_written_address(page_url, control)
            if control.method != "get" or control.url is None:
                self.counts["POST controls not followed"] += 1
                continue
            for url, htmx in self.requests_of(control):
                self.check_kept_filters(page_url, control, url)
                if not self.take(url, htmx, control.kind):
                    continue
                if page_text is None and self.changes_view(page_url, url, control):
                    page_text = self.main_text(page_url) or ""
                self.follow(page_url, control, url, htmx, page_text)

    def requests_of(self, control: Control) -> list[tuple[str, bool]]:
        """The GET requests a control makes: a link as a plain GET, an hx-get with HX-Request
        (and as a plain GET too when it is also a link), a form with its fields."""
        if control.kind == "link":
            return [(control.url, False)]
        if control.kind == "hx-get":
            url = with_fields(control.url, control.fields) if control.fields else control.url
            return [(url, True)]
        return [(replace_query(control.url, control.fields), False)]

    def take(self, url: str, htmx: bool, kind: str) -> bool:
        """Whether to follow this request: internal, not logout, and the first of its kind."""
        if not url.startswith(self.base) or url.startswith(self.base + "/accounts/logout"):
            return False
        key = (kind, pattern_of(url), tuple(sorted(query_of(url))), htmx)
        if key in self.followed_keys or self.follows >= MAX_FOLLOWS:
            return False
        self.followed_keys.add(key)
        self.reached.add(pattern_of(url))
        self.follows += 1
        self.followed_from[self.visited[-1] if self.visited else ""] += 1
        return True

    def check_written_address(self, page_url: str, control: Control) -> None:
        if control.raw and "??" in control.raw:
            self.fail(page_url, f"{control.label} is written {control.raw!r} (`??`)")
        if control.url and request_line_bytes(control.url) > REQUEST_LINE_LIMIT:
            self.fail(page_url, f"{control.label} is too long for a server to take "
                      f"({request_line_bytes(control.url):,} bytes)")  # fmt: skip

    def check_kept_filters(self, page_url: str, control: Control, url: str) -> None:
        lost = lost_filters(page_url, url, control)
        if lost:
            self.fail(page_url, f"{control.label} → {self.short(url)} loses {sorted(lost)}")

    def changes_view(self, page_url: str, url: str, control: Control) -> bool:
        """A link in the main content to the same page with another query (window, filter, sort,
        page). Forms are not: submitted as they stand, they show what the page shows. The admin's
        sort links are Django's (a sort may keep the order)."""
        return (
            control.kind == "link"
            and control.inMain
            and not control.current
            and same_path(page_url, url)
            and not pattern_of(url).startswith("admin:")
            and query_of(url).get("format") != "json"
            and query_of(url) != query_of(page_url)
        )

    def follow(self, page_url, control, url, htmx, page_text) -> None:
        kind = f"{control.kind}{' (htmx)' if htmx else ''} followed"
        self.counts[kind] += 1
        response = self.get(url, htmx=htmx, target=control.target)
        where = f"{self.short(page_url)}: {control.label} → {self.short(url)}"
        final = response.url
        if not response.ok:
            self.failures.append(f"{where} answers {response.status}")
            return
        if final != url and urlsplit(final).path == LOGIN_PATH:
            self.failures.append(f"{where} redirects to the login page")
            return
        body = response.text()
        content_type = response.headers.get("content-type", "")
        if query_of(url).get("format") == "json" or url.endswith(".json"):
            self.check_json_twin(page_url, url, where, content_type, response)
        elif htmx and not control.selects and re.search(r"<html[\s>]", body, re.I):
            self.failures.append(f"{where} answers a whole page to htmx (no partial)")
        elif htmx and control.selects.startswith("#") and not has_id(body, control.selects[1:]):
            self.failures.append(f"{where} answers no {control.selects} for its hx-select")
        if page_text is not None and self.changes_view(page_url, url, control) and not htmx:
            if main_text(body) == page_text:
                self.failures.append(f"{where} claims to change the view; the page says the same")
            self.counts["view changes compared"] += 1

    def check_json_twin(self, page_url, url, where, content_type, response) -> None:
        if "json" not in content_type:
            self.failures.append(f"{where} answers {content_type}, not JSON")
            return
        data = response.json()
        self.counts["JSON links checked"] += 1
        if not (isinstance(data, dict) and "filters" in data and same_path(page_url, url)):
            return
        # The page's own filters, as its own address read as JSON states them.
        own = self.json(with_query(page_url, format="json"), page_url)
        if own is not None and own.get("filters") != data["filters"]:
            self.failures.append(
                f"{where} has filters {data['filters']}, the page {own.get('filters')}"
            )

    def check_count_links(self, page_url: str, controls: list[Control]) -> None:
        """A link that says "42" (or "3 similar failures") leads to a list of that many rows."""
        counted = [
            (control, int(match[1].replace(",", "")))
            for control in controls
            if control.kind == "link" and control.inMain and control.url
            and (match := COUNT_TEXT.match(control.text))
            and pattern_of(control.url) in LIST_PATTERNS
        ]  # fmt: skip
        for control, expected in counted[:COUNT_LINKS_PER_PAGE]:
            self.counts["count links compared"] += 1
            where = f"{self.short(page_url)}: {control.label} → {self.short(control.url)}"
            count = self.list_count(control.url, where)
            if count is not None and count != expected:
                self.failures.append(f"{where} says {expected}, the list holds {count}")


LIST_PATTERNS = {"pipeline:requests", "sessions:list"}


# -- addresses ------------------------------------------------------------------------------------


def query_of(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def same_path(a: str, b: str) -> bool:
    return urlsplit(a)[:3] == urlsplit(b)[:3]


def replace_query(url: str, fields: list) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(query=urlencode(fields), fragment=""))


def with_fields(url: str, fields: list) -> str:
    """htmx's GET: the form's fields appended to the address's own query."""
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode(fields)) if q)
    return urlunsplit(parts._replace(query=query, fragment=""))


def with_query(url: str, **changes) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True)) | changes
    return urlunsplit(parts._replace(query=urlencode(query), fragment=""))


def pattern_of(url: str) -> str:
    path = urlsplit(url).path
    try:
        return resolve(path).view_name
    except Resolver404:
        return f"unresolved {path}"


def lost_filters(page_url: str, target: str, control: Control) -> set[str]:
    """Keys of the page's query that a view-changing control drops without meaning to.

    A control changes the view when it leads to the same page (another window, filter, sort or
    page) or to the page's JSON twin; a part of the page (a dashboard chart, its JSON) shows
    the same view. "Clear filters", the header's menu and links to other pages may drop what
    they like."""
    clears = re.search(r"\bclear\b", control.text, re.I)
    part = PARTS.get(pattern_of(target)) == pattern_of(page_url)
    if not control.inMain or clears or not (part or same_path(page_url, target)):
        return set()
    page, link = query_of(page_url), query_of(target)
    droppable = set(POSITION_KEYS) | {"format"} | (PAGE_ONLY_KEYS if part else set())
    for key, replaced in REPLACED_BY.items():
        if key in link:
            droppable |= replaced
    if "refresh" in page and re.search(r"\bstop\b", control.text, re.I):
        droppable.add("refresh")
    return set(page) - set(link) - droppable


def has_id(html: str, element_id: str) -> bool:
    doc = html5lib.parse(html, namespaceHTMLElements=False)
    return any(el.get("id") == element_id for el in doc.iter())


def main_text(html: str) -> str:
    """The words of the page's main content (or of a whole partial), whitespace folded."""
    doc = html5lib.parse(html, namespaceHTMLElements=False)
    main = doc.find(".//*[@id='main']")
    node = main if main is not None else doc
    for hidden in node.findall(".//script") + node.findall(".//style"):
        hidden.text = ""
    return " ".join(" ".join(node.itertext()).split())


# -- charts ---------------------------------------------------------------------------------------

# Every figure on the dashboard, with the chart (section id chart-<slug>) it belongs to.
COLLECT_FIGURES = """() => [...document.querySelectorAll("[id^=chart-] [data-figure]")]
  .map((el) => ({chart: el.closest("[id^=chart-]").id.slice("chart-".length),
                 figure: JSON.parse(el.dataset.figure)}))"""

# Charts whose bars are durations, not counts of requests: nothing to click through to.
DURATION_CHARTS = {"stage-timings"}
# Charts whose bars sum a column of the requests rather than count them ("cost": the request's
# cost in its JSON twin, an exact decimal string; the bar draws it as a float).
SUMMED_COLUMN = {"tokens": "agent_tokens_total", "cost": "cost"}
# The elements of one window checked against their lists (the largest, the smallest and some
# between, per chart), and how many rows a summed element's list may have to be summed here.
ELEMENTS_PER_CHART = 4
ZEROS_PER_CHART = 10
SUMS_PER_WINDOW = 1
MAX_ROWS_TO_SUM = 20


@dataclass
class ChartElement:
    slug: str
    chart: str  # the slug, and the figure's axis title when a chart has several figures
    trace: str
    label: object
    value: object
    url: object

    def __str__(self) -> str:
        return f"{self.chart} chart, {self.trace} at {self.label}: {self.value}"


def chart_elements(figures: list[dict]) -> list[ChartElement]:
    """The bars of every figure (lines, boxes and markers show rates and spreads, not rows)."""
    elements = []
    for item in figures:
        # A chart of several figures (sources: by event source, by principal) names each by its
        # axis title.
        axis = (item["figure"].get("layout", {}).get("xaxis") or {}).get("title")
        chart = f"{item['chart']} ({axis})" if isinstance(axis, str) else item["chart"]
        for trace in item["figure"].get("data", []):
            if trace.get("type") != "bar":
                continue
            horizontal = trace.get("orientation") == "h"
            values = trace.get("x" if horizontal else "y") or []
            labels = trace.get("y" if horizontal else "x") or [None] * len(values)
            urls = trace.get("customdata") or [None] * len(values)
            for label, value, url in zip(labels, values, urls, strict=False):
                url = url[0] if isinstance(url, list) and url else url
                elements.append(
                    ChartElement(item["chart"], chart, trace.get("name"), label, value, url)
                )
    return elements


def sample(elements: list[ChartElement], every: bool = False) -> list[ChartElement]:
    """Per chart, the non-zero elements, smallest first: all of them and some zero ones (a bar
    of 0 over a list of rows is as wrong), or the largest, the smallest and evenly spaced ones
    between."""
    chosen = []
    for chart in dict.fromkeys(e.chart for e in elements):
        ranked = sorted((e for e in elements if e.chart == chart and e.value),
                        key=lambda e: e.value)  # fmt: skip
        if every:
            zeros = [e for e in elements if e.chart == chart and e.value == 0]
            ranked += zeros[:ZEROS_PER_CHART]
        elif len(ranked) > ELEMENTS_PER_CHART:
            step = (len(ranked) - 1) / (ELEMENTS_PER_CHART - 1)
            ranked = [ranked[round(i * step)] for i in range(ELEMENTS_PER_CHART)]
        chosen += ranked
    return chosen


def check_charts(walker: Walker, page_url: str, figures: list[dict], every: bool) -> None:
    """Every chart element with a value can be clicked, and its list totals that value."""
    elements = [e for e in chart_elements(figures) if e.slug not in DURATION_CHARTS]
    walker.counts["chart elements seen"] += len(elements)
    for element in elements:
        if element.value and not (isinstance(element.url, str) and element.url.startswith("/")):
            walker.fail(page_url, f"{element} has no list to click through to ({element.url!r})")
    sums = 0
    for element in sample(elements, every):
        if not isinstance(element.url, str) or not element.url.startswith("/"):
            continue
        column = SUMMED_COLUMN.get(element.slug)
        if column is not None and sums >= SUMS_PER_WINDOW and not every:
            continue
        sums += column is not None
        walker.counts["chart elements checked"] += 1
        where = f"{walker.short(page_url)}: {element}"
        url = walker.base + element.url
        if "??" in element.url:
            walker.failures.append(f"{where}: its address {element.url!r} has `??`")
        total = (
            walker.list_count(url, where)
            if column is None
            else sum_column(walker, url, column, where)
        )
        if total is not None and total != element.value:
            walker.failures.append(f"{where}, but its list {element.url} totals {total}")


def sum_column(walker: Walker, url: str, column: str, where: str) -> int | None:
    """The sum of a column over a list's rows, from each row's JSON twin (small lists only)."""
    ids, cursor = [], None
    while True:
        data = walker.json(with_query(url, format="json", **({"after": cursor} if cursor else {})),
                           where)  # fmt: skip
        if data is None or data["count"] > MAX_ROWS_TO_SUM:
            return None
        ids += [row["id"] for row in data["requests"]]
        cursor = data.get("next")
        if not cursor:
            break
    total = 0
    for request_id in ids:
        detail = walker.json(f"{walker.base}/pipeline/requests/{request_id}/?format=json", where)
        total += summed_value(detail or {}, column)
    walker.counts["chart sums compared"] += 1
    return float(total) if column == "cost" else total


def summed_value(detail: dict, column: str):
    """What one request adds to a summed bar: a whole-number column, or its priced cost."""
    if column == "cost":
        cost = detail.get("cost") or {}
        return Decimal(cost["usd"]) if cost.get("usd") else Decimal(0)
    value = detail.get("request", {}).get(column)
    return value if isinstance(value, int) else 0
