"""Settings for the test suite: production settings with a throwaway key and fast hashing."""

import os

os.environ.setdefault("SECRET_KEY", "tests-only-not-a-secret")
os.environ.setdefault("HTTPS", "0")  # the test client and live server speak plain http

from ledgerweb.settings import *  # noqa: E402, F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES["staticfiles"]["BACKEND"] = "django.contrib.staticfiles.storage.StaticFilesStorage"  # noqa: F405
STATIC_ROOT = None  # tests serve static files from the finders; nothing is collected
