"""Writes trajectory events to the database the moment they happen (a crash keeps them)."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from orchestrator.db.models import EventRow
from scenarios.trajectory import EventKind, Payload, TrajectoryEvent


class DatabaseEventSink:
    """An ``EventSink`` that commits each event in its own transaction."""

    def __init__(self, sessions: sessionmaker[Session], run_id: str) -> None:
        self.sessions = sessions
        self.run_id = run_id
        with sessions() as session:
            last = session.scalar(select(func.max(EventRow.seq)).where(EventRow.run_id == run_id))
        self.next_seq = 0 if last is None else last + 1

    def emit(self, kind: EventKind, payload: Payload, step: int | None = None) -> TrajectoryEvent:
        data = payload.model_dump(mode="json")
        with self.sessions() as session:
            row = EventRow(run_id=self.run_id, seq=self.next_seq, kind=kind.value, step=step, payload=data)
            session.add(row)
            session.commit()
            event = TrajectoryEvent(id=row.id, seq=row.seq, kind=kind, step=step, ts=row.ts, payload=data)
        self.next_seq += 1
        return event


def load_events(session: Session, run_id: str) -> list[TrajectoryEvent]:
    rows = session.scalars(select(EventRow).where(EventRow.run_id == run_id).order_by(EventRow.seq))
    return [
        TrajectoryEvent(id=r.id, seq=r.seq, kind=EventKind(r.kind), step=r.step, ts=r.ts, payload=r.payload)
        for r in rows
    ]
