"""Turn ledger trouble into a clear page instead of a 500 or a hung worker."""

import logging

from django.db import OperationalError
from django.http import JsonResponse
from django.shortcuts import render

from ledgerweb.db import ledger_path_of
from ledgerweb.sqlite import LedgerQueryTimeout, is_interrupted

logger = logging.getLogger(__name__)


class LedgerErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if is_interrupted(exception):
            limit = exception.limit_ms if isinstance(exception, LedgerQueryTimeout) else None
            logger.warning("ledger query stopped by the time limit on %s", request.path)
            return self._error_page(
                request,
                status=503,
                title="That took too long",
                message=str(exception)
                if limit
                else "A ledger query was stopped by the time limit.",
            )
        if isinstance(exception, OperationalError):
            logger.warning("ledger unavailable on %s: %s", request.path, exception)
            return self._error_page(
                request,
                status=503,
                title="The ledger could not be read",
                message=f"{exception}. Ledger file: {ledger_path_of()}",
            )
        return None

    def _error_page(self, request, *, status, title, message):
        if request.GET.get("format") == "json":
            return JsonResponse({"error": title, "detail": message}, status=status)
        context = {"title": title, "message": message}
        if getattr(request, "htmx", False):
            return render(request, "ledger_error.html#message", context, status=status)
        return render(request, "ledger_error.html", context, status=status)
