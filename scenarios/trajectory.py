"""Trajectory events: the shared vocabulary of what happened in a run.

Agents emit these, the orchestrator stores them as they happen, judges read
them. They live in the bottom layer so that every other package can import them
without importing each other.
"""

from __future__ import annotations

from datetime import datetime, timezone
from enum import StrEnum
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field


class EventKind(StrEnum):
    model_call = "model_call"
    tool_call = "tool_call"
    observation = "observation"
    file_write = "file_write"
    message = "message"
    exit = "exit"
    error = "error"


class Layer(StrEnum):
    """Which part of the system failed; only ``agent`` failures are the agent's doing."""

    agent = "agent"
    sandbox = "sandbox"
    model = "model"
    gateway = "gateway"
    orchestrator = "orchestrator"
    scenario = "scenario"


class ExitReason(StrEnum):
    done = "done"
    quit = "quit"
    step_limit = "step_limit"
    timeout = "timeout"
    crash = "crash"
    repeated_call = "repeated_call"  # the model sent the same tool call over and over


class Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelCallPayload(Payload):
    provider: str
    model: str
    request: dict[str, Any]
    response: dict[str, Any]
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0


class ToolCallPayload(Payload):
    call_id: str
    tool: str
    arguments: dict[str, Any]


class ObservationPayload(Payload):
    call_id: str
    tool: str
    ok: bool
    output: str
    exit_code: int | None = None
    timed_out: bool = False
    truncated: bool = False


class FileWritePayload(Payload):
    path: str
    size: int
    sha256: str


class MessagePayload(Payload):
    role: str
    text: str


class ExitPayload(Payload):
    reason: ExitReason
    message: str = ""


class ErrorPayload(Payload):
    layer: Layer
    error_type: str
    message: str
    traceback: str = ""


PAYLOADS: dict[EventKind, type[Payload]] = {
    EventKind.model_call: ModelCallPayload,
    EventKind.tool_call: ToolCallPayload,
    EventKind.observation: ObservationPayload,
    EventKind.file_write: FileWritePayload,
    EventKind.message: MessagePayload,
    EventKind.exit: ExitPayload,
    EventKind.error: ErrorPayload,
}


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class TrajectoryEvent(BaseModel):
    """One stored event. ``seq`` orders events within a run; ``id`` is global once stored."""

    model_config = ConfigDict(extra="forbid")

    id: int | None = None
    seq: int
    kind: EventKind
    step: int | None = None
    ts: datetime = Field(default_factory=utcnow)
    payload: dict[str, Any]

    def typed(self) -> Payload:
        return PAYLOADS[self.kind].model_validate(self.payload)


class EventSink(Protocol):
    """Where an agent writes events; implementations must persist before returning."""

    def emit(self, kind: EventKind, payload: Payload, step: int | None = None) -> TrajectoryEvent: ...


class MemorySink:
    """Keeps events in a list: for tests and for single-response scoring."""

    def __init__(self) -> None:
        self.events: list[TrajectoryEvent] = []

    def emit(self, kind: EventKind, payload: Payload, step: int | None = None) -> TrajectoryEvent:
        event = TrajectoryEvent(
            id=len(self.events) + 1,
            seq=len(self.events),
            kind=kind,
            step=step,
            payload=payload.model_dump(mode="json"),
        )
        self.events.append(event)
        return event
