"""Create the demo's admin account once, with a generated password printed once: framed, with
the address to open, as the last thing `make demo` prints (it waits for the server first, so
the box is not lost among the server's start-up lines)."""

import os
import secrets
import time
import urllib.error
import urllib.request

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError

WAIT_S = 120  # for the server to answer /healthz (make demo starts it just before)


class Command(BaseCommand):
    help = "Create the demo admin user (once); never changes an existing user."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")
        parser.add_argument("--url", default="http://127.0.0.1:8000/", help="where to sign in")
        parser.add_argument(
            "--wait", action="store_true", help="print once the server at --url answers"
        )
        parser.add_argument(
            "--server-pid", type=int, help="stop waiting when this process (the server) ends"
        )

    def handle(self, *args, username: str, url: str, wait: bool, server_pid, **options):
        if wait:
            _wait_for(url, server_pid)
        User = get_user_model()
        if User.objects.filter(username=username).exists():
            lines = [
                f"ledgerweb is ready: {url}",
                f"Sign in as {username}: its password was shown when it was created.",
                f"Forgot it? .venv/bin/python manage.py changepassword {username}",
            ]
        else:
            password = secrets.token_urlsafe(12)
            user = User.objects.create_superuser(username=username, email="", password=password)
            user.groups.add(Group.objects.get(name="admin"))
            lines = [
                f"ledgerweb is ready: {url}",
                f"Sign in as {username} with the password {password}",
                "Keep it: it is shown only once.",
            ]
        self.stdout.write(framed(lines))


def framed(lines: list[str]) -> str:
    width = max(len(line) for line in lines)
    top, bottom = "╔" + "═" * (width + 2) + "╗", "╚" + "═" * (width + 2) + "╝"
    return "\n".join(["", top, *(f"║ {line.ljust(width)} ║" for line in lines), bottom])


def _wait_for(url: str, server_pid: int | None) -> None:
    probe = url.rstrip("/") + "/healthz"
    ends = time.monotonic() + WAIT_S
    while time.monotonic() < ends:
        if server_pid and not _running(server_pid):
            raise CommandError(f"the server at {url} stopped (see its lines above)")
        try:
            with urllib.request.urlopen(probe, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers (a 503 says the ledger is unavailable: the page says why)
        except OSError:
            time.sleep(0.5)
    raise CommandError(f"the server at {url} did not answer in {WAIT_S} s")


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
