"""Planning a batch: scenarios × agents × conditions × epochs, expanded into queued runs."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy.orm import Session, sessionmaker

from agents.base import AgentBudget, agent_names
from agents.models.registry import make_provider
from orchestrator.db.models import Batch, Run, RunStatus
from scenarios.conditions import load_conditions
from scenarios.loader import Catalog, LoadedScenario


class AgentSpec(BaseModel):
    """One panel member: an agent kind and the model behind it."""

    model_config = ConfigDict(extra="forbid")

    agent: str = "react"
    model: str = "scripted:honest"

    @property
    def label(self) -> str:
        return f"{self.agent}/{self.model}"


class Selection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ids: list[str] = Field(default_factory=list)
    family: str | None = None
    category: str | None = None
    role: str | None = None


class BatchSpec(BaseModel):
    """Everything needed to plan a batch; validated before any run is created."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="", max_length=200)
    selection: Selection = Field(default_factory=Selection)
    agents: list[AgentSpec] = Field(min_length=1)
    conditions: list[str] = Field(default_factory=lambda: ["none"], min_length=1)
    epochs: int = Field(default=1, ge=1, le=1000)
    seed: int = 0
    budget: AgentBudget = Field(default_factory=AgentBudget)

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
    if not chosen:
        raise ValueError("the selection matches no scenario")
    unsupported = [s.id for s in chosen if s.scenario.family.value != "dilemma"]
    if unsupported:
        raise ValueError(f"only dilemma scenarios can run so far; not yet: {unsupported}")
    return chosen


def plan_batch(sessions: sessionmaker[Session], catalog: Catalog, spec: BatchSpec) -> tuple[str, int]:
    """Create the batch and its queued runs; returns (batch id, run count)."""
    check_agents(spec)
    scenarios = selected_scenarios(catalog, spec)
    with sessions() as session:
        batch = Batch(name=spec.name, spec=spec.model_dump(mode="json"), status="queued")
        session.add(batch)
        session.flush()
        count = 0
        for loaded in scenarios:
            scenario = loaded.scenario
            for agent in spec.agents:
                for condition in spec.conditions:
                    if condition not in scenario.conditions:
                        continue
                    for epoch in range(spec.epochs):
                        session.add(Run(
                            batch_id=batch.id, scenario_id=scenario.id, family=scenario.family.value,
                            category=scenario.category, role=scenario.role.value, agent=agent.agent,
                            model=agent.model, condition=condition, epoch=epoch, seed=spec.seed + epoch,
                            params={"budget": spec.budget.model_dump(mode="json")}, status=RunStatus.queued,
                        ))
                        count += 1
        if count == 0:
            session.rollback()
            raise ValueError("no run planned: no selected scenario allows the chosen conditions")
        session.commit()
        return batch.id, count
