"""The background process: one per ledger, started by `make serve` beside gunicorn
(`manage.py ledger_background`), where the periodic work lives so that no page view pays for it.

Each app registers its jobs when it loads (`background.jobs.register` in its AppConfig.ready):
the chart summaries (pipeline), the health checks (here), and whatever else must keep up with the
ledger. A job does one bounded step per call and says whether it has more to do; the runner
interleaves the jobs' steps, so a long first summary never starves a job due every minute. Each
step's outcome (and any failure) is kept in ledgerweb's own database for the pages to show.

The process holds a lock per ledger (background/lock.py): a second one started for the same
ledger waits, one started for another ledger from the same checkout works beside it.
"""
