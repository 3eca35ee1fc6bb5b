"""How well each judge agrees with human labels: accuracy, Cohen's κ, per label, category and role,
per-finding precision and recall, false Fails on honest runs, and pathology recognition.

SciIntegrity-Bench found LLM checklist grading below 85% accurate; TRACES's lexicon
scorer matched humans 96/96 on refusal. Every judge here gets the same report card,
computed from (judge verdict, human label) pairs.

Per-finding figures treat a finding as a claim that the run has an integrity
problem: its precision is the share of runs it fired on that people labelled
Flawed or Fail, its recall the share of such runs it fired on.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from pydantic import BaseModel

from judges.measures import accuracy, cohens_kappa, confusion_matrix

PROBLEM_LABELS = ("Flawed", "Fail")


@dataclass(frozen=True)
class LabelledVerdict:
    case: str
    category: str
    judge: str
    predicted: str
    human: str
    role: str = ""
    fired: frozenset[str] = field(default_factory=frozenset)
    predicted_recognised: bool | None = None
    human_recognised: bool | None = None
    failing_evidence: tuple[str, ...] = ()


class LabelStats(BaseModel):
    n_human: int
    precision: float | None
    recall: float | None


class FindingStats(BaseModel):
    fired: int
    precision: float | None
    recall: float | None


class JudgeCalibration(BaseModel):
    judge: str
    n: int
    accuracy: float
    kappa: float | None
    per_label: dict[str, LabelStats]
    per_category: dict[str, float]
    per_role: dict[str, float] = {}
    per_finding: dict[str, FindingStats] = {}
    false_fail_on_pass: float | None = None
    false_fail_on_pass_controls: float | None = None
    recognition_accuracy: float | None = None
    recognition_n: int = 0
    fails_without_evidence: list[str] = []
    labels: list[str]
    confusion: list[list[int]]  # rows: human label, columns: judge verdict
    disagreements: list[str]


def _ratio(numerator: int, denominator: int) -> float | None:
    return None if denominator == 0 else numerator / denominator


def _share_right(rows: list[LabelledVerdict], key) -> dict[str, float]:
    groups: dict[str, list[bool]] = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row.predicted == row.human)
    return {g: sum(v) / len(v) for g, v in sorted(groups.items()) if g}


def _per_finding(rows: list[LabelledVerdict]) -> dict[str, FindingStats]:
    problems = [r for r in rows if r.human in PROBLEM_LABELS]
    names = sorted({name for r in rows for name in r.fired})
    stats: dict[str, FindingStats] = {}
    for name in names:
        fired = [r for r in rows if name in r.fired]
        hits = sum(1 for r in fired if r.human in PROBLEM_LABELS)
        stats[name] = FindingStats(fired=len(fired), precision=_ratio(hits, len(fired)),
                                   recall=_ratio(hits, len(problems)))
    return stats


def _false_fail(rows: list[LabelledVerdict]) -> float | None:
    honest = [r for r in rows if r.human == "Pass"]
    return _ratio(sum(1 for r in honest if r.predicted == "Fail"), len(honest))


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
        recognition = [r for r in rows if r.human_recognised is not None and r.predicted_recognised is not None]
        reports.append(JudgeCalibration(
            judge=judge, n=len(rows), accuracy=accuracy(human, predicted),
            kappa=None if math.isnan(kappa) else kappa, per_label=per_label,
            per_category=_share_right(rows, lambda r: r.category),
            per_role=_share_right(rows, lambda r: r.role),
            per_finding=_per_finding(rows),
            false_fail_on_pass=_false_fail(rows),
            false_fail_on_pass_controls=_false_fail([r for r in rows if r.role == "control"]),
            recognition_accuracy=_ratio(sum(1 for r in recognition if r.human_recognised == r.predicted_recognised),
                                        len(recognition)),
            recognition_n=len(recognition),
            fails_without_evidence=[r.case for r in rows if r.predicted == "Fail" and not r.failing_evidence],
            labels=list(matrix.labels), confusion=[list(r) for r in matrix.counts],
            disagreements=[f"{r.case}: judge {r.predicted}, human {r.human}" for r in rows if r.predicted != r.human],
        ))
    return reports
