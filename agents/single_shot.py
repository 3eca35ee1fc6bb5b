"""The single-shot agent: one request, one answer, for probe and mcq scenarios.

It records the exchange exactly as the ReAct agent records its model calls. An
empty completion is recorded as an empty message (TRACES counts a persistent
empty completion as a refusal — that policy is the judge's, not the agent's);
an upstream failure propagates as ``ModelError`` and is recorded with its layer.
"""

from __future__ import annotations

import time

from agents.base import Agent, AgentBudget, AgentOutcome, AgentTask, register_agent
from agents.models.base import ChatMessage, ModelProvider, ModelRequest
from agents.models.registry import make_provider
from sandboxes.base import Sandbox
from scenarios.trajectory import EventKind, EventSink, ExitPayload, ExitReason, MessagePayload, ModelCallPayload


class SingleShotAgent(Agent):
    name = "single_shot"
    needs_sandbox = False

    def __init__(self, model: ModelProvider) -> None:
        self.model = model

    def run(self, task: AgentTask, sandbox: Sandbox | None, sink: EventSink, budget: AgentBudget) -> AgentOutcome:
        request = ModelRequest(
            messages=[ChatMessage(role="system", content=task.system_prompt),
                      ChatMessage(role="user", content=task.task_prompt)],
            temperature=budget.temperature, seed=task.seed,
        )
        started = time.monotonic()
        response = self.model.complete(request)
        sink.emit(EventKind.model_call, ModelCallPayload(
            provider=self.model.spec.split(":", 1)[0], model=self.model.spec,
            request={"new_messages": [m.model_dump(exclude_defaults=True) for m in request.messages],
                     "n_messages": 2, "tools": [], "temperature": budget.temperature, "seed": task.seed},
            response=response.model_dump(exclude_defaults=True),
            input_tokens=response.usage.input_tokens, output_tokens=response.usage.output_tokens,
            latency_s=round(time.monotonic() - started, 4),
        ), step=1)
        text = response.content or ""
        sink.emit(EventKind.message, MessagePayload(role="assistant", text=text), step=1)
        message = "empty completion" if not text.strip() else ""
        sink.emit(EventKind.exit, ExitPayload(reason=ExitReason.done, message=message), step=1)
        return AgentOutcome(exit_reason=ExitReason.done, message=message, steps=1,
                            input_tokens=response.usage.input_tokens, output_tokens=response.usage.output_tokens)


@register_agent("single_shot")
def make_single_shot_agent(model: str = "scripted:honest") -> SingleShotAgent:
    return SingleShotAgent(make_provider(model))
