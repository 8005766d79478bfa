"""Search against an independent evaluator: for queries in many scripts and over values longer
than 64 KB (indexed as several documents), the rows the search page lists (every page of them)
and its count are the rows plain Python finds in the ledger's text.

The evaluator shares no code with search/: it folds the text by the README's rule and matches
each term with a regular expression over a whole field (a row is several fields, a value over
64 KB is one field, never pieces): a word as a whole word, a run of Chinese, Japanese, Korean or
Thai anywhere inside such a run, a phrase as its parts in order with only punctuation and spaces
between; the words of an AND anywhere in the row, a left-out term nowhere in it."""

import json
import unicodedata

import pytest
import regex
from builders import LEDGER_DB, T0

pytestmark = LEDGER_DB
URL = "/search/"


@pytest.fixture(autouse=True)
def pages_index_everything(monkeypatch):
    monkeypatch.setattr("search.views.INDEX_BUDGET_S", 60)
    monkeypatch.setattr("search.views.INDEX_BUDGET_BYTES", 10**9)


# -- The evaluator ---------------------------------------------------------------------------------

DECORATION = set(range(0x300, 0x370)) - {0x306} | set(range(0x591, 0x5C8)) - {0x5BE, 0x5C0, 0x5C3,
    0x5C6} | set(range(0x64B, 0x660)) | {0x640, 0x670, 0xFE0E, 0xFE0F}  # fmt: skip
CYRILLIC = regex.compile(r"\p{Cyrillic}")
SPACELESS = (
    r"\p{scx=Han}\p{scx=Hira}\p{scx=Kana}\p{scx=Hang}\p{scx=Thai}\p{scx=Lao}\p{scx=Khmr}"
    r"\p{scx=Mymr}"
)
W = r"\p{L}\p{N}\p{M}_"
S = rf"[[{W}]&&[{SPACELESS}]]"
L = rf"[[{W}]--[{SPACELESS}]]"
SEPARATOR = rf"[^{W}\p{{Extended_Pictographic}}]*"
PART = regex.compile(rf"(?V1)(?P<s>{S}+)|(?P<l>{L}+)|(?P<e>\p{{Extended_Pictographic}})")


def folded(text: str) -> str:
    text = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text).casefold())
    kept = []
    for char in text:
        breve_on_cyrillic = ord(char) == 0x306 and kept and CYRILLIC.match(kept[-1])
        if ord(char) in DECORATION or (ord(char) == 0x306 and not breve_on_cyrillic):
            continue
        kept.append(char)
    return unicodedata.normalize("NFC", "".join(kept))


def term_pattern(term: str, prefix: bool):
    parts = list(PART.finditer(folded(term)))
    pieces = []
    for i, part in enumerate(parts):
        text, first, last = regex.escape(part.group()), i == 0, i == len(parts) - 1
        if part.group("l"):
            pieces.append(rf"(?<!{L}){text}" + ("" if last and prefix else rf"(?!{L})"))
        elif part.group("s"):
            pieces.append(("" if first else rf"(?<!{S})") + text + ("" if last else rf"(?!{S})"))
        else:
            pieces.append(text)
    return regex.compile("(?V1)" + SEPARATOR.join(pieces))


def parse(q: str):
    """The query's groups of terms (OR of ANDs) and left-out terms, as the README writes it."""
    groups, negatives = [[]], []
    for raw in regex.findall(r'-?"[^"]*"|\S+', q):
        if raw == "OR":
            groups.append([])
            continue
        minus = raw.startswith("-")
        text = raw[1:] if minus else raw
        prefix = text.endswith("*")
        pattern = term_pattern(text.strip('"').rstrip("*"), prefix)
        (negatives if minus else groups[-1]).append(pattern)
    return groups, negatives


def truth(ledger, q: str) -> set[tuple[str, str]]:
    groups, negatives = parse(q)
    rows = [
        ("message", row[0], [row[1]])
        for row in ledger.conn.execute("SELECT id, content FROM messages").fetchall()
    ] + [
        ("tool_call", row[0], list(row[1:]))
        for row in ledger.conn.execute(
            "SELECT id, tool_name, parameters, result, error FROM tool_calls"
        ).fetchall()
    ]
    found = set()
    for kind, item_id, fields in rows:
        texts = [folded(str(f)) for f in fields if f is not None]

        def has(pattern, texts=texts):
            return any(pattern.search(text) for text in texts)

        if any(has(p) for p in negatives):
            continue
        if any(all(has(p) for p in group) for group in groups):
            found.add((kind, item_id))
    return found


# -- The ledger ------------------------------------------------------------------------------------

