"""What people add to the ledger's sessions and turns, kept in ledgerweb's own database (never
the ledger): labels, a score, a note and bookmarks, one Annotation per person and target. The tree
shows bookmarks from here (issue 28); annotating, preferences, review queues and datasets build on
the same model (issue 31)."""
