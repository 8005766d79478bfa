"""Every command the README shows works as written, in a fresh environment with nothing set
(issue 25, item 6): `LEDGER_DB=postgres://…` without `?options` stopped the start, and the
cron line of `ledger_ship` failed for want of a SECRET_KEY, because the tests only ever ran
other shapes.

The README's code blocks are read, every command in them is classified here (a new command the
README gains fails `test_every_readme_command_is_run_here_or_named_where`), and the runnable ones
are run in a checkout without var/ (manage.py, the Makefile and the venv, linked), with only
PATH and HOME set, against a PostgreSQL server of the test's own listening on 127.0.0.1 with SSL
(the URLs' hosts are the only substitution, with the placeholders the README asks people to fill
in: a path, a user name, the database server)."""

import contextlib
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
from importing import home_with_history
from postgres_server import PostgresServer, postgres_bin

from ledgerfacts import schema

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^( *)```(sh|cron)\n(.*?)^\1```", re.S | re.M)
CRON_TIMES = re.compile(r"^(\S+\s+){5}")
START_S = 120  # for a server to answer its first request (migrate, collectstatic, gunicorn)

IMPORT_CLAUDE_CODE = (
    ".venv/bin/python manage.py ledger_import claude-code ~/.claude/projects"
    " --ledger var/mine.sqlite3"
)
IMPORT_CODEX = (
    ".venv/bin/python manage.py ledger_import codex ~/.codex/sessions --ledger var/mine.sqlite3"
)
# Commands this test runs, by what the README writes (whitespace collapsed).
RUN = {
    "LEDGER_DB=/path/to/your/ledger.sqlite make serve",
    IMPORT_CLAUDE_CODE,
    IMPORT_CODEX,
    "LEDGER_DB=var/mine.sqlite3 make serve",
    "export DJANGO_DB='postgres://ledgerweb:PASSWORD@db.example.org:5432/ledgerweb?sslmode=require'",
    'export SECRET_KEY="$(cat /etc/ledgerweb/secret-key)"',
    ".venv/bin/python manage.py migrate",
    ".venv/bin/python manage.py check --deploy --database default",
    ".venv/bin/gunicorn ledgerweb.wsgi --bind 0.0.0.0:8000 --workers 2",
    ".venv/bin/python manage.py ledger_background",
    "createdb ledger",
    "cd /opt/ledgerweb && .venv/bin/python manage.py ledger_ship ~/.agent/ledger.sqlite3"
    " --to postgres://ship@central.example/ledger",
    "LEDGER_DB=postgres://ledgerweb@central.example/ledger make serve",
    "cd /opt/ledgerweb && LEDGER_DB=postgres://ledgerweb@central.example/ledger .venv/bin/python"
    " manage.py ledger_retention --archive-to postgres://ledgerweb@central.example/ledger_archive",
    'psql "$LEDGER_DB" -f ledgerweb/sql/postgres/rowids.sql',
    ".venv/bin/python manage.py ledger_role alice operator",
    ".venv/bin/python manage.py ledger_role bob viewer --create",
    ".venv/bin/python manage.py ledger_role --list",
}
# Commands other tests run as the README writes them, or that run the tests themselves.
ELSEWHERE = {
    "make test": "CI runs it (.ci/run)",
    ".venv/bin/pytest tests/test_overview.py -k wal": "pytest itself",
    '.venv/bin/pytest -m "not e2e"': "pytest itself",
    ".venv/bin/pytest --ledger-backend=postgres tests/test_session_page.py": "make test's "
    "PostgreSQL ledger pass",
    "make lint": "make test's companion in CI",
    "make bench": "the benchmarks (docs/benchmarks.md says when each ran)",
    ".venv/bin/python -m bench.state_db_bench --write-doc": "make bench",
    ".venv/bin/python -m bench.search_pg_ledger_bench --write-doc": "make bench",
    ".venv/bin/python -m bench.postgres_ledger_bench --write-doc": "make bench",
    ".venv/bin/python -m bench.page_cpu --scale-50 --against /tmp/base /sessions/": "by hand, "
    "on the scale-50 ledger make bench builds, beside another checkout (docs/benchmarks.md)",
    ".venv/bin/python -m bench.profile_page --scale-50 /sessions/": "by hand, on the scale-50 "
    "ledger make bench builds",
    "make demo": "tests/test_demo_ledger.py (the ledger), test_commands.py (the admin's box), "
    "test_demo_live.py; by hand before a release",
    ".venv/bin/python manage.py ledger_demo var/big.sqlite3 --scale 50": "tests/test_demo_ledger"
    ".py at small scales (this one takes minutes)",
    ".venv/bin/python manage.py ledger_import chatgpt ~/Downloads/chatgpt-export/conversations.json"
    " --ledger var/mine.sqlite3": "tests/test_import_chat_exports.py",
    ".venv/bin/python manage.py ledger_import claude-ai ~/Downloads/claude-export --ledger "
    "var/mine.sqlite3": "tests/test_import_chat_exports.py",
    ".venv/bin/python manage.py ledger_import otlp traces/ --ledger var/mine.sqlite3": "tests/"
    "test_import_otlp.py",
    ".venv/bin/python manage.py ledger_otel_export --endpoint http://localhost:4318": "tests/"
    "test_otel_export.py (a receiver of the test's own)",
    ".venv/bin/python manage.py ledger_otel_export --endpoint http://localhost:6006": "tests/"
    "test_otel_receiver.py (Arize Phoenix)",
    ".venv/bin/python manage.py ledger_otel_export --endpoint "
    "https://cloud.langfuse.com/api/public/otel --header \"Authorization=Basic $(printf '%s' "
    '"$LANGFUSE_PUBLIC_KEY:$LANGFUSE_SECRET_KEY" | base64 -w0)"': "a hosted service: no "
    "network in the tests; the --header option is tested in tests/test_otel_export.py",
    ".venv/bin/python manage.py ledger_otel_export --to-dir var/otlp": "tests/test_otel_export.py",
    "BASE_URL=https://ledger.example.org EMAIL_HOST=smtp.example.org EMAIL_PORT=587 "
    "EMAIL_USE_TLS=1 EMAIL_HOST_USER=alerts@example.org EMAIL_HOST_PASSWORD=… "
    "DEFAULT_FROM_EMAIL=alerts@example.org make serve": "tests/test_alerts.py (an SMTP server "
    "of the test's own)",
    'MODEL_PRICES=\'{"my-llama": {"input": 0, "output": 0}, "acme-large": [{"input": 4, '
    '"output": 16}, {"from": "2026-06-01", "input": 3, "output": 12, "cache_read": 0.3}], '
    '"house-sonnet": "claude-sonnet-4-5"}\'': "run here too (test_the_readme_prices_are_read)",
}
# Commands this test does not run, and why.
BY_HAND = {
    "createuser ledgerweb --pwprompt && createdb --owner ledgerweb ledgerweb": "it asks for the "
    "password twice; the test makes the same role and database",
}


