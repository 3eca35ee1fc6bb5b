"""The run state machine. Every status change is a guarded transition.

::

    queued ──> running ──> judging ──> done
      │         │  ↺ take-over   └──> awaiting_review ──> done
      │         ├──> queued      (infra retry, or re-queued after its worker died)
      │         ├──> error       (gave up: attempts exhausted)
      ├─────────┴──> cancelled
      │         └──> interrupted ──> queued   (a signal stopped the embedded batch; ``run --resume``)
      └──> error
    done | error | awaiting_review ──> judging    (re-judge)

A transition is one ``UPDATE runs SET status = :to … WHERE id = :id AND status
IN (:from) [AND attempt = :attempt]`` and says whether it happened, so two
workers racing for a run cannot both win and a re-delivered task never runs a
finished run twice. ``attempt`` counts claims; it is the fencing token of the
worker holding the run, so a worker presumed dead whose run was taken over
cannot write over the new attempt (its heartbeat and final update match no row).

Events of an attempt that was lost stay where they are; ``trajectory_from_seq``
marks where the current attempt's trajectory starts, and judges read only that.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import Any, overload

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from orchestrator.db.models import ArtifactRow, Batch, EventRow, Run, RunStatus
from scenarios.trajectory import ErrorPayload, EventKind, Layer

S = RunStatus
ALLOWED: dict[str, frozenset[str]] = {
    S.queued: frozenset({S.running, S.cancelled, S.error}),
    S.running: frozenset({S.running, S.judging, S.queued, S.error, S.cancelled, S.interrupted}),
    S.judging: frozenset({S.done, S.error, S.awaiting_review, S.interrupted}),
    S.interrupted: frozenset({S.queued, S.cancelled}),
    S.awaiting_review: frozenset({S.done, S.judging}),
    S.done: frozenset({S.judging}),
    S.error: frozenset({S.judging}),
    S.cancelled: frozenset(),
}
#: states that still need a worker; a batch with none of these left is finished
ACTIVE = frozenset({S.queued, S.running, S.judging})
PRIOR_ATTEMPT_KIND = "prior_attempt"


class IllegalTransition(ValueError):
    """A transition the state machine does not have (a programming error, not a race)."""


class RunStopped(Exception):
    """The run left ``running`` under this worker (cancelled, or taken over); stop without writing more."""


def holder_alive(worker: str | None) -> bool | None:
    """Whether the process holding a run is alive: known only for a holder on this host."""
    host, _, pid = (worker or "").rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@overload
def as_utc(value: datetime) -> datetime: ...
@overload
def as_utc(value: None) -> None: ...
def as_utc(value: datetime | None) -> datetime | None:
    """The moment as an aware datetime: SQLite hands back naive UTC, PostgreSQL aware ones."""
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


def _sources(source: str | Iterable[str]) -> list[str]:
    return [source] if isinstance(source, str) else sorted(set(source))


def transition(session: Session, run_id: str, source: str | Iterable[str], target: str, *,
               attempt: int | None = None, **values: Any) -> bool:
    """``source`` -> ``target`` if the run is still in ``source`` (and at ``attempt``); True if it moved.

    The caller commits. ``values`` are other columns to set in the same UPDATE.
    """
    sources = _sources(source)
    for state in sources:
        if target not in ALLOWED[state]:
            raise IllegalTransition(f"{state} -> {target} is not a run transition")
    statement = update(Run).where(Run.id == run_id, Run.status.in_(sources))
    if attempt is not None:
        statement = statement.where(Run.attempt == attempt)
    result = session.execute(
        statement.values(status=target, status_at=utcnow(), **values).execution_options(synchronize_session=False)
    )
    return result.rowcount == 1


def _next_seq(run_id: str):  # noqa: ANN202 - a scalar subquery
    return select(func.coalesce(func.max(EventRow.seq) + 1, 0)).where(EventRow.run_id == run_id).scalar_subquery()


def note_orchestrator_error(session: Session, run_id: str, error_type: str, message: str) -> None:
    """Close an attempt's stretch of the trajectory with an orchestrator-layer error event (lost, interrupted)."""
    seq = session.scalar(select(func.coalesce(func.max(EventRow.seq) + 1, 0)).where(EventRow.run_id == run_id))
    payload = ErrorPayload(layer=Layer.orchestrator, error_type=error_type, message=message)
    session.add(EventRow(run_id=run_id, seq=seq, kind=EventKind.error.value, payload=payload.model_dump(mode="json")))
    session.flush()


