"""Annotations on the large bench ledger (issue 31): `make bench`.

    .venv/bin/python -m bench.annotations_bench --write-doc

1. Uses var/bench/scale.sqlite3 (bench.scale_ledger builds it when missing) read-only, and a
   Django database of its own made anew each run (var/bench/annotations-django.sqlite3).
2. Times, in-process with Django's test client (DEBUG off, a superuser), warm, the long session's
   page (5,183 turns) and the session list (first page, and filtered by a label and by 👎), first
   with no annotation, then with 10,000: 3,000 on the long session's turns (three people), 7,000
   on the turns of the 2,000 most recently active sessions, half labelled, a third with a note.
   Median and p95 of --runs runs, and the ledger and Django queries of one run.
3. Exports --records chat records (👍 turns of the ledger, chosen at random with a fixed seed) as
   the command does, to nowhere: records per second and the process's resident memory every
   tenth of the way (flat: each record is written before the next is read).
4. Writes its section of docs/benchmarks.md (--write-doc).
"""

import argparse
import math
import os
import random
import statistics
import sys
import time
from pathlib import Path

from bench.scale_ledger import BENCH, LEDGER, ROOT, connect, ensure_ledger, long_session
from tools.docfile import publish

DJANGO_DB = BENCH / "annotations-django.sqlite3"
HEADING = "# Benchmarks: annotations, review and datasets"
COMMAND = ".venv/bin/python -m bench.annotations_bench --write-doc  # make bench runs it"
# The session pages' targets (docs/benchmarks.md, the sessions pages): the 5,000-turn session
# page under 500 ms, the session list under 150 ms, on the p95.
TARGETS = {"session": 500, "list": 150}
ANNOTATIONS = 10_000
ENV = {
    "DJANGO_SETTINGS_MODULE": "ledgerweb.settings",
    "SECRET_KEY": "bench-annotations",
    "DEBUG": "0",
    "HTTPS": "0",
    "ALLOWED_HOSTS": "testserver",
    "DJANGO_DB": str(DJANGO_DB),
    "LEDGER_QUERY_TIMEOUT_MS": "600000",
    "LOG_LEVEL": "ERROR",
}
LABELS = ["wrong-tool", "hallucination", "good-example", "slow", "needs-review", "Русский"]


def setup(ledger: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{DJANGO_DB}{suffix}").unlink(missing_ok=True)
    os.environ.update(ENV, LEDGER_DB=str(ledger))
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0)
    from django.conf import settings

    if not (Path(settings.STATIC_ROOT) / "staticfiles.json").exists():
        call_command("collectstatic", interactive=False, verbosity=0)


def people():
    from django.contrib.auth import get_user_model

    model = get_user_model()
    bench, _ = model.objects.get_or_create(
        username="bench", defaults={"is_superuser": True, "is_staff": True}
    )
    others = [model.objects.get_or_create(username=f"reviewer{n}")[0] for n in range(2)]
    return [bench, *others]


def client(user):
    from django.test import Client

    c = Client()
    c.force_login(user)
    return c


def timed(c, url: str, runs: int) -> dict:
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    response = c.get(url)  # warm-up
    assert response.status_code == 200, (url, response.content[:300])
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        c.get(url)
        times.append((time.perf_counter() - started) * 1000)
    with (
        CaptureQueriesContext(connections["ledger"]) as ledger,
        CaptureQueriesContext(connections["default"]) as own,
    ):
        c.get(url)
    return {
        "median": statistics.median(times),
        "p95": sorted(times)[max(0, math.ceil(0.95 * len(times)) - 1)],
        "kb": len(response.content) / 1024,
        "ledger_queries": len(ledger),
        "own_queries": len(own),
    }


def annotate(users, long_id: str, rng: random.Random) -> dict:
    """ANNOTATIONS annotations in bulk: 3,000 on the long session's turns, the rest on turns of
    the most recently active sessions."""
    from annotations.models import Annotation, Label

    with connect(LEDGER) as conn:
        newest_first = "SELECT id FROM turns WHERE session_id = ? ORDER BY started_at DESC"
        long_turns = [r[0] for r in conn.execute(newest_first, (long_id,))]
        recent_sql = "SELECT id FROM sessions ORDER BY updated_at DESC LIMIT 2000"
        recent = [r[0] for r in conn.execute(recent_sql)]
        ids_sql = ",".join("?" * len(recent))
        recent_turns = conn.execute(
            f"SELECT session_id, id FROM turns WHERE session_id IN ({ids_sql})", recent
        ).fetchall()
    targets = [(long_id, t) for t in long_turns[:1000]]
    targets = [(u, s, t) for u in users for s, t in targets]  # three people: 3,000
    rest = rng.sample(recent_turns, min(len(recent_turns), ANNOTATIONS - len(targets)))
    targets += [(rng.choice(users), s, t) for s, t in rest]
    now = int(time.time() * 1000)
    rows = [
        Annotation(
            user=user, session_id=s, turn_id=t, thumb=rng.choice((1, -1, None)),
            score=rng.choice((None, 1, 2, 3, 4, 5)),
            note="Checked by hand: **fine**" if n % 3 == 0 else "",
            created_at=now, updated_at=now,
        )
        for n, (user, s, t) in enumerate(targets)
    ]  # fmt: skip
    Annotation.objects.bulk_create(rows, batch_size=1000)
    Label.objects.bulk_create(
        [Label(annotation_id=pk, name=LABELS[pk % len(LABELS)])
         for pk in Annotation.objects.values_list("pk", flat=True) if pk % 2 == 0],
        batch_size=1000,
    )  # fmt: skip
    return {"annotations": Annotation.objects.count(), "labels": Label.objects.count()}


