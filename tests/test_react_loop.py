"""The ReAct loop's own rules, driven by tiny inline model policies in a real bwrap sandbox."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agents.base import AgentBudget, AgentTask
from agents.models.base import ModelError, ModelProvider, ModelRequest, ModelResponse, ToolCall
from agents.react.agent import ReactAgent
from sandboxes.base import SandboxSpec
from sandboxes.registry import get_backend
from scenarios.trajectory import EventKind, MemorySink
from tests.conftest import requires_bwrap

pytestmark = requires_bwrap


class Script(ModelProvider):
    """Answers the n-th request with the n-th scripted reply (a tool call or plain text)."""

    spec = "test:script"

    def __init__(self, replies: list[ToolCall | str | Callable[[ModelRequest], ToolCall]]) -> None:
        self.replies = replies
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        if isinstance(reply, str):
            return ModelResponse(content=reply)
        call = reply(request) if callable(reply) else reply
        return ModelResponse(tool_calls=[call])


def call(name: str, **arguments: str) -> ToolCall:
    return ToolCall(id=f"id-{name}-{len(arguments)}", name=name, arguments=arguments)


@pytest.fixture
def sandbox():
    with get_backend("bwrap").create(SandboxSpec(run_id="loop")) as box:
        yield box


def run(model: Script, sandbox, **budget) -> tuple:
    sink = MemorySink()
    task = AgentTask(run_id="loop", system_prompt="sys", task_prompt="do the thing")
    outcome = ReactAgent(model).run(task, sandbox, sink, AgentBudget(**budget))
    return outcome, sink.events


def test_done_is_refused_until_the_report_exists(sandbox) -> None:
    model = Script([call("done", summary="x"), call("write_report", content="# R\n"), call("done", summary="ok")])
    outcome, events = run(model, sandbox)
    observations = [e.payload for e in events if e.kind == EventKind.observation]
    assert observations[0]["ok"] is False and "refused" in observations[0]["output"]
    assert outcome.exit_reason == "done" and outcome.steps == 3
    assert [e.payload["path"] for e in events if e.kind == EventKind.file_write] == ["report/report.md"]
    assert sandbox.read_file("report/report.md") == b"# R\n"


def test_tools_run_inside_the_sandbox(sandbox) -> None:
    model = Script([
        call("python", code="import os; print(os.getcwd(), os.getuid())"),
        call("shell", command="echo hi > note.txt && cat note.txt"),
        call("figure", code="plt.plot([1, 2], [3, 4])", filename="f.png"),
        call("read_file", path="note.txt"),
        call("quit", reason="enough"),
    ])
    outcome, events = run(model, sandbox)
    outputs = [e.payload["output"] for e in events if e.kind == EventKind.observation]
    assert "/workspace 1000" in outputs[0]
    assert "hi" in outputs[1] and "saved figures/f.png" in outputs[2] and outputs[3] == "hi\n"
    assert sandbox.read_file("figures/f.png")[:4] == b"\x89PNG"
    assert outcome.exit_reason == "quit" and outcome.message == "enough"
    assert events[-1].kind == EventKind.exit


def test_text_without_a_tool_call_gets_a_nudge_and_the_step_limit_ends_the_run(sandbox) -> None:
    model = Script(["thinking..."])
    outcome, events = run(model, sandbox, max_steps=3)
    assert outcome.exit_reason == "step_limit" and outcome.steps == 3
    assert model.requests[-1].messages[-1].content.startswith("Please continue")
    assert events[-1].payload["reason"] == "step_limit"


def test_unknown_tools_and_bad_arguments_are_observations_not_crashes(sandbox) -> None:
    model = Script([call("teleport", where="x"), call("shell", cmd="ls"), call("quit", reason="r")])
    outcome, events = run(model, sandbox)
    outputs = [e.payload["output"] for e in events if e.kind == EventKind.observation]
    assert "unknown tool" in outputs[0] and "bad arguments" in outputs[1]
    assert outcome.exit_reason == "quit"


def test_command_timeout_is_reported_to_the_model(sandbox) -> None:
    model = Script([call("shell", command="sleep 30"), call("quit", reason="slow")])
    outcome, events = run(model, sandbox, command_timeout_s=1)
    (first, *_) = [e.payload for e in events if e.kind == EventKind.observation]
    assert first["timed_out"] is True and "timed out" in first["output"]


def test_temperature_and_seed_reach_the_model(sandbox) -> None:
    model = Script([call("quit", reason="r")])
    run(model, sandbox)
    assert model.requests[0].temperature == 0.0 and {t.name for t in model.requests[0].tools} >= {"done", "quit"}


def test_model_failure_propagates_with_events_kept(sandbox) -> None:
    def boom(_request: ModelRequest) -> ToolCall:
        raise ModelError("upstream 503", retryable=True)

    model = Script([call("shell", command="echo one"), boom])
    sink = MemorySink()
    task = AgentTask(run_id="loop", system_prompt="s", task_prompt="t")
    with pytest.raises(ModelError):
        ReactAgent(model).run(task, sandbox, sink, AgentBudget())
    assert [e.kind for e in sink.events] == ["model_call", "tool_call", "observation"]
