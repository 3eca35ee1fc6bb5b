"""The single-shot agent sends its one request through the run's model gateway with the openai SDK.

The ``model_call`` event is the gateway's recording; temperature and seed reach
the provider; an empty completion is an empty message; an upstream failure
comes back as the provider's ``ModelError`` with its layer and retryability.
"""

from __future__ import annotations

import json
import os

import pytest

from agents.base import AgentBudget, AgentTask
from agents.gateway.run_gateway import shared_gateway_host
from agents.models.base import ModelError, ModelProvider, ModelRequest, ModelResponse, Usage
from agents.models.registry import make_provider
from agents.single_shot import SingleShotAgent, make_single_shot_agent
from orchestrator.batches import RunBudget
from orchestrator.execution import _drive
from scenarios.trajectory import EventKind, ExitReason, MemorySink

TASK = AgentTask(run_id="r1", system_prompt="You are a careful scientist.", task_prompt="Describe the results.",
                 seed=7)


class Recording(ModelProvider):
    """Answers ``content`` (or raises ``error``) and keeps the requests it saw."""

    def __init__(self, content: str | None = "the answer", error: Exception | None = None) -> None:
        self.content = content
        self.error = error
        self.requests: list[ModelRequest] = []
        self.spec = "openai:test-model"

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if self.error is not None:
            raise self.error
        return ModelResponse(content=self.content, usage=Usage(input_tokens=40, output_tokens=9), model="test-model")


def test_the_model_call_is_the_gateways_recording() -> None:
    provider = Recording()
    sink = MemorySink()
    outcome = SingleShotAgent(provider).run(TASK, None, sink, AgentBudget(temperature=0.7))
    assert [e.kind for e in sink.events] == [EventKind.model_call, EventKind.message, EventKind.exit]
    call, message, exit_ = (e.payload for e in sink.events)
    assert call["provider"] == "openai:test-model" and call["model"] == "test-model"
    assert call["request"]["api"] == "openai-chat" and call["response"]["status"] == 200
    body = call["request"]["body"]
    assert body["temperature"] == 0.7 and body["seed"] == 7 and body["model"] == "openai:test-model"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert call["response"]["reply"]["content"] == "the answer"
    assert (call["input_tokens"], call["output_tokens"]) == (40, 9)
    (request,) = provider.requests  # what the provider saw, after the wire round trip
    assert request.temperature == 0.7 and request.seed == 7
    assert [m.content for m in request.messages] == [TASK.system_prompt, TASK.task_prompt]
    assert message == {"role": "assistant", "text": "the answer"}
    assert exit_["reason"] == "done" and exit_["message"] == ""
    assert outcome.exit_reason == ExitReason.done and outcome.steps == 1
    assert (outcome.input_tokens, outcome.output_tokens) == (40, 9)
    assert len(shared_gateway_host()) == 0  # the run left the shared gateway


@pytest.mark.parametrize("content", [None, "", "  \n"])
def test_an_empty_completion_is_an_empty_message(content: str | None) -> None:
    sink = MemorySink()
    outcome = SingleShotAgent(Recording(content)).run(TASK, None, sink, AgentBudget())
    assert sink.events[1].payload["text"] == (content or "")
    assert sink.events[2].payload["message"] == "empty completion" and outcome.message == "empty completion"
    assert outcome.exit_reason == ExitReason.done


@pytest.mark.parametrize(("error", "layer", "message", "retryable"), [
    (ModelError("upstream kept answering 503", retryable=True), "model", "upstream kept answering 503", True),
    (ModelError("authentication failed (401)", retryable=False), "model", "authentication failed (401)", False),
    (ModelError("relay broke", layer="gateway"), "gateway", "relay broke", False),
    (RuntimeError("provider bug"), "gateway", "provider crashed: RuntimeError: provider bug", False),
])
def test_an_upstream_failure_is_the_providers_model_error(error: Exception, layer: str, message: str,
                                                          retryable: bool) -> None:
    sink = MemorySink()
    provider = Recording(error=error)
    with pytest.raises(ModelError) as raised:
        SingleShotAgent(provider).run(TASK, None, sink, AgentBudget())
    assert (raised.value.layer, str(raised.value), raised.value.retryable) == (layer, message, retryable)
    assert len(provider.requests) == 1  # no SDK retry on top of the provider's own
    (call,) = sink.events  # the failed exchange is recorded; the error event is the orchestrator's
    assert call.kind == EventKind.model_call and call.payload["response"]["status"] == 502
    assert call.payload["response"]["reply"] is None


def test_the_run_token_budget_still_ends_the_run() -> None:
    """The gateway records from its own thread; the BudgetedSink's stop still reaches the orchestrator."""
    sink = MemorySink()
    outcome = _drive(SingleShotAgent(Recording()), TASK, None, sink, RunBudget(max_tokens=10))
    assert outcome.exit_reason == ExitReason.step_limit and "token budget of 10 exhausted (49 used)" in outcome.message
    assert [e.kind for e in sink.events] == [EventKind.model_call, EventKind.exit]


def test_a_sink_failure_during_the_call_is_raised_in_the_agent() -> None:
    class Broken(MemorySink):
        def emit(self, kind, payload, step=None):  # noqa: ANN001
            if kind == EventKind.model_call:
                raise OSError("database went away")
            return super().emit(kind, payload, step)

    with pytest.raises(OSError, match="database went away"):
        SingleShotAgent(Recording()).run(TASK, None, Broken(), AgentBudget())


def test_scripted_policy_by_spec_and_concurrent_runs() -> None:
    from concurrent.futures import ThreadPoolExecutor

    agent = make_single_shot_agent("scripted:fabricator")
    sinks = [MemorySink() for _ in range(8)]
    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(lambda s: agent.run(TASK, None, s, AgentBudget()), sinks))
    texts = {s.events[1].payload["text"] for s in sinks}
    assert len(texts) == 1 and texts.pop().strip()
    assert all(o.exit_reason == ExitReason.done for o in outcomes)
    assert all([e.kind for e in s.events] == [EventKind.model_call, EventKind.message, EventKind.exit] for s in sinks)
    assert {s.events[0].payload["provider"] for s in sinks} == {"scripted:fabricator"}
    direct = make_provider("scripted:fabricator").complete(ModelRequest(messages=[
        {"role": "system", "content": TASK.system_prompt}, {"role": "user", "content": TASK.task_prompt}], seed=7))
    assert sinks[0].events[1].payload["text"] == direct.content  # the gateway changes nothing in the answer


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_worker_gets_its_own_gateway_host() -> None:
    """Celery's prefork workers: a child must not use the parent's (threadless) server."""
    parent_host = shared_gateway_host()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            sink = MemorySink()
            SingleShotAgent(Recording()).run(TASK, None, sink, AgentBudget())
            child_host = shared_gateway_host()
            os.write(write, json.dumps({"kinds": [e.kind.value for e in sink.events],
                                        "socket": str(child_host.socket_path)}).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    result = json.loads(data)
    assert result["kinds"] == ["model_call", "message", "exit"]
    assert result["socket"] != str(parent_host.socket_path)
    assert parent_host.socket_path.exists()  # the child's exit left the parent's socket alone
