"""Export and import of human labels (``integritylab annotations export|import`` and the admin page).

Export reads every submitted label (queue, ``review label`` and imported ones) with its checklist
answers. Import checks the whole file before it writes anything: each run must exist here, each
label must be one of its family's, and a label that names a trajectory hash must have been made on
the trajectory this database holds. A label already recorded (same run, annotator and submission
time) is left as it is when it matches and refused when it does not, so importing a file twice
changes nothing. Imported labels feed judge calibration and the gold pool; they do not change a
run's verdict (the queue, adjudication and ``review label`` do that).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from annotation.exchange import ExchangeError, LabelRecord
from annotation.labels import check_label
from orchestrator.annotation_store import events_of, trajectory_sha256
from orchestrator.db.models import AnnotationHistory, AnnotationQueue, AnnotationRow, Assignment, QueueItem, Run
from orchestrator.runs import as_utc


def export_records(session: Session, queue: str | None = None, run: str | None = None) -> list[LabelRecord]:
    """Every submitted human label, oldest first (only those given in ``queue`` when one is named)."""
    query = (select(AnnotationRow, Run, Assignment, AnnotationQueue)
             .join(Run, Run.id == AnnotationRow.run_id)
             .outerjoin(Assignment, Assignment.id == AnnotationRow.assignment_id)
             .outerjoin(QueueItem, QueueItem.id == Assignment.item_id)
             .outerjoin(AnnotationQueue, AnnotationQueue.id == QueueItem.queue_id)
             .where(AnnotationRow.label.is_not(None), AnnotationRow.submitted_at.is_not(None)))
    if queue:
        query = query.where(AnnotationQueue.name == queue)
    if run:
        query = query.where(AnnotationRow.run_id == run)
    records: list[LabelRecord] = []
    for row, run_row, assignment, queue_row in session.execute(query.order_by(AnnotationRow.submitted_at,
                                                                              AnnotationRow.id)):
        records.append(LabelRecord(
            run_id=row.run_id, scenario_id=run_row.scenario_id, queue=queue_row.name if queue_row else "",
            annotator=row.annotator, source=row.source, submitted_at=as_utc(row.submitted_at or row.created_at),
            blind_label=row.blind_label, final_label=row.label or "",
            blind_evidence=list(assignment.blind_evidence or []) if assignment else [],
            checklist=dict(row.checklist or {}), checklist_version=row.checklist_version,
            trajectory_sha256=row.trajectory_sha256, blind_seconds=row.blind_seconds,
            checklist_seconds=row.checklist_seconds, note=row.note))
    return records


@dataclass(frozen=True)
class ImportOutcome:
    added: int
    unchanged: int


def _same(row: AnnotationRow, record: LabelRecord) -> bool:
    answers = {k: v.model_dump() for k, v in record.checklist.items()}
    return row.label == record.final_label and dict(row.checklist or {}) == answers and row.note == record.note


def import_records(session: Session, records: list[LabelRecord], name: str, actor: str) -> ImportOutcome:
    """Add the labels not recorded yet; refuse the whole file (naming the line) on the first problem.
    The caller commits."""
    existing: dict[tuple[str, str, str], AnnotationRow] = {}
    run_ids = {r.run_id for r in records}
    for row in session.scalars(select(AnnotationRow).where(AnnotationRow.run_id.in_(run_ids))):
        if row.submitted_at is not None:
            existing[(row.run_id, row.annotator, as_utc(row.submitted_at).isoformat())] = row
    hashes: dict[str, str] = {}
    added: list[AnnotationRow] = []
    unchanged = 0
    for record in records:
        where = f"{name}:{record.line}"
        run = session.get(Run, record.run_id)
        if run is None:
            raise ExchangeError(f"{where}: run_id: no run {record.run_id!r} in this database; nothing was imported")
        try:
            check_label(run.family, record.final_label)
            if record.blind_label:
                check_label(run.family, record.blind_label)
        except ValueError as exc:
            raise ExchangeError(f"{where}: final_label: {exc}; nothing was imported") from exc
        if record.trajectory_sha256:
            if run.id not in hashes:
                hashes[run.id] = trajectory_sha256(events_of(session, run))
            if hashes[run.id] != record.trajectory_sha256:
                raise ExchangeError(f"{where}: trajectory_sha256: the label was made on another trajectory than run "
                                    f"{run.id}'s here; nothing was imported")
        key = (record.run_id, record.annotator, as_utc(record.submitted_at).isoformat())
        if key in existing:
            if not _same(existing[key], record):
                raise ExchangeError(f"{where}: {record.annotator}'s label on run {record.run_id} at "
                                    f"{key[2]} is recorded here differently; nothing was imported")
            unchanged += 1
            continue
        row = AnnotationRow(run_id=record.run_id, annotator=record.annotator, label=record.final_label,
                            checklist={k: v.model_dump() for k, v in record.checklist.items()}, note=record.note,
                            submitted_at=record.submitted_at, source="import", blind_label=record.blind_label,
                            checklist_version=record.checklist_version,
                            trajectory_sha256=record.trajectory_sha256, blind_seconds=record.blind_seconds,
                            checklist_seconds=record.checklist_seconds)
        existing[key] = row
        added.append(row)
    session.add_all(added)
    for row in added:
        session.add(AnnotationHistory(actor=actor, run_id=row.run_id, assignment_id=None, action="import",
                                      before={}, after={"annotator": row.annotator, "label": row.label,
                                                        "file": name[-200:]}))
    session.flush()
    return ImportOutcome(added=len(added), unchanged=unchanged)
