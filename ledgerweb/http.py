from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest

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
