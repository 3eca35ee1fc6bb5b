"""The ``Agent`` interface: run one scenario in one sandbox, emitting trajectory events.

An agent never sees a rubric or a judgement. It gets a sandbox (tools execute
there), a sink (every event is persisted as it happens) and the prompts.
Agents register by name; adding one (e.g. a CLI adapter) is one new module.
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from sandboxes.base import Sandbox
from scenarios.trajectory import EventSink, ExitReason

if TYPE_CHECKING:
    from agents.gateway.run_gateway import RunGateway


class AgentBudget(BaseModel):
    """Per-run limits; past any of them the run ends as ``step_limit``, ``timeout`` or ``repeated_call``."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(default=100, ge=1, le=10_000)
    command_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    wall_timeout_s: float = Field(default=1800.0, gt=0, le=86_400)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_output_chars: int = Field(default=12_000, ge=200, description="observation text shown to the model")
    max_repeated_calls: int = Field(default=5, ge=2, le=1000,
                                    description="this many identical tool calls in a row end the run (a stuck model)")


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


class AgentFailure(Exception):
    """The agent itself broke (e.g. a CLI exited with an error): recorded with layer ``agent``, never retried."""


class Agent(abc.ABC):
    name: str = "abstract"
    #: agents that only talk to a model (single-shot) get no sandbox
    needs_sandbox: bool = True
    #: the image its sandbox must run (None: the backend's default sandbox image)
    sandbox_image: str | None = None
    #: which wording of the family's base prompt fits this agent's tools (None: our ReAct tools)
    prompt_variant: str | None = None
    #: SandboxLimits fields this agent needs raised (e.g. a Node.js CLI needs more memory than the default)
    sandbox_limits: dict[str, Any] = {}

    def open_gateway(self, sink: EventSink, budget: AgentBudget) -> RunGateway | None:
        """Agents that reach their model through the run's own gateway start it here, before the
        sandbox exists (its socket is mounted into the sandbox). Default: none."""
        return None

    def close_gateway(self) -> None:
        """Stop what :meth:`open_gateway` started; called once the run is over, whatever happened."""

    def run_artifacts(self) -> dict[str, bytes]:
        """Files the agent kept about itself (e.g. a CLI's raw session log), stored as ``agent/...``."""
        return {}

    @abc.abstractmethod
    def run(self, task: AgentTask, sandbox: Sandbox, sink: EventSink, budget: AgentBudget) -> AgentOutcome:
        """Run to an exit. Raise only for failures outside the agent's choices (they carry a layer)."""


AgentFactory = Callable[..., Agent]
_AGENTS: dict[str, AgentFactory] = {}
_KNOWN_MODULES = {
    "react": "agents.react.agent",
    "single_shot": "agents.single_shot",
    "codex": "agents.cli.codex",
    "claude_code": "agents.cli.claude_code",
    "openclaw": "agents.cli.openclaw",
}


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
