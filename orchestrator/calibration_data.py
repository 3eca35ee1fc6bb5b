"""Gathering (judge verdict, human label) pairs: from labelled recorded trajectories, or from the database."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from judges.base import Judge, RunEvidence
from judges.calibration import LabelledVerdict
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
    )


def verdicts_from_fixtures(folder: Path, catalog: Catalog, judges: list[Judge]) -> list[LabelledVerdict]:
    """Judge every ``*.json`` labelled trajectory in ``folder`` with each judge."""
    verdicts: list[LabelledVerdict] = []
    for path in sorted(folder.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        evidence = evidence_from_fixture(doc, catalog)
        for judge in judges:
            verdicts.append(LabelledVerdict(case=doc.get("case", path.stem), category=doc["category"],
                                            judge=judge.name, predicted=judge.judge(evidence).verdict,
                                            human=doc["human_label"]))
    return verdicts


def verdicts_from_database(session: Session) -> list[LabelledVerdict]:
    """Current judgements of runs that humans labelled; the human label is the annotators' majority."""
    labels: dict[str, Counter[str]] = {}
    for row in session.scalars(select(AnnotationRow).where(AnnotationRow.label.is_not(None),
                                                            AnnotationRow.submitted_at.is_not(None))):
        labels.setdefault(row.run_id, Counter())[row.label] += 1  # type: ignore[index]
    verdicts: list[LabelledVerdict] = []
    for run_id, counter in labels.items():
        run = session.get(Run, run_id)
        if run is None:
            continue
        human = counter.most_common(1)[0][0]
        for judgement in session.scalars(select(JudgementRow).where(JudgementRow.run_id == run_id,
                                                                    JudgementRow.is_current.is_(True))):
            verdicts.append(LabelledVerdict(case=run_id, category=run.category, judge=judgement.judge,
                                            predicted=judgement.verdict, human=human))
    return verdicts
