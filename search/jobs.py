"""The search index's background job: keeps the index caught up with the ledger beside the web
workers (ledger_background, which `make serve` starts), so that a search page rarely has
anything left to index and a fresh install's first search is complete."""

from background.jobs import Job, Step, register
from ledgerweb.sqlite import longer_time_limit
from search import indexer

# How often the job looks for new rows once the index is caught up, and how long one step may
# take (each batch or slice of a step is its own short transaction).
EVERY_S = 10.0
STEP_S = 5.0
# The ledger reads of a step (counts past a mark, a slice of a huge value) are not a page's.
READ_LIMIT_MS = 60_000


def index_step(**options) -> Step:
    try:
        with longer_time_limit(READ_LIMIT_MS):
            progress = indexer.step(STEP_S)
    except indexer.RowidsMissing as error:
        return Step(str(error))
    made_progress = bool(progress.indexed or progress.pieces_bytes or progress.reset)
    if not made_progress and not progress.more:
        return Step()  # caught up, nothing new: nothing to say
    left = sum((progress.backlog or {}).values())
    said = [f"{progress.indexed:,} rows indexed"]
    if progress.pieces_bytes:
        said.append(f"{progress.pieces_bytes / 1e6:.1f} MB of long values")
    said.append(f"{left:,} rows and {progress.pending:,} long values to go" if progress.more
                else "caught up")  # fmt: skip
    return Step("; ".join(said) + ".", more=progress.more and made_progress)


def register_job() -> None:
    register(Job("search-index", every_s=EVERY_S, step=index_step))
