from django.http import HttpRequest


def wants_json(request: HttpRequest) -> bool:
    """Every page has a JSON twin, asked for with ?format=json."""
    return request.GET.get("format") == "json"
