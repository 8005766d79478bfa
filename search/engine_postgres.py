"""The search index on PostgreSQL full-text search: engine.py's twin, used when ledgerweb's own
database is PostgreSQL (engine.py hands each call over here).

The same tables as on SQLite, except that search_item carries the words itself, as a tsvector
with a GIN index (no third table). The words are cut in Python by the rule the query parser and
FTS5's tokenizer follow (letters, digits and '_' make a word, case and diacritics folded), not by
PostgreSQL's parser, which splits session_fork in two and keeps src/app.py whole: the same query
finds the same items on both engines. Each word keeps its positions, so phrases work ("a b" is
'a' <-> 'b'). PostgreSQL keeps positions up to 16,383 in an item: a phrase past that many words
into a 64 kB chunk may be missed (a single word never is).

Queries arrive as the FTS5 expression query.py builds ("w1 w2"* AND … OR … NOT …), translated
here to a tsquery: its grammar is small and fixed, so the translation is exact.
"""

import re
from collections import defaultdict

from django.db import OperationalError, ProgrammingError, connection, transaction

from search.query import WORD, fold

TABLES = [
    """CREATE TABLE IF NOT EXISTS search_row (
        id BIGINT PRIMARY KEY, kind TEXT NOT NULL, item_id TEXT NOT NULL,
        session_id TEXT, turn_id TEXT, status TEXT, persona TEXT, channel TEXT,
        open INTEGER NOT NULL DEFAULT 0)""",
    "CREATE INDEX IF NOT EXISTS search_row_open ON search_row(kind, item_id) WHERE open = 1",
    """CREATE TABLE IF NOT EXISTS search_item (
        id BIGINT PRIMARY KEY, row BIGINT NOT NULL, field TEXT NOT NULL,
        chunk INTEGER NOT NULL DEFAULT 0, body TSVECTOR NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS search_item_body ON search_item USING GIN (body)",
    # forget() deletes a row's items with it.
    "CREATE INDEX IF NOT EXISTS search_item_row ON search_item(row)",
]
INDEX_TABLES = ("search_row", "search_item")
# tsvector positions stop at 16,383 (PostgreSQL clamps larger ones), and a word may take 2 kB:
# a longer one (a 64 kB run of letters in a payload) is kept by its first 500 characters, still
# found by a prefix query (a query is at most 1,000 characters).
MAX_POSITION = 16_383
MAX_WORD = 500
MATCHED = "search_item i JOIN search_row r ON r.id = i.row"
MATCH_SQL = "i.body @@ %s::tsquery"
ID_COLUMN = "i.id"


def create_tables(cursor) -> None:
    for sql in TABLES:
        cursor.execute(sql)


def clear() -> None:
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE search_row, search_item")


def _lexeme(word: str) -> str:
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector(text: str) -> str:
    """The text's words with their positions, as a tsvector literal."""
    positions: dict[str, list[int]] = defaultdict(list)
    for position, word in enumerate(WORD.findall(fold(text)), start=1):
        positions[word[:MAX_WORD]].append(min(position, MAX_POSITION))
    return " ".join(
        f"{_lexeme(word)}:{','.join(map(str, sorted(set(at))))}" for word, at in positions.items()
    )


def insert_items(cursor, items: list[tuple], texts: list[tuple]) -> None:
    """search_item rows (id, row, field, chunk) with their texts' words."""
    words = dict(texts)
    cursor.executemany(
        "INSERT INTO search_item (id, row, field, chunk, body) VALUES (%s, %s, %s, %s, %s)",
        [(*item, tsvector(words[item[0]])) for item in items],
    )


def forget_items(cursor) -> None:
    """Drop the items of rows forget() took out: on PostgreSQL they can go at once."""
    cursor.execute(
        "DELETE FROM search_item i WHERE NOT EXISTS (SELECT 1 FROM search_row r WHERE r.id = i.row)"
    )


# A term of query.py's FTS5 expression: a quoted phrase of folded words, maybe a prefix.
_TERM = re.compile(r'"([^"]*)"(\*?)')


def tsquery(match: str) -> str:
    """query.py's FTS5 expression as a tsquery: "a b"* → ('a' <-> 'b':*), AND → &, OR → |,
    X NOT y → X & !y."""

    def term(found: re.Match) -> str:
        words = [_lexeme(word) for word in found.group(1).split()]
        if found.group(2):
            words[-1] += ":*"
        return "(" + " <-> ".join(words) + ")"

    expression = _TERM.sub(term, match)
    return expression.replace(" AND ", " & ").replace(" OR ", " | ").replace(" NOT ", " & !")


def size_bytes() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c)), 0) FROM unnest(%s::regclass[]) c",
            [list(INDEX_TABLES)],
        )
        return int(cursor.fetchone()[0])


def run(sql: str, params: list, limit_s: float, too_slow, not_understood) -> list[tuple]:
    """Run a search with a time limit: statement_timeout for its own transaction only, set in
    the same round trip as the query."""
    limit_ms = max(1, int(limit_s * 1000))
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL statement_timeout = {limit_ms}; {sql}", params)
            cursor.nextset()  # past the SET, to the query's rows
            return cursor.fetchall()
    except OperationalError as error:
        if "statement timeout" in str(error):
            raise too_slow from error
        raise
    except ProgrammingError as error:
        if "tsquery" in str(error):
            raise not_understood(str(error)) from error
        raise
