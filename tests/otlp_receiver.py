"""A real OTLP receiver for the tests: Arize Phoenix, started on loopback, which stores what it
receives and answers what it stored (its REST API); and a relay in front of it that counts
every span sent over the wire, so a test can tell "sent nothing twice" from "kept once" (Phoenix
keeps the first copy of a span id and drops a second one silently).

Phoenix lives in a virtualenv of its own (`make receiver` makes .venv-phoenix from PyPI): its
hundred-odd dependencies never meet the project's.
"""

import json
import os
import socket
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

PHOENIX = Path(__file__).resolve().parent.parent / ".venv-phoenix" / "bin" / "phoenix"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Phoenix:
    """`phoenix serve` on loopback ports of its own, its data in `folder`."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = None

    def start(self, timeout: float = 90) -> "Phoenix":
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": str(self.folder),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(free_port()),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        self.log = (self.folder / "phoenix.log").open("wb")
        self.process = subprocess.Popen(
            [str(PHOENIX), "serve"], env=env, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"Phoenix stopped: see {self.folder / 'phoenix.log'}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"Phoenix did not answer within {timeout} s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process:
            self.log.close()

    def spans(self, project: str = "default") -> list[dict]:
        """Every span Phoenix stored in a project, page by page."""
        found, cursor = [], None
        while True:
            url = f"{self.url}/v1/projects/{project}/spans?limit=1000"
            if cursor:
                url += f"&cursor={cursor}"
            with urllib.request.urlopen(url, timeout=10) as answer:
                page = json.load(answer)
            found += page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                return found
            time.sleep(0.3)

    def wait_for(self, span_ids, timeout: float = 30) -> list[dict]:
        """The stored spans of these ids, once all have been stored (Phoenix stores in the
        background) or the time is up."""
        wanted = set(span_ids)
        deadline = time.monotonic() + timeout
        while True:
            spans = self.spans() if self._has_project() else []
            found = [s for s in spans if s["context"]["span_id"] in wanted]
            if len(found) >= len(wanted) or time.monotonic() > deadline:
                return found
            time.sleep(0.3)

    def _has_project(self) -> bool:
        with urllib.request.urlopen(f"{self.url}/v1/projects", timeout=10) as answer:
            return any(p["name"] == "default" for p in json.load(answer)["data"])


class CountingRelay:
    """A loopback OTLP/HTTP endpoint that records the span ids of every protobuf request and
    passes the request on to `upstream` unchanged (its answer back to the sender)."""

    def __init__(self, upstream: str):
        self.upstream = upstream
        self.received: list[str] = []  # span ids (hex), in the order they arrived
        self.requests = 0
        relay = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                message = ExportTraceServiceRequest.FromString(body)
                relay.requests += 1
                relay.received += [
                    span.span_id.hex()
                    for resource in message.resource_spans
                    for scope in resource.scope_spans
                    for span in scope.spans
                ]
                forward = urllib.request.Request(
                    relay.upstream + self.path,
                    data=body,
                    headers={"Content-Type": self.headers["Content-Type"]},
                )
                with urllib.request.urlopen(forward, timeout=30) as answer:
                    reply = answer.read()
                    self.send_response(answer.status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
