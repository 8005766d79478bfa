"""The two long lists written in Python rather than in a template: the turn tree's rows and a
turn's tool calls. Everything else is drawn by templates, where a designer looks for markup; these
two stay here because of their size. The session list's 50 rows are a Jinja2 template
(list_rows_html below, ledgerweb/jinja.py says why).

Why, in figures. A session can have thousands of turns and a turn hundreds of tool calls. For
5,000 tree rows (measured by the issue 20 review on this machine): f-strings 41 ms, a Jinja2
loop ~170 ms, a Django template loop with prepared values ~540 ms, and template includes per row
(the first version) 1.6 s. A 600-call turn's panel spent ~100 ms in its template loop (a
{% url %} and a few filters per call) and a few ms here. A list page's 50 rows, by contrast,
cost ~10-17 ms through their template loop against ~1.5-2.5 ms as f-strings (the same machine
under load, docs/benchmarks.md), and ~1.4 ms as a Jinja2 loop: the session list's rows moved
there when the list had to answer at Datasette's speed (issue 33).
Re-measure with `.venv/bin/python -m bench.list_rows_bench`.

Every value from the ledger goes through escape(). The URLs come from IdUrls (one reverse() per
list). Most pieces of a row repeat from row to row (a gutter shape, a model, a set of marks, a
tool name and status), so each distinct piece is written once and reused. The helpers are pure
functions of their arguments, so a cache can never serve a stale piece; those whose arguments
are ledger values (of any size) are cached for one page only, the others (marks, counts) for
the process, in a bounded cache.
"""

import math
from functools import lru_cache

from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from ledgerfacts.timestamps import now_ms
from ledgerweb import jinja, long_values
from ledgerweb.costs import cost_html
from ledgerweb.formatting import duration, elapsed, short_model, tokens
from ledgerweb.html_parts import IdUrls, css_name, escape
from sessions.alternatives import Alternative
from sessions.gutter import Gutter
from sessions.models import Session
from sessions.page import TreeItem, TreeView
from sessions.turn_detail import ToolCallView


def list_rows_html(rows) -> SafeString:
    """The session list's rows (sessions.listing.SessionRow, their marks_html set), drawn by
    templates/sessions/list_rows.jinja."""
    urls = IdUrls("sessions:detail")
    return jinja.rows_html("sessions/list_rows.jinja", rows=rows, detail_url=urls.html)


def tree_rows_html(
    items: list[TreeItem], session_id: str, view: TreeView | None = None
) -> SafeString:
    """The rows of one window of the tree. `view`: how the tree is shown (hoisted, unfolded,
    branches collapsed), which every row's address keeps, so that a reload shows the same."""
    view = view or TreeView()
    turn_urls = IdUrls("sessions:turn", session_id)
    keep = escape(view.query())  # the same for every row
    # typed: a model stored as the number 5 and one stored as the text "5" are different values.
    model_html = lru_cache(maxsize=None, typed=True)(_model)
    # Rows of one shape share one Gutter object (gutter.Gutters): draw each object once.
    # Keyed by id(), which is stable while `items` holds the gutters.
    drawn: dict[int, str] = {}
    parts = []
    for item in items:
        svg = drawn.get(id(item.gutter))
        if svg is None:
            svg = drawn[id(item.gutter)] = _gutter(item.gutter)
        if item.fold is not None and item.fold.under is not None:
            parts.append(_collapsed(item, svg, view))
        elif item.fold is not None:
            parts.append(_fold(item, svg, view))
        else:
            model = model_html(item.turn.model)
            parts.append(_row(item, turn_urls.html(item.turn.id) + keep, svg, model))
    return mark_safe("\n".join(parts))  # every ledger value was escaped below


def _gutter(g: Gutter) -> str:
    strokes = "".join(f'<path d="{s.d}" class="{s.css_class}"/>' for s in g.strokes)
    dot = (
        f'<circle cx="{g.dot_x:g}" cy="{g.dot_y:g}" r="{g.dot_r:g}" class="dot {g.dot_class}"/>'
        if g.dot_x is not None
        else ""
    )
    return (
        f'<svg class="gutter" width="{g.width}" height="{g.height}" '
        f'viewBox="0 0 {g.width} {g.height}" aria-hidden="true" focusable="false">'
        f"{strokes}{dot}</svg>"
    )


def _fold(item: TreeItem, gutter_svg: str, view: TreeView) -> str:
    # Unfolding shows the page of the unfolded tree that holds the stretch (?at=), hoisted and
    # collapsed as it was.
    first_id = item.fold.first.node.id
    unfold = escape(view.query(("at", long_values.for_link(first_id)), unfold=True))
    return (
        f'<a class="tree-row fold" href="{unfold}#turn-{escape(first_id)}" hx-get="{unfold}" '
        f'hx-target="#tree" hx-push-url="true" data-line="{item.line}" '
        f'data-parent="{escape(item.parent_id)}" data-child="{escape(item.first_child_id)}" '
        f'data-sibling="{escape(item.next_sibling_id)}">{gutter_svg}'
        f'<span class="preview muted">··· {len(item.fold):,} turns in a straight line'
        f" — unfold</span></a>"
    )


