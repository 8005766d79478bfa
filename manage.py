#!/usr/bin/env python
"""Django's command-line utility for ledgerweb."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ledgerweb.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as error:
        # A setting that stops the start (SECRET_KEY unset, a bad LEDGER_DB): one line that
        # says which and what to do, not a traceback through Django's start-up.
        sys.exit(f"ledgerweb cannot start: {error}")


if __name__ == "__main__":
    main()
