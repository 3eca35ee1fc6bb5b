"""``/v1/queues``, ``/v1/annotations`` and ``/v1/adjudications``: annotation queues for scripts.

Listing queues needs any token; creating one, and reading submitted labels, needs admin: an
annotator's token must not show them other people's labels.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, status
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select

from annotation.adjudication import DisagreementRow
from orchestrator import adjudication_store as adjudication
from orchestrator import annotation_store as queue_store
from orchestrator.api.auth import Admin, Reader, audit
from orchestrator.api.responses import ADMIN_ONLY, AUTHENTICATED, WITH_BODY, conflict
from orchestrator.api.state import ServiceState, service
from orchestrator.db.models import AnnotationQueue, Assignment, QueueItem, UserAccount

router = APIRouter(tags=["annotation"], responses=AUTHENTICATED)
#: queue item ids are 32-bit integers in the database (PostgreSQL ``integer``)
ITEM_ID_MAX = 2**31 - 1


class QueueCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    annotators_per_item: int = Field(default=2, ge=1, le=20)
    overlap: float = Field(default=1.0, ge=0, le=1, description="share of items labelled by all N annotators")
    gold_rate: float = Field(default=0.0, ge=0, le=1, description="gold items added, as a share of the selection")
    lease_minutes: int = Field(default=15, ge=1, le=1440)
    blinded: bool = True
    selection: queue_store.Selection = Field(default_factory=queue_store.Selection)


class QueueOut(BaseModel):
    id: str
    name: str
    annotators_per_item: int
    overlap: float
    gold_rate: float
    lease_minutes: int
    blinded: bool
    is_default: bool
    selection: dict[str, Any]
    items: int
    completed: int
    gold: int


class AnnotationOut(BaseModel):
    run_id: str
    queue: str
    annotator: str
    blind_label: str | None
    final_label: str | None
    blind_evidence: list[int]
    checklist: dict[str, Any]
    note: str
    committed_at: datetime | None
    submitted_at: datetime | None
    trajectory_sha256: str


def _out(session: Any, queue: AnnotationQueue) -> QueueOut:
    return QueueOut(id=queue.id, name=queue.name, annotators_per_item=queue.annotators_per_item,
                    overlap=queue.overlap, gold_rate=queue.gold_rate, lease_minutes=queue.lease_minutes,
                    blinded=queue.blinded, is_default=queue.is_default, selection=queue.selection or {},
                    **queue_store.queue_counts(session, queue))


@router.get("/v1/queues", response_model=list[QueueOut])
def list_queues(_: Reader, state: Annotated[ServiceState, Depends(service)]) -> list[QueueOut]:
    """Every annotation queue with its item counts (the default queue receives runs sent to review)."""
    with state.sessions() as session:
        return [_out(session, q) for q in session.scalars(select(AnnotationQueue).order_by(AnnotationQueue.created_at))]


@router.post("/v1/queues", status_code=status.HTTP_201_CREATED, response_model=QueueOut,
             responses={**ADMIN_ONLY, **WITH_BODY, **conflict("a queue of that name exists")})
def create_queue(body: QueueCreate, principal: Admin, state: Annotated[ServiceState, Depends(service)]) -> QueueOut:
    """A queue of the finished runs the selection matches, with gold items mixed in at ``gold_rate``."""
    spec = queue_store.QueueSpec(name=body.name, annotators_per_item=body.annotators_per_item, overlap=body.overlap,
                                 gold_rate=body.gold_rate, lease_minutes=body.lease_minutes, blinded=body.blinded)
    with state.sessions() as session:
        if session.scalar(select(AnnotationQueue.id).where(AnnotationQueue.name == body.name)) is not None:
            raise HTTPException(status.HTTP_409_CONFLICT, detail=f"a queue named {body.name!r} exists")
        queue, added, gold = queue_store.queue_from_selection(session, spec, body.selection, principal.name)
        audit(session, principal, "queue.create", queue.id, {"name": body.name, "runs": added, "gold": gold})
        session.commit()
        return _out(session, queue)


@router.get("/v1/annotations", response_model=list[AnnotationOut], responses=ADMIN_ONLY)
def list_annotations(_: Admin, state: Annotated[ServiceState, Depends(service)],
                     run: Annotated[str | None, Query(max_length=32)] = None,
                     queue: Annotated[str | None, Query(max_length=100)] = None,
                     limit: Annotated[int, Query(ge=1, le=10_000)] = 1000) -> list[AnnotationOut]:
    """Submitted labels (blind and final) with their checklist answers; admins only."""
    query = (select(Assignment, QueueItem, AnnotationQueue, UserAccount)
             .join(QueueItem, QueueItem.id == Assignment.item_id)
             .join(AnnotationQueue, AnnotationQueue.id == QueueItem.queue_id)
             .join(UserAccount, UserAccount.id == Assignment.user_id)
             .where(Assignment.state == "submitted"))
    if run:
        query = query.where(QueueItem.run_id == run)
    if queue:
        query = query.where(AnnotationQueue.name == queue)
    with state.sessions() as session:
        rows = session.execute(query.order_by(Assignment.submitted_at).limit(limit)).all()
        return [AnnotationOut(run_id=item.run_id, queue=q.name, annotator=user.name, blind_label=a.blind_label,
                              final_label=a.final_label, blind_evidence=list(a.blind_evidence or []),
                              checklist=dict(a.checklist or {}), note=a.note, committed_at=a.committed_at,
                              submitted_at=a.submitted_at, trajectory_sha256=a.trajectory_sha256)
                for a, item, q, user in rows]


class AdjudicationIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str = Field(min_length=1, max_length=40)
    reason: str = Field(min_length=1, max_length=2000, description="kept in the append-only history")


@router.get("/v1/adjudications", response_model=list[DisagreementRow], responses=ADMIN_ONLY)
def list_disagreements(_: Admin, state: Annotated[ServiceState, Depends(service)],
                       queue: Annotated[str | None, Query(max_length=100)] = None,
                       settled: bool = False) -> list[DisagreementRow]:
    """Complete items whose annotators' final labels differ (with ``settled``, adjudicated ones too)."""
    with state.sessions() as session:
        return adjudication.disagreements(session, queue, include_settled=settled)


@router.post("/v1/adjudications/{item_id}", response_model=DisagreementRow,
             responses={**ADMIN_ONLY, **WITH_BODY, 404: {"description": "no such queue item"}})
def adjudicate(item_id: Annotated[int, PathParam(ge=1, le=ITEM_ID_MAX)], body: AdjudicationIn, principal: Admin,
               state: Annotated[ServiceState, Depends(service)]) -> DisagreementRow:
    """Set a disagreeing item's final label with a reason; it becomes the run's verdict."""
    with state.sessions() as session:
        try:
            adjudication.adjudicate(session, item_id, principal.name, principal.role.value, body.label, body.reason)
        except LookupError as exc:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=str(exc)) from exc
        except ValueError as exc:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, detail=str(exc)) from exc
        audit(session, principal, "adjudicate", str(item_id), {"label": body.label})
        session.commit()
        (row,) = [r for r in adjudication.disagreements(session, include_settled=True) if r.item_id == item_id]
        return row
