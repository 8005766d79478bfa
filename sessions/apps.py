from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "sessions"
    # "sessions" is django.contrib.sessions' label and Django refuses duplicate labels.
    label = "conversations"
    verbose_name = "Agents Ledger"
