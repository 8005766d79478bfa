"""Give someone a role (viewer, operator, admin) or take it away, without `manage.py shell`:

manage.py ledger_role alice operator          # alice's one role is now operator
manage.py ledger_role bob viewer --create     # a new account, its password printed once
manage.py ledger_role alice none              # no role: alice sees only "ask for a role"
manage.py ledger_role --list                  # everyone and their role
"""

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from ledgerweb.roles import ROLE_PROMISES, ROLES, role_of, set_role


class Command(BaseCommand):
    help = "Give a user one of the roles viewer, operator or admin (or none), or list the roles."

    def add_arguments(self, parser):
        parser.add_argument("username", nargs="?")
        parser.add_argument("role", nargs="?", choices=[*ROLES, "none"])
        parser.add_argument(
            "--create", action="store_true", help="create the account when it does not exist"
        )
        parser.add_argument("--list", action="store_true", help="list every account's role")

    def handle(self, *args, username, role, create, list, **options):
        users = get_user_model().objects
        if list:
            for user in users.order_by("username"):
                held = role_of(user) or "no role"
                self.stdout.write(
                    f"{user.get_username()}\t{held}{'' if user.is_active else ' (inactive)'}"
                )
            return
        if not username or not role:
            raise CommandError("give a username and a role (viewer, operator, admin or none)")
        user = users.filter(username=username).first()
        password = None
        if user is None:
            if not create:
                raise CommandError(
                    f"there is no user {username!r}: add --create to create the account"
                )
            password = secrets.token_urlsafe(12)
            user = users.create_user(username=username, password=password)
        set_role(user, None if role == "none" else role)
        if role == "none":
            self.stdout.write(f"{username} now has no role: every page asks them to ask for one.")
        else:
            self.stdout.write(
                self.style.SUCCESS(f"{username} is now {role}: {ROLE_PROMISES[role]}.")
            )
        if user.is_superuser:
            self.stdout.write(
                self.style.WARNING(f"{username} is a superuser: every permission still holds.")
            )
        if password:
            self.stdout.write(f"Created {username} with the password {password} (shown only once).")
