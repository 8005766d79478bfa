"""The demo ledger: a deterministic, realistic Agents + Nexus ledger for every page of the product.

`build.build_demo_ledger` is the entry point (the `ledger_demo` management command wraps it).
"""
