"""What a PostgreSQL ledger's planner is told, so that its pages look rows up by index and its
big queries may run in parallel.

Found with `make bench` (bench/postgres_ledger_bench.py): a list of ids given as JSON was guessed
to hold 200 values, so the planner scanned every turn to find a session's few (~75 ms against
~1 ms on the bench ledger's 400,000 turns).
"""

from builders import T0
from django.db import connections, transaction
from django.test.utils import CaptureQueriesContext
from test_postgres_ledger import ON_POSTGRES, pg_ledger  # noqa: F401 (the fixture)

from ledgerweb import sqlite
from ledgerweb.db import LEDGER
from pipeline.rollups import _fingerprint, _newest_request

pytestmark = ON_POSTGRES


def test_a_list_of_ids_tells_the_planner_how_many_it_holds(pg_ledger):  # noqa: F811
    listed, params = sqlite.in_list(["T000001", "T000002", "T000003"])
    ((plan,),) = sqlite.rows(f"EXPLAIN (FORMAT JSON) SELECT value FROM {listed} AS ids", params)
    assert plan[0]["Plan"]["Plan Rows"] == 3


def test_a_list_of_ids_finds_exactly_its_rows_whatever_the_ids(pg_ledger):  # noqa: F811
    pg_ledger.session(id="S1")
    pg_ledger.session(id="S2")

    def found(sql: str, ids: list) -> list:
        listed, params = sqlite.in_list(ids)
        return [value for (value,) in sqlite.rows(sql.format(listed), params)]

    sessions = "SELECT id FROM sessions WHERE id IN {} ORDER BY id"
    assert found(sessions, ["S2", "nowhere", "S1"]) == ["S1", "S2"]
    assert found(sessions, []) == []
    assert found("SELECT n FROM (VALUES (1), (2), (3)) AS t(n) WHERE n IN {}", [3, 9]) == [3]


def test_the_json_functions_answer_in_a_parallel_plan(pg_ledger):  # noqa: F811
    """A big ledger's aggregates get parallel plans (the charts' hours on the bench ledger);
    the JSON functions must say they cannot run in one (their invalid-JSON guard starts a
    subtransaction), or the whole query fails."""
    pg_ledger.request(hooks_fired='["greet"]', stage_timings='{"runAgent": 5}')
    pg_ledger.request(hooks_fired="not json", stage_timings="{")
    with transaction.atomic(using=LEDGER):
        # A parallel plan whenever the functions allow one, for this transaction.
        sqlite.rows("SELECT set_config('force_parallel_mode', 'on', true)")
        found = sqlite.rows(
            "SELECT json_valid(hooks_fired), json_type(hooks_fired),"
            " json_extract(stage_timings, '$.runAgent'), json_type(stage_timings, '$.runAgent'),"
            " (SELECT count(*) FROM json_each(hooks_fired))"
            " FROM nexus_requests ORDER BY id"
        )
    assert found == [(True, "array", "5", "integer", 1), (False, None, None, None, 0)]


def test_an_hours_census_is_read_from_the_time_index_alone(pg_ledger):  # noqa: F811
    """The charts check each stored hour's count and id hashes on every plan: from the index,
    as SQLite reads its rowids, not from the rows (the bench ledger: 2.6 s a chart, not 0.1 s)."""
    pg_ledger.request(started_at=T0)
    with transaction.atomic(using=LEDGER):
        # What the planner picks on a big table, whatever it would on this small one.
        sqlite.rows("SELECT set_config('enable_seqscan', 'off', true)")
        sqlite.rows("SELECT set_config('enable_bitmapscan', 'off', true)")
        plan = "\n".join(line for (line,) in sqlite.rows("EXPLAIN " + _fingerprint(str(T0))))
    assert "Index Only Scan using idx_nexus_requests_started" in plan


def test_the_charts_anchor_is_the_first_entry_of_the_time_index(pg_ledger):  # noqa: F811
    """The newest request anchors the charts' hours: on PostgreSQL one step down the started_at
    index, with no filter the planner cannot estimate (typeof() made it start parallel workers
    to find one row: ~25 ms on the bench ledger)."""
    pg_ledger.request(id="OLD", started_at=T0)
    pg_ledger.request(id="NEW", started_at=T0 + 1)
    with CaptureQueriesContext(connections[LEDGER]) as queries:
        assert _newest_request() == ("NEW", T0 + 1)
    with transaction.atomic(using=LEDGER):
        sqlite.rows("SELECT set_config('enable_seqscan', 'off', true)")
        plan = "\n".join(line for (line,) in sqlite.rows("EXPLAIN " + queries[-1]["sql"]))
    assert "Index Only Scan using idx_nexus_requests_started" in plan
    assert "Filter" not in plan and "Gather" not in plan
