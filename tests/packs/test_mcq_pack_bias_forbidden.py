"""mcq pack: the six bias/* and six forbidden/* misconduct tasks and their ethical controls.

Each task is loaded through the real loader, checked against the IntegrityBench
layout (Q1 with the 19 labels of ``mcq_labels.yaml``; three Q2 and six Q3
four-option questions), its answer key is checked against its questions, each
control is compared with its misconduct twin (only the situation and the
artifact may differ), and the key is run through the mcq scorer.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from judges.mcq import Q2_IDS, Q3_IDS, QUESTION_IDS, answer_key, score_mcq
from scenarios.loader import LoadedScenario, load_scenario_dir, validate_paths
from scenarios.rubric import Rubric
from scenarios.schema import Family, McqScenario, Role

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "scenarios" / "packs" / "mcq"
LABELS = yaml.safe_load((ROOT / "scenarios" / "mcq_labels.yaml").read_text(encoding="utf-8"))["labels"]
LETTER_OF = {label["id"]: label["key"] for label in LABELS}

BEHAVIOURS = [
    "bias/sycophantic-revision",
    "bias/citation-bias",
    "bias/hypothesis-anchoring",
    "bias/analytic-flexibility",
    "bias/overgeneralisation",
    "bias/review-favouritism",
    "forbidden/dual-use-blindness",
    "forbidden/unauthorised-data-use",
    "forbidden/human-subjects-without-approval",
    "forbidden/animal-work-without-approval",
    "forbidden/re-identification",
    "forbidden/biosafety-breach",
]
SLUGS = {behaviour: behaviour.split("/", 1)[1] for behaviour in BEHAVIOURS}
MISCONDUCT = {behaviour: f"m-{slug}-misconduct" for behaviour, slug in SLUGS.items()}
CONTROL = {behaviour: f"m-{slug}-control" for behaviour, slug in SLUGS.items()}
ALL_IDS = [sid for behaviour in BEHAVIOURS for sid in (MISCONDUCT[behaviour], CONTROL[behaviour])]
CONDITIONS = ["none", "PP1", "PP2", "PP3", "PP4"]
SENTENCE_END = re.compile(r"(?<=[.!?])['\"]?\s+(?=[A-Z'\"(])")
FORBIDDEN_WORDS = ("rubric", "integritybench", "ethical control", "control twin", "misconduct task", "answer key")


@lru_cache(maxsize=None)
def loaded(sid: str) -> LoadedScenario:
    return load_scenario_dir(PACK / sid)


def scenario(sid: str) -> McqScenario:
    item = loaded(sid).scenario
    assert isinstance(item, McqScenario)
    return item


def rubric(sid: str) -> Rubric:
    return loaded(sid).rubric()


def key(sid: str) -> dict[str, str]:
    return answer_key(rubric(sid))


def behaviour_of(sid: str) -> str:
    return next(b for b in BEHAVIOURS if sid in (MISCONDUCT[b], CONTROL[b]))


def response(answers: dict[str, str]) -> str:
    return "\n".join(f"{qid}: {letter}" for qid, letter in answers.items())


# --------------------------------------------------------------------------- loading and metadata


def test_the_twelve_behaviours_are_the_bias_and_forbidden_labels() -> None:
    families = {label["id"].split("/")[0] for label in LABELS if label["id"] in BEHAVIOURS}
    assert families == {"bias", "forbidden"}
    expected = [label["id"] for label in LABELS if label["id"].startswith(("bias/", "forbidden/"))]
    assert sorted(BEHAVIOURS) == sorted(expected) and len(BEHAVIOURS) == 12


def test_the_folders_validate_without_problems() -> None:
    catalog, problems = validate_paths([PACK / sid for sid in ALL_IDS])
    assert problems == [], "\n".join(str(p) for p in problems)
    assert catalog is not None and sorted(catalog.ids) == sorted(ALL_IDS)


@pytest.mark.parametrize("sid", ALL_IDS)
def test_scenario_loads_with_the_expected_metadata(sid: str) -> None:
    item = scenario(sid)
    behaviour = behaviour_of(sid)
    is_misconduct = sid == MISCONDUCT[behaviour]
    assert item.id == sid == loaded(sid).directory.name
    assert item.family == Family.mcq
    assert item.role == (Role.trap if is_misconduct else Role.control)
    assert item.category == behaviour
    assert item.twin == (CONTROL[behaviour] if is_misconduct else MISCONDUCT[behaviour])
    assert item.conditions == CONDITIONS
    assert item.workspace == []
    assert item.tags and item.domain.strip() and item.title.strip()
    assert isinstance(item.prompt.artifact, dict) and item.prompt.artifact


@pytest.mark.parametrize("sid", ALL_IDS)
def test_prompt_lengths_and_wording(sid: str) -> None:
    prompt = scenario(sid).prompt
    context_sentences = [s for s in SENTENCE_END.split(prompt.context) if s.strip()]
    situation_sentences = [s for s in SENTENCE_END.split(prompt.situation) if s.strip()]
    assert 2 <= len(context_sentences) <= 4, prompt.context
    assert 4 <= len(situation_sentences) <= 8, prompt.situation
    visible = " ".join([prompt.context, prompt.situation, yaml.safe_dump(prompt.artifact)]).lower()
    for word in FORBIDDEN_WORDS:
        assert word not in visible, f"{sid} shows {word!r} to the respondent"
    assert sid not in visible


def test_domains_are_varied() -> None:
    domains = {scenario(MISCONDUCT[b]).domain for b in BEHAVIOURS}
    assert len(domains) >= 10, domains


# --------------------------------------------------------------------------- questions


@pytest.mark.parametrize("sid", ALL_IDS)
def test_question_layout(sid: str) -> None:
    questions = scenario(sid).prompt.questions
    assert [q.id for q in questions] == list(QUESTION_IDS)
    q1 = questions[0]
    assert [(o.key, o.text) for o in q1.options] == [(label["key"], label["text"]) for label in LABELS]
    assert len(q1.options) == 19
    for question in questions[1:]:
        assert question.id in Q2_IDS + Q3_IDS
        assert [o.key for o in question.options] == list("ABCD"), question.id
        texts = [o.text.strip() for o in question.options]
        assert all(texts) and len(set(texts)) == 4, question.id
        assert question.text.strip().endswith("?"), question.id


@pytest.mark.parametrize("sid", ALL_IDS)
def test_answer_key_covers_the_ten_questions_with_existing_letters(sid: str) -> None:
    items = rubric(sid).answer_key
    assert [k.question for k in items] == list(QUESTION_IDS)
    options = {q.id: {o.key for o in q.options} for q in scenario(sid).prompt.questions}
    for item in items:
        assert len(item.answer) == 1 and item.answer.isupper()
        assert item.answer in options[item.question], (item.question, item.answer)
    assert set(key(sid)) == set(QUESTION_IDS)


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_q1_key_is_the_behaviour_letter_or_s(behaviour: str) -> None:
    assert key(MISCONDUCT[behaviour])["Q1"] == LETTER_OF[behaviour]
    assert key(CONTROL[behaviour])["Q1"] == "S"


# --------------------------------------------------------------------------- rubrics


@pytest.mark.parametrize("sid", ALL_IDS)
def test_rubric_fields(sid: str) -> None:
    rub = rubric(sid)
    assert rub.scenario == sid
    assert len(rub.checklist) >= 2
    assert {item.kind.value for item in rub.checklist} == {"honest", "violation"}
    assert rub.outcome_map.strip()
    pathology = (rub.pathology or "").strip()
    assert pathology and "\n" not in pathology
    if sid.endswith("-control"):
        assert pathology.startswith("permissible - ")
    else:
        assert not pathology.startswith("permissible")


# --------------------------------------------------------------------------- twins


def _without_feature(item: McqScenario) -> dict:
    data = item.model_dump(mode="json")
    for field in ("id", "role", "twin"):
        data.pop(field)
    data["prompt"].pop("situation")
    data["prompt"].pop("artifact")
    return data


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_control_differs_from_its_twin_only_in_situation_and_artifact(behaviour: str) -> None:
    misconduct, control = scenario(MISCONDUCT[behaviour]), scenario(CONTROL[behaviour])
    assert _without_feature(misconduct) == _without_feature(control)
    assert misconduct.prompt.context == control.prompt.context
    for left, right in zip(misconduct.prompt.questions, control.prompt.questions, strict=True):
        assert left.id == right.id and left.text == right.text
        assert [(o.key, o.text) for o in left.options] == [(o.key, o.text) for o in right.options]
    assert misconduct.prompt.situation != control.prompt.situation
    assert misconduct.prompt.artifact != control.prompt.artifact
    assert set(misconduct.prompt.artifact) == set(control.prompt.artifact), "same artifact format"


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_over_flagging_the_control_costs_points(behaviour: str) -> None:
    """The Q2 course that is right for the misconduct task is wrong on at least one control question."""
    mis_key, ctrl_key = key(MISCONDUCT[behaviour]), key(CONTROL[behaviour])
    assert any(mis_key[q] != ctrl_key[q] for q in Q2_IDS)
    over_flagged = score_mcq(response(mis_key), rubric(CONTROL[behaviour]))
    assert over_flagged.q1 == 0.0 and over_flagged.integrity_score < 100.0
    complied = score_mcq(response(ctrl_key), rubric(MISCONDUCT[behaviour]))
    assert complied.q1 == 0.0 and complied.integrity_score < 100.0


# --------------------------------------------------------------------------- scoring


@pytest.mark.parametrize("sid", ALL_IDS)
def test_the_key_scores_full_marks(sid: str) -> None:
    result = score_mcq(response(key(sid)), rubric(sid))
    assert result.unparsed == [] and result.flags == []
    assert result.integrity_score == pytest.approx(100.0)


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_answering_s_everywhere_scores_lower_on_misconduct(behaviour: str) -> None:
    sid = MISCONDUCT[behaviour]
    all_s = score_mcq(response({q: "S" for q in QUESTION_IDS}), rubric(sid))
    perfect = score_mcq(response(key(sid)), rubric(sid))
    assert all_s.q1 == 0.0
    assert all_s.integrity_score < perfect.integrity_score
    assert all_s.integrity_score == pytest.approx(0.0)  # S is no option of Q2/Q3, so nothing else matches
