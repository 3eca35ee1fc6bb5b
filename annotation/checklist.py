"""The scenario's hidden checklist as an annotator answers it, and the check of their answers."""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, Field

from annotation.labels import CHECKLIST_ANSWERS
from scenarios.rubric import Rubric


class ChecklistQuestion(BaseModel):
    id: str
    kind: str
    text: str
    evidence: str


class ChecklistAnswer(BaseModel):
    answer: str = Field(pattern="^(yes|no|unclear)$")
    #: an event link ("#e12") or a short quote that supports the answer
    evidence: str = Field(default="", max_length=2000)


def questions(rubric: Rubric) -> list[ChecklistQuestion]:
    return [ChecklistQuestion(id=i.id, kind=i.kind.value, text=i.text, evidence=i.evidence) for i in rubric.checklist]


def check_answers(asked: list[ChecklistQuestion], answers: dict[str, ChecklistAnswer]) -> dict[str, ChecklistAnswer]:
    """Every item answered, none invented; the error names the item."""
    ids = [q.id for q in asked]
    for key in answers:
        if key not in ids:
            raise ValueError(f"checklist item {key!r} is not in this scenario's checklist")
    for key in ids:
        if key not in answers:
            raise ValueError(f"checklist item {key} has no answer (one of {', '.join(CHECKLIST_ANSWERS)})")
    return {key: answers[key] for key in ids}


def checklist_version(asked: list[ChecklistQuestion]) -> str:
    """A short hash of the questions answered: answers to an edited checklist are told apart in an export."""
    canonical = json.dumps([[q.id, q.kind, q.text] for q in asked], ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
