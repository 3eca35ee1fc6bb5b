"""What a worker does with one delivery of a run or a judging, as plain functions.

``orchestrator.tasks`` wraps these in Celery tasks; tests call them directly.
A delivery may be a duplicate (re-delivery after a worker died, a re-enqueue by
the reconciler, a retry): every step starts with a guarded transition, so a
duplicate finds the run already taken or finished and does nothing.

Per attempt: take the slots of the run's concurrency limits (or come back
later), claim the run (or take it over if its holder is dead), heartbeat while
the agent runs (renewing the slots; a cancelled or taken-over run stops at its
next event), then hand it to the ``judges`` queue. Infrastructure failures
(sandbox, orchestrator, and model/gateway errors marked retryable) put the run
back in the queue with backoff until ``max_attempts``; what the agent does is
never retried.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass

import redis

from orchestrator import runs
from orchestrator.artifacts import ArtifactStore
from orchestrator.db.models import Batch, Run, RunStatus
from orchestrator.db.session import session_factory
from orchestrator.dbguard import database_unavailable, redis_marker, wait_for_database
from orchestrator.execution import (
    LayeredFailure,
    RunContext,
    end_agent_phase,
    judge_or_record_failure,
    judge_run,
    run_agent_phase,
)
from orchestrator.limits import Lease, Semaphores, limits_for_run, release_all
from orchestrator.runs import holder_alive
from orchestrator.settings import Settings
from scenarios.loader import load_catalog
from scenarios.trajectory import EventKind, EventSink, Layer, Payload, TrajectoryEvent

log = logging.getLogger(__name__)
RETRYABLE_LAYERS = frozenset({Layer.sandbox, Layer.orchestrator})
RETRYABLE_IF_MARKED = frozenset({Layer.model, Layer.gateway})


@dataclass
class WorkerContext:
    run: RunContext
    settings: Settings
    enqueue_judge: Callable[[str], None]
    semaphores: Semaphores | None = None


@dataclass
class Outcome:
    """What became of a delivery: ``status`` for the log, ``retry_in`` when the task must come back later."""

    status: str
    retry_in: float | None = None
    detail: str = ""


def guarded(wctx: WorkerContext, deliver: Callable[[], Outcome]) -> Outcome:
    """``deliver()``, except that a lost database stops this process taking work until it answers, and the
    delivery comes back as a retry instead of failing (see :mod:`orchestrator.dbguard`)."""
    try:
        return deliver()
    except Exception as exc:
        if not database_unavailable(exc):
            raise
        settings = wctx.settings
        client = wctx.semaphores.client if wctx.semaphores is not None else None
        back = wait_for_database(wctx.run.sessions, settings.db_wait_s,
                                 mark=redis_marker(client, identity(), settings.db_wait_s * 2 + 30))
        return Outcome("database-unavailable", retry_in=random.uniform(0.5, 1.5) if back else settings.db_wait_s,
                       detail=f"{type(exc).__name__}: {str(exc)[:300]}")


def build_context(settings: Settings, enqueue_judge: Callable[[str], None]) -> WorkerContext:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    ctx = RunContext(
        sessions=session_factory(settings.effective_database_url),
        store=ArtifactStore(settings.artifact_dir),
        catalog=load_catalog(settings.packs or None),
        backend=settings.sandbox_backend,
        judge_panel=settings.judge_panel, audit_rate=settings.audit_rate,
        review_confidence=settings.review_confidence,
    )
    client = redis.Redis.from_url(settings.effective_redis_url, socket_timeout=5, socket_connect_timeout=5)
    return WorkerContext(run=ctx, settings=settings, enqueue_judge=enqueue_judge,
                         semaphores=Semaphores(client, settings.stale_after_s))


def identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Heartbeat(threading.Thread):
    """Extends the run's deadline and renews its slots every ``interval``; sets ``lost`` when the run is gone."""

    def __init__(self, wctx: WorkerContext, run_id: str, attempt: int, leases: list[Lease]) -> None:
        super().__init__(name=f"il-heartbeat-{run_id}", daemon=True)
        self.wctx, self.run_id, self.attempt, self.leases = wctx, run_id, attempt, leases
        self.lost = threading.Event()
        self._stop_event = threading.Event()

    def run(self) -> None:
        settings = self.wctx.settings
        while not self._stop_event.wait(settings.heartbeat_s):
            try:
                alive = runs.heartbeat(self.wctx.run.sessions, self.run_id, self.attempt, settings.stale_after_s)
            except Exception as exc:  # noqa: BLE001 - a missed beat is tolerated; the deadline has slack
                log.warning("heartbeat for run %s failed: %s", self.run_id, exc)
                continue
            if not alive:
                self.lost.set()
                return
            for lease in self.leases:
                try:
                    lease.renew()
                except redis.RedisError as exc:
                    log.warning("could not renew %s: %s", lease.key, exc)

    def stop(self) -> None:
        self._stop_event.set()