def pages(long_id: str) -> list[tuple[str, str, str | None]]:
    return [
        (f"session page, {long_id[:10]}… (5,183 turns)", f"/sessions/{long_id}/", "session"),
        ("session list", "/sessions/", "list"),
        ("session list, label=wrong-tool", "/sessions/?label=wrong-tool", "list"),
        ("session list, thumb=down", "/sessions/?thumb=down", "list"),
    ]


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def export(records: int, rng: random.Random, user) -> dict:
    """`records` 👍 turns, exported as chat records as the command streams them."""
    from annotations.models import Annotation
    from datasets import exports

    Annotation.objects.all().delete()
    with connect(LEDGER) as conn:
        (top,) = conn.execute("SELECT max(rowid) FROM turns").fetchone()
        # Completed turns are ~90 % of the ledger's: sample enough to keep `records` of them.
        rowids = rng.sample(range(1, top + 1), min(top, int(records * 1.3)))
        turns = []
        for start in range(0, len(rowids), 900):
            chunk = rowids[start : start + 900]
            turns += conn.execute(
                f"SELECT session_id, id FROM turns WHERE rowid IN ({','.join('?' * len(chunk))})"
                " AND status = 'completed'", chunk,
            ).fetchall()  # fmt: skip
    turns = rng.sample(turns, min(records, len(turns)))
    now = int(time.time() * 1000)
    Annotation.objects.bulk_create(
        [Annotation(user=user, session_id=s, turn_id=t, thumb=1, created_at=now, updated_at=now)
         for s, t in turns],
        batch_size=2000,
    )  # fmt: skip
    selection = exports.Selection("chat", "messages", [], True)
    run, report = exports.start(selection, by_command=True)
    checkpoints, written, seen = [], 0, 0
    step = max(1, len(turns) // 10)
    started = time.monotonic()
    start_rss = rss_mb()
    for piece in exports.stream(selection, run, report):
        written += len(piece)
        done = report.records + report.left_out_count
        if done >= seen + step:
            seen = done
            checkpoints.append((done, rss_mb(), time.monotonic() - started))
    elapsed = time.monotonic() - started
    return {
        "records": report.records,
        "left_out": report.left_out_count,
        "by_reason": report.by_reason,
        "seconds": elapsed,
        "mb": written / 2**20,
        "start_rss": start_rss,
        "checkpoints": checkpoints,
    }


def table(rows: list[dict]) -> list[str]:
    lines = [
        "| page | annotations | median ms | p95 ms | KB | ledger queries | own queries | target |",
        "|---|--:|--:|--:|--:|--:|--:|---|",
    ]
    for r in rows:
        target = TARGETS.get(r["kind"])
        verdict = f"< {target} ms: **{'met' if r['p95'] < target else 'MISSED'}**"
        lines.append(
            f"| {r['name']} (`{r['url']}`) | {r['annotations']:,} | {r['median']:.1f} |"
            f" {r['p95']:.1f} | {r['kb']:.0f} | {r['ledger_queries']} | {r['own_queries']} |"
            f" {verdict} |"
        )
    return lines


def doc(rows, counts, ex, load_before, load_after, runs) -> str:
    lines = [
        HEADING,
        "",
        f"Command: `{COMMAND}`. Machine: 2 cores shared with other developers' work; load"
        f" (1/5/15 min) {load_before} before, {load_after} after. Django's test client"
        f" in-process (DEBUG off), warm: median and nearest-rank p95 of {runs} runs per page"
        " after one warm-up; queries counted in one more run.",
        "",
        "Ledger: `var/bench/scale.sqlite3` (bench.scale_ledger). Annotations:"
        f" {counts['annotations']:,} in ledgerweb's database ({counts['labels']:,} labels;"
        " 3,000 on the long session's turns by three people, the rest on turns of the 2,000 most"
        " recently active sessions).",
        "",
        *table(rows),
        "",
        f"**Export** (`ledger_dataset chat`, streamed to nowhere): {ex['records']:,} records of"
        f" 👍 turns ({ex['left_out']:,} left out: {ex['by_reason'] or 'none'}), {ex['mb']:,.0f} MB"
        f" of JSONL in {ex['seconds']:,.0f} s ({ex['records'] / max(ex['seconds'], 1e-9):,.0f}"
        f" records/s). Resident memory: {ex['start_rss']:.0f} MB before the first record, then"
        " (records done: MB):",
        "",
        "| records | RSS MB | seconds |",
        "|--:|--:|--:|",
        *(f"| {n:,} | {mb:.0f} | {s:,.0f} |" for n, mb, s in ex["checkpoints"]),
        "",
        "Flat: each record (the thread of its turn, compactions applied) is built and written"
        " before the next is read; annotated turns are read a thousand ids at a time.",
    ]
    return "\n".join(lines)


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--write-doc", action="store_true")
    args = parser.parse_args(argv)
    ensure_ledger({})
    load_before = load()
    setup(LEDGER)
    users = people()
    c = client(users[0])
    with connect(LEDGER) as conn:
        long_id = long_session(conn)[0]
    rng = random.Random(31)
    rows = []
    for name, url, kind in pages(long_id):
        rows.append({"name": name, "url": url, "kind": kind, "annotations": 0}
                    | timed(c, url, args.runs))  # fmt: skip
    counts = annotate(users, long_id, rng)
    for name, url, kind in pages(long_id):
        rows.append({"name": name, "url": url, "kind": kind, "annotations": counts["annotations"]}
                    | timed(c, url, args.runs))  # fmt: skip
    rows.sort(key=lambda r: (r["url"], r["annotations"]))
    ex = export(args.records, rng, users[0])
    publish(HEADING, doc(rows, counts, ex, load_before, load(), args.runs), args.write_doc)


if __name__ == "__main__":
    main()
