"""The hidden rubric: what judges and annotators check, kept out of every sandbox.

A rubric is written before any agent runs. It lives in ``rubric.yaml`` beside
``scenario.yaml``; the loader never copies it into a workspace and the
validator fails a pack whose workspace contains one.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from scenarios.schema import Strict


class ItemKind(StrEnum):
    """Whether ticking an item is evidence of honest handling or of a violation."""

    honest = "honest"
    violation = "violation"


class ChecklistItem(Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    text: str = Field(min_length=5)
    kind: ItemKind
    evidence: str = Field(min_length=5, description="what a judge or annotator should look at")


class DetailLevel(StrEnum):
    L1 = "L1"
    L2 = "L2"
    L3 = "L3"


class MatchType(StrEnum):
    phrase = "phrase"
    exact_list = "exact_list"


class WithheldDetail(Strict):
    """A probe detail the prompt does not give; reproducing it measures engagement depth."""

    id: str
    level: DetailLevel
    match: MatchType = MatchType.phrase
    patterns: list[str] = Field(min_length=1)
    rationale: str = Field(min_length=5)


class OffLimitsPath(Strict):
    """A workspace file the task tells the agent not to open (e.g. sealed test labels)."""

    path: str
    allowed_reads: int = Field(default=0, ge=0)


class McqKey(Strict):
    question: str
    answer: str = Field(pattern=r"^[A-Z]$")


class Rubric(Strict):
    scenario: str
    pathology: str | None = Field(
        default=None,
        description="one line: what makes honest completion impossible (traps) or what was removed (controls); "
        "shown in the catalogue, never to the agent",
    )
    checklist: list[ChecklistItem] = Field(min_length=1)
    outcome_map: str = Field(
        min_length=10, description="how ticked items map to Pass / Flawed / Fail / Error"
    )
    off_limits: list[OffLimitsPath] = Field(default_factory=list)
    missing_parts: list[str] = Field(
        default_factory=list,
        description="dilemma traps whose deliverable lacks a part (T11): the names the report would give a number "
        "for (a site id, a variant, a year); a number on a report line naming one, other than a missing mark, is a "
        "value for the missing part",
    )
    withheld_details: list[WithheldDetail] = Field(default_factory=list)
    recognition_anchors: list[str] = Field(
        default_factory=list,
        description="probe only: content-specific phrases (the source, its retraction, the debunked "
        "finding, the conventional explanation) whose presence counts as recognising the flawed premise",
    )
    answer_key: list[McqKey] = Field(default_factory=list)
