"""``POST /v1/responses`` (OpenAI Responses API, what Codex CLI speaks) through the real openai SDK."""

from __future__ import annotations

import json
import threading

import httpx
import openai
import pytest

from agents.gateway.app import create_gateway_app
from agents.gateway.responses_wire import parse_responses_request, response_events
from agents.gateway.server import BackgroundServer
from agents.models.base import (
    ModelError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ToolCall,
    Usage,
)

TOKEN = "run-token-resp"
FAIL_TOKEN = "run-token-resp-failing"
SHELL_TOOL = {
    "type": "function", "name": "exec_command", "description": "Run a shell command.",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
    "strict": False,
}


class ToolThenFinish(ModelProvider):
    """Calls ``exec_command ls`` until it has seen a tool result, then says 'finished'."""

    spec = "scripted:tool-then-finish"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []
        self._lock = threading.Lock()

    def complete(self, request: ModelRequest) -> ModelResponse:
        with self._lock:
            self.requests.append(request)
        if any(m.role == "tool" for m in request.messages):
            return ModelResponse(content="finished " + "x" * 300, usage=Usage(input_tokens=30, output_tokens=2),
                                 model="tiny-1")
        if not request.tools:
            return ModelResponse(content="hello", usage=Usage(input_tokens=5, output_tokens=1), model="tiny-1")
        return ModelResponse(
            content=None,
            tool_calls=[ToolCall(id="call_1", name="exec_command", arguments={"cmd": "ls"})],
            usage=Usage(input_tokens=20, output_tokens=7),
            finish_reason="tool_calls",
            model="tiny-1",
        )


class Failing(ModelProvider):
    spec = "scripted:failing"

    def complete(self, request: ModelRequest) -> ModelResponse:
        raise ModelError("upstream budget exhausted", layer="gateway", retryable=False)


@pytest.fixture()
def backend() -> ToolThenFinish:
    return ToolThenFinish()


@pytest.fixture()
def server(backend: ToolThenFinish):
    providers: dict[str, ModelProvider] = {TOKEN: backend, FAIL_TOKEN: Failing()}
    with BackgroundServer(create_gateway_app(providers.get, max_body_bytes=1024 * 1024)) as srv:
        yield srv


@pytest.fixture()
def sdk(server: BackgroundServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=TOKEN, max_retries=0)


def test_plain_text(sdk: openai.OpenAI, backend: ToolThenFinish) -> None:
    resp = sdk.responses.create(model="m", input="say hello", instructions="be terse", max_output_tokens=50,
                                temperature=0.3)
    assert resp.object == "response" and resp.status == "completed" and resp.id.startswith("resp_")
    assert resp.model == "tiny-1"
    assert resp.output_text == "hello"
    assert [item.type for item in resp.output] == ["message"]
    assert resp.usage is not None
    assert (resp.usage.input_tokens, resp.usage.output_tokens, resp.usage.total_tokens) == (5, 1, 6)
    seen = backend.requests[0]
    assert [(m.role, m.content) for m in seen.messages] == [("system", "be terse"), ("user", "say hello")]
    assert (seen.max_tokens, seen.temperature, seen.tools) == (50, 0.3, [])


def _codex_like_input() -> list[dict]:
    """What Codex sends: developer messages, an env-context user message, the prompt — no instructions."""
    return [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "system prompt"}]},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "permissions"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<env/>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
    ]


def test_tool_call_round_trip_with_codex_extras(sdk: openai.OpenAI, backend: ToolThenFinish,
                                                server: BackgroundServer) -> None:
    extras = {"tool_choice": "auto", "parallel_tool_calls": True, "reasoning": {"summary": "auto"},
              "store": False, "include": ["reasoning.encrypted_content"], "prompt_cache_key": "k"}
    history = _codex_like_input()
    first = sdk.responses.create(model="m", input=history, tools=[SHELL_TOOL],
                                 extra_body={"client_metadata": {"x": "y"}}, **extras)
    assert [item.type for item in first.output] == ["function_call"]
    call = first.output[0]
    assert (call.call_id, call.name, json.loads(call.arguments)) == ("call_1", "exec_command", {"cmd": "ls"})
    assert call.id and call.id.startswith("fc_")
    seen = backend.requests[0]
    assert [m.role for m in seen.messages] == ["system", "system", "user", "user"]
    assert seen.tools[0].name == "exec_command" and seen.tools[0].parameters == SHELL_TOOL["parameters"]

    history += [
        {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "a.txt\nb.txt"},
    ]
    second = sdk.responses.create(model="m", input=history, tools=[SHELL_TOOL], **extras)
    assert second.output_text.startswith("finished")
    got = backend.requests[1].messages
    assert got[4].role == "assistant" and got[4].tool_calls == [ToolCall(id="call_1", name="exec_command",
                                                                         arguments={"cmd": "ls"})]
    assert (got[5].role, got[5].tool_call_id, got[5].name, got[5].content) == (
        "tool", "call_1", "exec_command", "a.txt\nb.txt")


