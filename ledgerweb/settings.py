"""Settings for ledgerweb, read from the environment (see README.md, "Configuration")."""

import secrets
import sys
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from ledgerweb.db import ledger_databases, ledger_location
from ledgerweb.env import (
    env_bool,
    env_int,
    env_json_file,
    env_json_object,
    env_list,
    env_path,
    env_str,
)
from ledgerweb.prices import parse_price_overrides
from ledgerweb.state_db import is_url, state_database

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

DEBUG = env_bool("DEBUG", False)
# manage.py commands that read and write ledgers (and ledgerweb's derived data): they serve no
# page and sign nothing, so they run without SECRET_KEY (with a throwaway key that dies with the
# process). The README puts ledger_ship and ledger_retention in cron lines that set no secret.
COMMANDS_WITHOUT_SECRET = {
    "ledger_import",
    "ledger_init",
    "ledger_check",
    "ledger_demo",
    "ledger_ship",
    "ledger_retention",
    "ledger_index",
    "ledger_rollup",
    "ledger_otel_export",
    "ledger_dataset",
    "ledger_role",
    # Accounts and sign-in pauses, which the README has people run on the server's machine.
    "changepassword",
    "createsuperuser",
    "axes_reset",
    "axes_reset_username",
}
SECRET_KEY = env_str("SECRET_KEY")
_manage_command = sys.argv[1] if Path(sys.argv[0]).name == "manage.py" and len(sys.argv) > 1 else ""
if not SECRET_KEY and _manage_command in COMMANDS_WITHOUT_SECRET:
    SECRET_KEY = secrets.token_urlsafe(50)
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set it in the environment (make demo and make serve create "
            "one in var/secret-key), or set DEBUG=1 for local development."
        )
    SECRET_KEY = "insecure-development-key-only-used-with-DEBUG"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# A ledger file, or a postgres:// URL to a central ledger (ledgerweb/db.py).
LEDGER_DB = ledger_location(env_str("LEDGER_DB"), VAR_DIR / "demo-ledger.sqlite3")
# ledgerweb's own database: a SQLite file's path, or a PostgreSQL URL (ledgerweb/state_db.py).
DJANGO_DB = env_str("DJANGO_DB").strip()
# Beside this path, one lock per ledger is held by the background process (ledger_background)
# while it runs: pages then leave the building of chart hours to it (background/lock.py). On
# PostgreSQL it holds a lock in the database instead, which every host sharing it sees.
_state_file = env_path("DJANGO_DB", VAR_DIR / "django.sqlite3") if not is_url(DJANGO_DB) else None
SUMMARISER_LOCK = env_path(
    "SUMMARISER_LOCK",
    _state_file.with_name(_state_file.name + ".summariser.lock")
    if _state_file
    else VAR_DIR / "summariser.lock",
)
# Every query on the read-only ledger connection is stopped after this long (milliseconds).
LEDGER_QUERY_TIMEOUT_MS = env_int("LEDGER_QUERY_TIMEOUT_MS", 2000, minimum=1)
# A turn still pending or streaming that has written nothing (no message, no tool call) for this
# many seconds is marked stalled on the session page (live/, issue 29).
STALLED_AFTER_S = env_int("STALLED_AFTER_S", 300, minimum=1)
# The staff health page scans whole tables on purpose: each of its queries may take this long.
LEDGER_HEALTH_TIMEOUT_MS = env_int("LEDGER_HEALTH_TIMEOUT_MS", 25_000, minimum=1)

# Context windows (tokens) for the thread page's gauge come from genai-prices' model data
# (ledgerweb/prices.py); this adds or overrides them: MODEL_CONTEXT_WINDOWS='{"m": 64000}'. A
# model matches its exact name or the longest name here that it starts with.
MODEL_CONTEXT_WINDOWS = env_json_object("MODEL_CONTEXT_WINDOWS")
# Prices for models genai-prices does not know, or at other rates (self-hosted, negotiated):
# MODEL_PRICES_FILE (a JSON file) and MODEL_PRICES (JSON, wins), checked here at start-up.
MODEL_PRICES = parse_price_overrides(
    env_json_file("MODEL_PRICES_FILE") | env_json_object("MODEL_PRICES"),
    "MODEL_PRICES / MODEL_PRICES_FILE",
)

