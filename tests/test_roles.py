"""A role is enough for what the README promises it (issue 27, item 2): an operator (the group
alone, no staff flag) archives and restores in the admin, an admin (the group alone) also marks
sessions deleted, runs the retention dry run, sees the health page and gives people roles; a
refused page says which role it needs and whom to ask; roles are given without a shell."""

import re
from io import StringIO

import pytest
from builders import T0
from django.contrib.auth.models import Group, Permission
from django.core.management import CommandError, call_command

from ledgerweb.roles import role_of

# Transactional: the admin's writes are committed, and read back as the runtime would read them.
pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")
DAY = 86_400_000


@pytest.fixture
def sessions(ledger):
    for n in (1, 2, 3):
        s = ledger.session(id=f"S{n}", label=f"chat {n}", updated_at=T0 - 90 * DAY)
        t = ledger.turn(s, id=f"T{n}")
        ledger.set_head(s, t, t)
    return ledger


def statuses(ledger) -> dict[str, str]:
    return dict(ledger.conn.execute("SELECT id, status FROM sessions").fetchall())


def refused_page(response) -> str:
    """A 403 in the site's layout (its header and navigation), as text."""
    assert response.status_code == 403
    body = response.content.decode()
    assert 'class="topbar"' in body and "<nav" in body, "the site's layout"
    return re.sub(r"<[^>]+>", "", body)


def test_an_operator_without_staff_status_archives_and_restores_in_the_admin(
    client, operator, sessions
):
    assert not operator.is_staff
    client.force_login(operator)
    assert client.get("/admin/").status_code == 200
    listing = client.get("/admin/conversations/session/").content.decode()
    assert 'value="archive"' in listing and 'value="restore"' in listing
    assert 'value="mark_deleted"' not in listing  # an admin's
    confirm = {"action": "archive", "_selected_action": ["S1", "S2"]}
    page = client.post("/admin/conversations/session/", confirm)
    assert page.status_code == 200 and "chat 1" in page.content.decode()  # asks first
    client.post("/admin/conversations/session/", confirm | {"confirmed": "yes"})
    assert statuses(sessions) == {"S1": "archived", "S2": "archived", "S3": "active"}
    client.post("/admin/conversations/session/",
                {"action": "restore", "_selected_action": ["S1"], "confirmed": "yes"})  # fmt: skip
    assert statuses(sessions)["S1"] == "active"


def test_an_operator_archives_idle_sessions_after_the_preview(client, operator, sessions):
    client.force_login(operator)
    preview = client.get("/admin/conversations/session/archive-idle/?days=30")
    assert preview.status_code == 200 and "chat 3" in preview.content.decode()
    client.post("/admin/conversations/session/archive-idle/", {"days": "30", "confirmed": "yes"})
    assert set(statuses(sessions).values()) == {"archived"}


def test_an_operator_is_told_what_is_an_admins_and_whom_to_ask(client, operator, admin_user):
    client.force_login(operator)
    retention = "/admin/pipeline/nexusrequest/retention/"
    for url, what in (("/health/", "The health report"), (retention, "The retention dry run")):
        text = refused_page(client.get(url))
        assert f"{what} needs the admin role" in text, url
        assert "You are signed in as otto, an operator." in text  # not "a operator"
        assert "Ask an admin to give you the role: ada." in text
    data = client.get("/health/?format=json")
    assert data.status_code == 403
    assert data.json() | {"detail": ""} == {
        "error": "refused", "role_needed": "admin", "your_role": "operator", "ask": ["ada"],
        "detail": "",
    }  # fmt: skip


def test_a_viewer_is_refused_the_admin_site_in_the_sites_layout(client, viewer, admin_user):
    client.force_login(viewer)
    for url in ("/admin/", "/admin/conversations/session/", "/admin/login/"):
        text = refused_page(client.get(url))
        assert "The admin site needs the operator role" in text, url
        assert "a viewer" in text and "ada" in text
    assert "/admin/" not in client.get("/").content.decode()  # no link to a refused page
    archive = {"action": "archive", "_selected_action": ["S1"], "confirmed": "yes"}
    posted = client.post("/admin/conversations/session/", archive)
    assert posted.status_code == 403


