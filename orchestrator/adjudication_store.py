"""Adjudication on the database: items whose labels disagree, the side-by-side view, and the final label.

The rules are ``annotation/adjudication.py``'s; this module reads the tables and applies the
decision: the item keeps the admin's label, reason, name and time, the label becomes the run's
verdict (closing a pending review), and the history gains an entry with the before and after.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from annotation.adjudication import (
    AdjudicationView,
    DisagreementRow,
    HistoryLine,
    JudgeCard,
    LabelCard,
    check_decision,
    disagree,
)
from annotation.checklist import questions
from annotation.labels import labels_for
from annotation.leases import SUBMITTED
from annotation.views import EventWindow, inline_files, matching
from orchestrator import runs as run_states
from orchestrator.annotation_store import artifact_bytes, run_material
from orchestrator.artifacts import ArtifactStore
from orchestrator.db.models import (
    AnnotationHistory,
    AnnotationQueue,
    Assignment,
    JudgementRow,
    QueueItem,
    Run,
    RunStatus,
    UserAccount,
)
from orchestrator.runs import as_utc, utcnow
from scenarios.loader import Catalog


def _submitted(session: Session, item_id: int) -> list[tuple[Assignment, UserAccount]]:
    query = (select(Assignment, UserAccount).join(UserAccount, UserAccount.id == Assignment.user_id)
             .where(Assignment.item_id == item_id, Assignment.state == SUBMITTED).order_by(Assignment.submitted_at))
    return [(a, u) for a, u in session.execute(query)]


def disagreements(session: Session, queue_name: str | None = None, include_settled: bool = False
                  ) -> list[DisagreementRow]:
    """Complete items whose final labels differ, oldest first; settled ones too when asked."""
    query = (select(QueueItem, AnnotationQueue, Run).join(AnnotationQueue, AnnotationQueue.id == QueueItem.queue_id)
             .join(Run, Run.id == QueueItem.run_id).where(QueueItem.completed_at.is_not(None),
                                                          QueueItem.gold_label.is_(None)))
    if queue_name:
        query = query.where(AnnotationQueue.name == queue_name)
    if not include_settled:
        query = query.where(QueueItem.adjudicated_label.is_(None))
    found = list(session.execute(query.order_by(QueueItem.completed_at, QueueItem.id)))
    labels_of: dict[int, list[str | None]] = {item.id: [] for item, _queue, _run in found}
    for item_id, label in session.execute(  # one query for every item's labels, not one per item
            select(Assignment.item_id, Assignment.final_label)
            .where(Assignment.item_id.in_(list(labels_of)), Assignment.state == SUBMITTED)
            .order_by(Assignment.submitted_at)):
        labels_of[item_id].append(label)
    rows: list[DisagreementRow] = []
    for item, queue, run in found:
        labels = labels_of[item.id]
        if disagree(labels, item.needed, item.gold_label):
            rows.append(DisagreementRow(item_id=item.id, queue=queue.name, run_id=run.id, scenario_id=run.scenario_id,
                                        category=run.category, labels=[x or "" for x in labels],
                                        adjudicated_label=item.adjudicated_label))
    return rows


INT32_MAX = 2**31 - 1  # queue item ids are PostgreSQL integers: a larger id is simply not there


def _item(session: Session, item_id: int) -> tuple[QueueItem, AnnotationQueue, Run]:
    item = session.get(QueueItem, item_id) if 1 <= item_id <= INT32_MAX else None
    if item is None:
        raise LookupError(f"no queue item {item_id}")
    queue = session.get(AnnotationQueue, item.queue_id)
    run = session.get(Run, item.run_id)
    assert queue is not None and run is not None
    return item, queue, run


def adjudication_view(session: Session, catalog: Catalog, store: ArtifactStore, item_id: int,
                      window: EventWindow | None = None) -> AdjudicationView:
    """Everything an admin weighs: each label and checklist, the judges, the trajectory, the history."""
    item, queue, run = _item(session, item_id)
    loaded = catalog.get(run.scenario_id)
    cards = [LabelCard(annotator=user.name, blind_label=a.blind_label, blind_evidence=list(a.blind_evidence or []),
                       blind_note=a.blind_note, final_label=a.final_label, checklist=dict(a.checklist or {}),
                       note=a.note, blind_seconds=a.blind_seconds, checklist_seconds=a.checklist_seconds,
                       submitted_at=as_utc(a.submitted_at)) for a, user in _submitted(session, item.id)]
    judges = [JudgeCard(judge=j.judge, verdict=j.verdict, confidence=j.confidence) for j in session.scalars(
        select(JudgementRow).where(JudgementRow.run_id == run.id, JudgementRow.is_current.is_(True))
        .order_by(JudgementRow.id))]
    history = [HistoryLine(at=as_utc(h.at), actor=h.actor, action=h.action, before=h.before or {},
                           after=h.after or {}) for h in session.scalars(
        select(AnnotationHistory).where(AnnotationHistory.run_id == run.id).order_by(AnnotationHistory.id))]
    material = run_material(session, store, run, window)
    events = matching(material.events, window.find, window.limit) if window and window.find else material.events
    figures, pdfs = inline_files(material.files)
    return AdjudicationView(
        item_id=item.id, queue=queue.name, run_id=run.id, family=run.family, scenario_id=run.scenario_id,
        category=run.category, agent=run.agent, model=run.model, condition=run.condition, verdict=run.verdict,
        task=getattr(loaded.scenario.prompt, "task", "") or "", label_choices=labels_for(run.family), cards=cards,
        questions=questions(loaded.rubric()), judges=judges, events=events, report=material.report,
        files=material.files, history=history, adjudicated_label=item.adjudicated_label,
        adjudicated_by=item.adjudicated_by, adjudication_reason=item.adjudication_reason,
        total_events=material.total_events, next_after=material.next_after, figures=figures, pdfs=pdfs)


def item_file(session: Session, store: ArtifactStore, item_id: int, name: str) -> bytes:
    _item_row, _queue, run = _item(session, item_id)
    return artifact_bytes(session, store, run.id, name)


def adjudicate(session: Session, item_id: int, actor: str, role: str, label: str, reason: str) -> Run:
    """Set the final label of a disagreeing item; it becomes the run's verdict. The caller commits.

    ``actor`` and ``role`` are the signed-in admin's (a browser user or an API token)."""
    if role != "admin":
        raise PermissionError("only an admin adjudicates")
    item, _queue, run = _item(session, item_id)
    labels = [a.final_label for a, _user in _submitted(session, item.id)]
    if not disagree(labels, item.needed, item.gold_label):
        raise ValueError("this item's labels do not disagree (or it is not complete): there is nothing to adjudicate")
    label, reason = check_decision(run.family, label, reason)
    before = {"verdict": run.verdict, "adjudicated_label": item.adjudicated_label,
              "labels": [x or "" for x in labels]}
    now = utcnow()
    item.adjudicated_label, item.adjudicated_by, item.adjudication_reason, item.adjudicated_at = (
        label, actor, reason, now)
    if run.status == RunStatus.awaiting_review:
        run_states.transition(session, run.id, RunStatus.awaiting_review, RunStatus.done, verdict=label)
    else:
        run.verdict = label
    session.add(AnnotationHistory(actor=actor, run_id=run.id, assignment_id=None, action="adjudicate",
                                  before=before, after={"verdict": label, "reason": reason}))
    session.flush()
    session.refresh(run)
    return run


def adjudicated_labels(session: Session) -> dict[str, str]:
    """The latest adjudicated label of each run (the human label calibration should use for it)."""
    query = (select(QueueItem.run_id, QueueItem.adjudicated_label).where(QueueItem.adjudicated_label.is_not(None))
             .order_by(QueueItem.adjudicated_at))
    return {run_id: label for run_id, label in session.execute(query) if label}
