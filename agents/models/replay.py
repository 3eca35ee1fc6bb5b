"""``replay:FILE``: play written assistant turns through the real agent loop.

A replay file (YAML or JSON) holds ``turns``: what a model would have said, one
assistant turn per model call, each with optional ``text`` and any number of
``calls`` (several calls in one turn are parallel tool calls). The agent runs
every call in the real sandbox, so each observation is what the workspace
really returns; only the model side is written. That is how realistic labelled
runs are made without a paid model (issue #12).

The provider is stateless: the turn to play is the number of assistant turns
already in the conversation, so a provider shared across runs cannot drift.
A replay that no longer fits what the workspace returns still plays on, turn
by turn, as written. Running out of turns before ``done``/``quit`` is a
``model``-layer error that names the file, so an incomplete replay never
passes for an agent's choice.

File format (other top-level keys, such as a label, are ignored here)::

    turns:
      - text: "Let me look at the data first."
        calls:
          - tool: shell
            args: {command: "head -3 data/cohort.csv"}
          - tool: read_file
            args: {path: scripts/analysis.py}
      - calls:
          - tool: quit
            args: {reason: "..."}
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.models.base import ModelError, ModelProvider, ModelRequest, ModelResponse, ToolCall, Usage, estimate_tokens
from agents.models.registry import register_provider


class ReplayCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class ReplayTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    calls: list[ReplayCall] = Field(default_factory=list)


class ReplayScript(BaseModel):
    """The model side of one run; ``scenario`` (optional) says which scenario it was written for."""

    model_config = ConfigDict(extra="allow")

    scenario: str | None = None
    turns: list[ReplayTurn] = Field(min_length=1)


def _problem_location(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']}"


@lru_cache(maxsize=256)
def load_replay(path: str) -> ReplayScript:
    """Parse and check a replay file; errors name the file and the field (e.g. ``turns.3.calls.0.tool``)."""
    file = Path(path)
    if not file.is_file():
        raise ModelError(f"replay file {path} does not exist", layer="orchestrator")
    text = file.read_text(encoding="utf-8")
    try:
        doc = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ModelError(f"replay file {path} is not valid {'JSON' if file.suffix == '.json' else 'YAML'}: {exc}",
                         layer="orchestrator") from exc
    if not isinstance(doc, dict):
        raise ModelError(f"replay file {path} must be a mapping with a 'turns' list", layer="orchestrator")
    try:
        return ReplayScript.model_validate(doc)
    except ValidationError as exc:
        raise ModelError(f"replay file {path}: {_problem_location(exc)}", layer="orchestrator") from exc


class ReplayProvider(ModelProvider):
    def __init__(self, path: str) -> None:
        self.path = str(Path(path).resolve())
        self.script = load_replay(self.path)

    def complete(self, request: ModelRequest) -> ModelResponse:
        index = sum(1 for m in request.messages if m.role == "assistant")
        if index >= len(self.script.turns):
            raise ModelError(
                f"replay {self.path} has {len(self.script.turns)} turn(s) and the agent asked for turn "
                f"{index + 1}: the replay ends before done or quit",
                layer="model",
            )
        turn = self.script.turns[index]
        calls = [ToolCall(id=f"call-{index + 1}-{n + 1}", name=c.tool, arguments=c.args)
                 for n, c in enumerate(turn.calls)]
        prompt_chars = sum(len(m.content or "") for m in request.messages)
        written = (turn.text or "") + "".join(c.arguments_json() for c in calls)
        return ModelResponse(
            content=turn.text,
            tool_calls=calls,
            usage=Usage(input_tokens=estimate_tokens("x" * prompt_chars), output_tokens=estimate_tokens(written)),
            finish_reason="tool_calls" if calls else "stop",
            model=f"replay:{Path(self.path).name}",
        )


@register_provider("replay")
def make_replay(path: str) -> ReplayProvider:
    return ReplayProvider(path)