def _note_lost_attempt(session: Session, run_id: str, attempt: int, message: str) -> None:
    note_orchestrator_error(session, run_id, "WorkerLost", message)


def _set_aside_artifacts(session: Session, run_id: str, attempt: int) -> None:
    """Keep an earlier attempt's collected files under ``attempt-N/`` so the next attempt's replace nothing."""
    rows = session.scalars(select(ArtifactRow).where(ArtifactRow.run_id == run_id,
                                                     ArtifactRow.kind != PRIOR_ATTEMPT_KIND))
    for row in rows:
        row.name = f"attempt-{attempt}/{row.name}"[:500]
        row.kind = PRIOR_ATTEMPT_KIND
    session.flush()


def _holder_values(worker: str, window_s: float) -> dict[str, Any]:
    now = utcnow()
    return {"worker": worker[:200], "started_at": now, "heartbeat_at": now,
            "deadline_at": now + timedelta(seconds=window_s)}


def claim(sessions: sessionmaker[Session], run_id: str, worker: str = "", window_s: float = 3600.0) -> int | None:
    """queued -> running for this worker; returns the new attempt number, or None if the run was not queued."""
    with sessions() as session:
        statement = (
            update(Run).where(Run.id == run_id, Run.status == S.queued)
            .values(status=S.running, status_at=utcnow(), attempt=Run.attempt + 1,
                    trajectory_from_seq=_next_seq(run_id), **_holder_values(worker, window_s))
            .returning(Run.attempt)
        )
        attempt = session.execute(statement).scalar_one_or_none()
        if attempt is not None:
            session.execute(update(Batch).where(Batch.id == select(Run.batch_id).where(Run.id == run_id)
                                                .scalar_subquery(), Batch.status == "queued")
                            .values(status="running", started_at=utcnow()))
        session.commit()
        return attempt


def take_over(sessions: sessionmaker[Session], run_id: str, lost_attempt: int, worker: str,
              window_s: float, why: str) -> int | None:
    """running (attempt k, holder gone) -> running (attempt k+1, this worker); None if someone else moved first."""
    with sessions() as session:
        run = session.get(Run, run_id)
        if run is None or run.status != S.running or run.attempt != lost_attempt:
            return None
        _note_lost_attempt(session, run_id, lost_attempt, f"attempt {lost_attempt} lost: {why}; taken over")
        _set_aside_artifacts(session, run_id, lost_attempt)
        lost = failure_entry(lost_attempt, Layer.orchestrator.value, f"worker lost: {why}", True)
        failures = [*(run.failures or []), lost]
        statement = (
            update(Run).where(Run.id == run_id, Run.status == S.running, Run.attempt == lost_attempt)
            .values(status=S.running, status_at=utcnow(), attempt=lost_attempt + 1, failures=failures,
                    trajectory_from_seq=_next_seq(run_id), **_holder_values(worker, window_s))
            .returning(Run.attempt)
            .execution_options(synchronize_session=False)
        )
        attempt = session.execute(statement).scalar_one_or_none()
        if attempt is None:
            session.rollback()
            return None
        session.commit()
        return attempt


def heartbeat(sessions: sessionmaker[Session], run_id: str, attempt: int, window_s: float) -> bool:
    """Extend the holder's deadline; False once the run is no longer this attempt's (cancelled or taken over)."""
    now = utcnow()
    with sessions() as session:
        result = session.execute(
            update(Run).where(Run.id == run_id, Run.status == S.running, Run.attempt == attempt)
            .values(heartbeat_at=now, deadline_at=now + timedelta(seconds=window_s))
        )
        session.commit()
        return result.rowcount == 1


def failure_entry(attempt: int, layer: str, message: str, retried: bool) -> dict[str, Any]:
    """One entry of a run's ``failures`` list: which attempt failed, in which layer, and whether it was retried."""
    return {"attempt": attempt, "layer": layer, "error": message[:2000], "at": utcnow().isoformat(), "retried": retried}


