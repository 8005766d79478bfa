"""Settings come from the environment and fail loudly on values they cannot use."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from ledgerweb.env import env_bool, env_int, env_list, env_path

PROJECT = Path(__file__).resolve().parent.parent


def environment(**env) -> dict[str, str]:
    """This process's environment without the settings the test suite itself sets."""
    ours = {"SECRET_KEY", "DEBUG", "HTTPS", "DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    return {k: v for k, v in os.environ.items() if k not in ours} | env


def load_settings(**env) -> subprocess.CompletedProcess:
    """Import the production settings in a fresh interpreter with exactly this environment."""
    clean = environment(DJANGO_SETTINGS_MODULE="ledgerweb.settings", **env)
    code = "import django; django.setup(); from django.conf import settings as s; " + (
        "print(s.DEBUG, s.LEDGER_QUERY_TIMEOUT_MS, s.LEDGER_DB, s.TIME_ZONE, s.ALLOWED_HOSTS)"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, env=clean, capture_output=True, text=True
    )


def test_without_debug_a_missing_secret_key_stops_the_start():
    result = load_settings()
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


def test_debug_runs_without_a_secret_key():
    result = load_settings(DEBUG="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("True 2000 ")


def test_every_setting_is_read_from_the_environment(tmp_path):
    result = load_settings(
        SECRET_KEY="k" * 50,
        LEDGER_DB=str(tmp_path / "mine.sqlite3"),
        LEDGER_QUERY_TIMEOUT_MS="750",
        TIME_ZONE="Europe/Paris",
        ALLOWED_HOSTS="ledger.example.org, localhost",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "False",
        "750",
        str(tmp_path / "mine.sqlite3"),
        "Europe/Paris",
        "['ledger.example.org',",
        "'localhost']",
    ]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DEBUG": "maybe"}, "DEBUG='maybe' is not a boolean"),
        ({"DEBUG": "1", "LEDGER_QUERY_TIMEOUT_MS": "2s"}, "is not a whole number"),
        ({"DEBUG": "1", "LEDGER_QUERY_TIMEOUT_MS": "0"}, "the minimum is 1"),
    ],
)
def test_a_bad_value_stops_the_start_with_its_name(env, message):
    result = load_settings(**env)
    assert result.returncode != 0
    assert message in result.stderr


def test_env_bool_reads_the_usual_spellings(monkeypatch):
    for raw, expected in [("1", True), ("Yes", True), ("on", True), ("0", False), ("off", False)]:
        monkeypatch.setenv("FLAG", raw)
        assert env_bool("FLAG") is expected
    monkeypatch.delenv("FLAG")
    assert env_bool("FLAG", True) is True
    monkeypatch.setenv("FLAG", "tru")
    with pytest.raises(ImproperlyConfigured, match="FLAG='tru'"):
        env_bool("FLAG")


def test_env_int_env_list_and_env_path(monkeypatch, tmp_path):
    monkeypatch.setenv("N", " 42 ")
    assert env_int("N", 1) == 42
    monkeypatch.setenv("N", "-3")
    with pytest.raises(ImproperlyConfigured, match="minimum is 0"):
        env_int("N", 1, minimum=0)
    monkeypatch.setenv("HOSTS", "a.example, ,b.example")
    assert env_list("HOSTS", []) == ["a.example", "b.example"]
    monkeypatch.setenv("P", str(tmp_path / "x" / ".." / "l.sqlite3"))
    assert env_path("P", Path("/default")) == tmp_path / "l.sqlite3"
    monkeypatch.delenv("P")
    assert env_path("P", Path("/default")) == Path("/default")


def test_production_settings_pass_the_deployment_checks():
    env = environment(SECRET_KEY="a-long-random-looking-key-" + "k7Q2x9Lm" * 6)
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr + result.stdout
