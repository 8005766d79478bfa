"""Create the demo's admin account once, with a generated password printed once."""

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create the demo admin user (once); never changes an existing user."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")

    def handle(self, *args, username: str, **options):
        User = get_user_model()
        if User.objects.filter(username=username).exists():
            self.stdout.write(
                f"User {username!r} already exists; its password is unchanged "
                f"(reset it with: python manage.py changepassword {username})."
            )
            return
        password = secrets.token_urlsafe(12)
        user = User.objects.create_superuser(username=username, email="", password=password)
        user.groups.add(Group.objects.get(name="admin"))
        self.stdout.write(self.style.SUCCESS(f"Created the demo admin: {username} / {password}"))
        self.stdout.write("Keep this password: it is shown only once.")
