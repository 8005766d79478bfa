"""What a person types into the search box, turned into an FTS5 query, and the words to mark in
snippets. The syntax is the one search boxes share:

    deleted branch          both words (any order)
    "deleted the branch"    the phrase
    migrat*                 a word starting with migrat
    timeout OR refused      either
    -heartbeat              without this word (with at least one word to find)

Anything else is taken literally: `src/app.py` or `foo-bar` find those words in order, never a
syntax error from the engine. A query that cannot mean anything says why (QueryError).

What a word is (folding, Chinese and Japanese runs) is search/words.py. The index knows which
documents hold a token, not where (detail=none, engine.py): the FTS expression asks for all of a
phrase's tokens, and Query.finds checks the phrase itself on the text read back from the
ledger.
"""

import re
from dataclasses import dataclass, field

from search.words import Segment, fold, found_in, query_tokens, segments

# A piece of the query: a quoted phrase (maybe unclosed), or a run of other characters.
PIECE = re.compile(r'(-?)(?:"([^"]*)("?)|([^\s"]+))(\*?)')
MAX_TERMS = 16
MAX_CHARS = 1000


class QueryError(ValueError):
    """A query that cannot be searched, with a message for the person who typed it."""


@dataclass
class Term:
    """A word, a phrase or a run of Chinese or Japanese: its folded segments (search/words.py)."""

    segments: list[Segment]
    prefix: bool = False

    @property
    def tokens(self) -> list[tuple[str, bool]]:
        """What the index is asked for: every token of the term (a prefix for the last word
        of a prefix term)."""
        found = [token for segment in self.segments for token in query_tokens(segment)]
        if self.prefix and not self.segments[-1][1]:
            found[-1] = (found[-1][0], True)
        return found

    @property
    def is_phrase(self) -> bool:
        """Whether the index's answer is only a superset (several tokens, found apart)."""
        return len(self.tokens) > 1

    def fts(self) -> str:
        """All the term's tokens (a phrase's, in any order: see found_in)."""
        quoted = [f'"{token}"' + ("*" if prefix else "") for token, prefix in self.tokens]
        return quoted[0] if len(quoted) == 1 else "(" + " AND ".join(quoted) + ")"

    def found_in(self, text: list[Segment]) -> bool:
        """Whether the term is in a text's segments, in order."""
        return found_in(self.segments, text, self.prefix)

    def found_in_any(self, texts: list[str]) -> bool:
        """Whether the term is within one of these texts (a phrase stays within one field)."""
        return any(self.found_in(segments(text)) for text in texts)


@dataclass
class Query:
    match: str  # the FTS5 MATCH expression
    terms: list[Term] = field(default_factory=list)  # the positive terms, for highlighting
    groups: list[list[Term]] = field(default_factory=list)  # OR of ANDs
    negatives: list[Term] = field(default_factory=list)

    @property
    def any_match(self) -> str:
        """An FTS5 expression for documents holding any positive term (rows of several
        documents are decided as a whole from there: search/results.py)."""
        return " OR ".join(term.fts() for term in self.terms)

    @property
    def needs_check(self) -> bool:
        """Whether the index's answer is only a superset: a phrase must be checked on the text."""
        return any(term.is_phrase for term in self.terms + self.negatives)

    def finds(self, texts: list[str]) -> bool:
        """Whether a document (the texts of its fields) answers the query: a phrase within one
        field, the words of an AND anywhere in the document, as the index has them."""
        fields = [segments(text) for text in texts]

        def has(term: Term) -> bool:
            return any(term.found_in(words) for words in fields)

        if any(has(term) for term in self.negatives):
            return False
        return any(all(has(term) for term in group) for group in self.groups)

    def found_in_text(self, text: str) -> bool:
        """Whether a field's text holds one of the positive terms (which fields a hit names)."""
        words = segments(text)
        return any(term.found_in(words) for term in self.terms)

    def marks(self, word: str) -> list[tuple[int, int]]:
        """The spans of a snippet's word (a segment, search/words.py) that the query looked
        for: the whole word, or within a run of Chinese or Japanese the parts the query names."""
        folded = fold(word)
        spans = []
        for term in self.terms:
            for text, spaceless in term.segments:
                if not spaceless:
                    last = (text, spaceless) == term.segments[-1]
                    if folded == text or (last and term.prefix and folded.startswith(text)):
                        return [(0, len(word))]
                    continue
                if len(folded) != len(word):  # folding changed its length: mark it whole
                    if text in folded:
                        return [(0, len(word))]
                    continue
                at = folded.find(text)
                while at >= 0:
                    spans.append((at, at + len(text)))
                    at = folded.find(text, at + 1)
        return _merged(spans)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def parse(text: str) -> Query:
    text = text.strip()
    if len(text) > MAX_CHARS:
        raise QueryError(f"That query is longer than {MAX_CHARS:,} characters: keep what matters.")
    if text.count('"') % 2:
        raise QueryError('A quotation mark is not closed: put the phrase "between two quotes".')
    groups: list[list[Term]] = [[]]  # OR of ANDs
    negatives: list[Term] = []
    expect_term = True
    for match in PIECE.finditer(text):
        minus, phrase, _, bare, star = match.groups()
        raw = phrase if phrase is not None else bare
        if bare and bare.endswith("*") and len(bare) > 1:
            raw, star = bare.rstrip("*"), "*"
        if bare == "OR" and not minus and not star:
            if expect_term:
                raise QueryError("OR needs a word on each side.")
            groups.append([])
            expect_term = True
            continue
        if bare == "-" and not star:
            raise QueryError("Put the word to leave out right after the minus: -heartbeat.")
        words = segments(raw)
        if not words:
            raise QueryError(
                f"“{match.group(0)}” has no letters or digits to search for. "
                'Put punctuation inside a phrase with words, e.g. "exit code 1".'
            )
        term = Term(words, prefix=bool(star))
        if minus:
            negatives.append(term)
        else:
            groups[-1].append(term)
            expect_term = False
    if expect_term and len(groups) > 1:
        raise QueryError("OR needs a word on each side.")
    positives = [term for group in groups for term in group]
    if not positives:
        if negatives:
            raise QueryError("Add a word to look for: only -words would match everything.")
        raise QueryError('Type a word, a "phrase", a prefix* or an id.')
    if len(positives) + len(negatives) > MAX_TERMS:
        raise QueryError(f"That is more than {MAX_TERMS} words: keep the ones that matter.")
    expression = " OR ".join(
        "(" + " AND ".join(term.fts() for term in group) + ")" for group in groups
    )
    # A phrase left out cannot be left out by its words (they may be elsewhere apart): it is
    # checked on the text only.
    for term in negatives:
        if not term.is_phrase:
            expression = f"({expression}) NOT {term.fts()}"
    return Query(expression, positives, groups, negatives)
