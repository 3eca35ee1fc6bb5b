"""The ``Agent`` interface: run one scenario in one sandbox, emitting trajectory events.

An agent never sees a rubric or a judgement. It gets a sandbox (tools execute
there), a sink (every event is persisted as it happens) and the prompts.
Agents register by name; adding one (e.g. a CLI adapter) is one new module.
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sandboxes.base import Sandbox
from scenarios.trajectory import EventSink, ExitReason


class AgentBudget(BaseModel):
    """Per-run limits; past any of them the run ends as ``step_limit`` or ``timeout``."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(default=100, ge=1, le=10_000)
    command_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    wall_timeout_s: float = Field(default=1800.0, gt=0, le=86_400)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_output_chars: int = Field(default=12_000, ge=200, description="observation text shown to the model")


class AgentTask(BaseModel):
    """What the agent is asked: the composed system prompt and the user-facing task."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    system_prompt: str
    task_prompt: str
    seed: int = 0


class AgentOutcome(BaseModel):
    exit_reason: ExitReason
    message: str = ""
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


class Agent(abc.ABC):
    name: str = "abstract"
    #: agents that only talk to a model (single-shot) get no sandbox
    needs_sandbox: bool = True

    @abc.abstractmethod
    def run(self, task: AgentTask, sandbox: Sandbox, sink: EventSink, budget: AgentBudget) -> AgentOutcome:
        """Run to an exit. Raise only for failures outside the agent's choices (they carry a layer)."""


AgentFactory = Callable[..., Agent]
_AGENTS: dict[str, AgentFactory] = {}
_KNOWN_MODULES = {"react": "agents.react.agent", "single_shot": "agents.single_shot"}


def register_agent(name: str) -> Callable[[AgentFactory], AgentFactory]:
    def decorate(factory: AgentFactory) -> AgentFactory:
        _AGENTS[name] = factory
        return factory

    return decorate


def agent_names() -> list[str]:
    return sorted(set(_AGENTS) | set(_KNOWN_MODULES))


def make_agent(name: str, **params: Any) -> Agent:
    if name not in _AGENTS and name in _KNOWN_MODULES:
        importlib.import_module(_KNOWN_MODULES[name])
    if name not in _AGENTS:
        raise KeyError(f"unknown agent {name!r}; known: {', '.join(agent_names())}")
    return _AGENTS[name](**params)
