"""Where one page's server time goes: cProfile of Django's test client on the bench ledger.

    .venv/bin/python -m bench.profile_page /sessions/<id>/ [--htmx] [--top 25]

Same settings as bench.scale_bench (its ledger and its Django database, rollups included; run
`make bench` once first). Prints the ledger statements with their time, then the functions
with the most time of their own and the most cumulative time.
"""

import argparse
import cProfile
import pstats
import time

from bench import page_sql
from bench.scale_bench import DJANGO_DBS, ENV, prepare_django, setup_django
from bench.scale_ledger import LARGE, SCALE_50, connect


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url")
    parser.add_argument("--htmx", action="store_true", help="ask for the htmx partial")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--scale-50", action="store_true", help="on the scale-50 ledger")
    args = parser.parse_args()
    bench_ledger = SCALE_50 if args.scale_50 else LARGE
    ENV["DJANGO_DB"] = str(DJANGO_DBS[bench_ledger])
    setup_django(bench_ledger.path)
    prepare_django(bench_ledger.path)
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username="bench"))
    headers = {"HX-Request": "true"} if args.htmx else {}
    client.get(args.url, headers=headers)  # warm-up
    statements, status = page_sql.capture(client, args.url, headers)
    conn = connect(bench_ledger.path)
    conn.isolation_level = None
    _, each = page_sql.replay(conn, statements)
    print(f"status {status}; {len(statements)} ledger statements, {sum(each):.1f} ms replayed:")
    for ms, s in sorted(zip(each, statements, strict=True), key=lambda x: -x[0])[:10]:
        print(f"  {ms:8.1f} ms  {' '.join(s.sql.split())[:150]}")
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.runcall(client.get, args.url, headers=headers)
    print(f"\nprofiled request: {(time.perf_counter() - start) * 1000:.0f} ms (with profiling)")
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