@dataclass
class StopWhenLost:
    """An event sink that refuses further events once the heartbeat says the run is not ours any more."""

    inner: EventSink
    heartbeat: Heartbeat

    def emit(self, kind: EventKind, payload: Payload, step: int | None = None) -> TrajectoryEvent:
        if self.heartbeat.lost.is_set():
            raise runs.RunStopped(f"run {self.heartbeat.run_id} was cancelled or taken over")
        return self.inner.emit(kind, payload, step)


def retryable(failure: LayeredFailure) -> bool:
    if failure.layer in RETRYABLE_LAYERS:
        return True
    return failure.layer in RETRYABLE_IF_MARKED and bool(getattr(failure.error, "retryable", False))


def backoff(settings: Settings, attempt: int) -> float:
    base = settings.retry_backoff_s * 2 ** max(0, attempt - 1)
    return min(base, 600.0) * random.uniform(0.8, 1.2)


def _acquire(wctx: WorkerContext, run: Run, caps: dict | None) -> list[Lease] | None:
    limits = limits_for_run(wctx.settings.model_limits, run.batch_id, run.model, caps)
    if not limits or wctx.semaphores is None:
        return []
    # the holder is the run, not the process: a re-delivered or taken-over run re-takes its own slot at once
    return wctx.semaphores.try_acquire(limits, holder=run.id)


def attempt_run(wctx: WorkerContext, run_id: str) -> Outcome:
    """Execute the agent phase of ``run_id`` if it is still to be done, then queue its judging."""
    settings, sessions = wctx.settings, wctx.run.sessions
    with sessions() as session:
        run = session.get(Run, run_id)
        if run is None:
            return Outcome("missing")
        session.expunge(run)
        batch = session.get(Batch, run.batch_id)
        caps = (batch.spec or {}).get("concurrency") if batch else None
    if run.status not in (RunStatus.queued, RunStatus.running):
        return Outcome("skipped", detail=f"already {run.status}")
    if run.status == RunStatus.running:
        deadline = runs.as_utc(run.deadline_at)
        expired = deadline is not None and deadline < runs.utcnow()
        if not expired and holder_alive(run.worker) is not False:
            return Outcome("skipped", detail=f"held by {run.worker}")
    leases = _acquire(wctx, run, caps)
    if leases is None:
        return Outcome("busy", retry_in=random.uniform(0.5, 2.0) * max(1.0, settings.heartbeat_s / 5))
    try:
        if run.status == RunStatus.queued:
            attempt = runs.claim(sessions, run_id, identity(), settings.stale_after_s)
        else:
            why = f"holder {run.worker} is gone" if holder_alive(run.worker) is False else "heartbeat deadline passed"
            if runs.finish_from_record(sessions, run_id, run.attempt, why):  # its exit is on record: judge it
                wctx.enqueue_judge(run_id)
                return Outcome("judging", detail="finished from its recorded exit")
            attempt = runs.take_over(sessions, run_id, run.attempt, identity(), settings.stale_after_s, why)
        if attempt is None:
            return Outcome("skipped", detail="taken by another worker")
        return _execute_attempt(wctx, run_id, attempt, leases)
    finally:
        release_all(leases)


def _execute_attempt(wctx: WorkerContext, run_id: str, attempt: int, leases: list[Lease]) -> Outcome:
    settings, ctx = wctx.settings, wctx.run
    beat = Heartbeat(wctx, run_id, attempt, leases)
    beat.start()
    try:
        phase = run_agent_phase(ctx, run_id, wrap_sink=lambda sink: StopWhenLost(sink, beat))
    except runs.RunStopped as exc:
        return Outcome("stopped", detail=str(exc))
    finally:
        beat.stop()
    failure = phase.failure
    if failure is not None and retryable(failure) and attempt < settings.max_attempts:
        message = f"{type(failure.error).__name__}: {failure.error}"
        if runs.requeue(ctx.sessions, run_id, attempt, failure.layer.value, message):
            delay = backoff(settings, attempt)
            log.warning("run %s attempt %s failed in layer %s; retrying in %.1fs", run_id, attempt,
                        failure.layer.value, delay)
            return Outcome("retry", retry_in=delay, detail=message)
        return Outcome("stopped", detail="run moved while recording the failure")
    if not end_agent_phase(ctx, run_id, phase, attempt):
        return Outcome("stopped", detail="run moved before its results were recorded")
    wctx.enqueue_judge(run_id)
    return Outcome("judging")


def judge_attempt(wctx: WorkerContext, run_id: str, final: bool) -> Outcome:
    """Judge a run in ``judging``. A failure is retried; on the ``final`` try it ends the run as an error."""
    ctx = wctx.run
    try:
        if final:
            judge_or_record_failure(ctx, run_id)
        else:
            judge_run(ctx, run_id)
    except Exception as exc:
        if final:
            raise
        log.warning("judging run %s failed (%s); retrying", run_id, exc)
        return Outcome("retry", retry_in=backoff(wctx.settings, 1), detail=str(exc))
    with ctx.sessions() as session:
        run = session.get(Run, run_id)
        status, batch_id = (run.status, run.batch_id) if run else ("missing", None)
    if batch_id:
        runs.finish_batch_if_done(ctx.sessions, batch_id)
    return Outcome(status)
