"""A throwaway PostgreSQL server for the tests, from the machine's own binaries.

Like the browser tests' Chromium, the server is started by the tests themselves: `initdb` into a
temporary folder, `pg_ctl start` listening on a Unix socket in that folder only (no TCP port, so
parallel runs and other servers never collide), and `pg_ctl stop` plus the folder removed at the
end. `initdb` refuses to run as root: as root, the server runs as the `postgres` user.

    with PostgresServer() as server:
        url = server.url("postgres")   # postgres://postgres@/postgres?host=/tmp/...&port=...
        server.create_database("ledger")
"""

import contextlib
import os
import random
import shutil
import subprocess
import tempfile
from glob import glob
from pathlib import Path

import psycopg

SUPERUSER = "postgres"


def postgres_bin() -> Path | None:
    """The folder of the newest installed PostgreSQL's `initdb` and `pg_ctl` (Debian keeps them
    off PATH, in /usr/lib/postgresql/<version>/bin), or None."""
    on_path = shutil.which("pg_ctl")
    if on_path:
        return Path(on_path).parent
    found = sorted(glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


class PostgresServer:
    """tcp: also listen on 127.0.0.1 at the port (a URL with a host, as people write them);
    ssl: with a throwaway self-signed certificate (`?sslmode=require`)."""

    def __init__(self, *, tcp: bool = False, ssl: bool = False):
        self.tcp, self.ssl = tcp, ssl
        self.bin = postgres_bin()
        if self.bin is None:
            raise RuntimeError("No PostgreSQL binaries: run `make postgres` (Debian's postgresql)")
        self.folder = Path(tempfile.mkdtemp(prefix="ledgerweb-pg-"))
        self.data = self.folder / "data"
        # The socket's name carries the port: a random one keeps two runs' sockets apart in logs.
        self.port = random.randint(20_000, 60_000)
        self._as_postgres = os.geteuid() == 0

    def _run(self, *args: str) -> None:
        command = [str(self.bin / args[0]), *args[1:]]
        if self._as_postgres:
            command = ["runuser", "-u", SUPERUSER, "--", *command]
        subprocess.run(command, check=True, capture_output=True, text=True)

    def start(self) -> "PostgresServer":
        if self._as_postgres:
            shutil.chown(self.folder, user=SUPERUSER)
        self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
                  "--locale=C.UTF-8", "--no-sync")  # fmt: skip
        listen = "127.0.0.1" if self.tcp else ""
        options = (
            f"-c listen_addresses='{listen}' -c unix_socket_directories='{self.folder}'"
            f" -p {self.port} -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            " -c max_connections=200"
        )
        if self.ssl:
            self._certificate()
            options += " -c ssl=on"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-w", "-l",
                  str(self.folder / "server.log"), "start")  # fmt: skip
        return self

    def _certificate(self) -> None:
        """A self-signed certificate in the data folder, where ssl=on looks for it."""
        key, cert = self.data / "server.key", self.data / "server.crt"
        subprocess.run(["openssl", "req", "-new", "-x509", "-days", "2", "-nodes", "-subj",
                        "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
                       check=True, capture_output=True)  # fmt: skip
        key.chmod(0o600)
        if self._as_postgres:
            for path in (key, cert):
                shutil.chown(path, user=SUPERUSER)

    def tcp_url(self, database: str, user: str = SUPERUSER, password: str = "") -> str:
        secret = f":{password}" if password else ""
        return f"postgres://{user}{secret}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        if self.data.exists():
            with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, database: str = "postgres", user: str = SUPERUSER) -> str:
        return f"postgres://{user}@/{database}?host={self.folder}&port={self.port}"

    def connect(self, database: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(
            host=str(self.folder), port=self.port, user=SUPERUSER, dbname=database,
            autocommit=True,
        )  # fmt: skip

    def create_database(self, name: str) -> str:
        with self.connect() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def __enter__(self) -> "PostgresServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
