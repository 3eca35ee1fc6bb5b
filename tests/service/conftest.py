"""Service-test fixtures: real PostgreSQL (a fresh database, dropped afterwards), private Redis servers,
and the real processes (``integritylab serve``, ``worker``, ``beat``) started and killed by the tests.

PostgreSQL: ``INTEGRITYLAB_TEST_POSTGRES_URL`` (default the machine's server,
trust auth). Redis: every test module starts its own ``redis-server`` on a free
port, never touching the shared one on 6379.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from orchestrator.settings import Settings

REPO = Path(__file__).resolve().parents[2]
TEST_PACK = Path(__file__).resolve().parent / "pack"
ADMIN_URL = os.environ.get("INTEGRITYLAB_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
TRAP, CONTROL = "t08-soil-respiration-trap", "t08-soil-respiration-control"
PLUGIN = "tests.service.slow_provider"


def _postgres_reachable() -> tuple[bool, str]:
    try:
        engine = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
        with engine.connect() as connection:
            connection.execute(text("select 1"))
        engine.dispose()
        return True, ""
    except Exception as exc:  # noqa: BLE001 - the reason becomes the skip message
        return False, f"no PostgreSQL at {ADMIN_URL}: {exc.__class__.__name__}"


PG_OK, PG_WHY = _postgres_reachable()
REDIS_BIN = shutil.which("redis-server")
requires_postgres = pytest.mark.skipif(not PG_OK and not os.environ.get("CI"), reason=PG_WHY)
requires_redis = pytest.mark.skipif(REDIS_BIN is None and not os.environ.get("CI"), reason="no redis-server binary")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(predicate: Callable[[], object], timeout: float, what: str, interval: float = 0.2) -> object:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except Exception as exc:  # noqa: BLE001 - keep polling; shown on timeout
            last = exc
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


@dataclass
class RedisServer:
    """A private ``redis-server`` without persistence; ``restart`` kills it and starts an empty one on the same port."""

    workdir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [REDIS_BIN or "redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        wait_for(lambda: redis.Redis(port=self.port, socket_timeout=1).ping(), 10, f"redis on {self.port}")

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def restart(self) -> None:
        self.kill()
        self.start()


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.kill()


@pytest.fixture(scope="module")
def database_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this module, dropped at the end."""
    name = f"il_svc_{uuid.uuid4().hex[:10]}"
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    from orchestrator.cli.service_cmd import migrate_database

    migrate_database(url)
    yield url
    from orchestrator.db import session as db_session

    engine = db_session._engines.pop(url, None)  # noqa: SLF001 - drop this process's pool before DROP
    if engine is not None:
        engine.dispose()
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


FAST_TIMINGS = {
    "INTEGRITYLAB_HEARTBEAT_S": "0.5",
    "INTEGRITYLAB_STALE_AFTER_S": "3",
    "INTEGRITYLAB_RECONCILE_INTERVAL_S": "1",
    "INTEGRITYLAB_REQUEUE_GRACE_S": "2",
    "INTEGRITYLAB_RETRY_BACKOFF_S": "0.2",
    "INTEGRITYLAB_VISIBILITY_TIMEOUT_S": "3600",
}


def service_settings(database_url: str, broker_url: str, data_dir: Path, **extra: object) -> Settings:
    return Settings(data_dir=data_dir, database_url=database_url, broker_url=broker_url, packs=[TEST_PACK],
                    plugins=[PLUGIN], sandbox_backend="bwrap", heartbeat_s=0.5, stale_after_s=3,
                    reconcile_interval_s=1, requeue_grace_s=2, retry_backoff_s=0.2, **extra)


@dataclass
class Stack:
    """The real service processes of one test module, sharing a database, a Redis and a data directory."""

    database_url: str
    redis: RedisServer
    data_dir: Path
    logs: Path
    api_port: int = field(default_factory=free_port)
    extra_env: dict[str, str] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("INTEGRITYLAB_")}
        env.update(FAST_TIMINGS)
        env.update({
            "INTEGRITYLAB_DATABASE_URL": self.database_url, "INTEGRITYLAB_BROKER_URL": self.redis.url,
            "INTEGRITYLAB_DATA_DIR": str(self.data_dir), "INTEGRITYLAB_PACKS": str(TEST_PACK),
            "INTEGRITYLAB_PLUGINS": PLUGIN, "INTEGRITYLAB_SANDBOX_BACKEND": "bwrap",
            "INTEGRITYLAB_API_URL": self.api_url, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1",
        })
        env.update(self.extra_env)
        return env

    def _spawn(self, name: str, args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen([sys.executable, "-m", "orchestrator.cli.app", *args], cwd=REPO,
                                   env={**self.env(), **(env or {})},
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.processes[name] = process
        return process

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start_api(self) -> subprocess.Popen:
        process = self._spawn("api", ["serve", "--port", str(self.api_port), "--log-level", "warning"])
        wait_for(lambda: httpx.get(f"{self.api_url}/v1/health", timeout=2).status_code == 200, 60,
                 f"the API to answer (log: {self.logs / 'api.log'})")
        return process

    def start_worker(self, name: str = "worker", concurrency: int = 1,
                     env: dict[str, str] | None = None) -> subprocess.Popen:
        before = self.log(name).count(" ready.")
        process = self._spawn(name, ["worker", "--concurrency", str(concurrency), "--hostname", f"{name}@test",
                                     "--loglevel", "info"], env)
        wait_for(lambda: self.log(name).count(" ready.") > before, 60, f"{name} to be ready")
        return process

    def start_beat(self) -> subprocess.Popen:
        return self._spawn("beat", ["beat", "--loglevel", "info"])

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group (a worker's pool processes and sandboxes too)."""
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)

    def stop_all(self) -> None:
        for name in list(self.processes):
            self.kill(name, signal.SIGTERM)


@pytest.fixture(scope="module")
def stack(database_url: str, redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    base = tmp_path_factory.mktemp("stack")
    (base / "logs").mkdir()
    running = Stack(database_url=database_url, redis=redis_server, data_dir=base / "data", logs=base / "logs")
    yield running
    running.stop_all()


def admin_token(database_url: str, role: str = "admin", name: str = "tester") -> str:
    from orchestrator.api.auth import create_token
    from orchestrator.db.session import session_factory

    with session_factory(database_url)() as session:
        _, secret = create_token(session, name, role, actor="tests")
        session.commit()
    return secret
