"""The jobs of the core: the ledger's health checks, kept for the /health/ page (they scan whole
tables, tens of seconds on a big ledger: a page view should not wait for them)."""

from background.jobs import Job, Step, register
from ledgerweb import health, sqlite

HEALTH_TIME_LIMIT_MS = 600_000  # as ledger_check's


def check_health(**options) -> Step:
    with sqlite.longer_time_limit(HEALTH_TIME_LIMIT_MS):
        report = health.check_and_keep()
    return Step(f"Health checked in {report.took_ms / 1000:.1f} s: {report.problems} problem(s).")


def register_all() -> None:
    register(Job("health", every_s=health.EVERY_S, step=check_health))
