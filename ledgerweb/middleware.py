"""Turn ledger trouble into a clear page instead of a 500 or a hung worker."""

import logging
import re
import time

from django.db import OperationalError
from django.db.utils import DatabaseErrorWrapper
from django.http import JsonResponse
from django.shortcuts import render
from django.urls import reverse

from ledgerweb.db import LEDGER_ALIASES, ledger_is_postgres, ledger_shown_to
from ledgerweb.http import wants_json
from ledgerweb.params import SQLITE_INT, BadParameter, bad_request
from ledgerweb.roles import ROLE_PROMISES, has_a_role, who_gives_roles
from ledgerweb.sqlite import LedgerQueryTimeout, is_interrupted

logger = logging.getLogger(__name__)


def _where_for_staff(request) -> str:
    """Which ledger: where it is tells about the server, so only staff see it."""
    user = getattr(request, "user", None)
    staff = user is not None and user.is_staff
    what = "database" if ledger_is_postgres() else "file"
    if staff:
        return f" Ledger {what}: {ledger_shown_to(staff)}"
    return f" Ledger {what}: {ledger_shown_to(staff)} (staff see where it is)."


def failed_database(error: BaseException) -> str | None:
    """The alias of the database an error came from: Django raises every database error through
    the failing connection's DatabaseErrorWrapper, whose frame is in the traceback (None for an
    error raised elsewhere)."""
    alias = None
    tb = error.__traceback__
    while tb is not None:
        wrapper = tb.tb_frame.f_locals.get("self")
        if isinstance(wrapper, DatabaseErrorWrapper):
            alias = wrapper.wrapper.alias
        tb = tb.tb_next
    return alias


class LedgerErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, OverflowError) and (bad := _number_out_of_range(request)):
            # A filter of a page we did not write (the admin's date drill-down of django-axes'
            # lists, ?attempt_time__year=9223372036854775808) reached the database driver.
            return bad_request(request, BadParameter(bad, request.GET[bad], "out of range"))
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
        if isinstance(exception, OperationalError) and failed_database(exception) not in (
            None,
            *LEDGER_ALIASES,
        ):
            # ledgerweb's own database (users, sessions, the search index) was busy or down: not
            # the ledger, which may be perfectly readable.
            logger.warning("ledgerweb's database unavailable on %s: %s", request.path, exception)
            return self._error_page(
                request,
                status=503,
                title="ledgerweb is busy",
                message=f"ledgerweb's own database could not be used just now ({exception})."
                " Nothing was lost: try again in a moment.",
            )
        if isinstance(exception, OperationalError):
            logger.warning("ledger unavailable on %s: %s", request.path, exception)
            return self._error_page(
                request,
                status=503,
                title="The ledger could not be read",
                message=f"{exception}.{_where_for_staff(request)}",
            )
        return None

    def _error_page(self, request, *, status, title, message):
        if wants_json(request):
            return JsonResponse({"error": title, "detail": message}, status=status)
        context = {"title": title, "message": message}
        if getattr(request, "htmx", False):
            return render(request, "ledger_error.html#message", context, status=status)
        return render(request, "ledger_error.html", context, status=status)


def _number_out_of_range(request) -> str | None:
    """The query parameter whose whole number no database column can hold, if one is."""
    for name, raw in request.GET.items():
        if _WHOLE_NUMBER.fullmatch(raw.strip()) and abs(int(raw)) > SQLITE_INT:
            return name
    return None


_WHOLE_NUMBER = re.compile(r"-?[0-9]{1,4300}")


class RoleRequiredMiddleware:
    """A signed-in user with no role gets one page: ask an administrator for a role. Runs after
    LoginRequiredMiddleware, which has already sent anonymous visitors to the login page."""

    # Signing in and out, and the liveness probe, need no role.
    OPEN_URL_NAMES = ("login", "logout", "healthz", "admin:login", "admin:logout")

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        user = request.user
        if not user.is_authenticated or has_a_role(user) or self._is_open(request.path):
            return None
        if wants_json(request):
            return JsonResponse(
                {"error": "no role", "detail": "Ask an administrator for a role."}, status=403
            )
        ctx = {"ask": who_gives_roles(), "promises": ROLE_PROMISES}
        return render(request, "no_role.html", ctx, status=403)

    def _is_open(self, path: str) -> bool:
        return path in {reverse(name) for name in self.OPEN_URL_NAMES} | {"/favicon.ico"}


# C0 control characters other than tab, newline and carriage return may not appear in HTML. The
# ledger's text can hold any of them; on a page they are shown as their visible "control
# pictures" (U+2400…), so a stray BEL reads as ␇ instead of breaking the document.
_CONTROL_PICTURES = {code: 0x2400 + code for code in range(0x20) if code not in (9, 10, 13)}
_CONTROL_PICTURES[0x7F] = 0x2421
# These bytes never occur inside a multi-byte UTF-8 sequence, so the raw body can be scanned.
_CONTROL_BYTES = bytes(sorted(_CONTROL_PICTURES))


def _has_control_bytes(body: bytes) -> bool:
    # Deleting them and comparing lengths: ~0.4 ms for a page of 900 KB (a big tree's, which a
    # live page redraws every second), where a regular expression's search takes ~1.7 ms.
    return len(body.translate(None, _CONTROL_BYTES)) != len(body)


class ControlCharactersMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        content_type = response.get("Content-Type", "")
        if (
            content_type.startswith("text/html")
            and not response.streaming
            and _has_control_bytes(response.content)  # rarely true
        ):
            charset = response.charset or "utf-8"
            text = response.content.decode(charset, errors="replace")
            response.content = text.translate(_CONTROL_PICTURES).encode(charset)
        return response


class ServerTimingMiddleware:
    """Says in each response how long this worker spent on it (`app`: wall time, from the first
    middleware to the last) and how much of a CPU (`cpu`: this thread's CPU time), as a
    Server-Timing header. Live pages (static/js/live.js) base their back-off on it: the time a
    worker was held is the page's cost to others, while the time the page waited for an answer
    also counts the queue and the machine's other load. Benchmarks read it too. Outermost, so it
    counts the session and the user's lookup as well."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        wall, cpu = time.perf_counter(), time.thread_time()
        response = self.get_response(request)
        app_ms = (time.perf_counter() - wall) * 1000
        cpu_ms = (time.thread_time() - cpu) * 1000
        response["Server-Timing"] = f"app;dur={app_ms:.1f}, cpu;dur={cpu_ms:.1f}"
        return response
