"""Two web hosts sharing one PostgreSQL behave as one site: two gunicorns on different ports
(as two machines: each its own summariser lock file) over one Django database and one ledger."""

import http.cookiejar
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from itertools import count
from pathlib import Path

import pytest
from builders import LedgerBuilder

from ledgerfacts import schema
from ledgerfacts.timestamps import now_ms

PROJECT = Path(__file__).resolve().parent.parent
GUNICORN = Path(sys.executable).with_name("gunicorn")
USER, PASSWORD = "vera", "a-password-for-two-hosts"
H = 3_600_000
HOURS = 60
PER_HOUR = 500
_databases = count()

# Naming a new ledger at once is tested on both of make test's passes: on SQLite too, a host's
# gunicorn workers share one database file. Building an hour at once only on PostgreSQL's
# (DJANGO_STATE_TESTS): SQLite lets two workers build it, as pipeline.rollups.build_hour says.
TWO_BUILDERS_ON_SQLITE = (
    "on SQLite two workers meeting an hour both build it (the same result): one builder is "
    "PostgreSQL's rule, tested in make test's --django-db=postgres pass (rollups.build_hour)"
)


def env_for(url: str, ledger: Path, host: str) -> dict[str, str]:
    return os.environ | {
        "DJANGO_SETTINGS_MODULE": "ledgerweb.settings_test",
        "DJANGO_DB": url,
        "LEDGER_DB": str(ledger),
        "SUMMARISER_LOCK": str(ledger.parent / f"{host}.summariser.lock"),
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOGIN_FAILURE_LIMIT": "3",
        "LOG_LEVEL": "WARNING",
    }


def manage(env: dict, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=PROJECT, env=env, capture_output=True,
        text=True, check=True, **kwargs,
    )  # fmt: skip


@pytest.fixture
def site(postgres, tmp_path):
    """A migrated PostgreSQL database with a viewer, and a ledger of HOURS settled hours of
    requests: what two hosts share."""
    name = f"two_hosts_{next(_databases)}"
    url = postgres.create_database(name)
    ledger = tmp_path / "ledger.sqlite3"
    schema.create_ledger(ledger)
    builder = LedgerBuilder(ledger)
    first_hour = (now_ms() - (HOURS + 2) * H) // H * H
    with builder.conn:
        builder.conn.execute("BEGIN")
        for i in range(HOURS * PER_HOUR):
            builder.request(
                started_at=first_hour + (i % HOURS) * H + i % 3_000_000,
                status=("completed", "failed")[i % 7 == 0],
                event_source=("imessage", "gmail")[i % 2],
            )
    builder.conn.close()
    env = env_for(url, ledger, "a")
    manage(env, "migrate", "--noinput", "-v0")
    create_viewer = (
        "from django.contrib.auth.models import Group, User; "
        f"u = User.objects.create_user({USER!r}, password={PASSWORD!r}); "
        "u.groups.add(Group.objects.get(name='viewer'))"
    )
    manage(env, "shell", "-c", create_viewer)
    with postgres.connect(name) as conn:
        conn.execute(COUNT_BUILDS)
    return url, ledger, name


# Every hour stored (a build) is logged, so that a test counts builds, rebuilds included.
COUNT_BUILDS = """
    CREATE TABLE hour_builds (ledger TEXT, hour BIGINT);
    CREATE FUNCTION log_hour_build() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO hour_builds VALUES (NEW.ledger, NEW.hour); RETURN NEW; END $$;
    CREATE TRIGGER log_hour_build AFTER INSERT ON pipeline_rolluphour
        FOR EACH ROW EXECUTE FUNCTION log_hour_build();
"""


def builds(postgres, name: str) -> tuple[int, int]:
    """(hours stored, builds of an hour built before)."""
    with postgres.connect(name) as conn:
        return conn.execute(
            "SELECT count(DISTINCT (ledger, hour)), count(*) - count(DISTINCT (ledger, hour)) "
            "FROM hour_builds"
        ).fetchone()