def readme_commands(text: str) -> list[str]:
    """The commands of the README's sh and cron blocks: a line each (continuation lines and a
    quoted value over several lines joined), comments and cron timings dropped."""
    commands = []
    for _, kind, block in BLOCK.findall(text):
        pending = ""
        for raw in block.splitlines():
            line = _without_comment(raw.strip())
            if not line and not pending:
                continue
            pending = f"{pending} {line}".strip()
            if pending.endswith("\\"):
                pending = pending[:-1].strip()
                continue
            if pending.count("'") % 2 or pending.count('"') % 2:
                continue  # a quoted value goes on on the next line
            if kind == "cron":  # the five time fields, then the command
                pending = CRON_TIMES.sub("", pending)
            commands.append(" ".join(pending.split()))
            pending = ""
    return commands


def _without_comment(line: str) -> str:
    quote = None
    for i, char in enumerate(line):
        if char in "'\"" and quote in (None, char):
            quote = None if quote else char
        elif char == "#" and quote is None and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line


def test_every_readme_command_is_run_here_or_named_where():
    commands = readme_commands((ROOT / "README.md").read_text())
    assert len(commands) > 20
    unclassified = [c for c in commands if c not in RUN | ELSEWHERE.keys() | BY_HAND.keys()]
    assert unclassified == [], "classify each new README command in this test"
    gone = (RUN | ELSEWHERE.keys() | BY_HAND.keys()) - set(commands)
    assert gone == set(), "commands the README no longer shows"
    named = {
        path for where in ELSEWHERE.values() for path in re.findall(r"tests/[\w/]+\.py", where)
    }
    assert all((ROOT / path).exists() for path in named), named