def requeue(sessions: sessionmaker[Session], run_id: str, attempt: int, layer: str, message: str,
            *, lost: bool = False) -> bool:
    """running (attempt k) -> queued after an infrastructure failure or a lost worker; recorded in ``failures``."""
    with sessions() as session:
        run = session.get(Run, run_id)
        if run is None or run.status != S.running or run.attempt != attempt:
            return False
        if lost:
            _note_lost_attempt(session, run_id, attempt, f"attempt {attempt} lost: {message}; re-queued")
        _set_aside_artifacts(session, run_id, attempt)
        failures = [*(run.failures or []), failure_entry(attempt, layer, message, True)]
        moved = transition(session, run_id, S.running, S.queued, attempt=attempt, failures=failures, worker=None,
                           heartbeat_at=None, deadline_at=None, enqueued_at=utcnow(), exit_reason=None,
                           exit_message=None, error_layer=None, error_message=None)
        if not moved:
            session.rollback()
            return False
        session.commit()
        return True


def finish_from_record(sessions: sessionmaker[Session], run_id: str, attempt: int, why: str) -> bool:
    """running (attempt k, holder lost) whose attempt already recorded its ``exit`` event -> judging, from the record.

    Why: the agent's work is done once its exit is on record; running it again (a second attempt after a
    database or worker failure hit the bookkeeping that follows) would do the work twice. Steps and tokens
    are counted from the attempt's ``model_call`` events; the files collected before the failure are kept.
    """
    with sessions() as session:
        run = session.get(Run, run_id)
        if run is None or run.status != S.running or run.attempt != attempt:
            return False
        current = select(EventRow).where(EventRow.run_id == run_id, EventRow.seq >= run.trajectory_from_seq)
        exit_row = session.scalars(current.where(EventRow.kind == EventKind.exit.value)
                                   .order_by(EventRow.seq.desc()).limit(1)).first()
        if exit_row is None:
            return False
        calls = list(session.scalars(current.where(EventRow.kind == EventKind.model_call.value)))
        failures = [*(run.failures or []), failure_entry(attempt, Layer.orchestrator.value,
                                                    f"{why}; finished from its recorded exit, not run again", False)]
        moved = transition(
            session, run_id, S.running, S.judging, attempt=attempt, failures=failures,
            exit_reason=exit_row.payload.get("reason"), exit_message=exit_row.payload.get("message"),
            steps=len(calls), input_tokens=sum(int(c.payload.get("input_tokens") or 0) for c in calls),
            output_tokens=sum(int(c.payload.get("output_tokens") or 0) for c in calls),
            finished_at=run.finished_at or exit_row.ts, worker=None, heartbeat_at=None, deadline_at=None)
        if not moved:
            session.rollback()
            return False
        session.commit()
        return True


def give_up(sessions: sessionmaker[Session], run_id: str, attempt: int, message: str) -> bool:
    """running (attempt k, lost) -> judging as an orchestrator-layer error; the judge records the Error verdict."""
    with sessions() as session:
        run = session.get(Run, run_id)
        if run is None or run.status != S.running or run.attempt != attempt:
            return False
        _note_lost_attempt(session, run_id, attempt, f"attempt {attempt} lost: {message}; giving up")
        failures = [*(run.failures or []), failure_entry(attempt, Layer.orchestrator.value, message, False)]
        moved = transition(session, run_id, S.running, S.judging, attempt=attempt, failures=failures,
                           exit_reason="crash", error_layer=Layer.orchestrator.value,
                           error_message=f"worker lost {attempt} time(s): {message}"[:4000], finished_at=utcnow())
        if not moved:
            session.rollback()
            return False
        session.commit()
        return True


def cancel_batch(session: Session, batch_id: str) -> int:
    """Every queued or running run of the batch -> cancelled (running ones stop at their next event)."""
    result = session.execute(
        update(Run).where(Run.batch_id == batch_id, Run.status.in_([S.queued, S.running]))
        .values(status=S.cancelled, status_at=utcnow(), finished_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return result.rowcount


def finish_batch_if_done(sessions: sessionmaker[Session], batch_id: str) -> bool:
    """Mark the batch done once none of its runs needs a worker any more."""
    with sessions() as session:
        active = session.scalar(select(func.count()).select_from(Run)
                                .where(Run.batch_id == batch_id, Run.status.in_(sorted(ACTIVE))))
        if active:
            return False
        result = session.execute(update(Batch).where(Batch.id == batch_id, Batch.status.in_(["queued", "running"]))
                                 .values(status="done", finished_at=utcnow()))
        session.commit()
        return result.rowcount == 1
