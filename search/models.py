"""What the search index remembers about the ledger it was built from (see indexer.py). The
documents themselves are in raw tables (search_row, search_value, search_text) made by engine.py."""

from django.db import models


class IndexState(models.Model):
    """One row: the ledger the index belongs to and how far into each table it reaches."""

    ledger = models.TextField(default="")  # the ledger file's path, or its database (db.py)
    anchor = models.JSONField(default=dict)  # {"turn": [id, time]}: the first turn
    marks = models.JSONField(default=dict)  # table → highest rowid indexed
    caught_up_at = models.BigIntegerField(null=True)  # Unix ms of the last step with no backlog

    class Meta:
        db_table = "search_indexstate"
        # Every engine Django supports has JSON columns: saying so spares the system checks a
        # connection, so a command run on a fresh checkout (no var/ yet) does not need one.
        required_db_features = {"supports_json_field"}
