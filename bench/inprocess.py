"""Pages timed in this process (no HTTP): Django set up on a bench's ledger, a signed-in client."""

import os
import secrets
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bench_env(ledger: Path, django_db: Path) -> dict:
    """The environment of a bench timed in process: production settings (DEBUG off) on `ledger`,
    with ledgerweb's own database at `django_db` and a throwaway secret."""
    return {
        "DJANGO_SETTINGS_MODULE": "ledgerweb.settings",
        "SECRET_KEY": "bench-" + secrets.token_urlsafe(16),
        "DEBUG": "0",
        "HTTPS": "0",
        "ALLOWED_HOSTS": "testserver",
        "DJANGO_DB": str(django_db),
        "LEDGER_DB": str(ledger),
        "LOG_LEVEL": "ERROR",
    }


def signed_in_client(env: dict):
    """Django's test client signed in as a superuser, on the ledger and database `env` names
    (migrated), with plain static URLs: the manifest needs a collectstatic (~80 s), and a
    timed page needs no static file."""
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import override_settings

    plain = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}
    override_settings(STORAGES=settings.STORAGES | {"staticfiles": plain}).enable()
    call_command("migrate", interactive=False, verbosity=0)
    user, _ = get_user_model().objects.get_or_create(
        username="bench", defaults={"is_superuser": True, "is_staff": True}
    )
    client = Client()
    client.force_login(user)
    return client
