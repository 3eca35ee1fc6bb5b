"""A worker that loses its database stops taking work and drops nothing (issue #14 item 4).

Real PostgreSQL behind a TCP proxy that the test cuts and restores; the worker's delivery functions are
called as the Celery tasks call them (``worker.guarded``).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from orchestrator import worker
from orchestrator.artifacts import ArtifactStore
from orchestrator.batches import AgentSpec, BatchSpec, Selection, plan_batch
from orchestrator.db.models import Run
from orchestrator.db.session import session_factory
from orchestrator.dbguard import DOWN_KEY_PREFIX, database_unavailable
from orchestrator.execution import RunContext
from orchestrator.settings import Settings
from scenarios.loader import load_catalog
from tests.conftest import requires_bwrap
from tests.service.conftest import TEST_PACK, TRAP


class CuttableProxy:
    """127.0.0.1:<port> -> PostgreSQL; ``cut()`` drops every connection and refuses new ones until ``restore()``."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self.restore()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._open = self._open, []
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept(); close() alone would not
            except OSError:
                pass
            listener.close()
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass


class FakeRedis:
    """Only what the database-down marker uses."""

    def __init__(self) -> None:
        self.keys: dict[str, str] = {}
        self.history: list[tuple[str, str]] = []

    def set(self, key: str, value: str, ex: int | None = None) -> None:
        self.keys[key] = value
        self.history.append(("set", key))

    def delete(self, key: str) -> None:
        self.keys.pop(key, None)
        self.history.append(("delete", key))


@pytest.fixture
def proxied(database_url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    direct = session_factory(database_url)  # migrates the schema through a direct connection
    host_port = database_url.split("@", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    proxy = CuttableProxy((host, int(port)))
    url = database_url.replace(host_port, f"127.0.0.1:{proxy.port}")
    settings = Settings(data_dir=tmp_path, database_url=url, packs=[TEST_PACK], sandbox_backend="bwrap",
                        heartbeat_s=0.5, stale_after_s=30, db_wait_s=20)
    ctx = RunContext(sessions=session_factory(url), store=ArtifactStore(tmp_path / "a"),
                     catalog=load_catalog([TEST_PACK]), backend="bwrap")
    judged: list[str] = []
    wctx = worker.WorkerContext(run=ctx, settings=settings, enqueue_judge=judged.append)
    wctx.semaphores = type("S", (), {"client": FakeRedis()})()  # type: ignore[assignment]
    yield wctx, direct, proxy, judged
    proxy.cut()


@requires_bwrap
def test_a_worker_without_its_database_waits_and_loses_no_delivery(proxied, caplog) -> None:  # type: ignore[no-untyped-def]
    wctx, direct, proxy, judged = proxied
    batch_id, _ = plan_batch(direct, wctx.run.catalog, BatchSpec(selection=Selection(ids=[TRAP]),
                                                                 agents=[AgentSpec(model="scripted:honest")]))
    with direct() as session:
        (run_id,) = session.scalars(select(Run.id).where(Run.batch_id == batch_id)).all()
    proxy.cut()
    threading.Timer(3.0, proxy.restore).start()
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="orchestrator.dbguard"):
        outcome = worker.guarded(wctx, lambda: worker.attempt_run(wctx, run_id))
    waited = time.monotonic() - started
    # the delivery came back as a retry, after the process had waited for the database (taking no work)
    assert outcome.status == "database-unavailable" and outcome.retry_in is not None and outcome.retry_in < 2
    assert waited >= 2.5, waited
    assert "takes no work until it answers" in caplog.text and "answers again" in caplog.text
    marker = DOWN_KEY_PREFIX + worker.identity()
    assert wctx.semaphores.client.history == [("set", marker), ("delete", marker)]  # type: ignore[union-attr]
    with direct() as session:
        run = session.get(Run, run_id)
        assert run is not None and run.status == "queued" and run.attempt == 0  # nothing consumed, nothing lost
    # the retried delivery runs it, once
    assert worker.guarded(wctx, lambda: worker.attempt_run(wctx, run_id)).status == "judging"
    assert judged == [run_id]


def test_only_database_failures_are_held_back() -> None:
    from sqlalchemy.exc import IntegrityError, OperationalError

    lost = OperationalError("select 1", {}, ConnectionRefusedError("refused"))
    assert database_unavailable(lost)
    wrapped = RuntimeError("recording the event failed")
    wrapped.__cause__ = lost
    assert database_unavailable(wrapped)
    assert not database_unavailable(IntegrityError("insert", {}, ValueError("duplicate")))
    assert not database_unavailable(ValueError("a bug"))


@requires_bwrap
def test_two_workers_a_fifteen_second_cut_drops_nothing_and_runs_nothing_twice(stack) -> None:  # type: ignore[no-untyped-def]
    """Real Celery workers: one reaches PostgreSQL through the proxy, the other directly; no reconciler runs,
    so a message a worker acknowledged without recording would leave its run queued for good."""
    from orchestrator.db.models import EventRow
    from tests.service.conftest import admin_token, wait_for

    import httpx

    host_port = stack.database_url.split("@", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    proxy = CuttableProxy((host, int(port)))
    proxied_url = stack.database_url.replace(host_port, f"127.0.0.1:{proxy.port}")
    stack.start_api()
    stack.start_worker("cut-worker", env={"INTEGRITYLAB_DATABASE_URL": proxied_url, "INTEGRITYLAB_DB_WAIT_S": "60"})
    stack.start_worker("steady-worker")
    sessions = session_factory(stack.database_url)
    token = admin_token(stack.database_url)
    body = {"name": "db-cut", "selection": {"ids": [TRAP]}, "agents": [{"model": "scripted:honest"}], "epochs": 24}
    with httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        response = client.post("/v1/batches", json=body)
        assert response.status_code == 201, response.text
        batch_id = response.json()["id"]

    def finished() -> list[Run]:
        with sessions() as session:
            return list(session.scalars(select(Run).where(Run.batch_id == batch_id, Run.finished_at.is_not(None))))

    wait_for(lambda: len(finished()) >= 3, 90, "three runs to finish before the cut")
    try:
        proxy.cut()
        cut_at = time.monotonic()
        before_cut = len(finished())
        time.sleep(15)
        during_cut = len(finished()) - before_cut
    finally:
        proxy.restore()
    assert time.monotonic() - cut_at >= 15
    wait_for(lambda: [r.status for r in finished()].count("done") == 24, 180,
             "every run of the batch to be judged after the cut")
    with sessions() as session:
        runs_ = list(session.scalars(select(Run).where(Run.batch_id == batch_id)))
        exits = dict(session.execute(select(EventRow.run_id, func.count()).where(
            EventRow.run_id.in_([r.id for r in runs_]), EventRow.kind == "exit").group_by(EventRow.run_id)).all())
    assert [r.status for r in runs_] == ["done"] * 24, [(r.id, r.status, r.error_message) for r in runs_]
    assert {r.verdict for r in runs_} == {"Pass"}
    assert all(exits.get(r.id) == 1 for r in runs_), exits  # no run's agent reached its exit twice
    assert during_cut >= 3, during_cut  # the worker that kept its database kept going
    cut_log = stack.log("cut-worker")
    assert "takes no work until it answers" in cut_log and "answers again" in cut_log, cut_log[-3000:]
    proxy.cut()
