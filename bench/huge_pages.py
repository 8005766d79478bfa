"""Server time and size of the huge ledger's session and thread pages (tests/hostile.py: a
50,000-turn session WIDE, a 20,000-deep thread DEEP), in-process as a gunicorn worker serves
them: one persistent ledger connection, so a tree kept while the ledger is unchanged is reused.

    .venv/bin/python -m bench.huge_pages [URL ...]

Prints, per page, the first request (nothing kept yet for that session) and the median of five
more, in seconds, and the size of the answer (redirects followed). The ledger is built into
var/bench/huge.sqlite3 on the first run (a few seconds).
"""

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "var" / "bench"
LEDGER = BENCH / "huge.sqlite3"
PAGES = [
    "/sessions/WIDE/", "/sessions/WIDE/?from=4001", "/sessions/WIDE/?unfold=all",
    "/sessions/WIDE/?format=json", "/sessions/WIDE/turns/W24999/",
    "/sessions/WIDE/turns/W12345/", "/sessions/DEEP/", "/sessions/DEEP/turns/D19999/thread/",
    "/sessions/DEEP/turns/D19999/thread/?all=1",
    "/sessions/DEEP/turns/D19999/thread/?format=json",
]  # fmt: skip


def main(urls: list[str]) -> None:
    BENCH.mkdir(parents=True, exist_ok=True)
    os.environ.update(
        DJANGO_SETTINGS_MODULE="ledgerweb.settings", SECRET_KEY="bench", DEBUG="1",
        ALLOWED_HOSTS="testserver", DJANGO_DB=str(BENCH / "django.sqlite3"),
        LEDGER_DB=str(LEDGER),
    )  # fmt: skip
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    if not LEDGER.exists():
        from hostile import build_huge_ledger

        build_huge_ledger(LEDGER)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(
        username="bench", defaults={"is_superuser": True, "is_staff": True}
    )
    client = Client()
    client.force_login(user)
    print("| page | first s | median s | MB |\n|---|--:|--:|--:|")
    for url in urls:
        times = []
        for _ in range(6):
            start = time.perf_counter()
            response = client.get(url, follow=True)
            times.append(time.perf_counter() - start)
        size = len(response.content) / 1e6
        print(f"| `{url}` | {times[0]:.2f} | {statistics.median(times[1:]):.2f} | {size:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1:] or PAGES)