def test_the_readme_prices_are_read():
    """The MODEL_PRICES example, exported as written: settings read it (a bad one stops them)."""
    (example,) = [c for c in readme_commands((ROOT / "README.md").read_text())
                  if c.startswith("MODEL_PRICES=")]  # fmt: skip
    script = f"export {example}; .venv/bin/python manage.py ledger_check --help >/dev/null"
    ran = subprocess.run(["bash", "-c", script], cwd=ROOT, env=bare_env(Path("/tmp")),
                         capture_output=True, text=True)  # fmt: skip
    assert ran.returncode == 0, ran.stderr


# -- Running them ----------------------------------------------------------------------------


def bare_env(home: Path, **more) -> dict[str, str]:
    """Nothing set but what any shell has: PATH (the machine's, for make, psql, createdb) and
    HOME; and where pyenv keeps its Pythons when the machine's Python comes from pyenv (its
    shims look under $HOME otherwise): the Makefile finds a Python >= 3.12 there."""
    pyenv = {"PYENV_ROOT": os.environ["PYENV_ROOT"]} if "PYENV_ROOT" in os.environ else {}
    return {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", **pyenv, **more}


def fresh_checkout(folder: Path) -> Path:
    """What a clone holds (the repository's files, copied: 10 MB), without var/; the venv
    linked (make setup would build the same one)."""
    checkout = folder / "ledgerweb"
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        if (ROOT / name).is_file() and not (ROOT / name).is_symlink():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, checkout / name)
    (checkout / ".venv").symlink_to(ROOT / ".venv")
    return checkout


def free_port() -> int:
    import socket

    with closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(command: str, cwd: Path, env: dict, port: int):
    """Start a command that serves (make serve, gunicorn) and wait until /healthz answers."""
    process = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)  # fmt: skip
    try:
        answer = wait_for(f"http://127.0.0.1:{port}/healthz", process)
        yield process, answer
    finally:
        stop(process)


def stop(process: subprocess.Popen) -> None:
    """End a started command and every process it started (its own session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def wait_for(url: str, process: subprocess.Popen) -> str:
    ends = time.monotonic() + START_S
    while time.monotonic() < ends:
        if process.poll() is not None:
            pytest.fail(f"{url}: the server stopped:\n{process.stdout.read()}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.read().decode()
        except urllib.error.HTTPError as error:
            return error.read().decode()
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"{url} did not answer in {START_S} s")


def run(command: str, cwd: Path, env: dict) -> str:
    ran = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=600)  # fmt: skip
    assert ran.returncode == 0, (command, ran.stdout[-2000:], ran.stderr[-3000:])
    assert "Traceback" not in ran.stderr, (command, ran.stderr[-3000:])
    return ran.stdout + ran.stderr


@pytest.fixture(scope="module")
def database_server():
    if postgres_bin() is None:
        pytest.fail("No PostgreSQL binaries: `make postgres` installs Debian's postgresql")
    server = PostgresServer(tcp=True, ssl=True).start()
    with server.connect() as conn:
        # What the README's createuser/createdb and a DBA make: roles and databases.
        for role in ("ledgerweb", "ship"):
            conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'secret-of-{role}'")
        conn.execute("CREATE DATABASE ledgerweb OWNER ledgerweb")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """One fresh checkout and home for the module: the commands follow each other as on a
    machine (the first `make serve` migrates, the later ones find it done)."""
    folder = tmp_path_factory.mktemp("readme")
    home = folder / "home"
    home.mkdir()
    return fresh_checkout(folder), home


def substituted(command: str, **values) -> str:
    """The README's command with its placeholders filled in, nothing else changed."""
    for placeholder, value in values.items():
        command = command.replace(placeholder, str(value))
    return command


