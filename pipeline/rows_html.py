"""The request list's rows as HTML: templates/pipeline/list_rows.jinja (ledgerweb/jinja.py says
why Jinja2), for the list page and for the rows the live list asks for."""

from django.utils.safestring import SafeString

from ledgerweb import jinja
from ledgerweb.html_parts import IdUrls
from pipeline.filters import RequestFilters
from pipeline.listing import RequestRow


def list_rows_html(rows: list[RequestRow], filters: RequestFilters) -> SafeString:
    urls = IdUrls("pipeline:request")
    return jinja.rows_html(
        "pipeline/list_rows.jinja", rows=rows, request_url=urls.html, timing=filters.timing
    )
