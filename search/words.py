"""What a word is, for the index and for the query alike: one rule, in Python, on both engines.

The text is folded first (`fold`): NFKC (full-width and compatibility forms to plain ones:
ａ→a, ｶ→カ, ₁→1), case-folded (Straße→strasse), then stripped of the marks that decorate
rather than spell — the accents of the Latin, Greek and Cyrillic alphabets (é→e, ά→α, ё→е,
but й stays й: a breve on a Cyrillic letter makes another letter), Hebrew points and Arabic
vowel marks and tatweel, usually left out in writing — and composed back (NFC), so a Hangul
syllable or a voiced kana (デ) stays one character. Every other mark is kept: kana voicing,
Indic and Thai vowel signs spell the word.

A word is a run of letters, digits, marks and '_' (`session_fork`, `run_terminal_command_v2` are
one word each; a path is its parts). Scripts written without spaces between words — Chinese,
Japanese, Korean (whose particles cling to the word), Thai, Lao, Khmer, Myanmar — are cut out of
those runs as runs of their own ("spaceless" segments), and indexed as overlapping pairs of
characters (bigrams) plus the run's last character, so that any word of two or more characters
inside a sentence is found by its pairs, and one character by the pairs it starts; Latin text is
never cut into pairs (no false hits there). The index keeps which documents hold a token, not
where: a term of several tokens (a phrase, a CJK word of three or more characters) is asked of
the index as all its tokens and checked on the text (`found_in`).

The SQLite index is fed these tokens (engine.py), so FTS5's own tokenizer only splits them at
spaces; PostgreSQL stores them as a tsvector: the same tokens, so the same hits.
"""

import re
import unicodedata

import regex

# Marks that decorate: Latin/Greek/Cyrillic accents (but a breve after a Cyrillic letter: й, ў),
# Hebrew points and cantillation, Arabic vowel marks, superscript alef and tatweel, and the
# variation selectors that ask for text or emoji presentation (❤️ is ❤).
_DECORATION = re.compile(
    "(?<![\u0400-\u052f])\u0306|[\u0300-\u0305\u0307-\u036f"
    "\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7\u0640\u064b-\u065f\u0670\ufe0e\ufe0f]"
)
_SPACELESS_SCRIPTS = (
    r"\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Hangul}"
    r"\p{scx=Thai}\p{scx=Lao}\p{scx=Khmer}\p{scx=Myanmar}"
)
_WORD_CHAR = r"[\p{L}\p{N}\p{M}_]"
# A segment: a run of spaceless-script word characters, a run of other word characters, or one
# pictograph (an emoji is a word of its own: 🎉 finds the rows holding it).
SEGMENT = regex.compile(
    rf"(?V1)(?P<spaceless>[{_WORD_CHAR}&&[{_SPACELESS_SCRIPTS}]]+)"
    rf"|[{_WORD_CHAR}--[{_SPACELESS_SCRIPTS}]]+|\p{{Extended_Pictographic}}"
)
_ASCII_WORD = re.compile(r"[a-z0-9_]+")
# A token is kept by its first MAX_TOKEN characters (PostgreSQL's lexemes stop at 2 kB): a
# longer word is still found by a query for it, cut the same way.
MAX_TOKEN = 500


def fold(text: str) -> str:
    """Text as the index and the query see it (see the module's docstring)."""
    if text.isascii():  # most text: nothing to normalise (and folding whole rows stays cheap)
        return text.lower()
    folded = unicodedata.normalize("NFKC", text).casefold()
    if folded.isascii():
        return folded
    stripped = _DECORATION.sub("", unicodedata.normalize("NFD", folded))
    return unicodedata.normalize("NFC", stripped)


Segment = tuple[str, bool]  # (folded text, spaceless)


def segments(text: str) -> list[Segment]:
    """The text's words and spaceless runs, folded, in order."""
    folded = fold(text)
    if folded.isascii():
        return [(word, False) for word in _ASCII_WORD.findall(folded)]
    return [(m.group(), m.group("spaceless") is not None) for m in SEGMENT.finditer(folded)]


def tokens_of(segment: Segment) -> list[str]:
    """A text segment's tokens in the index: a word itself; a spaceless run's pairs and its
    last character."""
    text, spaceless = segment
    if not spaceless:
        return [text[:MAX_TOKEN]]
    return [text[i : i + 2] for i in range(len(text) - 1)] + [text[-1]]


def index_tokens(text: str) -> set[str]:
    """The distinct tokens of a text (the index keeps which documents hold one, not where)."""
    return {token for segment in segments(text) for token in tokens_of(segment)}


def query_tokens(segment: Segment) -> list[tuple[str, bool]]:
    """A query segment's tokens, each with whether it is a prefix: a word itself; a spaceless
    run its pairs (any run holding them), or one character as the prefix of the pairs it
    starts (and of a run's last character)."""
    text, spaceless = segment
    if not spaceless:
        return [(text[:MAX_TOKEN], False)]
    if len(text) == 1:
        return [(text, True)]
    return [(text[i : i + 2], False) for i in range(len(text) - 1)]


def found_in(wanted: list[Segment], text: list[Segment], prefix: bool = False) -> bool:
    """Whether the query's segments are in the text's, in order, side by side: words equal (the
    last one a prefix when `prefix`), a spaceless run inside one of the text's (at its end when
    more follows in the query, at its start when more came before)."""
    size = len(wanted)
    for start in range(len(text) - size + 1):
        for i, (word, spaceless) in enumerate(wanted):
            have, have_spaceless = text[start + i]
            if have_spaceless != spaceless:
                break
            last = i == size - 1
            if spaceless:
                if size == 1:
                    fits = word in have
                elif i == 0:
                    fits = have.endswith(word)
                elif last:
                    fits = have.startswith(word)
                else:
                    fits = have == word
            else:
                fits = have == word or (last and prefix and have.startswith(word))
            if not fits:
                break
        else:
            return True
    return False
