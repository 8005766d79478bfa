"""How every importer names a session: its label, and the channel of its routing key.

One way for every format, so that sessions from different sources read alike in the list: a
label is the first non-blank line of its text, on one line, at most LABEL_LENGTH characters with
"…" where it was cut. A main session's routing key is "<channel>:<where>": the channel (the part
the session page's breadcrumb and the list's channel filter show) is the session's project folder
name, or "imported" when the source names none. It is never the format's name: the persona says
that already, and "claude-code › claude-code" told the reader nothing.
"""

import re

from ledgerweb.text import first_line

LABEL_LENGTH = 80
NO_PROJECT = "imported"
# Routing-key kinds (sessions/kinds.py): a channel must not read as one of them.
RESERVED_CHANNELS = {"subagent", "fork"}


def label_from(text) -> str | None:
    """A label from free text (a prompt, a summary, a task description); None when blank."""
    return first_line(text, LABEL_LENGTH) or None


def project_channel(project) -> str | None:
    """The channel for a project folder (or project name): its last path part, without the
    characters a routing key uses as separators."""
    if not isinstance(project, str):
        return None
    name = re.split(r"[/\\]", project.strip().rstrip("/\\"))[-1]
    name = name.replace(":", "").replace(";", "").strip()
    if not name:
        return None
    return f"{name}-project" if name in RESERVED_CHANNELS else name


def main_routing_key(project, where: str) -> str:
    """The routing key of an imported main session: "<project channel>:<where>"."""
    return f"{project_channel(project) or NO_PROJECT}:{where}"
