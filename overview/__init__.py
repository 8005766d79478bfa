"""The overview page (`/`): what the open ledger holds, with both areas' headline numbers.

A package of its own rather than part of the core: it reads the pipeline's cost totals, and the
core (`ledgerweb/`, which every app imports) imports no app."""
