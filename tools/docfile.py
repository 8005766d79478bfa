"""docs/benchmarks.md: one top-level section per benchmark; each script rewrites its own."""

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def replace_section(heading: str, text: str) -> None:
    """Put `text` (which starts with `heading`) in place of that section, or append it."""
    old = DOC.read_text() if DOC.exists() else ""
    sections = [s for s in re.split(r"(?m)^(?=# )", old) if s.strip()]
    kept = [s.rstrip("\n") for s in sections if not s.startswith(heading + "\n")]
    position = next((i for i, s in enumerate(sections) if s.startswith(heading + "\n")), len(kept))
    kept.insert(position, text.rstrip("\n"))
    DOC.write_text("\n\n".join(kept) + "\n")


def publish(heading: str, text: str, write_doc: bool) -> None:
    """Print a benchmark's section, and put it in docs/benchmarks.md when asked."""
    print(text)
    if write_doc:
        replace_section(heading, text)
        print(f"wrote {DOC.relative_to(DOC.parent.parent)}")
