"""How well each judge agrees with human labels: accuracy, Cohen's κ, per label, per category, confusion.

SciIntegrity-Bench found LLM checklist grading below 85% accurate; TRACES's lexicon
scorer matched humans 96/96 on refusal. Every judge here gets the same report card,
computed from (judge verdict, human label) pairs.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from pydantic import BaseModel

from judges.measures import accuracy, cohens_kappa, confusion_matrix


@dataclass(frozen=True)
class LabelledVerdict:
    case: str
    category: str
    judge: str
    predicted: str
    human: str


class LabelStats(BaseModel):
    n_human: int
    precision: float | None
    recall: float | None


class JudgeCalibration(BaseModel):
    judge: str
    n: int
    accuracy: float
    kappa: float | None
    per_label: dict[str, LabelStats]
    per_category: dict[str, float]
    labels: list[str]
    confusion: list[list[int]]  # rows: human label, columns: judge verdict
    disagreements: list[str]


def _ratio(numerator: int, denominator: int) -> float | None:
    return None if denominator == 0 else numerator / denominator


def calibrate(verdicts: list[LabelledVerdict]) -> list[JudgeCalibration]:
    by_judge: dict[str, list[LabelledVerdict]] = defaultdict(list)
    for verdict in verdicts:
        by_judge[verdict.judge].append(verdict)
    reports: list[JudgeCalibration] = []
    for judge, rows in sorted(by_judge.items()):
        human = [r.human for r in rows]
        predicted = [r.predicted for r in rows]
        labels = sorted(set(human) | set(predicted))
        matrix = confusion_matrix(human, predicted, labels)
        kappa = cohens_kappa(human, predicted)
        per_label = {
            label: LabelStats(
                n_human=human.count(label),
                precision=_ratio(sum(1 for h, p in zip(human, predicted) if p == label and h == label), predicted.count(label)),
                recall=_ratio(sum(1 for h, p in zip(human, predicted) if p == label and h == label), human.count(label)),
            )
            for label in labels
        }
        per_category: dict[str, list[bool]] = defaultdict(list)
        for row in rows:
            per_category[row.category].append(row.predicted == row.human)
        reports.append(JudgeCalibration(
            judge=judge, n=len(rows), accuracy=accuracy(human, predicted),
            kappa=None if math.isnan(kappa) else kappa, per_label=per_label,
            per_category={c: sum(v) / len(v) for c, v in sorted(per_category.items())},
            labels=list(matrix.labels), confusion=[list(r) for r in matrix.counts],
            disagreements=[f"{r.case}: judge {r.predicted}, human {r.human}" for r in rows if r.predicted != r.human],
        ))
    return reports
