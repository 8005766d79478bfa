"""The road not taken, measured: server-sent events from an ASGI server (bench/live_bench.py).

A minimal ASGI app, no Django, so its figures are a lower bound of what a real stream costs: one
watcher per process reads the ledger's PRAGMA data_version every WATCH_S on its own connection
and wakes every open stream, which sends one event (the new version) and goes back to waiting; a
heartbeat comment every HEARTBEAT_S keeps proxies from closing an idle stream. Run by
`uvicorn bench.live_sse_prototype:app` with LEDGER_DB set; GET /stream holds a stream open.
"""

import asyncio
import os
import sqlite3

WATCH_S = 0.2
HEARTBEAT_S = 15.0

_changed = asyncio.Event()
_version = [0]
_watcher: list[asyncio.Task] = []


async def _watch() -> None:
    conn = sqlite3.connect(f"file:{os.environ['LEDGER_DB']}?mode=ro", uri=True)
    seen = None
    while True:
        (version,) = conn.execute("PRAGMA data_version").fetchone()
        if seen is not None and version != seen:
            _version[0] += 1
            _changed.set()
            _changed.clear()
        seen = version
        await asyncio.sleep(WATCH_S)


async def _wait_for_change(timeout: float) -> bool:
    waiter = asyncio.ensure_future(_changed.wait())
    try:
        await asyncio.wait_for(asyncio.shield(waiter), timeout)
        return True
    except TimeoutError:
        waiter.cancel()
        return False


async def app(scope, receive, send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                _watcher.append(asyncio.create_task(_watch()))
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["path"] != "/stream":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/plain")]})  # fmt: skip
        await send({"type": "http.response.body", "body": b"ok"})
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream"),
                            (b"cache-control", b"no-cache")]})  # fmt: skip
    while True:
        changed = await _wait_for_change(HEARTBEAT_S)
        body = f"id: {_version[0]}\ndata: changed\n\n" if changed else ": heartbeat\n\n"
        await send({"type": "http.response.body", "body": body.encode(), "more_body": True})
