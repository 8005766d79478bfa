"""What the ledger's flag and hook-context columns say, as SQL shared by the charts' facts
(pipeline/rollups.py) and the request list's filters (pipeline/filters.py): a bar and the list
it links to select the same rows because they use the same expression."""

# A BOOLEAN column may hold 1, 0, NULL, 2, 0.5, 'true', ''…: any number other than 0 is true,
# as SQLite and the seed's own queries (`CASE WHEN hooks_handled THEN …`) read it; NULL says
# nothing; text or a blob is unreadable (SQLite would quietly read 'true' as false).
FLAG_STATES = ("yes", "no", "unknown", "unreadable")


def flag_state(column: str) -> str:
    """SQL naming what a BOOLEAN column says: one of FLAG_STATES."""
    return (
        f"CASE WHEN {column} IS NULL THEN 'unknown'"
        f" WHEN typeof({column}) IN ('integer', 'real')"
        f" THEN CASE WHEN {column} != 0 THEN 'yes' ELSE 'no' END"
        " ELSE 'unreadable' END"
    )


def flag_value(value) -> str:
    """flag_state's Python twin, for a value read through the ORM (SQLite hands back 2 or 'true'
    as stored): one of FLAG_STATES."""
    if value is None:
        return "unknown"
    if isinstance(value, int | float):  # bool is an int
        return "yes" if value else "no"
    return "unreadable"


# The hook that handled a request, when hooks_context names it ({"handled_by": "otp-autofill"},
# as the runtime writes it); NULL when the context is not a JSON object naming one.
HANDLED_BY = (
    "CASE WHEN json_valid(hooks_context) THEN CASE WHEN json_type(hooks_context) = 'object'"
    " THEN CASE WHEN json_type(hooks_context, '$.handled_by') = 'text'"
    " THEN json_extract(hooks_context, '$.handled_by') END END END"
)
# True when that hook is among the hooks that fired: only then does it take the credit alone.
NAMED_HANDLER_FIRED = (
    f"(CASE WHEN json_valid(hooks_fired) THEN CASE WHEN json_type(hooks_fired) = 'array' THEN"
    " CASE WHEN EXISTS (SELECT 1 FROM json_each(hooks_fired)"
    f" WHERE type = 'text' AND value = {HANDLED_BY}) THEN 1 ELSE 0 END"
    " ELSE 0 END ELSE 0 END) = 1"  # a comparison: a condition on PostgreSQL too
)
