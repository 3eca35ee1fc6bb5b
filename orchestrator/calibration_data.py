"""Gathering (judge verdict, human label) pairs: from labelled recorded trajectories, or from the database."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from judges.base import FindingKind, Judge, Judgement, RunEvidence
from judges.calibration import LabelledVerdict
from orchestrator.adjudication_store import adjudicated_labels
from orchestrator.db.models import AnnotationRow, JudgementRow, Run
from scenarios.loader import Catalog
from scenarios.trajectory import TrajectoryEvent


def evidence_from_fixture(doc: dict, catalog: Catalog) -> RunEvidence:
    loaded = catalog.get(doc["scenario"])
    return RunEvidence(
        scenario_id=loaded.id, role=loaded.scenario.role.value, family=loaded.scenario.family.value,
        task=getattr(loaded.scenario.prompt, "task", ""), rubric=loaded.rubric(),
        events=[TrajectoryEvent.model_validate(e) for e in doc["events"]], report=doc.get("report"),
        seed_files=dict(loaded.workspace_files()), exit_reason=doc.get("exit_reason"),
        error_layer=doc.get("error_layer"), error_message=doc.get("error_message"),
        extra={"condition": doc.get("condition", "none")},
    )


class FixtureError(ValueError):
    """A labelled-trajectory file that cannot be used; the message names the file and the field."""


def _load_fixture(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise FixtureError(f"{path}: {exc}") from exc
    for key in ("scenario", "category", "events"):
        if key not in doc:
            raise FixtureError(f"{path}: field {key!r} is missing")
    return doc


def labelled_verdict(doc: dict, case: str, judge: Judge, judgement: Judgement) -> LabelledVerdict:
    shown = [f for f in judgement.findings if f.kind == FindingKind.violation and f.quotes and f.event_ids]
    # a Fail rests on its undisclosed violations, or on a control with no Flawed branch, on the disclosed ones
    fails = [f for f in shown if not f.disclosed] or (shown if judgement.verdict == "Fail" else [])
    return LabelledVerdict(
        case=case, category=doc["category"], judge=judge.name, predicted=judgement.verdict,
        human=doc["human_label"], role=doc.get("role", ""),
        fired=frozenset(f.detector for f in judgement.findings if f.kind == FindingKind.violation),
        predicted_recognised=judgement.details.get("pathology_recognised"),
        human_recognised=doc.get("pathology_recognised"),
        failing_evidence=tuple(f"{f.detector}: {f.quotes[0][:80]}" for f in fails),
    )


def verdicts_from_fixtures(folder: Path, catalog: Catalog, judges: list[Judge]) -> list[LabelledVerdict]:
    """Judge every labelled ``*.json`` trajectory in ``folder`` (and below) with each judge.

    Files without a human label (a replay recorded but not yet labelled) are skipped.
    """
    verdicts: list[LabelledVerdict] = []
    for path in sorted(folder.rglob("*.json")):
        doc = _load_fixture(path)
        if not doc.get("human_label"):
            continue
        try:
            evidence = evidence_from_fixture(doc, catalog)
        except KeyError as exc:
            raise FixtureError(f"{path}: unknown scenario {doc['scenario']!r}") from exc
        for judge in judges:
            verdicts.append(labelled_verdict(doc, doc.get("case", path.stem), judge, judge.judge(evidence)))
    return verdicts


def verdicts_from_database(session: Session) -> list[LabelledVerdict]:
    """Current judgements of runs that humans labelled; the human label is the adjudicated one where an
    admin settled a disagreement, else the annotators' majority."""
    settled = adjudicated_labels(session)
    labels: dict[str, Counter[str]] = {}
    for row in session.scalars(select(AnnotationRow).where(AnnotationRow.label.is_not(None),
                                                            AnnotationRow.submitted_at.is_not(None))):
        labels.setdefault(row.run_id, Counter())[row.label] += 1  # type: ignore[index]
    verdicts: list[LabelledVerdict] = []
    for run_id, counter in labels.items():
        run = session.get(Run, run_id)
        if run is None:
            continue
        human = settled.get(run_id) or counter.most_common(1)[0][0]
        for judgement in session.scalars(select(JudgementRow).where(JudgementRow.run_id == run_id,
                                                                    JudgementRow.is_current.is_(True))):
            verdicts.append(LabelledVerdict(case=run_id, category=run.category, judge=judgement.judge,
                                            predicted=judgement.verdict, human=human))
    return verdicts
