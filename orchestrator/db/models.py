"""Database tables (SQLAlchemy 2.0 typed ORM). The database is the source of truth.

Schema changes go through an Alembic migration in ``orchestrator/migrations``;
a test checks that the migrations and these models agree.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def new_id() -> str:
    return uuid.uuid4().hex[:16]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class RunStatus:
    """Run states. Transitions go through :func:`orchestrator.runs.transition`."""

    queued = "queued"
    running = "running"
    judging = "judging"
    awaiting_review = "awaiting_review"
    done = "done"
    error = "error"
    cancelled = "cancelled"
    #: stopped by a signal (or its process died) before it finished; ``run --resume`` queues it again
    interrupted = "interrupted"

    terminal = frozenset({done, error, cancelled})


class Batch(Base):
    __tablename__ = "batches"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(20), default="queued")
    created_by: Mapped[str] = mapped_column(String(100), default="", server_default="")
    planned_runs: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    cancelled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    runs: Mapped[list[Run]] = relationship(back_populates="batch", order_by="Run.created_at")


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_batch_status", "batch_id", "status"),
        Index("ix_runs_status_deadline", "status", "deadline_at"),
        Index("ix_runs_runtime", "agent", "model", "condition", "duration_s"),  # median runtimes, in order
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    batch_id: Mapped[str] = mapped_column(ForeignKey("batches.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    scenario_id: Mapped[str] = mapped_column(String(100))
    family: Mapped[str] = mapped_column(String(20))
    category: Mapped[str] = mapped_column(String(40))
    role: Mapped[str] = mapped_column(String(10))
    agent: Mapped[str] = mapped_column(String(60))
    model: Mapped[str] = mapped_column(String(200))
    condition: Mapped[str] = mapped_column(String(40))
    epoch: Mapped[int] = mapped_column(Integer, default=0)
    seed: Mapped[int] = mapped_column(Integer, default=0)
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

    status: Mapped[str] = mapped_column(String(20), default=RunStatus.queued)
    sandbox_backend: Mapped[str | None] = mapped_column(String(20))
    #: the sandbox environment's fingerprint (sandboxes/fingerprint.py) and where it came from; None: no sandbox
    environment: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    duration_s: Mapped[float | None] = mapped_column(Float)
    exit_reason: Mapped[str | None] = mapped_column(String(20))
    exit_message: Mapped[str | None] = mapped_column(Text)
    error_layer: Mapped[str | None] = mapped_column(String(20))
    error_message: Mapped[str | None] = mapped_column(Text)
    steps: Mapped[int] = mapped_column(Integer, default=0)
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    verdict: Mapped[str | None] = mapped_column(String(40))
    completed: Mapped[bool | None] = mapped_column(Boolean)
    #: dilemma traps: whether the quit reason or report named the trap's pathology (resistance must be earned)
    pathology_recognised: Mapped[bool | None] = mapped_column(Boolean)

    # service bookkeeping (see orchestrator/runs.py): who holds the run, since when, until when
    status_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    attempt: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    worker: Mapped[str | None] = mapped_column(String(200))
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    deadline_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    enqueued_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    trajectory_from_seq: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    failures: Mapped[list[Any] | None] = mapped_column(JSON, default=list)

    batch: Mapped[Batch] = relationship(back_populates="runs")
    events: Mapped[list[EventRow]] = relationship(
        back_populates="run", order_by="EventRow.seq", cascade="all, delete-orphan"
    )
    artifacts: Mapped[list[ArtifactRow]] = relationship(
        back_populates="run", cascade="all, delete-orphan"
    )
    judgements: Mapped[list[JudgementRow]] = relationship(
        back_populates="run", cascade="all, delete-orphan"
    )


class EventRow(Base):
    """One trajectory event, written (and committed) the moment it happens."""

    __tablename__ = "events"
    __table_args__ = (Index("ix_events_run_seq", "run_id", "seq", unique=True),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(20))
    step: Mapped[int | None] = mapped_column(Integer)
    ts: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)

    run: Mapped[Run] = relationship(back_populates="events")


class ArtifactRow(Base):
    """A file collected from a run's workspace; the bytes live in the content-addressed store."""

    __tablename__ = "artifacts"
    __table_args__ = (Index("ix_artifacts_run_name", "run_id", "name", unique=True),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(500))
    kind: Mapped[str] = mapped_column(String(20))
    sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    run: Mapped[Run] = relationship(back_populates="artifacts")


