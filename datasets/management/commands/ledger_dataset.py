"""manage.py ledger_dataset: export a dataset from people's annotations as JSONL.

    ledger_dataset chat --out good.jsonl                   the 👍 turns, as chat messages
    ledger_dataset chat --label wrong-tool --form prompt-completion --out wrong.jsonl
    ledger_dataset preferences --out prefs.jsonl           the choices made at branch points

Records are streamed to the file (or standard output with --out -); what was left out, and why,
is printed on standard error and kept with the run (the /datasets/ page lists it)."""

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from datasets import exports
from datasets.records import CHAT, FORMS, PREFERENCES


class Command(BaseCommand):
    help = "Export a dataset (chat messages or preference pairs) from annotations, as JSONL."

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=[CHAT, PREFERENCES])
        parser.add_argument("--out", required=True, help="a file to write, or - for stdout")
        parser.add_argument(
            "--label", action="append", default=[], help="turns with this label (repeatable)"
        )
        parser.add_argument(
            "--thumbs-up", action="store_true", help="turns given a 👍 (the default for chat)"
        )
        forms = sorted({form for forms in FORMS.values() for form in forms})
        parser.add_argument("--form", choices=forms, default=None)

    def handle(self, *args, **options):
        kind = options["kind"]
        form = options["form"] or FORMS[kind][0]
        if form not in FORMS[kind]:
            raise CommandError(f"--form {form} is not a form of {kind}: {', '.join(FORMS[kind])}")
        selection = exports.Selection(kind, form, options["label"], options["thumbs_up"])
        out = options["out"]
        if out != "-" and Path(out).is_dir():
            raise CommandError(f"--out {out} is a folder: name the file to write")
        run, report = exports.start(selection, by_command=True)
        target = sys.stdout.buffer if out == "-" else open(out, "wb")  # noqa: SIM115
        try:
            for piece in exports.stream(selection, run, report):
                target.write(piece)
        finally:
            if target is not sys.stdout.buffer:
                target.close()
        err = self.stderr
        err.write(f"{report.records:,} records of {selection.describe()} written to {out}")
        if report.left_out_count:
            err.write(f"{report.left_out_count:,} left out:")
            for reason, count in sorted(report.by_reason.items()):
                err.write(f"  {count:,} {reason}")
            for item in report.left_out[:20]:
                err.write(f"  {item.what} (session {item.session_id}): {item.reason}")
            if report.left_out_count > 20:
                err.write(f"  … the whole list is on /datasets/runs/{run.pk}/")
