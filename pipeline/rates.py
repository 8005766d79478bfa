"""How the pipeline fares right now, for the alert rules (alerts/): failure rates by failed
stage, channel (event source) or persona over a window, and requests stuck in processing. Rates
come from the charts' facts (pipeline/rollups.py): the stored hours' and the same queries over
the live ranges, bounded as a chart is, so a rule fires on the figures the dashboard shows."""

from collections import defaultdict
from dataclasses import dataclass

from ledgerweb import sqlite
from pipeline import rollups
from pipeline.failure_window import notes, plan

STAGE, CHANNEL, PERSONA = "stage", "channel", "persona"


@dataclass
class Rate:
    failed: int = 0
    requests: int = 0

    @property
    def percent(self) -> float:
        return 100.0 * self.failed / self.requests if self.requests else 0.0


def failure_rates(since_ms: int, until_ms: int, by: str) -> tuple[dict[object, Rate], list[str]]:
    """Per value of `by` (a failed stage, a channel, a persona): failed requests and all requests
    of [since, until). A stage's rate is its failures among all requests. With what the window
    left out, in the charts' words."""
    the_plan = plan(since_ms, until_ms)
    scope = rollups.Scope(since_ms, until_ms)
    rates: dict[object, Rate] = defaultdict(Rate)
    if by == STAGE:
        everything = sum(n for _, _, _, _, n, _, _ in rollups.facts(scope, the_plan, "source"))
        for _, _, stage, _, n, _, _ in rollups.facts(scope, the_plan, "failure"):
            rates[stage].failed += n
        for rate in rates.values():
            rate.requests = everything
    elif by == CHANNEL:
        for _, _, source, status, n, _, _ in rollups.facts(scope, the_plan, "source"):
            rates[source].requests += n
            rates[source].failed += n if status == "failed" else 0
    elif by == PERSONA:
        for persona, status, n in rollups.statuses_by_persona(the_plan):
            rates[persona].requests += n
            rates[persona].failed += n if status == "failed" else 0
    else:
        raise ValueError(f"no failure rate by {by!r}")
    return dict(rates), notes(the_plan)


@dataclass
class Stuck:
    count: int
    oldest_id: str | None = None
    oldest_started_at: int | None = None


def stuck_requests(started_before_ms: int) -> Stuck:
    """Requests still 'processing' that started before this moment (the status index: there are
    few of them, however big the ledger)."""
    ((count,),) = sqlite.rows(
        "SELECT count(*) FROM nexus_requests WHERE status = 'processing' AND started_at < %s",
        [started_before_ms],
    )
    if not count:
        return Stuck(0)
    oldest = sqlite.rows(
        """SELECT id, started_at FROM nexus_requests
           WHERE status = 'processing' AND started_at < %s ORDER BY started_at, id LIMIT 1""",
        [started_before_ms],
    )
    return Stuck(count, *oldest[0])
