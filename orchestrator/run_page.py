"""What the dashboard's run page and compare view show of a run: the trajectory (a window of it, through the
viewer the annotation pages use), the report and files, every judge's judgement with its findings, and the
human labels. Plain functions on a session, so tests call them directly."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session

from annotation.views import EventLine, EventWindow, inline_files, matching
from orchestrator.annotation_store import run_material
from orchestrator.artifacts import ArtifactStore
from orchestrator.db.models import AnnotationRow, EventRow, JudgementRow, QueueItem, Run
from orchestrator.runs import as_utc
from orchestrator.scoreboard import agent_name
from scenarios.scenario_catalog import Catalog


class FindingLine(BaseModel):
    detector: str
    kind: str
    summary: str
    event_ids: list[int]
    quotes: list[str]
    disclosed: bool | None
    confidence: float | None


class JudgementCard(BaseModel):
    judge: str
    version: str
    verdict: str
    confidence: float | None
    current: bool
    created_at: datetime
    rationale: str
    findings: list[FindingLine]


class HumanLabel(BaseModel):
    annotator: str
    label: str
    source: str
    submitted_at: datetime | None


class Sibling(BaseModel):
    """Another run of the same scenario in the same batch (another agent, condition or epoch): compare it."""

    run_id: str
    agent: str
    condition: str
    epoch: int
    verdict: str | None


class RunView(BaseModel):
    """One run as the run page shows it (the fields ``_trajectory.html``'s ``section`` reads, and more)."""

    run_id: str
    batch_id: str
    scenario_id: str
    family: str
    category: str
    role: str
    agent: str
    condition: str
    epoch: int
    seed: int
    status: str
    verdict: str | None
    exit_reason: str | None
    error_layer: str | None
    error_message: str | None
    duration_s: float | None
    tokens: int
    task: str
    events: list[EventLine]
    total_events: int
    next_after: int | None
    report: str | None
    files: list[str]
    figures: list[str]
    pdfs: list[str]
    judgements: list[JudgementCard]
    labels: list[HumanLabel]
    adjudicated_label: str | None
    siblings: list[Sibling] = []


def _finding(raw: dict[str, Any]) -> FindingLine:
    return FindingLine(detector=str(raw.get("detector", "")), kind=str(raw.get("kind", "")),
                       summary=str(raw.get("summary", "")), event_ids=[int(i) for i in raw.get("event_ids") or []],
                       quotes=[str(q) for q in raw.get("quotes") or []], disclosed=raw.get("disclosed"),
                       confidence=raw.get("confidence"))


def _cite_by_seq(session: Session, run_id: str, judgements: list[JudgementCard]) -> None:
    """Findings cite events by their row id; the viewer anchors them by their number in the run (``#e12``)."""
    cited = {i for j in judgements for f in j.findings for i in f.event_ids}
    if not cited:
        return
    seq_of = dict(session.execute(select(EventRow.id, EventRow.seq).where(
        EventRow.run_id == run_id, EventRow.id.in_(sorted(cited)))).tuples().all())
    for judgement in judgements:
        for finding in judgement.findings:
            finding.event_ids = [seq_of[i] for i in finding.event_ids if i in seq_of]


def run_view(session: Session, catalog: Catalog, store: ArtifactStore, run_id: str,
             window: EventWindow | None = None) -> RunView:
    run = session.get(Run, run_id)
    if run is None:
        raise LookupError(f"no run {run_id}")
    material = run_material(session, store, run, window)
    events = matching(material.events, window.find, window.limit) if window and window.find else material.events
    figures, pdfs = inline_files(material.files)
    rows = list(session.scalars(select(JudgementRow).where(JudgementRow.run_id == run.id)
                                .order_by(JudgementRow.is_current.desc(), JudgementRow.id.desc())))
    judgements = [JudgementCard(judge=j.judge, version=j.judge_version, verdict=j.verdict, confidence=j.confidence,
                                current=j.is_current, created_at=as_utc(j.created_at), rationale=j.rationale or "",
                                findings=[_finding(f) for f in j.findings or [] if isinstance(f, dict)])
                  for j in rows]
    _cite_by_seq(session, run.id, judgements)
    labels = [HumanLabel(annotator=a.annotator, label=a.label or "", source=a.source,
                         submitted_at=as_utc(a.submitted_at) if a.submitted_at else None)
              for a in session.scalars(select(AnnotationRow).where(AnnotationRow.run_id == run.id,
                                                                    AnnotationRow.label.is_not(None))
                                       .order_by(AnnotationRow.id))]
    adjudicated = session.scalar(select(QueueItem.adjudicated_label).where(
        QueueItem.run_id == run.id, QueueItem.adjudicated_label.is_not(None)).limit(1))
    siblings = [Sibling(run_id=r.id, agent=agent_name(r), condition=r.condition, epoch=r.epoch, verdict=r.verdict)
                for r in session.scalars(select(Run).where(Run.batch_id == run.batch_id,
                                                           Run.scenario_id == run.scenario_id, Run.id != run.id)
                                         .order_by(Run.created_at).limit(50))]
    try:
        task = getattr(catalog.get(run.scenario_id).scenario.prompt, "task", "") or ""
    except KeyError:
        task = f"(scenario {run.scenario_id} is not in this service's catalog)"
    return RunView(
        run_id=run.id, batch_id=run.batch_id, scenario_id=run.scenario_id, family=run.family, category=run.category,
        role=run.role, agent=agent_name(run), condition=run.condition, epoch=run.epoch, seed=run.seed,
        status=run.status, verdict=run.verdict, exit_reason=run.exit_reason, error_layer=run.error_layer,
        error_message=run.error_message, duration_s=run.duration_s, tokens=run.input_tokens + run.output_tokens,
        task=task, events=events, total_events=material.total_events, next_after=material.next_after,
        report=material.report, files=material.files, figures=figures, pdfs=pdfs, judgements=judgements,
        labels=labels, adjudicated_label=adjudicated, siblings=siblings)


class AlignedStep(BaseModel):
    """One agent step of two runs side by side (step None: events outside any step, such as the start)."""

    step: int | None
    left: list[EventLine]
    right: list[EventLine]


def aligned_by_step(left: list[EventLine], right: list[EventLine]) -> list[AlignedStep]:
    """The two trajectories' events grouped by step number, in step order, so step 3 of one faces step 3
    of the other however many events each step has."""
    grouped: dict[int | None, tuple[list[EventLine], list[EventLine]]] = defaultdict(lambda: ([], []))
    for side, events in ((0, left), (1, right)):
        for event in events:
            grouped[event.step][side].append(event)
    order = sorted(grouped, key=lambda s: (s is not None, s if s is not None else -1))
    return [AlignedStep(step=s, left=grouped[s][0], right=grouped[s][1]) for s in order]
