"""Build the search index: every ledger row not indexed yet, with a progress bar. Safe to stop
(Ctrl-C) and run again: each batch is committed with its high-water mark."""

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from ledgerweb.sqlite import longer_time_limit
from search import engine, indexer


class Command(BaseCommand):
    help = "Bring the search index up to date with the ledger (only rows added since the last run)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--rebuild", action="store_true", help="drop the index and build it from nothing"
        )

    def handle(self, *args, rebuild=False, verbosity=1, **options):
        try:
            self._index(rebuild, verbosity)
        except indexer.RowidsMissing as error:
            raise CommandError(str(error)) from None

    def _index(self, rebuild: bool, verbosity: int) -> None:
        with longer_time_limit(60_000):
            if rebuild:
                indexer.rebuild()
            todo = sum(indexer.backlog().values())
            bar = tqdm(total=todo, unit=" rows", disable=None if verbosity else True)
            try:
                while True:
                    progress = indexer.step(budget_s=5.0, on_batch=lambda table, n: bar.update(n))
                    if progress.reset:
                        bar.write("The ledger changed identity: the index was started again.")
                    if not any(progress.backlog.values()):
                        break
            finally:
                bar.close()
        if verbosity:
            self.stdout.write(f"Index up to date ({engine.size_bytes() / 1e6:.1f} MB).")
