"""The scenario schema: what an agent is shown, for all three families.

A scenario file (``scenario.yaml``) holds only what may enter the sandbox or the
prompt. What the judges use lives in a separate ``rubric.yaml`` beside it
(see :mod:`scenarios.rubric`) and never enters a workspace.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SCENARIO_ID = re.compile(r"^[a-z0-9][a-z0-9-]{2,79}$")


class Family(StrEnum):
    dilemma = "dilemma"
    probe = "probe"
    mcq = "mcq"


class Role(StrEnum):
    """A trap tests integrity; its control twin tests that the agent still works."""

    trap = "trap"
    control = "control"


class Hazard(StrEnum):
    """How much harm an integrity failure on this scenario would do if published."""

    low = "low"
    medium = "medium"
    high = "high"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WorkspaceFile(Strict):
    """A file seeded into ``/workspace``.

    ``path`` is where the agent sees it; ``source`` is relative to the
    scenario's ``workspace/`` folder (defaults to ``path``). Inline ``content``
    may replace a file on disk for short text.
    """

    path: str
    source: str | None = None
    content: str | None = None

    @field_validator("path")
    @classmethod
    def _relative_inside(cls, value: str) -> str:
        if value.startswith("/") or ".." in value.split("/") or not value.strip():
            raise ValueError("must be a relative path inside the workspace, without '..'")
        return value


class DilemmaPrompt(Strict):
    """A plausible research task that does not announce its pathology."""

    task: str = Field(min_length=20)


class ProbeRequest(Strict):
    id: str
    text: str = Field(min_length=10)


class ProbePrompt(Strict):
    """A premise passage in the source paper's register, then operational requests."""

    preamble: str = Field(min_length=50)
    requests: list[ProbeRequest] = Field(min_length=3)


class McqOption(Strict):
    key: str = Field(pattern=r"^[A-Z]$")
    text: str


class McqQuestion(Strict):
    id: str
    text: str
    options: list[McqOption] = Field(min_length=2)


class McqPrompt(Strict):
    """Context, situation and a JSON research artifact, then questions Q1–Q3."""

    context: str
    situation: str
    artifact: dict
    questions: list[McqQuestion] = Field(min_length=1)


class Provenance(Strict):
    """Where a probe's premise comes from and why it is unreliable."""

    citation: str
    unreliable_because: str
    claim_type: str


class ScenarioBase(Strict):
    id: str
    title: str = Field(min_length=3)
    family: Family
    role: Role
    category: str = Field(min_length=2)
    domain: str = Field(min_length=2)
    hazard: Hazard
    twin: str | None = Field(
        default=None, description="id of the control (for a trap) or the trap (for a control)"
    )
    conditions: list[str] = Field(
        default_factory=lambda: ["none", "completion"],
        description="pressure conditions this scenario may run under",
    )
    workspace: list[WorkspaceFile] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)

    @field_validator("id", "twin")
    @classmethod
    def _id_shape(cls, value: str | None) -> str | None:
        if value is not None and not SCENARIO_ID.match(value):
            raise ValueError(
                "must be 3-80 characters of lowercase letters, digits and '-', starting alphanumeric"
            )
        return value

    @model_validator(mode="after")
    def _unique_workspace_paths(self) -> "ScenarioBase":
        seen: set[str] = set()
        for item in self.workspace:
            if item.path in seen:
                raise ValueError(f"workspace path {item.path!r} is listed twice")
            seen.add(item.path)
        return self


class DilemmaScenario(ScenarioBase):
    family: Literal[Family.dilemma] = Family.dilemma
    prompt: DilemmaPrompt


class ProbeScenario(ScenarioBase):
    family: Literal[Family.probe] = Family.probe
    prompt: ProbePrompt
    provenance: Provenance


class McqScenario(ScenarioBase):
    family: Literal[Family.mcq] = Family.mcq
    prompt: McqPrompt


Scenario = Annotated[
    DilemmaScenario | ProbeScenario | McqScenario, Field(discriminator="family")
]
