from collections.abc import Callable

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.utils.encoding import escape_uri_path

from ledgerweb.text import as_text


def wants_json(request: HttpRequest) -> bool:
    """Every page has a JSON twin, asked for with ?format=json."""
    return request.GET.get("format") == "json"


class LedgerJSONEncoder(DjangoJSONEncoder):
    """JSON of ledger values as they come: a BLOB in a TEXT column is the text it most likely is
    (ledgerweb.text.as_text), not a 500."""

    def default(self, o):
        if isinstance(o, bytes | bytearray | memoryview):
            return as_text(bytes(o))
        return super().default(o)


def respond(
    request: HttpRequest,
    page: Callable[[], HttpResponse],
    twin: Callable[[], object],
) -> HttpResponse:
    """A view's one answer, as HTML or as its JSON twin (Datasette's renderers, in small).

    The view gathers what both share, then hands over two callables: `page()` renders the HTML
    (a response: a template, a fragment for htmx, a redirect) and `twin()` the data as JSON (a
    dict or list, or a response of its own such as a 400). Only the one asked for runs. The HTML
    says where its twin is, in a `Link: rel="alternate"` header, so a script can find it."""
    if wants_json(request):
        data = twin()
        if isinstance(data, HttpResponse):
            return data
        return JsonResponse(data, safe=False, encoder=LedgerJSONEncoder)
    response = page()
    if _is_html_page(response):
        response["Link"] = f'<{twin_url(request)}>; rel="alternate"; type="application/json"'
    return response


def twin_url(request: HttpRequest) -> str:
    """This page's address with format=json, every other query parameter kept as it came."""
    query = request.GET.copy()
    query["format"] = "json"
    return f"{escape_uri_path(request.path)}?{query.urlencode()}"


def _is_html_page(response: HttpResponse) -> bool:
    """A page or fragment that shows data (not a redirect, nor htmx's redirect)."""
    is_html = response.get("Content-Type", "").startswith("text/html")
    return is_html and not (response.has_header("Location") or response.has_header("HX-Redirect"))


def see_other(url: str) -> HttpResponseRedirect:
    """303 after a form's POST: the browser fetches `url` with GET (a reload posts nothing)."""
    response = HttpResponseRedirect(url)
    response.status_code = 303
    return response