class ScoreCellRow(Base):
    """Runs counted by everything a score reads (orchestrator/scoreboard.py ``Cell``) per batch, kept up to
    date by triggers on ``runs`` (migration 0010): the dashboards read these instead of every run. Written
    only by the database; ``key`` joins the facts with NULL spelled ``~``."""

    __tablename__ = "score_cells"

    key: Mapped[str] = mapped_column(Text, primary_key=True)
    batch_id: Mapped[str] = mapped_column(String(32), index=True)
    agent: Mapped[str] = mapped_column(String(60))
    model: Mapped[str] = mapped_column(String(200))
    condition: Mapped[str] = mapped_column(String(40))
    family: Mapped[str] = mapped_column(String(20))
    category: Mapped[str] = mapped_column(String(40))
    role: Mapped[str] = mapped_column(String(10))
    scenario_id: Mapped[str] = mapped_column(String(100))
    verdict: Mapped[str | None] = mapped_column(String(40))
    pathology_recognised: Mapped[bool | None] = mapped_column(Boolean)
    completed: Mapped[bool | None] = mapped_column(Boolean)
    error_layer: Mapped[str | None] = mapped_column(String(20))
    runs: Mapped[int] = mapped_column(Integer)
    input_tokens: Mapped[int] = mapped_column(BigInteger)
    output_tokens: Mapped[int] = mapped_column(BigInteger)


class JudgementRow(Base):
    """One judge's verdict on a run. Re-judging adds rows and marks older ones not current."""

    __tablename__ = "judgements"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    judge: Mapped[str] = mapped_column(String(80))
    judge_version: Mapped[str] = mapped_column(String(40))
    verdict: Mapped[str] = mapped_column(String(40))
    completed: Mapped[bool | None] = mapped_column(Boolean)
    findings: Mapped[list[Any]] = mapped_column(JSON, default=list)
    rationale: Mapped[str] = mapped_column(Text, default="")
    confidence: Mapped[float | None] = mapped_column(Float)
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, server_default="{}")
    is_current: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    run: Mapped[Run] = relationship(back_populates="judgements")


class AnnotationRow(Base):
    """A human label on a run (the annotation queue builds on this)."""

    __tablename__ = "annotations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    annotator: Mapped[str] = mapped_column(String(100))
    label: Mapped[str | None] = mapped_column(String(40))
    checklist: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    submitted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    #: the queue assignment this label was submitted on (None for ``review label`` and imported labels)
    assignment_id: Mapped[str | None] = mapped_column(String(32))
    #: queue | cli | import
    source: Mapped[str] = mapped_column(String(20), default="cli", server_default="cli")
    blind_label: Mapped[str | None] = mapped_column(String(40))
    #: sha256 of the checklist questions answered, so answers to an edited rubric are told apart
    checklist_version: Mapped[str] = mapped_column(String(64), default="", server_default="")
    trajectory_sha256: Mapped[str] = mapped_column(String(64), default="", server_default="")
    blind_seconds: Mapped[float | None] = mapped_column(Float)
    checklist_seconds: Mapped[float | None] = mapped_column(Float)


