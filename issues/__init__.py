"""The failure inbox: each distinct failure (a failed stage and the masked error signature of
"similar failures") is one issue, with its figures read from the summaries the background process
keeps (pipeline/failure_window.py), and a lifecycle operators drive (resolve, ignore, merge) kept
in ledgerweb's own database: the ledger is never written. `/pipeline/issues/` and
`/pipeline/issues/<issue_id>/`; the alerts app (alerts/) reads what is new and what regressed.
"""
