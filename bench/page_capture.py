"""Child process of bench.scale_bench: the ledger SQL each page runs when nothing is stored.

    (stdin: JSON [{"url": ..., "headers": {...}}]) → stdout: JSON [[statement, ...], ...]

It runs with a fresh, empty Django database of its own and with the dashboard's rollup building
switched off, so a chart reads its whole window from the ledger: what it captures is the SQL
that answers the page's question from the ledger alone. The raw-SQL and Datasette columns are
this SQL; our pages themselves are measured through gunicorn, rollups and all.
"""

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

from bench import page_sql


def main() -> None:
    todo = json.loads(sys.stdin.read())
    database = Path(os.environ["DJANGO_DB"])
    remove(database)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    call_command("migrate", interactive=False, verbosity=0)
    try:
        from pipeline import rollups

        rollups.BUILD_BUDGET_S = 0  # read live: build no hour
    except ImportError:
        pass  # a dashboard without rollups reads its window from the ledger anyway
    user = get_user_model().objects.create_superuser("capture", password=None)
    client = Client()
    client.force_login(user)
    out = []
    for page in todo:
        statements, status = page_sql.capture(client, page["url"], page["headers"])
        if status != 200:
            sys.exit(f"{page['url']} answered {status} in Django's test client")
        out.append([asdict(s) for s in statements])
    remove(database)
    print(json.dumps(out))


def remove(database: Path) -> None:
    for path in (database, Path(f"{database}-wal"), Path(f"{database}-shm")):
        path.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
