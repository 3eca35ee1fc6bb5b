"""Response bodies of the REST API (requests are ``orchestrator.batches.BatchSpec``). No rubric field exists here."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.metrics import AgentSummary

T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int


class Progress(BaseModel):
    total: int
    finished: int = Field(description="runs done, awaiting review, in error or cancelled")
    fraction: float
    eta_s: float | None = Field(None, description="seconds left at the batch's rate so far; null until a run finished")


class BatchOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    status: str
    created_at: datetime
    created_by: str
    planned_runs: int
    started_at: datetime | None = None
    finished_at: datetime | None = None
    cancelled_at: datetime | None = None
    counts: dict[str, int] = Field(default_factory=dict, description="runs per status")


class BatchDetail(BatchOut):
    spec: dict[str, Any]
    progress: Progress
    verdicts: dict[str, int] = Field(default_factory=dict)


class BatchSummary(BaseModel):
    batch: str
    rows: list[AgentSummary]
    errors: list[dict[str, Any]]


class RunOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    batch_id: str
    scenario_id: str
    family: str
    category: str
    role: str
    agent: str
    model: str
    condition: str
    epoch: int
    seed: int
    status: str
    verdict: str | None = None
    completed: bool | None = None
    exit_reason: str | None = None
    error_layer: str | None = None
    error_message: str | None = None
    steps: int
    input_tokens: int
    output_tokens: int
    duration_s: float | None = None
    attempt: int
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None


class JudgementOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    judge: str
    judge_version: str
    verdict: str
    completed: bool | None = None
    findings: list[Any]
    rationale: str
    created_at: datetime


class RunDetail(RunOut):
    params: dict[str, Any]
    sandbox_backend: str | None = None
    environment: dict[str, Any] | None = None
    exit_message: str | None = None
    worker: str | None = None
    heartbeat_at: datetime | None = None
    deadline_at: datetime | None = None
    status_at: datetime | None = None
    trajectory_from_seq: int
    failures: list[Any] | None = None
    judgement: JudgementOut | None = None


class EventOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    seq: int
    kind: str
    step: int | None = None
    ts: datetime
    payload: dict[str, Any]


class EventPage(BaseModel):
    items: list[EventOut]
    next_after: int = Field(description="pass as ?after= to get the next page")
    run_status: str
    trajectory_from_seq: int


class ArtifactOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str
    kind: str
    size: int
    sha256: str
    created_at: datetime


class ScenarioOut(BaseModel):
    id: str
    title: str
    family: str
    role: str
    category: str
    domain: str
    hazard: str
    twin: str | None = None
    pack: str
    conditions: list[str]
    tags: list[str]


class ScenarioDetail(ScenarioOut):
    prompt: dict[str, Any]
    workspace: list[str]


class AgentsOut(BaseModel):
    agents: list[str]
    model_providers: list[str]
    scripted_policies: list[str]
    conditions: list[str]
