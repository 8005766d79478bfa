"""Datasets from annotated branches (issue 31, item 4): people's marks (annotations/) turned
into JSONL records built from the ledger's threads (sessions/), exported from /datasets/ and by
`manage.py ledger_dataset`. A room of its own because it needs both: `annotations` stays a lower
layer that imports neither, and `sessions` does not import this."""