def _collapsed(item: TreeItem, gutter_svg: str, view: TreeView) -> str:
    """The line that stands for a collapsed branch point's descendants: it expands them."""
    under = item.fold.under
    expand = escape(
        view.query(("at", long_values.for_link(under)), collapsed=view.collapsed - {under})
    )
    leaves = item.fold.leaves
    return (
        f'<a class="tree-row fold collapsed-branches" href="{expand}#turn-{escape(under)}"'
        f' hx-get="{expand}" hx-target="#tree" hx-push-url="true" data-line="{item.line}"'
        f' data-under="{escape(under)}">{gutter_svg}'
        f'<span class="preview muted">▸ {len(item.fold):,} turn{"" if len(item.fold) == 1 else "s"}'
        f" below, {leaves:,} branch{'' if leaves == 1 else 'es'} — expand</span></a>"
    )


# Marks come from a fixed vocabulary (page.marks_of): few distinct tuples.
@lru_cache(maxsize=256)
def _marks(marks: tuple[str, ...]) -> str:
    return "".join(f'<span class="mark mark-{css_name(m)}">{escape(m)}</span>' for m in marks)


def _running(t) -> str:
    """A running turn: for how long, and "stalled" once it has written nothing for a while. The
    times ride along so that a live page redraws both as time passes (static/js/live.js)."""
    if not t.is_running:
        return ""
    since, last = t.started_at, t.last_write_ms
    if not isinstance(since, int | float) or not math.isfinite(since) or not math.isfinite(last):
        return ""
    stalled = t.stalled
    return (
        f'<span class="running{" stalled" if stalled else ""}" data-running-since="{round(since)}"'
        f' data-last-write="{round(last)}" title="Running since its start; stalled when it has'
        f' written nothing for a while"><span data-running-for>{elapsed(now_ms() - since)}</span>'
        f'<span class="mark mark-stalled" data-stalled{"" if stalled else " hidden"}>'
        "stalled</span></span>"
    )


def _problems(problems: tuple[str, ...]) -> str:
    if not problems:
        return ""
    return (
        f'<span class="mark mark-problem" title="{escape(" · ".join(problems))}">'
        f"⚠ {len(problems)}</span>"
    )


# A model name is a ledger value of any length, repeated on every row: its tooltip is cut so a
# page of rows stays within its byte budget (sessions/page.py); the turn's panel has it whole.
MODEL_TITLE_CHARS = 200


def _model(model) -> str:
    title = str(model or "")
    if len(title) > MODEL_TITLE_CHARS:
        title = title[:MODEL_TITLE_CHARS] + "…"
    return f'<span class="model" title="{escape(title)}">{escape(short_model(model))}</span>'


# What a row shows for a figure the ledger does not have (NULL): unknown is not zero.
UNKNOWN = "—"


def _tokens(total) -> str:
    if total is None:
        return f'<span class="num unknown" title="No token counts">{UNKNOWN}</span>'
    return f'<span class="num" title="{escape(total)} tokens">{escape(tokens(total))}</span>'


def _duration(ms) -> str:
    if ms is None:
        title = "Not finished, or when it ended is not known"
        return f'<span class="num unknown" title="{title}">{UNKNOWN}</span>'
    return f'<span class="num">{escape(duration(ms))}</span>'


def _cost(cost) -> str:
    """The cost column: always there (empty for a turn with no tokens), so columns align."""
    return cost_html(cost) or '<span class="num cost"></span>'


@lru_cache(maxsize=1024)
def _calls(count: int, failed: int) -> str:
    failed_text = f", {failed} failed" if failed else ""
    css = "num calls bad" if failed else "num calls"
    plural = "" if count == 1 else "s"
    title = f"{count} tool call{plural}{failed_text}"
    return f'<span class="{css}" title="{title}">{count} tool{plural}</span>'


@lru_cache(maxsize=256)
def _failed_calls(failed: int) -> str:
    """A row too narrow for its tool-call column still says that calls failed (the stylesheet
    shows this badge only then)."""
    if not failed:
        return ""
    calls = "1 tool call" if failed == 1 else f"{failed} tool calls"
    return f'<span class="mark mark-failed-calls" title="{calls} failed">✕ {failed} failed</span>'


@lru_cache(maxsize=256)
def _branch(label: str) -> str:
    if not label:
        return ""
    return (
        f'<span class="mark mark-branch" title="A branch point: {label} follow. Click to see them'
        f' side by side (a)">{label}</span>'
    )


