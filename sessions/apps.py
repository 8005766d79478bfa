from django.apps import AppConfig


class SessionsConfig(AppConfig):
    """The Agents Ledger app. Its one name is `sessions` (the package, /sessions/ URLs, the
    `sessions:` URL names, templates/sessions/). The label must differ: "sessions" is
    django.contrib.sessions' label and Django refuses duplicates. `conversations` shows only
    where Django builds names from the label and stores them (admin URLs /admin/conversations/…,
    permissions such as conversations.fork_session, migrations): see docs/decisions.md."""

    name = "sessions"
    label = "conversations"
    verbose_name = "Agents Ledger"  # the ledger's name in the seeds, as "Nexus Ledger" for pipeline