FILLER = "lorem ipsum dolor sit amet "  # 27 bytes


def filler(kilobytes: int) -> str:
    return FILLER * (kilobytes * 1024 // len(FILLER))


@pytest.fixture
def many_scripts(ledger):
    t = ledger.turn(ledger.session(id="S1"), id="T1")
    texts = [
        "Переключить интерфейс на Русский язык",
        "русский текст и мой ключ",
        "Η τιμή a₁ και μ₀ είναι σταθερή",
        "ε₀ is the permittivity; ε0 written plainly",
        "한국어를 배우고 있어요",
        "한국어 공부",
        "デフォルトポート3000に修正しました",
        "テストを追加してから更新する",
        "我们已经更新了数据库的配置",
        "数据库 alert 更新",
        "العَرَبِيَّة لغة جميلة",
        "שָׁלוֹם עוֹלָם",
        "ภาษาไทยเป็นภาษาที่สวยงาม",
        "deploy done 🎉 celebrate",
        "the theory of everything",
        "Le café est très naïf",
        "an alert about kruisselbrink",
        "quantum entanglement theory, plainly",
    ]
    for i, text in enumerate(texts):
        ledger.message(t, i, id=f"M{i:02d}", content=text, created_at=T0 + i)
    # Values over 64 KB: each is several documents in the index.
    huge = {
        "H1": "gitmcp__fetch_generic_url_content " + filler(200) + " kruisselbrink "
        + filler(100) + " 中文 " + filler(80) + " 中文 ",
        "H2": filler(150) + " alert " + filler(150) + " alert " + filler(70) + " kruisselbrink",
        "H3": filler(70) + " quantum entanglement theory " + filler(70) + " 更新 " + filler(5),
        "H4": "alert " + filler(130) + " 한국어를 " + filler(66) + " Русский " + filler(3),
        "H5": filler(90) + " quantum " + filler(1) + " entanglement theory " + filler(90),
    }  # fmt: skip
    for i, (call_id, value) in enumerate(huge.items()):
        ledger.tool_call(
            t, 100 + i, id=call_id, tool_name="fetch", parameters=json.dumps({"n": i}),
            result=json.dumps({"text": value}, ensure_ascii=False), started_at=T0 + 100 + i,
        )  # fmt: skip
    return t


QUERIES = [
    "русский",
    "мои",
    "a₁",
    "μ₀",
    "ε₀",
    "τιμη",
    "한국어",
    "デフォルトポート3000に修正",
    "ポート",
    "追加",
    "更新",
    "数据库",
    "新",
    "العربية",
    "שלום",
    "ภาษาไทย",
    "สวยงาม",
    "🎉",
    "th",
    "theor*",
    "cafe",
    # over 64 KB: words in different chunks, left-out words in any chunk, rows counted once
    "gitmcp__fetch_generic_url_content kruisselbrink",
    "alert",
    "alert -kruisselbrink",
    "中文",
    "中文 -gitmcp__fetch_generic_url_content",
    '"quantum entanglement theory"',
    '"quantum entanglement theory" 更新',
    'quantum -"entanglement theory"',
    "kruisselbrink OR 한국어",
    "Русский alert",
    "lorem -alert -quantum",
]


@pytest.mark.parametrize("q", QUERIES)
def test_search_finds_exactly_the_rows_an_independent_evaluator_finds(
    viewer_client, ledger, many_scripts, q
):
    expected = truth(ledger, q)
    found, pages, before, count, upper = [], 0, None, None, None
    while True:
        params = {"q": q, "format": "json"} | ({"before": before} if before else {})
        if count is not None:
            params["count"] = count
        data = viewer_client.get(URL, params).json()
        if count is None:
            count, upper = data["count"], data["count_is_upper_bound"]
        found += [(h["kind"], h["id"]) for g in data["groups"] for h in g["hits"]]
        pages += 1
        before = data["next"]
        if before is None or pages > 20:
            break
    assert len(found) == len(set(found)), "a row listed twice"
    assert set(found) == expected
    if upper:
        assert count >= len(expected)
    else:
        assert count == len(expected)


def test_the_evaluator_is_not_vacuous(ledger, many_scripts):
    """Most of the queries have something to find, and the long values' words are really in
    different 64 KB pieces."""
    assert sum(bool(truth(ledger, q)) for q in QUERIES) >= 26
    assert truth(ledger, "gitmcp__fetch_generic_url_content kruisselbrink") == {("tool_call", "H1")}
    assert truth(ledger, "alert -kruisselbrink") == {("tool_call", "H4"), ("message", "M09")}
