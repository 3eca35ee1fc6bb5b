"""A run's trajectory as ATIF, Harbor's Agent Trajectory Interchange Format (RFC 0001, v1.4).

Labs that already keep trajectories in Harbor's format (or feed them to SFT/RL tooling that reads it)
can take ours without a converter of their own. The models below are written from the RFC's tables
and enforce what it requires: ``schema_version``, ``session_id``, ``agent.name``/``version``; steps
numbered from 1 in order; ``source`` one of system/user/agent; the agent-only fields (model name,
reasoning, tool calls, metrics) only on agent steps; every observation result's ``source_call_id``
naming a tool call of its own step; ISO 8601 timestamps. Unknown fields are refused, as Harbor's own
models refuse them, so an export that validates here carries nothing a strict reader would reject.

How our events map: the first model call's system and user messages become a system and a user
step; each model call becomes an agent step (its text, its tool calls, its token counts); each
observation joins the step whose tool call it answers; later user messages (nudges) become user
steps. What ATIF has no field for (files written, the exit, errors, the verdict) goes under
``extra``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from orchestrator.db.models import EventRow, Run

SCHEMA_VERSION: Final = "ATIF-v1.4"
AGENT_VERSION = "integritylab-0.1"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AtifToolCall(_Strict):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]


class AtifObservationResult(_Strict):
    source_call_id: str | None = None
    content: str | None = None
    subagent_trajectory_ref: list[dict[str, Any]] | None = None


class AtifObservation(_Strict):
    results: list[AtifObservationResult]


class AtifMetrics(_Strict):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: dict[str, Any] | None = None


AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


class AtifStep(_Strict):
    step_id: int = Field(ge=1)
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: str
    reasoning_content: str | None = None
    tool_calls: list[AtifToolCall] | None = None
    observation: AtifObservation | None = None
    metrics: AtifMetrics | None = None
    extra: dict[str, Any] | None = None

    @field_validator("timestamp")
    @classmethod
    def _iso_8601(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                datetime.fromisoformat(value)
            except ValueError as exc:
                raise ValueError(f"timestamp {value!r} is not ISO 8601") from exc
        return value

    @model_validator(mode="after")
    def _fields_fit_the_source(self) -> AtifStep:
        if self.source != "agent":
            present = [name for name in AGENT_ONLY if getattr(self, name) is not None]
            if present:
                raise ValueError(f"step {self.step_id}: {', '.join(present)} only on agent steps")
        if self.observation is not None:
            calls = {c.tool_call_id for c in self.tool_calls or []}
            for result in self.observation.results:
                if result.source_call_id is not None and result.source_call_id not in calls:
                    raise ValueError(f"step {self.step_id}: observation for {result.source_call_id!r}, "
                                     "which is no tool call of this step")
        return self


class AtifAgent(_Strict):
    name: str
    version: str
    model_name: str | None = None
    extra: dict[str, Any] | None = None


class AtifFinalMetrics(_Strict):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = None
    extra: dict[str, Any] | None = None


class AtifTrajectory(_Strict):
    schema_version: Literal["ATIF-v1.4"]
    session_id: str
    agent: AtifAgent
    steps: list[AtifStep]
    notes: str | None = None
    final_metrics: AtifFinalMetrics | None = None
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _steps_in_order(self) -> AtifTrajectory:
        for expected, step in enumerate(self.steps, start=1):
            if step.step_id != expected:
                raise ValueError(f"step ids must run 1, 2, …: found {step.step_id} where {expected} belongs")
        return self

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def _timestamp(value: datetime) -> str:
    value = value if value.tzinfo else value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _text(content: Any) -> str:
    """A message's content as text (plain strings, or the parts of a multi-part content list)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content)
    return str(content)