def free_port() -> int:
    with closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def gunicorn(env: dict, log: Path):
    port = free_port()
    process = subprocess.Popen(
        [str(GUNICORN), "ledgerweb.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1",
         "--timeout", "60"],
        cwd=PROJECT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/healthz", timeout=5).read()
                break
            except OSError:
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        yield Browser(base)
    finally:
        process.terminate()
        process.wait(timeout=30)


class Browser:
    """A person's browser on one host: cookies, and the sign-in form with its CSRF token."""

    def __init__(self, base: str):
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )

    def get(self, path: str) -> tuple[int, str]:
        return self._open(urllib.request.Request(self.base + path))

    def sign_in(self, password: str) -> tuple[int, str]:
        _, page = self.get("/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        form = {"username": USER, "password": password, "csrfmiddlewaretoken": token}
        return self._open(
            urllib.request.Request(
                self.base + "/accounts/login/", data=urllib.parse.urlencode(form).encode(),
                headers={"Referer": self.base + "/accounts/login/"},
            )
        )  # fmt: skip

    def _open(self, request) -> tuple[int, str]:
        try:
            with self.opener.open(request, timeout=120) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()


def test_a_lockout_made_through_one_host_holds_on_the_other(site, tmp_path):
    url, ledger, _ = site
    with (
        gunicorn(env_for(url, ledger, "a"), tmp_path / "a.log") as a,
        gunicorn(env_for(url, ledger, "b"), tmp_path / "b.log") as b,
    ):
        status, page = Browser(b.base).sign_in(PASSWORD)  # the right password works on b...
        assert status == 200 and f"<span>{USER}</span>" in page
        # ...until three wrong ones on a (LOGIN_FAILURE_LIMIT): the third pauses signing in.
        assert [a.sign_in("wrong")[0] for _ in range(3)] == [200, 200, 429]
        status, page = b.sign_in(PASSWORD)
    assert status == 429
    assert "Sign-in paused" in page and f"<span>{USER}</span>" not in page


def test_rollups_built_by_one_host_are_used_by_the_other(site, postgres, tmp_path):
    url, ledger, name = site
    until = now_ms()
    window = f"/pipeline/charts/throughput/?since={until - 3 * 24 * H}&until={until}&format=json"
    with (
        gunicorn(env_for(url, ledger, "a"), tmp_path / "a.log") as a,
        gunicorn(env_for(url, ledger, "b"), tmp_path / "b.log") as b,
    ):
        a.sign_in(PASSWORD)
        b.sign_in(PASSWORD)
        manage(env_for(url, ledger, "a"), "ledger_rollup", "--days", "3")  # host a builds
        built, twice = builds(postgres, name)
        assert built == HOURS and twice == 0
        status_a, answer_a = a.get(window)
        status_b, answer_b = b.get(window)
    assert status_a == status_b == 200
    assert json.loads(answer_b)["buckets"] == json.loads(answer_a)["buckets"]
    assert sum(bucket["total"] for bucket in json.loads(answer_b)["buckets"]) == HOURS * PER_HOUR
    assert builds(postgres, name) == (HOURS, 0)  # b built nothing: it read a's hours


def test_two_summarisers_started_at_once_build_each_hour_once(site, postgres):
    url, ledger, name = site
    command = [sys.executable, "manage.py", "ledger_rollup", "--follow", "--rounds", "1",
               "--every", "0", "--days", "3"]  # fmt: skip
    summarisers = [
        subprocess.Popen(
            command,
            cwd=PROJECT,
            env=env_for(url, ledger, host),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        for host in ("a", "b")
    ]
    outputs = [process.communicate(timeout=300)[0] for process in summarisers]
    assert all(process.returncode == 0 for process in summarisers), outputs
    # An hour built by both at once fails one of them ("duplicate key": its round is lost) or,
    # one after the other, shows in the builds.
    assert not any(
        "summarise: stopped" in output or "summarise: failed" in output for output in outputs
    ), outputs
    assert builds(postgres, name) == (HOURS, 0)


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_two_hosts_meeting_a_new_ledger_at_once_name_it_once(ledger, monkeypatch):
    """Two processes (threads here, each with its own connection) see a new ledger at the same
    moment: one names it, the other recognises that name, so its hours are never stored twice
    under two names."""
    from django.db import connections

    from pipeline import rollups
    from pipeline.models import RollupLedger

    ledger.request(started_at=now_ms() - 3 * H)
    naming = threading.Barrier(2)
    real_uuid4 = uuid.uuid4

    def slow_uuid4():  # the moment between "not known" and "named" made long enough to meet
        time.sleep(0.5)
        return real_uuid4()

    monkeypatch.setattr(rollups.uuid, "uuid4", slow_uuid4)

    def look() -> str:
        try:
            naming.wait()
            return rollups.ledger_key()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(2) as pool:
        keys = list(pool.map(lambda _: look(), range(2)))
    assert keys[0] == keys[1]
    assert RollupLedger.objects.count() == 1


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_two_hosts_charting_the_same_hours_at_once_build_each_hour_once(ledger, monkeypatch):
    from django.db import connection, connections

    from pipeline import rollups

    if connection.vendor != "postgresql":
        pytest.skip(TWO_BUILDERS_ON_SQLITE)
    first = (now_ms() - 8 * H) // H * H
    for hour in range(6):
        for minute in range(5):
            ledger.request(started_at=first + hour * H + minute * 60_000)
    built, real_build = [], rollups._build_hour

    def slow_build(key, hour, *args):  # an hour long enough to build for the other to meet it
        built.append(hour)
        time.sleep(0.2)
        return real_build(key, hour, *args)

    monkeypatch.setattr(rollups, "_build_hour", slow_build)
    charting = threading.Barrier(2)

    def chart() -> None:
        try:
            charting.wait()
            rollups.plan(first, first + 6 * H, budget_s=60)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda _: chart(), range(2)))  # (an error in either is raised here)
    assert sorted(built) == [first + hour * H for hour in range(6)]
