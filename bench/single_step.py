"""A bench-only agent: one model call, then ``done`` (imported by the bench's workers via INTEGRITYLAB_PLUGINS).

It goes through the same run path as any agent (sandbox created, seeded and
collected; events recorded; judged) but executes nothing in the sandbox, so
the bench measures orchestration, not sandbox start-up.
"""

from __future__ import annotations

import time

from agents.base import Agent, AgentBudget, AgentOutcome, AgentTask, register_agent
from agents.models.base import ChatMessage, ModelProvider, ModelRequest
from agents.models.registry import make_provider
from sandboxes.base import Sandbox
from scenarios.trajectory import EventKind, EventSink, ExitPayload, ExitReason, ModelCallPayload


class SingleStepAgent(Agent):
    name = "single-step"

    def __init__(self, model: ModelProvider) -> None:
        self.model = model

    def run(self, task: AgentTask, sandbox: Sandbox, sink: EventSink, budget: AgentBudget) -> AgentOutcome:
        started = time.monotonic()
        request = ModelRequest(messages=[ChatMessage(role="system", content=task.system_prompt),
                                         ChatMessage(role="user", content=task.task_prompt)], seed=task.seed)
        response = self.model.complete(request)
        sink.emit(EventKind.model_call, ModelCallPayload(
            provider=self.model.spec.split(":", 1)[0], model=self.model.spec, request={"n_messages": 2},
            response=response.model_dump(exclude_defaults=True), input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens, latency_s=round(time.monotonic() - started, 4)), step=1)
        sink.emit(EventKind.exit, ExitPayload(reason=ExitReason.done, message="single step"), step=1)
        return AgentOutcome(exit_reason=ExitReason.done, message="single step", steps=1,
                            input_tokens=response.usage.input_tokens, output_tokens=response.usage.output_tokens)


@register_agent("single-step")
def make_single_step(model: str = "scripted:honest") -> SingleStepAgent:
    return SingleStepAgent(make_provider(model))
