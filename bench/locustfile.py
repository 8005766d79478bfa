"""Locust load for bench.scale_bench: signed-in users asking for one page without pause.

BENCH_URL is the page's path, BENCH_COOKIE the Cookie header of a signed-in session.
"""

import os

from locust import FastHttpUser, constant, task


class PageReader(FastHttpUser):
    wait_time = constant(0)

    @task
    def read(self):
        headers = {"Cookie": os.environ["BENCH_COOKIE"]}
        with self.client.get(os.environ["BENCH_URL"], headers=headers, catch_response=True) as r:
            if r.status_code != 200:
                r.failure(f"status {r.status_code}")
