"""Tools that both the tests and the bench use: the soak (a live writer and browsing clients
through gunicorn) and docs/benchmarks.md's sections. Nothing here imports bench/ or tests/."""