def test_a_ledger_file_is_served_as_the_readme_says(site, tmp_path):
    checkout, home = site
    env = bare_env(home, PORT=str(free_port()))
    path = tmp_path / "ledger.sqlite"
    run(f".venv/bin/python manage.py ledger_init {path}", checkout, env)  # the README's way
    command = substituted("LEDGER_DB=/path/to/your/ledger.sqlite make serve",
                          **{"/path/to/your/ledger.sqlite": path})  # fmt: skip
    with serving(command, checkout, env, int(env["PORT"])) as (_, answer):
        assert answer == "ok\n"


def test_imported_history_is_served_as_the_readme_says(site):
    checkout, home = site
    home_with_history(home.parent)  # the module's home: folder / "home"
    env = bare_env(home, PORT=str(free_port()))
    for command in (IMPORT_CLAUDE_CODE, IMPORT_CODEX):
        run(command, checkout, env)
    with serving("LEDGER_DB=var/mine.sqlite3 make serve", checkout, env, int(env["PORT"])) as (
        _,
        answer,
    ):
        assert answer == "ok\n"
    # The roles, given without a shell, on the database make serve made.
    said = run(".venv/bin/python manage.py ledger_role bob viewer --create", checkout, env)
    assert "bob is now viewer" in said
    run(".venv/bin/python manage.py ledger_role --list", checkout, env)
    give_alice = ".venv/bin/python manage.py ledger_role alice operator"
    refused = subprocess.run(["bash", "-c", give_alice],
                             cwd=checkout, env=env, capture_output=True, text=True)  # fmt: skip
    assert refused.returncode == 1 and "there is no user 'alice'" in refused.stderr
    assert "Traceback" not in refused.stderr
    run(".venv/bin/python manage.py ledger_role alice operator --create", checkout, env)
    run(".venv/bin/python manage.py ledger_role alice operator", checkout, env)


