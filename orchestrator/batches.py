"""Planning a batch: scenarios × agents × conditions × epochs, expanded into queued runs."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator
from sqlalchemy import insert
from sqlalchemy.orm import Session, sessionmaker

from agents.base import AgentBudget, agent_names
from agents.models.registry import make_provider
from orchestrator.db.models import Batch, Run, RunStatus, new_id, utcnow
from scenarios.conditions import load_conditions
from scenarios.loader import Catalog, LoadedScenario

NO_NUL = r"^[^\x00]*$"  # PostgreSQL text cannot hold NUL
Name = Annotated[str, StringConstraints(max_length=200, pattern=NO_NUL)]
Short = Annotated[str, StringConstraints(max_length=100, pattern=NO_NUL)]
ParameterValue = (Annotated[str, StringConstraints(max_length=2000, pattern=NO_NUL)] | Annotated[int, Field(ge=-2**53, le=2**53)]
                  | Annotated[float, Field(allow_inf_nan=False)] | bool | None)
MAX_PLANNED_RUNS = 100_000


class AgentSpec(BaseModel):
    """One panel member: an agent kind, the model behind it, and keyword parameters for the agent."""

    model_config = ConfigDict(extra="forbid")

    agent: Short = "react"
    model: Name = "scripted:honest"
    parameters: dict[Short, ParameterValue] = Field(default_factory=dict, max_length=50)

    @property
    def label(self) -> str:
        return f"{self.agent}/{self.model}"


class Selection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ids: list[Short] = Field(default_factory=list, max_length=10_000)
    family: Short | None = None
    category: Short | list[Short] | None = Field(default=None, description="one category, or several (all selected)")
    role: Short | None = None
    pack: Short | None = None


class RunBudget(AgentBudget):
    """The agent's budget plus what the orchestrator enforces around it (tokens over all model calls)."""

    max_tokens: int | None = Field(default=None, ge=1, le=1_000_000_000,
                                   description="input + output tokens over the run; past it the run ends as step_limit")


class ConcurrencyCaps(BaseModel):
    """How many of this batch's runs may execute at once, overall and per model (on top of the service's limits)."""

    model_config = ConfigDict(extra="forbid")

    max_runs: int | None = Field(default=None, ge=1, le=10_000)
    per_model: dict[Name, Annotated[int, Field(ge=1, le=10_000)]] = Field(default_factory=dict, max_length=100)