@lru_cache(maxsize=64)
def _forks(count: int) -> str:
    if not count:
        return ""
    title = "Sessions were forked from this turn: open it to see them"
    return f'<span class="mark mark-forked" title="{title}">forked {count}× here</span>'


@lru_cache(maxsize=1024)
def _alternative(alt: Alternative | None) -> str:
    if alt is None:
        return ""
    head = " on-head-path" if alt.on_head_path else ""
    title = f"alternative {alt.position} of {alt.count}" + (", the head's branch" if head else "")
    return f'<span class="alt{head}" title="{title}">{alt.position}/{alt.count}</span>'


# A sibling's line starts a few characters before it leaves the siblings' text ("… 26, 1986 in
# Pripyat"), so the words that differ are in view; a text that differs early starts as is.
DIFFERS_EARLY = 24
CONTEXT_BEFORE = 12


def from_where_it_differs(text: str, differs_at: int) -> str:
    """`text` from a word or so before `differs_at`, with "…" for what is left out."""
    if differs_at <= DIFFERS_EARLY or differs_at >= len(text):
        return text
    start = text.rfind(" ", 0, differs_at - CONTEXT_BEFORE) + 1
    return "…" + text[start:] if start > 0 else text


def _preview(t, alt: Alternative | None) -> str:
    """The row's line: the prompt; the answer where a sibling asks the same (regenerations),
    from where the siblings' texts part. The hover holds the prompt and the answer."""
    if t.is_compaction:
        title = escape(t.compaction_summary)
        return f'<span class="preview" title="{title}">{title}</span>'
    prompt = t.preview or "(no message)"
    answer = t.answer or ("(no answer)" if t.answer_read else "")
    title = escape(f"{prompt}\n↳ {answer}" if answer else prompt)
    if alt is not None and alt.same_prompt:
        shown = escape(from_where_it_differs(t.answer or "(no answer)", t.differs_at))
        return f'<span class="preview answer" title="{title}">↳ {shown}</span>'
    shown = escape(from_where_it_differs(prompt, t.differs_at if alt else 0))
    return f'<span class="preview" title="{title}">{shown}</span>'


def _bookmark(note: str | None) -> str:
    """This person's bookmark on the turn: a star, its note on hover."""
    if note is None:
        return ""
    title = escape(f"Your bookmark: {note}" if note else "Your bookmark")
    return f'<span class="mark mark-bookmark" title="{title}">★</span>'


def _annotated(summary) -> str:
    """Everyone's marks on the turn (annotations.store.Summary): 👍/👎 counts and the most used
    label, all of them on hover."""
    if summary is None:
        return ""
    shown = []
    if summary.up:
        shown.append(f"👍{summary.up}")
    if summary.down:
        shown.append(f"👎{summary.down}")
    if summary.labels:
        top = summary.top_labels[0][0]
        shown.append(top if len(top) <= LABEL_CHARS else top[: LABEL_CHARS - 1] + "…")
    if summary.notes and not shown:
        shown.append("✎")
    title = []
    if summary.up or summary.down:
        title.append(f"{summary.up} 👍, {summary.down} 👎")
    if summary.score is not None:
        title.append(f"score {summary.score:.1f} of 5")
    if summary.labels:
        title.append("labels " + ", ".join(sorted(summary.labels)))
    if summary.notes:
        title.append(f"{summary.notes} note{'s' if summary.notes != 1 else ''}")
    return (
        f'<span class="mark mark-annotated" title="{escape("Annotations: " + " · ".join(title))}">'
        f"{escape(' '.join(shown))}</span>"
    )


# A label on a row is cut to this many characters (the hover and the panel have it whole).
LABEL_CHARS = 16


def _row(item: TreeItem, url: str, gutter_svg: str, model_html: str) -> str:
    """One turn; `url`, `gutter_svg` and `model_html` are HTML already."""
    t = item.turn
    classes = (
        "tree-row"
        + (" selected" if item.selected else "")
        + (" inherited" if t.inherited else "")
        + (" visited" if item.visited else "")
        + (" collapsed" if item.collapsed else "")
    )
    kids = len(item.row.child_ids) if item.row is not None else 0
    extra = f' data-kids="{kids}"' if kids else ""
    if item.bookmark is not None:
        extra += f' data-bookmark="{escape(item.bookmark)}"'
    if item.collapsed:
        extra += ' data-collapsed="1"'
    turn_id = escape(t.id)
    return (
        f'<a class="{classes}" id="turn-{turn_id}" href="{url}" hx-get="{url}" '
        f'hx-target="#panel" hx-push-url="true" data-turn="{turn_id}" '
        f'data-parent="{escape(item.parent_id)}" data-child="{escape(item.first_child_id)}" '
        f'data-sibling="{escape(item.next_sibling_id)}" data-line="{item.line}"{extra}'
        f"{' aria-current="true"' if item.selected else ''}>"
        f"{gutter_svg}"
        f'<span class="marks">{_bookmark(item.bookmark)}{_marks(item.marks)}{_running(t)}'
        f"{_annotated(item.annotated)}{_problems(item.problems)}"
        f"{_branch(item.branch_label)}{_forks(item.forks_here)}"
        f"{_failed_calls(t.failed_tool_calls)}</span>"
        f"{_alternative(item.alternative)}{_preview(t, item.alternative)}"
        f'<span class="facts">{model_html}{_tokens(t.total_tokens)}{_cost(t.cost)}'
        f"{_calls(t.tool_calls, t.failed_tool_calls)}"
        f"{_duration(t.duration_ms)}"
        f"</span></a>"
    )


