"""/bookmarks/: one's bookmarks across sessions (sessions/bookmarks.py)."""

from django.urls import path

from sessions import bookmarks

app_name = "bookmarks"
urlpatterns = [path("", bookmarks.bookmark_list, name="list")]
