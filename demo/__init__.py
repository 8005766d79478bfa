"""The demo ledger: a deterministic, realistic Agents + Nexus ledger for every page of the product.

`build.build_demo_ledger` is the entry point (the `ledger_demo` management command wraps it).
The package is a Django app only for its commands (`ledger_demo`, and `demo_admin` for
`make demo`); the builder itself uses no Django and imports only `ledgerfacts`.
"""