# -- A turn's tool calls -----------------------------------------------------------------------


def tool_calls_html(calls: list[ToolCallView], session: Session, turn_id: str) -> SafeString:
    """The <li> of each call, in the order given."""
    return ToolCallsHtml(session, turn_id).html(calls)


def timeline_parts(timeline: list, session: Session, turn_id: str) -> list[dict]:
    """A turn's messages and calls as the panel draws them, in the order they happened: each
    message for the template ({"message": m}), and each run of calls between two messages as
    its HTML ({"calls_html": …}), so a 600-call turn is a few template steps, not 600."""
    calls_html = ToolCallsHtml(session, turn_id)
    parts: list[dict] = []
    run: list[ToolCallView] = []
    for item in timeline:
        if isinstance(item, ToolCallView):
            run.append(item)
            continue
        if run:
            parts.append({"calls_html": calls_html.html(run)})
            run = []
        parts.append({"message": item})
    if run:
        parts.append({"calls_html": calls_html.html(run)})
    return parts


class ToolCallsHtml:
    """Tool calls of one turn as <li> items, built in Python (a turn may make hundreds)."""

    def __init__(self, session: Session, turn_id: str):
        self.session, self.turn_id = session, turn_id
        self.call_urls = IdUrls("sessions:call", session.id, turn_id)
        self.session_urls = IdUrls("sessions:detail")
        # A turn calls a few tools, with a few statuses, many times over: each pair is written
        # once. For this panel only (they are ledger values, of any size). typed: the number 5
        # and the text "5" are different values.
        self.name_and_status = lru_cache(maxsize=None, typed=True)(_name_and_status)

    def html(self, calls: list[ToolCallView]) -> SafeString:
        # A call is open when its body came with the panel: every call of a short list, the
        # first failed calls of a long one (turn_detail.OPEN_FAILED_CALLS). Other bodies load
        # when opened.
        parts = []
        for call in calls:
            failed = call.status == "failed"
            opened = call.parameters is not None
            call_url = self.call_urls.html(call.id)
            if not opened:
                body = _lazy_body(call_url)
            else:
                body = render_to_string(
                    "sessions/_call_body.html",
                    {"c": call, "session": self.session, "turn_id": self.turn_id},
                )
            summary = _summary(call, call_url, self.session_urls, self.name_and_status)
            parts.append(
                f'<li id="call-{escape(call.id)}" class="tool-call{" failed" if failed else ""}">'
                f"<details{' open' if opened else ''}>{summary}{body}</details></li>"
            )
        return mark_safe("\n".join(parts))  # every ledger value was escaped


def _summary(call: ToolCallView, call_url: str, session_urls: IdUrls, name_and_status) -> str:
    elapsed = call.duration_ms
    timing = f"#{escape(call.sequence)}"
    if elapsed is not None:
        timing += f" · {escape(duration(elapsed))}"
    subagent = (
        f' <a href="{session_urls.html(call.child_session_id)}">subagent session ↗</a>'
        if call.child_session_id
        else ""
    )
    hint = call.hint
    hint_html = f' <span class="call-hint">{escape(hint)}</span>' if hint else ""
    return (
        f"<summary>{name_and_status(call.tool_name, call.status)}{hint_html} "
        f'<span class="muted small">{timing}</span>{subagent}'
        f' <a href="{call_url}" class="small call-link" title="This call on its own page">link</a>'
        "</summary>"
    )


def _name_and_status(tool_name, status) -> str:
    return (
        f'<code class="tool-name">{escape(tool_name)}</code> '
        f'<span class="status status-{css_name(str(status))}">{escape(status)}</span>'
    )


def _lazy_body(url: str) -> str:
    """A closed call's body: fetched the first time its <details> opens; a plain link without
    JavaScript. `url` is already escaped."""
    return (
        f'<div class="call-body" hx-get="{url}" hx-trigger="toggle from:closest details once"'
        f' hx-swap="outerHTML"><a href="{url}" class="small">parameters and result</a></div>'
    )