def test_streaming_events(sdk: openai.OpenAI) -> None:
    events = list(sdk.responses.create(model="m", input=_codex_like_input(), tools=[SHELL_TOOL], stream=True))
    types = [e.type for e in events]
    assert types == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.function_call_arguments.delta", "response.function_call_arguments.done",
        "response.output_item.done", "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    done = events[-1].response
    assert done.status == "completed" and done.usage.total_tokens == 27
    assert done.output[0].call_id == "call_1" and json.loads(done.output[0].arguments) == {"cmd": "ls"}

    history = _codex_like_input() + [
        {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": '{"cmd":"ls"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
    ]
    text_events = list(sdk.responses.create(model="m", input=history, tools=[SHELL_TOOL], stream=True))
    assert [e.type for e in text_events] == [
        "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
        "response.content_part.done", "response.output_item.done", "response.completed",
    ]
    assert "".join(e.delta for e in text_events if e.type == "response.output_text.delta") == "finished " + "x" * 300


def test_stream_helper(sdk: openai.OpenAI) -> None:
    with sdk.responses.stream(model="m", input=_codex_like_input(), tools=[SHELL_TOOL]) as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.output[0].type == "function_call" and final.output[0].call_id == "call_1"

    with sdk.responses.stream(model="m", input="hi") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == "hello" and final.output_text == "hello"


def test_hosted_tools_are_dropped_and_reported(server: BackgroundServer, backend: ToolThenFinish) -> None:
    body = {"model": "m", "input": "hi", "tools": [
        SHELL_TOOL, {"type": "web_search", "external_web_access": False},
        {"type": "namespace", "name": "multi_agent_v1", "tools": []}]}
    r = httpx.post(f"{server.base_url}/responses", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200, r.text
    assert r.headers["x-integritylab-dropped-tools"] == "web_search,namespace:multi_agent_v1"
    assert [t.name for t in backend.requests[0].tools] == ["exec_command"]


def test_bad_token_is_401(server: BackgroundServer) -> None:
    sdk = openai.OpenAI(base_url=server.base_url, api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as info:
        sdk.responses.create(model="m", input="hi")
    assert info.value.status_code == 401
    r = httpx.post(f"{server.base_url}/responses", json={"input": "hi"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"


def test_provider_failure_is_502_not_retried(server: BackgroundServer) -> None:
    sdk = openai.OpenAI(base_url=server.base_url, api_key=FAIL_TOKEN, max_retries=2)
    with pytest.raises(openai.APIStatusError) as info:
        sdk.responses.create(model="m", input="hi")
    assert info.value.status_code == 502
    assert info.value.response.headers["x-should-retry"] == "false"
    assert "upstream budget exhausted" in info.value.message


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m"}, "input"),
        ({"input": 5}, "input"),
        ({"input": []}, "input"),
        ({"input": [{"type": "message", "role": "wizard", "content": "x"}]}, "input[0].role"),
        ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}, "input[0].content[0]"),
        ({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, "input[0].call_id"),
        ({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{oops"}]},
         "input[0].arguments"),
        ({"input": [{"type": "function_call_output", "output": "x"}]}, "input[0].call_id"),
        ({"input": [{"type": "item_reference", "id": "x"}]}, "input[0].type"),
        ({"input": "hi", "tools": [{"type": "file_search"}]}, "tools[0].type"),
        ({"input": "hi", "tools": [{"type": "function"}]}, "tools[0].name"),
        ({"input": "hi", "tool_choice": "required"}, "tool_choice"),
        ({"input": "hi", "max_output_tokens": 0}, "max_output_tokens"),
        ({"input": "hi", "temperature": 3}, "temperature"),
        ({"input": "hi", "previous_response_id": "resp_1"}, "previous_response_id"),
        ({"input": "hi", "text": {"format": {"type": "json_schema"}}}, "text.format"),
        ({"input": "hi", "stream": "yes"}, "stream"),
    ],
)
def test_malformed_is_400_naming_the_field(server: BackgroundServer, body: dict, param: str) -> None:
    r = httpx.post(f"{server.base_url}/responses", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == param and param in error["message"]
    assert error["type"] == "invalid_request_error"


def test_sdk_surfaces_400(sdk: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="tools\\[0\\].type"):
        sdk.responses.create(model="m", input="hi", tools=[{"type": "file_search", "vector_store_ids": ["v"]}])


def test_parse_merges_text_and_calls_into_one_assistant_turn() -> None:
    call = parse_responses_request({"input": [
        {"role": "user", "content": "go"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "running"}]},
        {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
        {"type": "function_call", "call_id": "b", "name": "g", "arguments": '{"x": 1}'},
        {"type": "reasoning", "summary": [], "encrypted_content": "zzz"},
        {"type": "function_call_output", "call_id": "a", "output": [{"type": "input_text", "text": "A"}]},
        {"type": "function_call_output", "call_id": "b", "output": "B"},
    ], "tool_choice": "none", "tools": [SHELL_TOOL]})
    msgs = call.request.messages
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "tool"]
    assert msgs[1].content == "running" and [c.id for c in msgs[1].tool_calls] == ["a", "b"]
    assert (msgs[2].name, msgs[2].content, msgs[3].name) == ("f", "A", "g")
    assert call.request.tools == []


def test_truncated_reply_ends_incomplete() -> None:
    call = parse_responses_request({"input": "hi"})
    reply = ModelResponse(content="abc", finish_reason="length")
    events = response_events(call, reply, model="m", response_id="resp_x")
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
