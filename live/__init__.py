"""Live pages: a page shows the ledger as it is being written, without a reload (issue 29).

No worker is held by a watching tab. A live page polls a small JSON endpoint of this app with
the cursor its last view was drawn from (`live/cursor.py`: the ledger's high-water rowids and a
digest of what that page shows that can change in place). The answer comes from `PRAGMA
data_version` alone while nothing was committed (the ledger's tables are not read), from a few
index lookups when something was, and says whether this page's part of the ledger changed since
the cursor. When it did, the page fetches itself again through its own URL and merges the new
HTML into what the reader has (`static/js/live.js`), keeping their place. docs/decisions.md
("Live pages poll a cursor") says why this and not a stream; docs/benchmarks.md what it costs.

The room talks to the pages it serves through URLs and a template tag (`{% live_bar %}`), and
to `sessions` and `pipeline` through their small functions; neither imports it.
"""