def test_ledgerwebs_own_database_on_postgresql_as_the_readme_says(site, database_server, tmp_path):
    checkout, home = site
    secret = tmp_path / "secret-key"
    secret.write_text("a-long-random-value-" * 4)
    port = free_port()
    server = f"127.0.0.1:{database_server.port}"
    fill = {"PASSWORD": "secret-of-ledgerweb", "db.example.org:5432": server,
            "/etc/ledgerweb/secret-key": secret, "0.0.0.0:8000": f"0.0.0.0:{port}"}  # fmt: skip
    exports = " && ".join(substituted(c, **fill) for c in (
        "export DJANGO_DB='postgres://ledgerweb:PASSWORD@db.example.org:5432/ledgerweb?sslmode=require'",
        'export SECRET_KEY="$(cat /etc/ledgerweb/secret-key)"',
    ))  # fmt: skip
    env = bare_env(home)
    run(f"{exports} && .venv/bin/python manage.py migrate", checkout, env)
    said = run(f"{exports} && .venv/bin/python manage.py check --deploy --database default",
               checkout, env)  # fmt: skip
    assert "no issues" in said
    gunicorn = substituted(
        ".venv/bin/gunicorn ledgerweb.wsgi --bind 0.0.0.0:8000 --workers 2", **fill
    )
    ledger = tmp_path / "ledger.sqlite3"
    schema.create_ledger(ledger)
    env_with_ledger = env | {"LEDGER_DB": str(ledger)}
    with serving(f"{exports} && {gunicorn}", checkout, env_with_ledger, port) as (_, answer):
        assert answer == "ok\n"
    background = subprocess.Popen(
        ["bash", "-c", f"{exports} && .venv/bin/python manage.py ledger_background"],
        cwd=checkout, env=env_with_ledger, text=True, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        started = _first_line_with(background, "Working for")
    finally:
        stop(background)
    assert str(ledger) in started


def _first_line_with(process: subprocess.Popen, text: str) -> str:
    """The first line of the process's output holding `text`, waiting at most START_S."""
    import selectors

    ends = time.monotonic() + START_S
    with selectors.DefaultSelector() as waiting:
        waiting.register(process.stdout, selectors.EVENT_READ)
        while time.monotonic() < ends:
            if not waiting.select(timeout=1):
                continue
            line = process.stdout.readline()
            if text in line:
                return line
            if not line and process.poll() is not None:
                break
    pytest.fail(f"no line with {text!r} in {START_S} s")


def test_a_central_ledger_in_postgresql_as_the_readme_says(site, database_server, tmp_path):
    checkout, home = site
    central = f"127.0.0.1:{database_server.port}"
    db_env = bare_env(
        home, PGHOST="127.0.0.1", PGPORT=str(database_server.port), PGUSER="ledgerweb"
    )
    # Step 1, `createdb ledger`, run by its owner (PGHOST/PGUSER: libpq's way to name the server).
    with database_server.connect() as conn:
        conn.execute("ALTER ROLE ledgerweb CREATEDB")
    run("createdb ledger", checkout, db_env)
    with database_server.connect() as conn:
        # ship may create the ledger's tables; ledgerweb acts as their owner too (it reads them,
        # archives, and adds the rowid columns with psql).
        conn.execute("GRANT ALL ON DATABASE ledger TO ship")
        conn.execute("GRANT ship TO ledgerweb")
        conn.execute("CREATE DATABASE ledger_archive OWNER ledgerweb")
    with database_server.connect("ledger") as conn:
        conn.execute("GRANT ALL ON SCHEMA public TO ship")
    # Step 2, the agent host's cron line: a ledger of the demo's in ~/.agent, shipped.
    agent = home / ".agent"
    agent.mkdir()
    run(f".venv/bin/python manage.py ledger_demo {agent / 'ledger.sqlite3'} --scale 0.05",
        checkout, bare_env(home))  # fmt: skip
    env = bare_env(home)
    fill = {"/opt/ledgerweb": checkout, "central.example": central}
    said = run(substituted("cd /opt/ledgerweb && .venv/bin/python manage.py ledger_ship "
                           "~/.agent/ledger.sqlite3 --to postgres://ship@central.example/ledger",
                           **fill), checkout, env)  # fmt: skip
    assert "sessions" in said
    # Step 3, ledgerweb on the central ledger.
    port = free_port()
    command = substituted(
        "LEDGER_DB=postgres://ledgerweb@central.example/ledger make serve", **fill
    )
    with serving(command, checkout, env | {"PORT": str(port)}, port) as (_, answer):
        assert answer == "ok\n"
    # Step 4, retention from cron, archiving to another database of the server.
    said = run(substituted(
        "cd /opt/ledgerweb && LEDGER_DB=postgres://ledgerweb@central.example/ledger .venv/bin/"
        "python manage.py ledger_retention --archive-to "
        "postgres://ledgerweb@central.example/ledger_archive", **fill), checkout, env)  # fmt: skip
    assert "Retention on postgres://ledgerweb@127.0.0.1" in said
    # The rowid columns, added as the README says (nothing changes on a ledger that has them).
    url = f"postgres://ledgerweb@{central}/ledger"
    run('psql "$LEDGER_DB" -f ledgerweb/sql/postgres/rowids.sql', checkout,
        env | {"LEDGER_DB": url, "PGOPTIONS": "-c client_min_messages=warning"})  # fmt: skip


def test_the_readme_inline_commands_run_as_written(site, tmp_path):
    """The commands the README names in its text: each on a fresh checkout, nothing set."""
    checkout, home = site
    env = bare_env(home, PORT=str(free_port()))
    ledger = tmp_path / "ledger.sqlite3"
    schema.create_ledger(ledger)
    with closing(sqlite3.connect(ledger)) as conn:
        conn.execute(
            "INSERT INTO nexus_requests (id, event_id, event_type, event_source, stage, status,"
            " started_at) VALUES ('R1', 'e', 'm', 's', 'finalize', 'completed', 1)"
        )
        conn.commit()
    run(f"make -s migrate LEDGER_DB={ledger}", checkout, env)  # what make serve does first
    with_ledger = env | {"LEDGER_DB": str(ledger)}
    text = (ROOT / "README.md").read_text()
    fill = {"PATH": tmp_path / "archive.sqlite3", "USERNAME": "bob", " [--dry-run]": " --dry-run"}
    for command in (".venv/bin/python manage.py ledger_check",
                    ".venv/bin/python manage.py ledger_retention --archive-to PATH [--dry-run]",
                    ".venv/bin/python manage.py ledger_index",
                    ".venv/bin/python manage.py axes_reset_username USERNAME",
                    ".venv/bin/python manage.py ledger_init PATH"):  # fmt: skip
        assert f"`{command}`" in text, command
        run(substituted(command, **fill), checkout, with_ledger)