def test_an_admin_without_staff_status_does_what_the_readme_promises_admins(
    client, admin_by_role, sessions
):
    assert not admin_by_role.is_staff and not admin_by_role.is_superuser
    client.force_login(admin_by_role)
    home = client.get("/").content.decode()
    assert 'href="/health/"' in home and 'href="/admin/"' in home
    assert client.get("/health/").status_code == 200
    assert client.get("/admin/pipeline/nexusrequest/retention/").status_code == 200
    mark = {"action": "mark_deleted", "_selected_action": ["S3"], "confirmed": "yes"}
    client.post("/admin/conversations/session/", mark)
    assert statuses(sessions)["S3"] == "deleted"
    users = refused_page(client.get("/admin/auth/user/"))  # passwords stay with superusers
    said = " ".join(users.split())
    assert "Your account is not allowed to do this." in said
    asked = re.search(r"Ask [^.]*\.", said).group(0)
    assert "adele" not in asked and "give you the role" not in asked  # not herself, no role named


def test_an_admin_gives_roles_in_the_admin(client, admin_by_role, viewer, django_user_model):
    newcomer = django_user_model.objects.create_user("nina", password="pw")
    client.force_login(admin_by_role)
    people = client.get("/admin/ledgerweb/person/").content.decode()
    assert "nina" in people and "vera" in people
    assert 'value="give_operator_role"' in people
    give = {"action": "give_operator_role", "_selected_action": [newcomer.pk, viewer.pk]}
    client.post("/admin/ledgerweb/person/", give)
    newcomer.refresh_from_db()
    assert role_of(django_user_model.objects.get(pk=newcomer.pk)) == "operator"
    assert role_of(django_user_model.objects.get(pk=viewer.pk)) == "operator"  # one role, not two
    assert list(viewer.groups.values_list("name", flat=True)) == ["operator"]
    client.post("/admin/ledgerweb/person/",
                {"action": "give_no_role", "_selected_action": [admin_by_role.pk]})  # fmt: skip
    assert role_of(django_user_model.objects.get(pk=admin_by_role.pk)) == "admin"  # not yourself


def test_an_operator_cannot_give_roles(client, operator, viewer):
    client.force_login(operator)
    assert client.get("/admin/ledgerweb/person/").status_code == 403
    client.post("/admin/ledgerweb/person/",
                {"action": "give_admin_role", "_selected_action": [operator.pk]})  # fmt: skip
    assert role_of(type(operator).objects.get(pk=operator.pk)) == "operator"


def test_the_command_gives_takes_and_lists_roles(db, django_user_model):
    from ledgerweb.roles import sync_roles

    sync_roles(Group, Permission)  # a transactional test may have flushed the migration's groups
    out = StringIO()
    call_command("ledger_role", "bob", "operator", "--create", stdout=out)
    assert "bob is now operator" in out.getvalue()
    password = re.search(r"with the password (\S+) \(shown only once\)", out.getvalue())[1]
    bob = django_user_model.objects.get(username="bob")
    assert bob.check_password(password) and role_of(bob) == "operator" and not bob.is_staff
    call_command("ledger_role", "bob", "admin", stdout=StringIO())
    bob = django_user_model.objects.get(username="bob")
    assert role_of(bob) == "admin" and list(bob.groups.values_list("name", flat=True)) == ["admin"]
    call_command("ledger_role", "bob", "none", stdout=StringIO())
    assert role_of(django_user_model.objects.get(username="bob")) is None
    listed = StringIO()
    call_command("ledger_role", "--list", stdout=listed)
    assert "bob\tno role" in listed.getvalue()
    with pytest.raises(CommandError, match="there is no user 'carl'"):
        call_command("ledger_role", "carl", "viewer", stdout=StringIO())
    with pytest.raises(CommandError):
        call_command("ledger_role", "bob", "emperor", stdout=StringIO())
