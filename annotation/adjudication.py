"""Adjudication: which items need an admin's final label, and what the admin sees to set it.

An item needs adjudication when its ``needed`` annotators have submitted and their final labels
differ (gold items are checks on the annotators and never need it). The admin sees every label side
by side — blind and final, cited events, checklist answers, notes, time spent — beside the judges'
verdicts, and sets the final label with a reason; that label becomes the run's verdict. Nothing is
overwritten without a trace: each adjudication is a history entry with its before and after.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from annotation.checklist import ChecklistQuestion
from annotation.labels import check_label
from annotation.views import EventLine

MAX_REASON = 2000


class LabelCard(BaseModel):
    """One annotator's submission on the item, as the admin compares it with the others."""

    annotator: str
    blind_label: str | None
    blind_evidence: list[int]
    blind_note: str
    final_label: str | None
    checklist: dict[str, Any]
    note: str
    blind_seconds: float | None
    checklist_seconds: float | None
    submitted_at: datetime | None


class JudgeCard(BaseModel):
    judge: str
    verdict: str
    confidence: float | None


class HistoryLine(BaseModel):
    at: datetime
    actor: str
    action: str
    before: dict[str, Any]
    after: dict[str, Any]


class DisagreementRow(BaseModel):
    """A line of the adjudication list."""

    item_id: int
    queue: str
    run_id: str
    scenario_id: str
    category: str
    labels: list[str]
    adjudicated_label: str | None


class AdjudicationView(BaseModel):
    item_id: int
    queue: str
    run_id: str
    family: str
    scenario_id: str
    category: str
    agent: str
    model: str
    condition: str
    verdict: str | None
    task: str
    label_choices: tuple[str, ...]
    cards: list[LabelCard]
    questions: list[ChecklistQuestion]
    judges: list[JudgeCard]
    events: list[EventLine]
    report: str | None
    files: list[str]
    history: list[HistoryLine]
    adjudicated_label: str | None
    adjudicated_by: str | None
    adjudication_reason: str | None
    total_events: int = 0
    next_after: int | None = None
    figures: list[str] = []
    pdfs: list[str] = []


def disagree(final_labels: list[str | None], needed: int, gold_label: str | None) -> bool:
    """Complete (``needed`` submissions) and not unanimous; gold items never need adjudication."""
    given = [label for label in final_labels if label]
    return gold_label is None and len(given) >= needed and len(set(given)) > 1


def check_decision(family: str, label: str, reason: str) -> tuple[str, str]:
    """The label (one of the family's) and a reason, which an adjudication must give."""
    if not label:
        raise ValueError("label: choose the final label")
    check_label(family, label)
    reason = reason.strip()
    if not reason:
        raise ValueError("reason: say why this is the final label (it is kept in the history)")
    return label, reason[:MAX_REASON]
