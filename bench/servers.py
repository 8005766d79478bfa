"""Servers on loopback for the benchmark, and how to time one GET against them.

Both servers get the same client: a new TCP connection per request (gunicorn's sync workers
close each connection anyway), the time from sending the request to the last byte of the body.
"""

import http.client
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
# Datasette repeats the query's URL in a Link header; a statement with a long JSON list of ids
# makes that line longer than http.client's 64 KiB limit.
http.client._MAXLINE = 16 * 1024 * 1024
START_TIMEOUT_S = 60
REQUEST_TIMEOUT_S = 900


@dataclass
class Server:
    name: str
    port: int
    process: subprocess.Popen
    headers: dict[str, str] = field(default_factory=dict)  # sent with every request

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[float, int, bytes]:
        """(milliseconds, status, body) of one GET."""
        conn = http.client.HTTPConnection(HOST, self.port, timeout=REQUEST_TIMEOUT_S)
        try:
            start = time.perf_counter()
            conn.request("GET", path, headers=self.headers | (headers or {}))
            response = conn.getresponse()
            body = response.read()
            ms = (time.perf_counter() - start) * 1000
        finally:
            conn.close()
        return ms, response.status, body

    def workers(self) -> list[int]:
        """Pids of the server's child processes (gunicorn's workers)."""
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return [int(c) for c in children]


def cpu_and_wait_ms(pids: list[int]) -> tuple[float, float]:
    """Milliseconds the processes' threads have spent on a CPU, and waiting in a run queue for
    one, so far (/proc/<pid>/task/<tid>/schedstat: the scheduler's own nanoseconds). Taken
    around a request, the difference is what the request cost the workers, and how long they
    were kept from a core by everything else on the machine."""
    cpu = wait = 0
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                on_cpu, queued, _ = (Path(task) / "schedstat").read_text().split()
            except (FileNotFoundError, ValueError):
                continue  # a thread that ended meanwhile
            cpu, wait = cpu + int(on_cpu), wait + int(queued)
    return cpu / 1e6, wait / 1e6


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set size so far (VmHWM), in MB (10^6 bytes)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / 1e6
    raise RuntimeError(f"no VmHWM for pid {pid}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


@contextmanager
def serve(name: str, command: list[str], port: int, ready_path: str, env: dict, cwd: Path,
          headers: dict[str, str] | None = None):  # fmt: skip
    """Start a server, wait until ready_path answers 200, yield it, stop it."""
    log = open(cwd / "var" / "bench" / f"{name}.log", "w")  # noqa: SIM115 (closed below)
    process = subprocess.Popen(command, cwd=cwd, env=os.environ | env, stdout=log, stderr=log)
    server = Server(name, port, process, headers or {})
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                sys.exit(f"{name} stopped at start (exit {process.returncode}): see {log.name}")
            try:
                if server.get(ready_path)[1] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                sys.exit(f"{name} did not answer {ready_path} in {START_TIMEOUT_S} s")
            time.sleep(0.2)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
