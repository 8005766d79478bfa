import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ledgerweb.settings")
application = get_wsgi_application()

# Steady tails (issue 33, item 2): a worker's garbage collector scans every object it holds when
# it collects its oldest generation, ~100 ms once Django and every view are loaded: whichever
# request set it off paid for it (the 600-call turn page's slowest of 600 in process: 157 ms
# against a 55 ms median). What exists once the worker is ready (Django, every app's views, the
# URLs) lives as long as the worker: frozen, the collector leaves it out, and a full collection
# takes ~14 ms (docs/benchmarks.md). The URLs are resolved first so that the views are imported.
get_resolver().url_patterns  # noqa: B018 (imports every view module)
gc.collect()
gc.freeze()