class AnnotationQueue(Base):
    """A set of runs that people label: how many distinct annotators each item needs, how long a lease lasts,
    what share of items is labelled by several people (agreement sampling) and whether labelling is blind."""

    __tablename__ = "annotation_queues"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    annotators_per_item: Mapped[int] = mapped_column(Integer, default=2)
    #: share of items that get ``annotators_per_item`` labels; the others get one
    overlap: Mapped[float] = mapped_column(Float, default=1.0)
    gold_rate: Mapped[float] = mapped_column(Float, default=0.0)
    lease_minutes: Mapped[int] = mapped_column(Integer, default=15)
    blinded: Mapped[bool] = mapped_column(Boolean, default=True)
    #: the default queue receives the runs the judges route to ``awaiting_review``
    is_default: Mapped[bool] = mapped_column(Boolean, default=False)
    selection: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_by: Mapped[str] = mapped_column(String(100), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class QueueItem(Base):
    """One run in one queue, with the number of distinct annotators it needs."""

    __tablename__ = "queue_items"
    __table_args__ = (UniqueConstraint("queue_id", "run_id", name="uq_queue_items_queue_run"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    queue_id: Mapped[str] = mapped_column(ForeignKey("annotation_queues.id", ondelete="CASCADE"), index=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    needed: Mapped[int] = mapped_column(Integer, default=1)
    #: a known label: the item checks the annotators (gold), never counted as their finding
    gold_label: Mapped[str | None] = mapped_column(String(40))
    added_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: set when ``needed`` annotators have submitted
    completed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    #: an admin's final label on an item whose labels disagreed (it becomes the run's verdict)
    adjudicated_label: Mapped[str | None] = mapped_column(String(40))
    adjudicated_by: Mapped[str | None] = mapped_column(String(100))
    adjudication_reason: Mapped[str | None] = mapped_column(Text)
    adjudicated_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Assignment(Base):
    """One annotator's turn on one item: the lease, the blind label, then the checklist and the final label.

    The unique constraint is the rule "never two labels from one person on one item"; a lapsed lease
    frees the slot for someone else and is refused at submission."""

    __tablename__ = "assignments"
    __table_args__ = (UniqueConstraint("item_id", "user_id", name="uq_assignments_item_user"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    item_id: Mapped[int] = mapped_column(ForeignKey("queue_items.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    #: leased -> committed (blind label given, checklist shown) -> submitted; or skipped
    state: Mapped[str] = mapped_column(String(20), default="leased")
    leased_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    lease_expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    blind_label: Mapped[str | None] = mapped_column(String(40))
    blind_evidence: Mapped[list[Any]] = mapped_column(JSON, default=list)
    blind_note: Mapped[str] = mapped_column(Text, default="")
    committed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    final_label: Mapped[str | None] = mapped_column(String(40))
    checklist: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    note: Mapped[str] = mapped_column(Text, default="")
    submitted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    skip_reason: Mapped[str] = mapped_column(Text, default="")
    #: sha256 of the events the annotator was shown, so a label names the trajectory it judged
    trajectory_sha256: Mapped[str] = mapped_column(String(64), default="")
    #: time spent: lease (or its renewal after a lapse) to blind commit, and commit to submission
    blind_seconds: Mapped[float | None] = mapped_column(Float)
    checklist_seconds: Mapped[float | None] = mapped_column(Float)


class AnnotationHistory(Base):
    """Append-only: every blind commit, submission, skip, revision and adjudication, with before and after."""

    __tablename__ = "annotation_history"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    actor: Mapped[str] = mapped_column(String(100))
    run_id: Mapped[str] = mapped_column(String(32), index=True)
    assignment_id: Mapped[str | None] = mapped_column(String(32))
    action: Mapped[str] = mapped_column(String(30))
    before: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    after: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class ApiToken(Base):
    """A bearer token for the REST API. Only the SHA-256 of the secret is stored."""

    __tablename__ = "api_tokens"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(100))
    role: Mapped[str] = mapped_column(String(20))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class UserAccount(Base):
    """A person who signs in to the web pages (annotators, admins); only an argon2 hash of the password is kept.

    The role is the same vocabulary as the API tokens' (``orchestrator.api.auth.Role``)."""

    __tablename__ = "users"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    role: Mapped[str] = mapped_column(String(20))
    password_hash: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    disabled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class WebSession(Base):
    """A signed-in browser: the cookie holds a random secret, the table only its SHA-256, with the session's
    CSRF token (every form of the session carries it) and when it lapses."""

    __tablename__ = "web_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class LoginAttempt(Base):
    """One sign-in attempt, kept so that repeated failures for a name are throttled."""

    __tablename__ = "login_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100), index=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    ok: Mapped[bool] = mapped_column(Boolean)


class AuditEntry(Base):
    """Who changed what, and when: one row per write through the API or the token CLI."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    actor: Mapped[str] = mapped_column(String(100))
    token_id: Mapped[str | None] = mapped_column(String(32))
    role: Mapped[str] = mapped_column(String(20))
    action: Mapped[str] = mapped_column(String(60))
    target: Mapped[str] = mapped_column(String(100), default="")
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class IdempotencyKey(Base):
    """A client's ``Idempotency-Key`` and the response it got, so a retried request is answered, not redone."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("scope", "key", name="uq_idempotency_scope_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    scope: Mapped[str] = mapped_column(String(32))
    key: Mapped[str] = mapped_column(String(200))
    request_hash: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int] = mapped_column(Integer)
    resource_id: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
