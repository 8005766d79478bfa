"""The ledger's facts, without Django: its schema (read from the DDL in ledgerweb/sql/), its ids
(ULIDs) and its times (Unix milliseconds). The dashboard, the importers, the demo builder, the
bench and the tests all import these; this package imports nothing of the project."""
