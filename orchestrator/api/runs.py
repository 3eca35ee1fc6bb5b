"""``/v1/runs``: list and show runs, their trajectory (paged, or live as server-sent events), artifacts, re-judge."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request, status
from fastapi.responses import Response, StreamingResponse
from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from orchestrator import runs as run_states
from orchestrator.api.auth import Admin, Reader, audit
from orchestrator.api.responses import (
    ADMIN_ONLY, ARTIFACT_CONTENT, AUTHENTICATED, NOT_FOUND, artifact_media_type, conflict, error_response,
)
from orchestrator.api.schemas import ArtifactOut, EventOut, EventPage, JudgementOut, Page, RunDetail, RunOut
from orchestrator.api.state import ServiceState, service
from orchestrator.db.models import ArtifactRow, EventRow, JudgementRow, Run, RunStatus

router = APIRouter(prefix="/v1/runs", tags=["runs"], responses=AUTHENTICATED)
MAX_SEQ = 2**31 - 1  # events.seq is a 32-bit integer column
StatusName = Literal["queued", "running", "judging", "awaiting_review", "done", "error", "cancelled", "interrupted"]
#: a stream ends once the run reaches one of these and every event has been sent
STREAM_ENDS = frozenset({RunStatus.done, RunStatus.error, RunStatus.cancelled, RunStatus.awaiting_review})
STREAM_POLL_S = 0.5
STREAM_KEEPALIVE_S = 15.0
STREAM_MAX_S = 6 * 3600.0
REJUDGEABLE = (RunStatus.done, RunStatus.error, RunStatus.awaiting_review)
#: one server-sent event: ``event`` is the event kind (or ``end``), ``data`` its JSON, ``id`` its seq
SSE_EVENT = {"type": "object", "properties": {
    "event": {"type": "string"}, "data": {"type": "string", "description": "an EventOut as JSON, or the end status"},
    "id": {"type": "string"}, "retry": {"type": "integer"}}}


def _get_run(session: Session, run_id: str) -> Run:
    run = session.get(Run, run_id) if len(run_id) <= 32 else None
    if run is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no run {run_id[:40]!r}")
    return run


@router.get("", response_model=Page[RunOut])
def list_runs(
    _: Reader, state: Annotated[ServiceState, Depends(service)],
    batch: Annotated[str | None, Query(max_length=32)] = None,
    status_filter: Annotated[StatusName | None, Query(alias="status")] = None,
    agent: Annotated[str | None, Query(max_length=300, description="agent kind, model, or agent/model")] = None,
    scenario: Annotated[str | None, Query(max_length=100)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> Page[RunOut]:
    """Runs in creation order, filtered by batch, status, agent and scenario."""
    query = select(Run)
    if batch:
        query = query.where(Run.batch_id == batch)
    if status_filter:
        query = query.where(Run.status == status_filter)
    if scenario:
        query = query.where(Run.scenario_id == scenario)
    if agent:
        kind, sep, model = agent.partition("/")
        query = query.where((Run.agent == kind) & (Run.model == model) if sep
                            else or_(Run.agent == agent, Run.model == agent))
    with state.sessions() as session:
        total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
        rows = session.scalars(query.order_by(Run.created_at, Run.id).limit(limit).offset(offset))
        return Page[RunOut](items=[RunOut.model_validate(r) for r in rows], total=total, limit=limit, offset=offset)


@router.get("/{run_id}", response_model=RunDetail, responses=NOT_FOUND)
def get_run(run_id: str, _: Reader, state: Annotated[ServiceState, Depends(service)]) -> RunDetail:
    """One run with its current judgement and the infrastructure failures of earlier attempts."""
    with state.sessions() as session:
        run = _get_run(session, run_id)
        judgement = session.scalar(select(JudgementRow).where(JudgementRow.run_id == run_id,
                                                              JudgementRow.is_current.is_(True)))
        detail = RunDetail.model_validate(run, from_attributes=True)
        detail.judgement = JudgementOut.model_validate(judgement) if judgement else None
        return detail


def _events(session: Session, run_id: str, after: int, limit: int, current_only: bool, from_seq: int) -> list[EventRow]:
    query = select(EventRow).where(EventRow.run_id == run_id, EventRow.seq > after)
    if current_only:
        query = query.where(EventRow.seq >= from_seq)
    return list(session.scalars(query.order_by(EventRow.seq).limit(limit)))


def _sse(event: str, data: str, event_id: str | None = None) -> bytes:
    lines = [f"id: {event_id}"] if event_id is not None else []
    lines.append(f"event: {event}")
    lines.extend(f"data: {line}" for line in data.splitlines() or [""])
    return ("\n".join(lines) + "\n\n").encode()


def _stream(state: ServiceState, run_id: str, after: int, current_only: bool) -> Iterator[bytes]:
    """Events as they are written, then an ``end`` event once the run is finished (sync: runs in a thread)."""
    started = last_sent = time.monotonic()
    yield b"retry: 2000\n\n"
    while time.monotonic() - started < STREAM_MAX_S:
        with state.sessions() as session:
            run = session.get(Run, run_id)
            if run is None:
                return
            run_status, from_seq = run.status, run.trajectory_from_seq
            rows = _events(session, run_id, after, 500, current_only, from_seq)
            payloads = [(r.seq, r.kind, EventOut.model_validate(r).model_dump_json()) for r in rows]
        for seq, kind, data in payloads:
            yield _sse(kind, data, str(seq))
            after = seq
            last_sent = time.monotonic()
        if payloads:
            continue
        if run_status in STREAM_ENDS:
            yield _sse("end", json.dumps({"run": run_id, "status": run_status}))
            return
        if time.monotonic() - last_sent > STREAM_KEEPALIVE_S:
            yield b": keepalive\n\n"
            last_sent = time.monotonic()
        time.sleep(STREAM_POLL_S)


@router.get("/{run_id}/events", response_model=EventPage,
            responses={**NOT_FOUND,
                       200: {"content": {"text/event-stream": {"schema": SSE_EVENT}},
                             "description": "JSON page, or a live stream with `Accept: text/event-stream`"}})
def run_events(
    run_id: str, request: Request, _: Reader, state: Annotated[ServiceState, Depends(service)],
    after: Annotated[int, Query(ge=-1, le=MAX_SEQ, description="return events with seq greater than this")] = -1,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    attempt: Annotated[Literal["all", "current"], Query(description="'current': only the last attempt's")] = "all",
    stream: Annotated[bool, Query(description="same as Accept: text/event-stream")] = False,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID", max_length=20)] = None,
):  # noqa: ANN201 - JSON page or a stream
    """The run's trajectory, oldest first: a page of events, or server-sent events until the run finishes."""
    current_only = attempt == "current"
    with state.sessions() as session:
        run = _get_run(session, run_id)
        from_seq, run_status = run.trajectory_from_seq, run.status
        if not (stream or "text/event-stream" in request.headers.get("accept", "")):
            rows = _events(session, run_id, after, limit, current_only, from_seq)
            items = [EventOut.model_validate(r) for r in rows]
            return EventPage(items=items, next_after=items[-1].seq if items else after, run_status=run_status,
                             trajectory_from_seq=from_seq)
    if last_event_id is not None and last_event_id.strip().lstrip("-").isdigit():
        resumed = int(last_event_id)
        if not -1 <= resumed <= MAX_SEQ:  # the database holds no such seq: a client error, before any byte is sent
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY,
                                f"Last-Event-ID {resumed} is outside -1..{MAX_SEQ}, the range of event seqs")
        after = max(after, resumed)
    return StreamingResponse(_stream(state, run_id, after, current_only), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.get("/{run_id}/artifacts", response_model=list[ArtifactOut], responses=NOT_FOUND)
def list_artifacts(run_id: str, _: Reader, state: Annotated[ServiceState, Depends(service)]) -> list[ArtifactOut]:
    """Files collected from the run's workspace (a lost attempt's under ``attempt-N/``)."""
    with state.sessions() as session:
        _get_run(session, run_id)
        rows = session.scalars(select(ArtifactRow).where(ArtifactRow.run_id == run_id).order_by(ArtifactRow.name))
        return [ArtifactOut.model_validate(r) for r in rows]


@router.get("/{run_id}/artifacts/{name:path}", response_class=Response,
            responses={**NOT_FOUND, 200: {"content": ARTIFACT_CONTENT, "description": "the file's bytes"},
                       410: error_response("the artifact's bytes are missing from the store")})
def get_artifact(run_id: str, name: str, _: Reader, state: Annotated[ServiceState, Depends(service)]) -> Response:
    """One collected file's bytes."""
    with state.sessions() as session:
        _get_run(session, run_id)
        row = session.scalar(select(ArtifactRow).where(ArtifactRow.run_id == run_id, ArtifactRow.name == name[:500]))
        if row is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"run {run_id} has no artifact {name[:200]!r}")
        digest = row.sha256
    try:
        data = state.store.get(digest)
    except FileNotFoundError as exc:
        raise HTTPException(status.HTTP_410_GONE, detail="the artifact's bytes are missing from the store") from exc
    return Response(content=data, media_type=artifact_media_type(name), headers={"ETag": f'"{digest}"'})


@router.post("/{run_id}/rejudge", response_model=RunDetail, status_code=status.HTTP_202_ACCEPTED,
             responses={**ADMIN_ONLY, **NOT_FOUND,
                        **conflict("the run has nothing to judge yet, or is being judged")})
def rejudge(run_id: str, principal: Admin, state: Annotated[ServiceState, Depends(service)]) -> RunDetail:
    """Judge a finished run again on the ``judges`` queue; earlier judgements stay, marked not current."""
    with state.sessions() as session:
        run = _get_run(session, run_id)
        if run.finished_at is None or run.status not in REJUDGEABLE:
            raise HTTPException(status.HTTP_409_CONFLICT,
                                detail=f"run {run_id} is {run.status}; only finished runs can be re-judged")
        previous = run.status
        if not run_states.transition(session, run_id, REJUDGEABLE, RunStatus.judging):
            raise HTTPException(status.HTTP_409_CONFLICT, detail=f"run {run_id} changed meanwhile; try again")
        audit(session, principal, "run.rejudge", f"run:{run_id}", {"previous_status": previous})
        session.commit()
    state.enqueue_judges([run_id])
    return get_run(run_id, principal, state)
