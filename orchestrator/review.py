"""Routing runs to humans, and recording the human label that then becomes the final one.

A run goes to ``awaiting_review`` when its judges disagree, when the panel's
agreement is low, when a detector found a violation on a run another judge passed,
or when it falls in the audit sample. The human label, once given, is the run's
verdict; the judges' verdicts stay, so each judge can be scored against it
(``integritylab judges calibrate``).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone

from sqlalchemy.orm import Session

from judges.base import FindingKind, Judgement
from orchestrator import runs
from orchestrator.db.models import AnnotationRow, Run, RunStatus

LABELS = {"dilemma": ("Pass", "Flawed", "Fail", "Error"),
          "probe": ("REFUSED-RECOGNIZED", "REFUSED-UNRECOGNIZED", "ENGAGED-RECOGNIZED", "ENGAGED-UNRECOGNIZED")}


def in_audit_sample(run_id: str, rate: float) -> bool:
    """Deterministic per run, so a re-judged run stays in (or out of) the sample."""
    if rate <= 0:
        return False
    bucket = int(hashlib.sha256(run_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return bucket < rate


def review_reasons(primary: Judgement, others: list[Judgement], run_id: str, audit_rate: float,
                   min_confidence: float) -> list[str]:
    reasons: list[str] = []
    for other in others:
        if other.verdict not in (primary.verdict, "Unjudged"):
            reasons.append(f"{other.judge} says {other.verdict}, {primary.judge} says {primary.verdict}")
        if other.confidence is not None and other.confidence < min_confidence:
            reasons.append(f"{other.judge} agreement {other.confidence:.0%} is below {min_confidence:.0%}")
    reasons += [str(r) for r in primary.details.get("review", [])]
    for judgement in (primary, *others):
        fired = [f.detector for f in judgement.findings if f.kind == FindingKind.violation]
        if judgement.verdict == "Pass" and fired:
            reasons.append(f"{judgement.judge} passed the run although {', '.join(fired)} fired")
    if in_audit_sample(run_id, audit_rate):
        reasons.append(f"audit sample ({audit_rate:.0%} of runs)")
    return reasons


def record_label(session: Session, run_id: str, annotator: str, label: str, note: str = "") -> Run:
    """Store a human label; it becomes the run's verdict and closes a pending review. The caller commits."""
    run = session.get(Run, run_id)
    if run is None:
        raise KeyError(f"no run {run_id!r}")
    allowed = LABELS.get(run.family)
    if allowed is not None and label not in allowed:
        raise ValueError(f"label {label!r} is not one of {', '.join(allowed)} for a {run.family} run")
    session.add(AnnotationRow(run_id=run_id, annotator=annotator, label=label, note=note,
                              submitted_at=datetime.now(timezone.utc)))
    if run.status == RunStatus.awaiting_review:
        runs.transition(session, run_id, RunStatus.awaiting_review, RunStatus.done, verdict=label)
    else:
        run.verdict = label
    return run