# Alerts (alerts/): the rules are evaluated every ALERTS_EVERY_S seconds by the background
# process; a failed delivery is tried again after ALERTS_RETRY_S, then twice as long each time.
# Their links point at BASE_URL (this site as people reach it); email goes out through Django's
# default mailer, configured from EMAIL_HOST, EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD,
# EMAIL_USE_TLS or EMAIL_USE_SSL (EMAIL_BACKEND: another backend, e.g. the console's), from
# DEFAULT_FROM_EMAIL.
BASE_URL = env_str("BASE_URL", "http://127.0.0.1:8000").strip().rstrip("/")
if not BASE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(f"BASE_URL={BASE_URL!r} is not an http:// or https:// address")
ALERTS_EVERY_S = env_int("ALERTS_EVERY_S", 60, minimum=1)
ALERTS_RETRY_S = env_int("ALERTS_RETRY_S", 30, minimum=1)
# Django's mailers (MAILERS, Django 6.1), from the environment's EMAIL_* variables.
_MAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
_SMTP_OPTIONS = {
    "host": env_str("EMAIL_HOST", "localhost"),
    "port": env_int("EMAIL_PORT", 25, minimum=1),
    "username": env_str("EMAIL_HOST_USER"),
    "password": env_str("EMAIL_HOST_PASSWORD"),
    "use_tls": env_bool("EMAIL_USE_TLS", False),
    "use_ssl": env_bool("EMAIL_USE_SSL", False),
    "timeout": env_int("EMAIL_TIMEOUT", 10, minimum=1),
}
if _SMTP_OPTIONS["use_tls"] and _SMTP_OPTIONS["use_ssl"]:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL: set one of them, not both")
MAILERS = {
    "default": {
        "BACKEND": _MAIL_BACKEND,
        # Other backends (console, file) take none of the SMTP server's options.
        "OPTIONS": _SMTP_OPTIONS if _MAIL_BACKEND.endswith("smtp.EmailBackend") else {},
    }
}
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "ledgerweb@localhost")

INSTALLED_APPS = [
    "ledgerweb.apps.LedgerAdminConfig",  # django.contrib.admin, let in by role
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "axes",
    "ledgerweb",
    "background",
    "sessions.apps.SessionsConfig",
    "pipeline.apps.PipelineConfig",
    "search.apps.SearchConfig",
    "annotations",
    "datasets",
    "review",
    "otel",
    "issues",
    "alerts",
    "live",
    "importers",
    "demo",
]

MIDDLEWARE = [
    "ledgerweb.middleware.ServerTimingMiddleware",  # outermost: a worker's whole time on a request
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "ledgerweb.middleware.RoleRequiredMiddleware",  # signed in, but in no group: nothing
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "ledgerweb.middleware.LedgerErrorMiddleware",
    "ledgerweb.middleware.ControlCharactersMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks: turns a lockout into a page
]

ROOT_URLCONF = "ledgerweb.urls"
WSGI_APPLICATION = "ledgerweb.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "ledgerweb.context_processors.ledger",
                "background.context_processors.background",
            ],
        },
    },
    {
        # The rows of the most opened lists only (ledgerweb/jinja.py says why and how):
        # templates/<app>/*.jinja, rendered by ledgerweb.jinja.rows_html().
        "NAME": "jinja2",
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": False,
        "OPTIONS": {"environment": "ledgerweb.jinja.environment"},
    },
]

DATABASES = {
    "default": state_database(DJANGO_DB, VAR_DIR / "django.sqlite3"),
    **ledger_databases(LEDGER_DB, LEDGER_QUERY_TIMEOUT_MS),
}
DATABASE_ROUTERS = ["ledgerweb.db.LedgerRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Password guessing: after LOGIN_FAILURE_LIMIT failed sign-ins for one username from one address,
# that pair is refused for LOGIN_COOLOFF_MINUTES (django-axes, counted in Django's database so
# every gunicorn worker sees the same count). Other users and other addresses are unaffected.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "ledgerweb.staticfinders.PlotlyFinder",
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# Content-Security-Policy: only our own files, and inline scripts only with the per-request nonce.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True
CSRF_FAILURE_VIEW = "ledgerweb.views.form_refused"  # in the site's layout, says what to do
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# A load balancer probes /healthz over plain http: a 301 to https would read as "down".
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
if not DEBUG:
    # Behind TLS in production; `make serve` on loopback sets HTTPS=0 to keep plain http working.
    _https = env_bool("HTTPS", True)
    SESSION_COOKIE_SECURE = _https
    CSRF_COOKIE_SECURE = _https
    SECURE_SSL_REDIRECT = _https and env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 3600 if _https else 0, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = _https
    # Preloading is a promise for the whole domain and hard to undo; a dashboard usually lives
    # on a subdomain of someone else's. Opt in with SECURE_HSTS_PRELOAD=1.
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        SILENCED_SYSTEM_CHECKS = ["security.W021"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
}
