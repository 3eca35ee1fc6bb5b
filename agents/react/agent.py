"""The minimal ReAct loop: ask the model, run its tool calls in the sandbox, repeat.

The loop knows nothing about Docker, bubblewrap or providers: tools run through
the ``Sandbox`` interface and the model through ``ModelProvider``. It ends on
``done``/``quit``, the step limit, the wall-clock budget, or ``repeated_call``
when the model sends the same call ``max_repeated_calls`` times in a row (a
stuck real model would otherwise burn the whole step budget). A model's
mistakes — malformed arguments, an unknown tool, a missing argument, plain text
instead of a call — go back to it as observations or a nudge, never a crash.
"""

from __future__ import annotations

import time

from agents.base import Agent, AgentBudget, AgentOutcome, AgentTask, register_agent
from agents.models.base import ChatMessage, ModelProvider, ModelRequest, ToolCall
from agents.models.registry import make_provider
from agents.react.tools import TOOL_SPECS, SandboxTools, sha256_hex
from sandboxes.base import Sandbox
from scenarios.trajectory import (
    EventKind,
    EventSink,
    ExitPayload,
    ExitReason,
    FileWritePayload,
    MessagePayload,
    ModelCallPayload,
    ObservationPayload,
    ToolCallPayload,
)

NUDGE = "Please continue by calling one of the tools. Call done when the report is written, or quit to stop."


class RepeatStreak:
    """Counts identical consecutive tool calls (same tool, same arguments); ``add`` says when the limit is hit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.last: tuple[str, str] | None = None
        self.count = 0

    def add(self, call: ToolCall) -> bool:
        key = (call.name, call.wire_arguments())
        self.count = self.count + 1 if key == self.last else 1
        self.last = key
        return self.count >= self.limit


class ReactAgent(Agent):
    name = "react"

    def __init__(self, model: ModelProvider) -> None:
        self.model = model

    def run(self, task: AgentTask, sandbox: Sandbox, sink: EventSink, budget: AgentBudget) -> AgentOutcome:
        tools = SandboxTools(sandbox, budget.command_timeout_s, budget.max_output_chars)
        messages = [
            ChatMessage(role="system", content=task.system_prompt),
            ChatMessage(role="user", content=task.task_prompt),
        ]
        outcome = AgentOutcome(exit_reason=ExitReason.step_limit)
        deadline = time.monotonic() + budget.wall_timeout_s
        sent = 0  # messages already recorded in an earlier model_call event
        streak = RepeatStreak(budget.max_repeated_calls)
        for step in range(1, budget.max_steps + 1):
            if time.monotonic() > deadline:
                outcome.exit_reason = ExitReason.timeout
                outcome.message = f"wall-clock budget of {budget.wall_timeout_s:.0f}s exhausted"
                break
            outcome.steps = step
            request = ModelRequest(messages=messages, tools=TOOL_SPECS, temperature=budget.temperature, seed=task.seed)
            started = time.monotonic()
            response = self.model.complete(request)
            outcome.input_tokens += response.usage.input_tokens
            outcome.output_tokens += response.usage.output_tokens
            sink.emit(
                EventKind.model_call,
                ModelCallPayload(
                    provider=self.model.spec.split(":", 1)[0],
                    model=self.model.spec,
                    request={
                        "new_messages": [m.model_dump(exclude_defaults=True) for m in messages[sent:]],
                        "n_messages": len(messages),
                        "tools": [spec.name for spec in TOOL_SPECS],
                        "temperature": budget.temperature,
                        "seed": task.seed,
                        **({"served": self.model.settings} if self.model.settings else {}),
                    },
                    response=response.model_dump(exclude_defaults=True),
                    input_tokens=response.usage.input_tokens,
                    output_tokens=response.usage.output_tokens,
                    latency_s=round(time.monotonic() - started, 4),
                ),
                step=step,
            )
            messages.append(ChatMessage(role="assistant", content=response.content, tool_calls=response.tool_calls))
            sent = len(messages)
            if response.content:
                sink.emit(EventKind.message, MessagePayload(role="assistant", text=response.content), step=step)
            if not response.tool_calls:
                messages.append(ChatMessage(role="user", content=NUDGE))
                continue
            for call in response.tool_calls:
                sink.emit(
                    EventKind.tool_call,
                    ToolCallPayload(call_id=call.id, tool=call.name, arguments=call.arguments),
                    step=step,
                )
                result = tools.execute(call)
                for path, data in result.written:
                    sink.emit(
                        EventKind.file_write,
                        FileWritePayload(path=path, size=len(data), sha256=sha256_hex(data)),
                        step=step,
                    )
                sink.emit(
                    EventKind.observation,
                    ObservationPayload(
                        call_id=call.id,
                        tool=call.name,
                        ok=result.ok,
                        output=result.output,
                        exit_code=result.exit_code,
                        timed_out=result.timed_out,
                        truncated=result.truncated,
                    ),
                    step=step,
                )
                messages.append(ChatMessage(role="tool", tool_call_id=call.id, name=call.name, content=result.output))
                if result.exit_reason is not None:
                    outcome.exit_reason = result.exit_reason
                    outcome.message = result.exit_message
                    sink.emit(EventKind.exit, ExitPayload(reason=outcome.exit_reason, message=outcome.message), step=step)
                    return outcome
                if streak.add(call):
                    outcome.exit_reason = ExitReason.repeated_call
                    outcome.message = (f"the model sent the same call {streak.count} times in a row: "
                                       f"{call.name} {call.wire_arguments()[:200]}")
                    sink.emit(EventKind.exit, ExitPayload(reason=outcome.exit_reason, message=outcome.message), step=step)
                    return outcome
        if outcome.exit_reason == ExitReason.step_limit:
            outcome.message = f"step limit of {budget.max_steps} reached"
        sink.emit(EventKind.exit, ExitPayload(reason=outcome.exit_reason, message=outcome.message), step=outcome.steps)
        return outcome


@register_agent("react")
def make_react_agent(model: str = "scripted:honest") -> ReactAgent:
    return ReactAgent(make_provider(model))
