"""Each health check finds a planted violation and stays quiet on a clean ledger."""

import re
from io import StringIO
from urllib.parse import urljoin

import pytest
from builders import LEDGER_DB, T0, parse_html
from django.core.management import call_command

from ledgerfacts.timestamps import now_ms
from ledgerweb import health
from ledgerweb.db import is_postgres_url

pytestmark = LEDGER_DB


def problems() -> dict[str, health.Finding]:
    return {f.message: f for f in health.run_checks() if f.is_problem}


@pytest.fixture
def clean(ledger):
    s = ledger.session(id="S1")
    root = ledger.turn(s, id="T1")
    head = ledger.turn(s, root, id="T2")
    ledger.message(head, 1)
    ledger.message(head, 2, role="assistant")
    ledger.tool_call(head, 1)
    ledger.set_head(s, root, head)
    ledger.request(id="R1", turn_id="T2")
    ledger.request(id="R2", status="failed", stage="runAgent", error_stage="runAgent",
                   error_message="boom")  # fmt: skip
    return ledger


def test_a_clean_ledger_has_no_findings(clean):
    assert problems() == {}


@pytest.mark.parametrize(
    ("plant", "message"),
    [
        (lambda led: led.turn({"id": "S1"}, id="ORPHAN", parent_turn_id="gone"),
         "turns whose parent turn does not exist"),
        (lambda led: (led.turn({"id": "S1"}, id="A", parent_turn_id="B"),
                    led.turn({"id": "S1"}, id="B", parent_turn_id="A")),
         "turns whose chain of parents loops (a cycle)"),
        (lambda led: led.session(id="S2", current_turn_id="ghost"),
         "sessions whose head (current_turn_id) does not exist"),
        (lambda led: led.conn.execute("UPDATE sessions SET current_turn_id = 'T1' WHERE id = 'S1'"),
         "sessions whose head is not a leaf (it has later turns)"),
        (lambda led: led.message({"id": "T2", "started_at": T0}, 1, id="DUP"),
         "turns with two messages at the same sequence number"),
        (lambda led: led.tool_call({"id": "T2", "started_at": T0}, 2, status="pending"),
         "completed turns with tool calls still pending"),
        (lambda led: led.request(id="OLD", status="processing", stage="runAgent",
                             started_at=now_ms() - 3_600_000),
         "requests still 'processing' 15 minutes after they started"),
        (lambda led: led.request(id="BAD", status="completed", stage="runAgent"),
         "requests whose stage contradicts their status (finalized but not at finalize, or "
         "failed without naming the failed stage)"),
        (lambda led: led.request(id="EARLY", status="processing", stage="runAgent",
                             started_at=now_ms(), request_snapshot="{}"),
         "requests still processing that already hold a snapshot"),
        (lambda led: led.turn({"id": "S1"}, {"id": "T2"}, id="T3", status="exploded"),
         "turns rows with a status the seeds do not name"),
    ],
)  # fmt: skip
def test_each_check_finds_its_planted_violation(clean, plant, message):
    plant(clean)
    found = problems()
    assert message in found, sorted(found)
    assert found[message].count.value >= 1
    assert found[message].examples


def test_examples_link_to_their_pages(clean):
    clean.turn({"id": "S1"}, id="ORPHAN", parent_turn_id="gone")
    finding = problems()["turns whose parent turn does not exist"]
    assert finding.examples[0].url == "/sessions/S1/turns/ORPHAN/"


def test_a_ledger_not_in_wal_mode_gets_a_warning(clean):
    clean.conn.execute("PRAGMA journal_mode = DELETE")
    assert any("not WAL" in f.message for f in health.run_checks())


def test_the_command_succeeds_on_a_clean_ledger(clean):
    out = StringIO()
    call_command("ledger_check", stdout=out)
    assert "0 error finding(s)" in out.getvalue()


def test_the_command_reports_an_error_and_fails(clean):
    clean.turn({"id": "S1"}, id="ORPHAN", parent_turn_id="gone")
    out, err = StringIO(), StringIO()
    with pytest.raises(SystemExit) as exit_:
        call_command("ledger_check", stdout=out, stderr=err)
    assert exit_.value.code == 1
    assert "ERROR tree integrity: turns whose parent turn does not exist (1)" in out.getvalue()
    assert "turn ORPHAN" in out.getvalue()