class _Builder:
    """Folds a run's events, in order, into ATIF steps."""

    def __init__(self, show_models: bool) -> None:
        self.steps: list[dict[str, Any]] = []
        self.by_call: dict[str, dict[str, Any]] = {}
        self.show_models = show_models
        self.files: list[dict[str, Any]] = []
        self.exit: dict[str, Any] | None = None
        self.errors: list[dict[str, Any]] = []

    def add(self, source: str, message: str, timestamp: str, **fields: Any) -> dict[str, Any]:
        step = {"step_id": len(self.steps) + 1, "source": source, "message": message, "timestamp": timestamp,
                **fields}
        self.steps.append(step)
        return step

    def current_agent_step(self, timestamp: str) -> dict[str, Any]:
        if self.steps and self.steps[-1]["source"] == "agent":
            return self.steps[-1]
        return self.add("agent", "", timestamp)

    def model_call(self, event: EventRow, timestamp: str) -> None:
        payload = event.payload
        for message in payload.get("request", {}).get("new_messages", []):
            role = message.get("role")
            if role in ("system", "user"):  # tool results arrive again as observation events
                self.add(role, _text(message.get("content")), timestamp)
        response = payload.get("response", {})
        calls: list[dict[str, Any]] = [{"tool_call_id": str(c.get("id", "")), "function_name": str(c.get("name", "")),
                  "arguments": c.get("arguments") if isinstance(c.get("arguments"), dict) else
                  {"raw": c.get("arguments")}} for c in response.get("tool_calls") or []]
        metrics = {"prompt_tokens": int(payload.get("input_tokens") or 0),
                   "completion_tokens": int(payload.get("output_tokens") or 0),
                   "extra": {"latency_s": payload.get("latency_s", 0.0),
                             "finish_reason": response.get("finish_reason")}}
        step = self.add("agent", _text(response.get("content")), timestamp, metrics=metrics,
                        tool_calls=calls or None, event_seq=[event.seq],
                        model_name=str(payload.get("model")) if self.show_models else None)
        for call in calls:
            self.by_call[call["tool_call_id"]] = step

    def tool_call(self, event: EventRow, timestamp: str) -> None:
        """A tool call with no model call before it (a CLI agent's own loop) joins the agent's step."""
        call_id = str(event.payload.get("call_id", ""))
        if call_id in self.by_call:
            self.by_call[call_id].setdefault("event_seq", []).append(event.seq)
            return
        step = self.current_agent_step(timestamp)
        step.setdefault("tool_calls", None)
        step["tool_calls"] = [*(step["tool_calls"] or []), {
            "tool_call_id": call_id, "function_name": str(event.payload.get("tool", "")),
            "arguments": event.payload.get("arguments") or {}}]
        step.setdefault("event_seq", []).append(event.seq)
        self.by_call[call_id] = step

    def observation(self, event: EventRow, timestamp: str) -> None:
        call_id = str(event.payload.get("call_id", ""))
        step = self.by_call.get(call_id)
        result: dict[str, Any] = {"source_call_id": call_id, "content": str(event.payload.get("output", ""))}
        if step is None:  # an answer to no call we saw: keep it, unattached, on a system step
            step = self.add("system", "observation without a recorded tool call", timestamp)
            result["source_call_id"] = None
        step.setdefault("observation", {"results": []})
        step["observation"] = step["observation"] or {"results": []}
        step["observation"]["results"].append(result)
        step.setdefault("event_seq", []).append(event.seq)

    def message(self, event: EventRow, timestamp: str) -> None:
        role, text = event.payload.get("role"), str(event.payload.get("text", ""))
        if role == "assistant":
            step = self.current_agent_step(timestamp)
            if text and text not in step["message"]:
                step["message"] = f"{step['message']}\n\n{text}".strip()
        elif role in ("user", "system"):
            self.add(role, text, timestamp)

    def feed(self, event: EventRow) -> None:
        timestamp = _timestamp(event.ts)
        if event.kind == "model_call":
            self.model_call(event, timestamp)
        elif event.kind == "tool_call":
            self.tool_call(event, timestamp)
        elif event.kind == "observation":
            self.observation(event, timestamp)
        elif event.kind == "message":
            self.message(event, timestamp)
        elif event.kind == "file_write":
            self.files.append({"seq": event.seq, **event.payload})
        elif event.kind == "exit":
            self.exit = {"seq": event.seq, **event.payload}
        elif event.kind == "error":
            self.errors.append({"seq": event.seq, **event.payload})

    def finished_steps(self) -> list[AtifStep]:
        out = []
        for step in self.steps:
            seqs = step.pop("event_seq", None)
            if seqs:
                step["extra"] = {"event_seq": seqs}
            out.append(AtifStep.model_validate({k: v for k, v in step.items() if v is not None}))
        return out


def to_atif(run: Run, events: Iterable[EventRow], agent_label: str | None = None) -> AtifTrajectory:
    """The run as an ATIF trajectory. ``agent_label`` replaces the agent's name and hides the model's
    (a blinded viewer gets "agent 2", never the model behind it)."""
    shown = agent_label is None
    builder = _Builder(show_models=shown)
    for event in sorted(events, key=lambda e: e.seq):
        if event.seq >= run.trajectory_from_seq:
            builder.feed(event)
    steps = builder.finished_steps()
    agent_steps = [s for s in steps if s.source == "agent"]
    return AtifTrajectory(
        schema_version=SCHEMA_VERSION,
        session_id=run.id,
        agent=AtifAgent(name=run.agent if shown else agent_label or "agent", version=AGENT_VERSION,
                        model_name=run.model if shown else None),
        steps=steps,
        notes="Exported by integritylab from the run's stored events; event_seq in a step's extra names "
              "the events it came from.",
        final_metrics=AtifFinalMetrics(
            total_prompt_tokens=sum(s.metrics.prompt_tokens or 0 for s in agent_steps if s.metrics),
            total_completion_tokens=sum(s.metrics.completion_tokens or 0 for s in agent_steps if s.metrics),
            total_steps=len(steps)),
        extra={"integritylab": {
            "run_id": run.id, "batch_id": run.batch_id, "scenario_id": run.scenario_id, "family": run.family,
            "category": run.category, "role": run.role, "condition": run.condition, "epoch": run.epoch,
            "seed": run.seed, "status": run.status, "verdict": run.verdict,
            "pathology_recognised": run.pathology_recognised, "exit": builder.exit, "errors": builder.errors,
            "files_written": builder.files}},
    )
