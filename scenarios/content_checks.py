"""Checks that need a scenario's content and its rubric together (run by ``scenarios validate``).

* probes: no L2/L3 withheld detail appears in the title, preamble or requests
  (reproducing it must be recall of the source, not an echo of the prompt);
* mcq: Q1 offers exactly the 19 labels of ``mcq_labels.yaml``; the answer key
  covers every question with a letter that exists; a misconduct task's Q1 key
  is its category's letter and a control's is ``S``; a control keeps its twin's
  role, context and questions, changing only situation and artifact.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import yaml

from scenarios.loader import Catalog, LoadedScenario, Problem
from scenarios.rubric import DetailLevel
from scenarios.schema import McqScenario, ProbeScenario

LABELS_FILE = Path(__file__).resolve().parent / "mcq_labels.yaml"


@lru_cache(maxsize=1)
def mcq_labels() -> list[dict[str, str]]:
    return list(yaml.safe_load(LABELS_FILE.read_text(encoding="utf-8"))["labels"])


def _appears(pattern: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(pattern.lower())}(?!\w)", text.lower()) is not None


def probe_problems(loaded: LoadedScenario) -> list[Problem]:
    scenario = loaded.scenario
    assert isinstance(scenario, ProbeScenario)
    shown = "\n".join([scenario.title, scenario.prompt.preamble, *(r.text for r in scenario.prompt.requests)])
    problems: list[Problem] = []
    for index, detail in enumerate(loaded.rubric().withheld_details):
        if detail.level == DetailLevel.L1:
            continue
        for pattern in detail.patterns:
            if _appears(pattern, shown):
                problems.append(Problem(
                    file=str(loaded.directory / "rubric.yaml"), field=f"withheld_details.{index}.patterns",
                    message=f"{detail.level.value} detail {detail.id!r} ({pattern!r}) appears in the prompt the agent sees",
                ))
    return problems


def mcq_problems(loaded: LoadedScenario) -> list[Problem]:
    scenario = loaded.scenario
    assert isinstance(scenario, McqScenario)
    file = str(loaded.directory / "rubric.yaml")
    problems: list[Problem] = []
    questions = {q.id: q for q in scenario.prompt.questions}
    labels = mcq_labels()
    q1 = questions.get("Q1")
    if q1 is None or [(o.key, o.text) for o in q1.options] != [(l["key"], l["text"]) for l in labels]:
        problems.append(Problem(file=str(loaded.directory / "scenario.yaml"), field="prompt.questions.Q1",
                                message="Q1 must offer the 19 labels of scenarios/mcq_labels.yaml, in order"))
    key = {k.question: k.answer for k in loaded.rubric().answer_key}
    if set(key) != set(questions):
        problems.append(Problem(file=file, field="answer_key",
                                message=f"answer key covers {sorted(key)}, questions are {sorted(questions)}"))
    for qid, answer in key.items():
        if qid in questions and answer not in {o.key for o in questions[qid].options}:
            problems.append(Problem(file=file, field=f"answer_key.{qid}", message=f"{answer!r} is not an option of {qid}"))
    expected_q1 = "S" if scenario.role.value == "control" else next(
        (l["key"] for l in labels if l["id"] == scenario.category), None)
    if key.get("Q1") != expected_q1:
        problems.append(Problem(file=file, field="answer_key.Q1",
                                message=f"Q1 key is {key.get('Q1')!r}; a {scenario.role.value} in {scenario.category} needs {expected_q1!r}"))
    return problems


def twin_problems(control: LoadedScenario, trap: LoadedScenario) -> list[Problem]:
    a, b = control.scenario, trap.scenario
    assert isinstance(a, McqScenario) and isinstance(b, McqScenario)
    changed = [name for name, same in (("category", a.category == b.category), ("domain", a.domain == b.domain),
                                      ("context", a.prompt.context == b.prompt.context),
                                      ("questions", a.prompt.questions == b.prompt.questions)) if not same]
    if not changed:
        return []
    return [Problem(file=str(control.directory / "scenario.yaml"), field="prompt",
                    message=f"a control may change only the situation and artifact of {b.id}; it also changes {', '.join(changed)}")]


def content_problems(catalog: Catalog) -> list[Problem]:
    problems: list[Problem] = []
    for loaded in catalog:
        if isinstance(loaded.scenario, ProbeScenario):
            problems += probe_problems(loaded)
        elif isinstance(loaded.scenario, McqScenario):
            problems += mcq_problems(loaded)
            if loaded.scenario.role.value == "control" and loaded.scenario.twin:
                problems += twin_problems(loaded, catalog.get(loaded.scenario.twin))
    return problems
