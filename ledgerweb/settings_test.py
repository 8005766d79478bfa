"""Settings for the test suite: production settings with a throwaway key and fast hashing."""

import os
import tempfile
from pathlib import Path

os.environ.setdefault("SECRET_KEY", "tests-only-not-a-secret")
os.environ.setdefault("HTTPS", "0")  # the test client and live server speak plain http

from ledgerweb.settings import *  # noqa: E402, F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES["staticfiles"]["BACKEND"] = "django.contrib.staticfiles.storage.StaticFilesStorage"  # noqa: F405
STATIC_ROOT = None  # tests serve static files from the finders; nothing is collected

# Django's own test database as a file, not shared memory: the browser tests' live server
# answers several requests at once (the dashboard loads seven charts in parallel), and threads
# sharing one in-memory SQLite connection trip over each other.
# (Only for SQLite: DJANGO_DB may be a PostgreSQL URL, as in tests/test_two_hosts.py.)
_SQLITE = DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"  # noqa: F405
if _SQLITE:
    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": os.path.join(tempfile.gettempdir(), f"ledgerweb-test-django-{os.getpid()}.sqlite3")
    }
# The live server's threads may still be writing (chart rollups, the search index) when the next
# browser test sets up its users; on a loaded 2-core machine that outlasted the 5 s busy wait
# ("database is locked" at setup). Tests wait longer rather than fail.
if _SQLITE:
    DATABASES["default"]["OPTIONS"] = DATABASES["default"]["OPTIONS"] | {"timeout": 30}  # noqa: F405
# A summariser running for the demo ledger must not change how the tests' pages build hours.
SUMMARISER_LOCK = Path(tempfile.gettempdir()) / f"ledgerweb-test-summariser-{os.getpid()}.lock"
