"""Serve plotly.js from the installed plotly package (no CDN, no copy in the repo)."""

from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
STATIC_PATH = "vendor/plotly.min.js"


class PlotlyFinder(BaseFinder):
    """Exposes only plotly.min.js, not the package's datasets and templates."""

    storage = FileSystemStorage(location=PLOTLY_JS.parent, base_url="vendor/")

    def check(self, **kwargs):
        return []

    def find(self, path, find_all=False, **kwargs):
        if path == STATIC_PATH and PLOTLY_JS.exists():
            return [str(PLOTLY_JS)] if find_all else str(PLOTLY_JS)
        return []

    def list(self, ignore_patterns):
        if PLOTLY_JS.exists():
            self.storage.prefix = "vendor"
            yield PLOTLY_JS.name, self.storage