def test_the_page_lists_every_check_with_its_result_and_when_it_ran(admin_client, clean):
    clean.turn({"id": "S1"}, id="ORPHAN", parent_turn_id="gone")
    page = admin_client.get("/health/").content.decode()
    parse_html(page)
    assert "checked <time" in page and "1 problem found." in page
    rows = page.split("<tbody>")[1].split("</tbody>")[0].split("<tr")[1:]
    # Every check is there: the one that found something first, then the ones that passed.
    assert 'class="severity-error"' in rows[0] and "turn ORPHAN" in rows[0]
    passed = [row for row in rows if 'class="passed"' in row]
    checks = len(health.AGENTS_CHECKS) + len(health.NEXUS_CHECKS) + len(health.KNOWN_STATUSES)
    # and the journal mode and the known prices (on PostgreSQL the rowid columns too); less the
    # failed one
    on_postgres = is_postgres_url(clean.path)
    assert len(passed) == checks + (3 if on_postgres else 2) - 1
    # The journal-mode check passes as "in WAL mode" on SQLite, "in PostgreSQL" there.
    journal = "in PostgreSQL" if on_postgres else "in WAL mode"
    expected = ["sessions whose head is not a leaf", "requests whose stage contradicts",
                "turns rows with a status the seeds do not name", journal]  # fmt: skip
    if on_postgres:
        expected.append("every ledger table has the rowid column")
    for message in expected:
        assert any(message in row and ">passed<" in row for row in passed), message
    data = admin_client.get("/health/?format=json").json()
    assert isinstance(data["checked_at"], int)
    assert sum(f["passed"] for f in data["findings"]) == len(passed)
    again = re.search(r'<a href="([^"]*)">check again</a>', page).group(1)
    assert "checked <time" in admin_client.get(urljoin("/health/", again)).content.decode()


def test_checks_whose_tables_are_missing_say_they_were_not_run(admin_client, ledger):
    for table in ("tool_calls", "messages"):
        ledger.conn.execute(f"DROP TABLE {table}")
    page = admin_client.get("/health/").content.decode()
    assert "not checked: the ledger has no messages, tool_calls tables" in page


def test_the_command_lists_passed_checks_when_asked(clean):
    out = StringIO()
    call_command("ledger_check", verbosity=2, stdout=out)
    assert "PASSED tree integrity: turns whose parent turn does not exist" in out.getvalue()


def test_the_health_page_is_for_admins_and_staff(
    viewer_client, client, operator, admin_by_role, clean, django_user_model
):
    assert viewer_client.get("/health/").status_code == 403
    client.force_login(operator)
    assert client.get("/health/").status_code == 403  # an admin's page: said so, with whom to ask
    from django.contrib.auth.models import Group

    staff = django_user_model.objects.create_user("stan", password="pw", is_staff=True)
    staff.groups.add(Group.objects.get(name="viewer"))  # a viewer someone made staff
    client.force_login(staff)
    assert client.get("/health/").status_code == 200
    client.force_login(admin_by_role)  # by role alone, as the README describes an admin
    response = client.get("/health/")
    assert response.status_code == 200
    assert b"Ledger health" in response.content
    assert client.get("/health/?format=json").json()["findings"][0]["severity"] == "info"


# Rows planted after a first read: each request must read afresh, not the test's snapshot.
@pytest.mark.django_db(transaction=True, databases="__all__")
def test_the_page_shows_the_kept_report_with_when_it_ran_and_checks_again_on_request(
    admin_client, clean
):
    call_command("ledger_check", keep=True, stdout=StringIO())
    clean.turn({"id": "S1"}, id="ORPHAN", parent_turn_id="gone")
    page = admin_client.get("/health/").content.decode()
    # The kept report, said as such: a big ledger's checks take tens of seconds, not a page load.
    assert "No problems found." in page and "kept from the last run" in page
    assert "checked <time" in page
    again = re.search(r'<a href="([^"]*)">check again</a>', page).group(1)
    rechecked = admin_client.get(urljoin("/health/", again)).content.decode()
    assert "1 problem found." in rechecked and "turn ORPHAN" in rechecked
    assert "kept from the last run" not in rechecked
    later = admin_client.get("/health/").content.decode()  # that run is kept in turn
    assert "1 problem found." in later and "kept from the last run" in later
    assert admin_client.get("/health/?format=json").json()["kept"] is True


def test_the_background_summariser_keeps_a_health_report(admin_client, clean):
    call_command("ledger_rollup", follow=True, every=0, rounds=1, stdout=StringIO())
    page = admin_client.get("/health/").content.decode()
    assert "No problems found." in page and "kept from the last run" in page
