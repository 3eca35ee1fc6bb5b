"""Stopping an embedded batch cleanly on SIGINT / SIGTERM, and finding runs a dead process left behind.

Why: long real-model batches run on the embedded default, and they get stopped
by Ctrl-C, ``timeout``, schedulers and closed terminals. On the first signal no
new run starts, and each run in flight stops at its next event: its sandbox is
destroyed, its events are kept, and it is marked ``interrupted`` (layer
``orchestrator``, the signal named). The batch is then resumable with
``integritylab run --resume BATCH``. A second SIGINT forces an immediate exit
after destroying every live sandbox. A run left ``running`` by a process that
died (SIGKILL, a crash) is found on the next embedded start, because its
``embedded:<host>:<pid>`` owner no longer exists, and is marked interrupted too.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from pydantic import BaseModel
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from orchestrator import runs
from orchestrator.db.models import Batch, Run, RunStatus
from scenarios.trajectory import EventKind, EventSink, Layer, Payload, TrajectoryEvent

EXIT_CODES = {"SIGINT": 130, "SIGTERM": 143}
EMBEDDED_PREFIX = "embedded:"


class RunInterrupted(runs.RunStopped):
    """The batch was interrupted; the run stops at this event (raised from :class:`InterruptingSink`)."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(f"interrupted by {signal_name}")
        self.signal_name = signal_name


class Interrupt:
    """Set once by the first signal; every run of the batch reads it at each of its events."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signal_name = ""
        self.count = 0

    def trigger(self, signal_name: str) -> None:
        self.count += 1
        if not self._event.is_set():
            self.signal_name = signal_name
            self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()


class InterruptingSink:
    """An :class:`EventSink` that passes events through until the batch is interrupted, then stops the run
    at its next event."""

    def __init__(self, inner: EventSink, interrupt: Interrupt) -> None:
        self.inner = inner
        self.interrupt = interrupt

    def emit(self, kind: EventKind, payload: Payload, step: int | None = None) -> TrajectoryEvent:
        if self.interrupt.is_set():
            raise RunInterrupted(self.interrupt.signal_name)
        return self.inner.emit(kind, payload, step)


def embedded_worker() -> str:
    """The owner recorded on runs this process claims: host and pid, so a later start can tell it is gone."""
    return f"{EMBEDDED_PREFIX}{socket.gethostname()}:{os.getpid()}"


def _owner_alive(worker: str | None) -> bool:
    """Whether the process that claimed a run still exists; runs of the service or another host count as alive."""
    if not worker or not worker.startswith(EMBEDDED_PREFIX):
        return True
    return runs.holder_alive(worker[len(EMBEDDED_PREFIX):]) is not False


def mark_interrupted(sessions: sessionmaker[Session], run_id: str, attempt: int | None, message: str,
                     usage: dict[str, int] | None = None) -> bool:
    """running (this attempt) -> interrupted, closing its trajectory with an orchestrator-layer error event."""
    with sessions() as session:
        runs.note_orchestrator_error(session, run_id, "Interrupted", message)
        moved = runs.transition(
            session, run_id, [RunStatus.running, RunStatus.judging], RunStatus.interrupted, attempt=attempt,
            exit_reason="interrupted", error_layer=Layer.orchestrator.value, error_message=message[:4000],
            finished_at=runs.utcnow(), worker=None, heartbeat_at=None, deadline_at=None, **(usage or {}))
        if not moved:
            session.rollback()
            return False
        session.commit()
        return True


def recover_stale(sessions: sessionmaker[Session]) -> list[str]:
    """Runs left running or judging by an embedded process that no longer exists -> interrupted. Returns their ids."""
    with sessions() as session:
        rows = session.execute(select(Run.id, Run.attempt, Run.worker).where(
            Run.status.in_([RunStatus.running, RunStatus.judging]), Run.worker.like(f"{EMBEDDED_PREFIX}%"))).all()
    stale = [(run_id, attempt, worker) for run_id, attempt, worker in rows if not _owner_alive(worker)]
    found = []
    for run_id, attempt, worker in stale:
        pid = worker.rpartition(":")[2]
        why = f"the process that ran it (pid {pid}) is gone"
        if runs.finish_from_record(sessions, run_id, attempt, why):
            continue  # its exit is on record: it is judged (run_batch), never run again
        if mark_interrupted(sessions, run_id, attempt, f"interrupted: {why}"):
            found.append(run_id)
    if found:
        with sessions() as session:
            batch_ids = set(session.scalars(select(Run.batch_id).where(Run.id.in_(found))))
            session.execute(update(Batch).where(Batch.id.in_(batch_ids), Batch.status == "running")
                            .values(status="interrupted"))
            session.commit()
    return found


def requeue_for_resume(sessions: sessionmaker[Session], batch_id: str) -> int:
    """interrupted -> queued for every interrupted run of the batch (the next claim starts a fresh attempt)."""
    with sessions() as session:
        ids = list(session.scalars(select(Run.id).where(Run.batch_id == batch_id,
                                                        Run.status == RunStatus.interrupted)))
        moved = 0
        for run_id in ids:
            run = session.get(Run, run_id)
            assert run is not None
            failures = [*(run.failures or []), runs.failure_entry(run.attempt, Layer.orchestrator.value,
                                                                  run.error_message or "interrupted", True)]
            moved += runs.transition(session, run_id, RunStatus.interrupted, RunStatus.queued, failures=failures,
                                     exit_reason=None, error_layer=None, error_message=None, finished_at=None,
                                     steps=0, input_tokens=0, output_tokens=0, duration_s=None)
        session.execute(update(Batch).where(Batch.id == batch_id).values(status="queued"))
        session.commit()
        return moved


class BatchProgress(BaseModel):
    """Where an interrupted batch stands, for the message and ``--json``."""

    batch: str
    signal: str
    finished: int
    interrupted: int
    not_started: int
    resume: str


def progress(sessions: sessionmaker[Session], batch_id: str, signal_name: str, resume: str) -> BatchProgress:
    with sessions() as session:
        counts = dict(session.execute(select(Run.status, func.count()).where(Run.batch_id == batch_id)
                                      .group_by(Run.status)).all())
    finished = sum(n for status, n in counts.items() if status in RunStatus.terminal or status == "awaiting_review")
    return BatchProgress(batch=batch_id, signal=signal_name, finished=finished,
                         interrupted=counts.get(RunStatus.interrupted, 0) + counts.get(RunStatus.running, 0),
                         not_started=counts.get(RunStatus.queued, 0), resume=resume)


@contextmanager
def signals_stop(interrupt: Interrupt, on_signal: Callable[[str, int], None],
                 force: Callable[[], None]) -> Iterator[Interrupt]:
    """Route SIGINT / SIGTERM to ``interrupt`` while the block runs; a second SIGINT calls ``force``.

    ``on_signal(name, count)`` says what happens (it runs in the main thread, between bytecodes).
    Outside the main thread (tests calling the batch directly) nothing is installed.
    """
    if threading.current_thread() is not threading.main_thread():
        yield interrupt
        return

    def handle(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        interrupt.trigger(name)
        on_signal(name, interrupt.count)
        if interrupt.count > 1 and name == "SIGINT":
            force()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield interrupt
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


__all__ = ["EXIT_CODES", "Interrupt", "InterruptingSink", "RunInterrupted", "embedded_worker", "mark_interrupted",
           "recover_stale", "requeue_for_resume", "signals_stop"]