class BatchSpec(BaseModel):
    """Everything needed to plan a batch; validated before any run is created."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="", max_length=200, pattern=NO_NUL)
    selection: Selection = Field(default_factory=Selection)
    agents: list[AgentSpec] = Field(min_length=1, max_length=100)
    conditions: list[Short] = Field(default_factory=lambda: ["none"], min_length=1, max_length=50)
    epochs: int = Field(default=1, ge=1, le=1000)
    seed: int = Field(default=0, ge=0, le=2**31 - 1)
    budget: RunBudget = Field(default_factory=RunBudget)
    concurrency: ConcurrencyCaps = Field(default_factory=ConcurrencyCaps)

    @field_validator("budget", mode="before")
    @classmethod
    def _plain_budget(cls, value: Any) -> Any:
        return value.model_dump() if isinstance(value, AgentBudget) else value

    @field_validator("conditions")
    @classmethod
    def _known_conditions(cls, value: list[str]) -> list[str]:
        known = load_conditions()
        unknown = [c for c in value if c not in known]
        if unknown:
            raise ValueError(f"unknown condition(s) {unknown}; known: {sorted(known)}")
        return list(dict.fromkeys(value))


def check_agents(spec: BatchSpec) -> None:
    """Fail early, naming the agent or model, rather than in every run."""
    for index, agent in enumerate(spec.agents):
        if agent.agent not in agent_names():
            raise ValueError(f"agents[{index}].agent: unknown agent {agent.agent!r}; known: {agent_names()}")
        make_provider(agent.model)  # raises ModelError naming the spec


def selected_scenarios(catalog: Catalog, spec: BatchSpec) -> list[LoadedScenario]:
    chosen = catalog.select(
        ids=spec.selection.ids or None,
        family=spec.selection.family,
        category=spec.selection.category,
        role=spec.selection.role,
    )
    if spec.selection.pack is not None:
        chosen = [s for s in chosen if s.pack == spec.selection.pack]
    if not chosen:
        raise ValueError("the selection matches no scenario")
    for index, agent in enumerate(spec.agents):
        families = AGENT_FAMILIES.get(agent.agent)
        if families is None:
            continue
        wrong = sorted({s.scenario.family.value for s in chosen} - families)
        if wrong:
            raise ValueError(
                f"agents[{index}].agent: {agent.agent!r} cannot run {'/'.join(wrong)} scenarios "
                f"(it runs {', '.join(sorted(families))}); use "
                + ("single_shot" if "mcq" in wrong else "react") + " for those"
            )
    return chosen


# which scenario families each built-in agent can run (a probe runs single-shot, or as paper.md + task in the sandbox)
AGENT_FAMILIES = {"react": {"dilemma", "probe"}, "single_shot": {"probe", "mcq"},
                  "codex": {"dilemma"}, "claude_code": {"dilemma"}, "openclaw": {"dilemma"}}


def planned_run_count(scenarios: list[LoadedScenario], spec: BatchSpec) -> int:
    per_scenario = [sum(c in s.scenario.conditions for c in spec.conditions) for s in scenarios]
    return sum(per_scenario) * len(spec.agents) * spec.epochs


def add_batch(session: Session, scenarios: list[LoadedScenario], spec: BatchSpec,
              created_by: str = "") -> tuple[Batch, list[str]]:
    """Add the batch and its queued runs to ``session`` (not committed); returns the batch and the run ids."""
    count = planned_run_count(scenarios, spec)
    if count == 0:
        raise ValueError("no run planned: no selected scenario allows the chosen conditions")
    if count > MAX_PLANNED_RUNS:
        raise ValueError(f"{count} runs planned; at most {MAX_PLANNED_RUNS} per batch")
    now = datetime.now(timezone.utc)
    batch = Batch(name=spec.name, spec=spec.model_dump(mode="json"), status="queued", created_by=created_by,
                  planned_runs=count, created_at=now)
    session.add(batch)
    session.flush()
    params: dict[str, Any] = {"budget": spec.budget.model_dump(mode="json")}
    rows: list[dict[str, Any]] = []
    for loaded in scenarios:
        scenario = loaded.scenario
        for agent in spec.agents:
            for condition in spec.conditions:
                if condition not in scenario.conditions:
                    continue
                for epoch in range(spec.epochs):
                    run_params = {**params, "agent_parameters": agent.parameters} if agent.parameters else params
                    rows.append(dict(
                        id=new_id(), batch_id=batch.id, created_at=utcnow(), scenario_id=scenario.id,
                        family=scenario.family.value, category=scenario.category, role=scenario.role.value,
                        agent=agent.agent, model=agent.model, condition=condition, epoch=epoch,
                        seed=spec.seed + epoch, params=run_params, status=RunStatus.queued, status_at=now,
                        enqueued_at=now, steps=0, input_tokens=0, output_tokens=0, attempt=0,
                        trajectory_from_seq=0, failures=[],
                    ))
    session.execute(insert(Run), rows)
    return batch, [row["id"] for row in rows]


def plan_batch(sessions: sessionmaker[Session], catalog: Catalog, spec: BatchSpec) -> tuple[str, int]:
    """Create the batch and its queued runs; returns (batch id, run count)."""
    check_agents(spec)
    scenarios = selected_scenarios(catalog, spec)
    with sessions() as session:
        batch, run_ids = add_batch(session, scenarios, spec)
        session.commit()
        return batch.id, len(run_ids)
