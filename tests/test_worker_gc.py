"""A web worker's garbage collector leaves out what the worker holds for its whole life (issue 33,
item 2: a full collection over Django and every view cost the request that set it off ~100 ms;
frozen, ~14 ms, docs/benchmarks.md). Checked in a process of its own, as gunicorn loads the
application: freezing the test process would change every other test's collector."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = """
import gc, json, sys
import ledgerweb.wsgi
print(json.dumps({"frozen": gc.get_freeze_count(),
                  "views": [m for m in ("sessions.views", "pipeline.views") if m in sys.modules]}))
"""


def test_the_worker_freezes_django_and_every_view_once_loaded(tmp_path):
    env = os.environ | {"SECRET_KEY": "x", "DJANGO_DB": str(tmp_path / "django.sqlite3")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    found = json.loads(out.strip().splitlines()[-1])
    assert found["views"] == ["sessions.views", "pipeline.views"]
    assert found["frozen"] > 50_000  # Django alone is tens of thousands of objects
