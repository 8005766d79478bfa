"""The session list's rows as HTML, written in Python.

Through the template each row cost about 0.3 ms (a URL tag, a timestamp, a dozen filters and
lookups): half of the list page's time. Built here a row costs a few tens of microseconds. Every
value from the ledger goes through escape().
"""

from django.utils.safestring import SafeString, mark_safe

from ledgerweb.formatting import timestamp
from ledgerweb.html_parts import IdUrls, css_name, escape
from sessions.kinds import MAIN
from sessions.listing import SessionRow


def session_rows_html(rows: list[SessionRow]) -> SafeString:
    urls = IdUrls("sessions:detail")
    return mark_safe("\n".join(_row(row, urls) for row in rows))  # ledger values escaped below


def _count(n) -> str:
    return f"{n:,}" if isinstance(n, int) else escape(n)


def _cost(cost) -> str:
    if cost is None or not (cost.priced or cost.unpriced):
        return '<td class="num"></td>'
    unpriced = f" + {cost.unpriced:,} unpriced" if cost.unpriced else ""
    title = escape(cost.unpriced_note or "What the session's own turns cost")
    return f'<td class="num cost" title="{title}">{escape(cost.label)}{unpriced}</td>'


def _row(r: SessionRow, urls: IdUrls) -> str:
    s, routing = r.session, r.routing
    kind = (
        f' <span class="kind kind-{css_name(routing.kind)}">{escape(routing.kind)}</span>'
        if routing.kind != MAIN
        else ""
    )
    hint = f'<div class="hint muted small">“{escape(r.hint)}”</div>' if r.hint else ""
    return (
        f'<tr><td><a class="label" href="{urls.html(s.id)}">{escape(r.title)}</a>{kind}{hint}</td>'
        f"<td>{escape(s.persona)}</td>"
        f'<td><code class="small">{escape(routing.channel or "—")}</code></td>'
        f'<td><span class="status status-{css_name(str(s.status))}">{escape(s.status)}</span></td>'
        f'<td class="num">{_count(r.turns)}</td>'
        f'<td class="num">{_count(r.leaves)}</td>'
        f"{_cost(r.cost)}"
        f"<td>{timestamp(s.updated_at)}</td></tr>"
    )
