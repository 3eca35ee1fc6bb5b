"""The model-provider interface: one request in, one reply (text and/or tool calls) out.

Providers are registered by prefix (``openai:<model>``, ``scripted:<policy>``) in
:mod:`agents.models.registry`. The message format is the OpenAI Chat
Completions shape reduced to what agents use, so any provider can be put behind
the gateway and any gateway API can be translated to it.

Limits: ``complete`` raises :class:`ModelError` for anything that is the
model's or the upstream's failure (HTTP errors, malformed replies, budget
exhaustion); it never returns a partial reply silently.
"""

from __future__ import annotations

import abc
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ModelError(RuntimeError):
    """The model or its upstream failed. ``layer`` is 'model' or 'gateway'."""

    def __init__(self, message: str, *, layer: str = "model", retryable: bool = False) -> None:
        super().__init__(message)
        self.layer = layer
        self.retryable = retryable


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    #: set when the model's arguments were not a JSON object: the raw text, so the agent can say so to the model
    invalid_arguments: str | None = None

    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False)

    def wire_arguments(self) -> str:
        """What to relay to a client: the model's own text when it was not a JSON object, so the client sees it."""
        return self.invalid_arguments if self.invalid_arguments is not None else self.arguments_json()


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None  # for role == "tool"
    name: str | None = None  # tool name, for role == "tool"


class ToolSpec(BaseModel):
    """A function tool: name, description and a JSON-schema for its arguments."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    parameters: dict[str, Any]


class ModelRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    messages: list[ChatMessage]
    tools: list[ToolSpec] = Field(default_factory=list)
    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int | None = None


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0


class ModelResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str = "stop"
    model: str = ""


class ModelProvider(abc.ABC):
    """Something that answers chat requests. Implementations must be deterministic at temperature 0 where they can."""

    #: the spec string it was built from, e.g. ``scripted:honest`` or ``openai:gpt-4o``
    spec: str = ""
    #: how the model is served, recorded on each model call (a local server's weights and chat template)
    settings: dict[str, Any] = {}  # noqa: RUF012 - read-only default; providers assign their own dict

    @abc.abstractmethod
    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request, or raise :class:`ModelError`."""


def estimate_tokens(text: str) -> int:
    """A rough token count (4 characters a token) for providers that report none."""
    return max(1, len(text) // 4) if text else 0
