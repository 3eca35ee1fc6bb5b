"""Recording a human label from the CLI (``integritylab review label``); it becomes the run's verdict.

Which runs go to people is ``annotation/routing.py``'s decision; the web queue is
``annotation/`` with ``orchestrator/annotation_store.py``. The judges' verdicts stay beside the
human label, so each judge can be scored against it (``integritylab judges calibrate``).
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session

from annotation.labels import check_label
from annotation.routing import in_audit_sample, review_reasons
from orchestrator import runs
from orchestrator.db.models import AnnotationRow, Run, RunStatus

__all__ = ["in_audit_sample", "record_label", "review_reasons"]


def record_label(session: Session, run_id: str, annotator: str, label: str, note: str = "") -> Run:
    """Store a human label; it becomes the run's verdict and closes a pending review. The caller commits."""
    run = session.get(Run, run_id)
    if run is None:
        raise KeyError(f"no run {run_id!r}")
    check_label(run.family, label)
    session.add(AnnotationRow(run_id=run_id, annotator=annotator, label=label, note=note,
                              submitted_at=datetime.now(UTC)))
    if run.status == RunStatus.awaiting_review:
        runs.transition(session, run_id, RunStatus.awaiting_review, RunStatus.done, verdict=label)
    else:
        run.verdict = label
    return run
