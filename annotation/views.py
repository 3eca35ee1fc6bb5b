"""What one annotator's review page shows, built so that blinding cannot be forgotten by a template.

:func:`item_view` is the one place that decides: the hidden checklist only after the annotator's
blind label is committed; agent and model names masked in every text when the queue is blind;
never the pressure condition, the judges' verdicts or anyone else's labels.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from annotation.blinding import mask, names_to_mask
from annotation.checklist import ChecklistQuestion, questions
from annotation.labels import labels_for
from annotation.leases import COMMITTED, SUBMITTED
from scenarios.rubric import Rubric

FOLD_CHARS = 1200
#: events per page: the page opens with the first page and loads the next as the reader scrolls
PAGE = 200
#: collected files shown inline (SVG is listed, not inlined: it can carry script)
INLINE_IMAGES = (".png", ".jpg", ".jpeg", ".gif", ".webp")


class EventWindow(BaseModel):
    """Which events a page or fragment shows: a page after ``after``, everything through ``until``
    (to reach a linked event), or the events whose text contains ``find``."""

    after: int = -1
    until: int | None = None
    find: str = ""
    limit: int = PAGE


class EventLine(BaseModel):
    """One trajectory event as the viewer shows it."""

    seq: int
    kind: str
    step: int | None
    title: str
    body: str
    folded: bool
    exit_code: int | None = None


class RunFacts(BaseModel):
    run_id: str
    family: str
    scenario_id: str
    category: str
    agent: str
    model: str
    task: str


class AssignmentFacts(BaseModel):
    id: str
    state: str
    lease_expires_at: datetime
    blind_label: str | None = None
    blind_evidence: list[int] = []
    blind_note: str = ""
    final_label: str | None = None
    checklist: dict[str, Any] = {}
    note: str = ""


class ItemView(BaseModel):
    assignment: AssignmentFacts
    run_id: str
    family: str
    scenario_id: str
    task: str
    labels: tuple[str, ...]
    events: list[EventLine]
    report: str | None
    files: list[str]
    #: None until the blind label is committed: the checklist must not reach the page, any fragment or JSON
    checklist: list[ChecklistQuestion] | None
    agent: str | None
    model: str | None
    total_events: int = 0
    #: the last event shown when more follow (the next page starts after it); None when all are shown
    next_after: int | None = None
    figures: list[str] = []
    pdfs: list[str] = []


def inline_files(files: list[str]) -> tuple[list[str], list[str]]:
    """The collected figures and PDFs, shown in the page as well as listed."""
    figures = [f for f in files if f.lower().endswith(INLINE_IMAGES)]
    return figures, [f for f in files if f.lower().endswith(".pdf")]


def matching(events: list[EventLine], find: str, limit: int = PAGE) -> list[EventLine]:
    """Events whose shown (already masked) text contains ``find``, case-insensitively; the first ``limit``."""
    needle = find.strip().lower()
    return [e for e in events if needle in f"{e.title} {e.body}".lower()][:limit]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=1, ensure_ascii=False)


def event_line(seq: int, kind: str, step: int | None, payload: dict[str, Any]) -> EventLine:
    """A title and a body for each event kind (model calls, tool calls and their outputs, files, exits)."""
    exit_code: int | None = None
    if kind == "model_call":
        response = payload.get("response") or {}
        parts = [response.get("text") or ""]
        parts += [f"→ {c.get('name')}({_text(c.get('arguments'))})" for c in response.get("tool_calls") or []]
        title, body = "model", "\n".join(p for p in parts if p)
    elif kind == "tool_call":
        args = payload.get("arguments") or {}
        title = f"tool call: {payload.get('tool')}"
        body = "\n".join(_text(v) for v in args.values()) if isinstance(args, dict) else _text(args)
    elif kind == "observation":
        title, body = f"output of {payload.get('tool')}", _text(payload.get("output", ""))
        raw = payload.get("exit_code")
        exit_code = raw if isinstance(raw, int) else None
    elif kind == "file_write":
        title, body = f"wrote {payload.get('path')}", f"{payload.get('size', '?')} bytes"
    elif kind == "exit":
        title, body = f"exit: {payload.get('reason')}", _text(payload.get("message") or "")
    elif kind == "error":
        title, body = f"error ({payload.get('layer')})", _text(payload.get("message") or "")
    else:
        title, body = kind, _text(payload.get("text") or payload.get("content") or payload)
    return EventLine(seq=seq, kind=kind, step=step, title=title, body=body, folded=len(body) > FOLD_CHARS,
                     exit_code=exit_code)


def item_view(run: RunFacts, assignment: AssignmentFacts, rubric: Rubric, events: list[EventLine],
              report: str | None, files: list[str], blinded: bool, window: EventWindow | None = None,
              total_events: int | None = None, next_after: int | None = None) -> ItemView:
    names = names_to_mask(run.agent, run.model) if blinded else []
    shown = [e.model_copy(update={"title": mask(e.title, names), "body": mask(e.body, names)}) for e in events]
    if window is not None and window.find:  # searched after masking, so a masked name finds nothing
        shown = matching(shown, window.find, window.limit)
    revealed = assignment.state in (COMMITTED, SUBMITTED)
    figures, pdfs = inline_files(files)
    if blinded and not revealed:
        pdfs = []  # a compiled PDF cannot be masked: listed, opened only after the blind label
    return ItemView(
        assignment=assignment, run_id=run.run_id, family=run.family, scenario_id=run.scenario_id,
        task=mask(run.task, names), labels=labels_for(run.family), events=shown,
        report=mask(report, names) if report is not None else None, files=files,
        checklist=questions(rubric) if revealed else None,
        agent=None if blinded else run.agent, model=None if blinded else run.model,
        total_events=len(events) if total_events is None else total_events, next_after=next_after,
        figures=figures, pdfs=pdfs,
    )
