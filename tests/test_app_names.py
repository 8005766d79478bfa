"""One name per app (issue 20): a newcomer who finds `sessions/` finds its templates under the
same name, never under its label (`conversations`) or Django's admin folder."""

from pathlib import Path

from django.apps import apps

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
# Folders Django itself looks in by name: the login page (registration/login.html).
DJANGO_FOLDERS = {"registration"}


def test_every_template_folder_is_named_after_an_app_package():
    packages = {config.name for config in apps.get_app_configs() if "." not in config.name}
    folders = {p.name for p in TEMPLATES.iterdir() if p.is_dir()}
    assert folders - packages - DJANGO_FOLDERS == set()


def test_the_agents_ledger_app_is_the_sessions_package_under_its_stored_label():
    config = apps.get_app_config("conversations")
    assert (config.name, type(config).__name__) == ("sessions", "SessionsConfig")
