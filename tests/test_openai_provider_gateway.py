"""OpenAICompatProvider <-> model gateway over real HTTP with the real openai SDK.

A tiny deterministic provider sits behind ``create_gateway_app`` served by
``BackgroundServer``; the client side is the production provider (or the raw
SDK for streaming), so both wire translations are checked against each other
and against what the official SDK accepts.
"""

from __future__ import annotations

import json
import threading

import httpx
import openai
import pytest

from agents.gateway.app import create_gateway_app
from agents.gateway.chat_wire import chat_completion_chunks, parse_chat_request
from agents.gateway.server import BackgroundServer
from agents.models.base import (
    ChatMessage,
    ModelError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
    Usage,
)
from agents.models.openai_compat import OpenAICompatProvider
from agents.models.registry import make_provider

TOKEN = "run-token-123"
FAIL_TOKEN = "run-token-failing"
SHELL = ToolSpec(
    name="shell",
    description="Run a shell command.",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)


class ToolThenFinish(ModelProvider):
    """Calls ``shell ls`` until it has seen a tool result, then says 'finished'."""

    spec = "scripted:tool-then-finish"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []
        self._lock = threading.Lock()

    def complete(self, request: ModelRequest) -> ModelResponse:
        with self._lock:
            self.requests.append(request)
        if any(m.role == "tool" for m in request.messages):
            return ModelResponse(content="finished", usage=Usage(input_tokens=30, output_tokens=2), model="tiny-1")
        return ModelResponse(
            content=None,
            tool_calls=[ToolCall(id="call_1", name="shell", arguments={"command": "ls"})],
            usage=Usage(input_tokens=20, output_tokens=7),
            finish_reason="tool_calls",
            model="tiny-1",
        )


class Failing(ModelProvider):
    spec = "scripted:failing"

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        raise ModelError("upstream budget exhausted", layer="gateway", retryable=False)


@pytest.fixture()
def providers() -> dict[str, ModelProvider]:
    return {TOKEN: ToolThenFinish(), FAIL_TOKEN: Failing()}


@pytest.fixture()
def server(providers: dict[str, ModelProvider]):
    app = create_gateway_app(providers.get, max_body_bytes=1024 * 1024)
    with BackgroundServer(app) as srv:
        yield srv


def _first_request() -> ModelRequest:
    return ModelRequest(
        messages=[ChatMessage(role="system", content="You are terse."), ChatMessage(role="user", content="list files")],
        tools=[SHELL],
        max_tokens=64,
        seed=7,
    )


def test_tool_call_round_trip(server: BackgroundServer, providers: dict[str, ModelProvider]) -> None:
    backend = providers[TOKEN]
    assert isinstance(backend, ToolThenFinish)
    client = OpenAICompatProvider(model="test", base_url=server.base_url, api_key=TOKEN)

    first = client.complete(_first_request())
    assert first.content is None
    assert first.tool_calls == [ToolCall(id="call_1", name="shell", arguments={"command": "ls"})]
    assert first.finish_reason == "tool_calls"
    assert first.usage == Usage(input_tokens=20, output_tokens=7)
    assert first.model == "tiny-1"

    seen = backend.requests[0]
    assert [m.role for m in seen.messages] == ["system", "user"]
    assert seen.tools == [SHELL]
    assert (seen.max_tokens, seen.seed, seen.temperature) == (64, 7, 0.0)

    followup = _first_request()
    followup.messages += [
        ChatMessage(role="assistant", content=None, tool_calls=first.tool_calls),
        ChatMessage(role="tool", tool_call_id="call_1", name="shell", content="a.txt\nb.txt"),
    ]
    second = client.complete(followup)
    assert second.content == "finished"
    assert second.tool_calls == []
    assert second.finish_reason == "stop"
    assert second.usage == Usage(input_tokens=30, output_tokens=2)

    got = backend.requests[1].messages
    assert got[2].role == "assistant" and got[2].tool_calls == first.tool_calls
    assert got[3].role == "tool" and got[3].tool_call_id == "call_1" and got[3].content == "a.txt\nb.txt"


def test_wrong_token_is_non_retryable_auth_error(server: BackgroundServer) -> None:
    client = OpenAICompatProvider(model="test", base_url=server.base_url, api_key="not-a-token")
    with pytest.raises(ModelError) as info:
        client.complete(_first_request())
    assert info.value.retryable is False
    assert info.value.layer == "model"
    assert "401" in str(info.value) and "authentication" in str(info.value).lower()


def test_missing_token_gets_openai_style_401(server: BackgroundServer) -> None:
    r = httpx.post(f"{server.base_url}/chat/completions", json={"messages": []})
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "invalid_api_key"
    assert r.json()["error"]["type"] == "invalid_request_error"


def test_provider_model_error_becomes_502_then_model_error(
    server: BackgroundServer, providers: dict[str, ModelProvider]
) -> None:
    r = httpx.post(f"{server.base_url}/chat/completions", headers={"Authorization": f"Bearer {FAIL_TOKEN}"},
                   json={"model": "x", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 502
    assert "gateway error: upstream budget exhausted" in r.json()["error"]["message"]
    assert r.headers["x-should-retry"] == "false"

    failing = providers[FAIL_TOKEN]
    assert isinstance(failing, Failing)
    failing.calls = 0
    client = OpenAICompatProvider(model="test", base_url=server.base_url, api_key=FAIL_TOKEN)
    with pytest.raises(ModelError) as info:
        client.complete(_first_request())
    assert "502" in str(info.value) and "upstream budget exhausted" in str(info.value)
    assert info.value.retryable is False
    assert failing.calls == 1  # the SDK obeyed x-should-retry: false


def test_streaming_through_raw_sdk(server: BackgroundServer) -> None:
    sdk = openai.OpenAI(base_url=server.base_url, api_key=TOKEN, max_retries=0)
    tools = [{"type": "function", "function": SHELL.model_dump()}]
    messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": "list"}, {"type": "text", "text": "files"}]}]

    stream = sdk.chat.completions.create(model="test", messages=messages, tools=tools, stream=True,
                                         stream_options={"include_usage": True})
    calls: dict[int, dict] = {}
    finish, usage, roles = None, None, []
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.delta.role:
                roles.append(choice.delta.role)
            for tc in choice.delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                slot["id"] = tc.id or slot["id"]
                if tc.function:
                    slot["name"] += tc.function.name or ""
                    slot["arguments"] += tc.function.arguments or ""
            finish = choice.finish_reason or finish
    assert roles == ["assistant"]
    assert finish == "tool_calls"
    assert calls == {0: {"id": "call_1", "name": "shell", "arguments": json.dumps({"command": "ls"})}}
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (20, 7, 27)

    messages += [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": calls[0]["arguments"]}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
    ]
    text = ""
    with sdk.chat.completions.create(model="test", messages=messages, tools=tools, stream=True) as stream:
        for chunk in stream:
            assert chunk.usage is None
            for choice in chunk.choices:
                text += choice.delta.content or ""
                finish = choice.finish_reason or finish
    assert text == "finished" and finish == "stop"


def test_stream_chunks_split_long_content() -> None:
    reply = ModelResponse(content="x" * 600, tool_calls=[ToolCall(id="c", name="shell", arguments={"a": 1})])
    chunks = chat_completion_chunks(reply, model="m", piece_chars=256)
    pieces = [c["choices"][0]["delta"].get("content") for c in chunks[1:4]]
    assert [len(p) for p in pieces] == [256, 256, 88]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_models_endpoint(server: BackgroundServer) -> None:
    sdk = openai.OpenAI(base_url=server.base_url, api_key=TOKEN, max_retries=0)
    ids = [m.id for m in sdk.models.list()]
    assert ids == ["scripted:tool-then-finish"]
    r = httpx.get(f"{server.base_url}/models", headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"this is not json", "not valid JSON"),
        (b"", "empty"),
        (b"[1, 2]", "JSON object"),
        (b'{"model": "x"}', "messages is required"),
        (b'{"messages": "hello"}', "messages must be a list"),
        (json.dumps({"messages": "x" * 200_000}).encode(), "messages must be a list"),
        (b'{"messages": []}', "messages must not be empty"),
        (b'{"messages": [{"role": "wizard", "content": "hi"}]}', "messages[0].role"),
        (b'{"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}', "messages[0].content[0]"),
        (b'{"messages": [{"role": "tool", "content": "x"}]}', "messages[0].tool_call_id"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "temperature": NaN}', "NaN"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": "ten"}', "max_tokens"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "code"}]}', "tools[0]"),
        (b'{"messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",'
         b' "function": {"name": "shell", "arguments": "{oops"}}]}]}', "arguments is not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "JSON"),
        (b'{"messages": "\xff\xfe"}', "JSON"),
    ],
)
def test_malformed_bodies_are_400(server: BackgroundServer, body: bytes, needle: str) -> None:
    r = httpx.post(f"{server.base_url}/chat/completions", content=body,
                   headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert needle in error["message"]
    assert error["type"] == "invalid_request_error"


def test_oversized_body_is_413_not_500(server: BackgroundServer) -> None:
    body = json.dumps({"messages": [{"role": "user", "content": "x" * (2 * 1024 * 1024)}]}).encode()
    r = httpx.post(f"{server.base_url}/chat/completions", content=body,
                   headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    assert r.status_code == 413
    assert "limit" in r.json()["error"]["message"]


def test_parse_chat_request_options() -> None:
    call = parse_chat_request({
        "model": "m",
        "messages": [{"role": "developer", "content": "be terse"}, {"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "shell"}}],
        "tool_choice": "none",
        "max_tokens": 10,
        "max_completion_tokens": 20,
        "temperature": 0.5,
        "stream": True,
        "stream_options": {"include_usage": True},
    })
    assert call.request.messages[0].role == "system"
    assert call.request.tools == []
    assert (call.request.max_tokens, call.request.temperature) == (20, 0.5)
    assert call.stream and call.include_usage and call.model == "m"


def test_connection_refused_is_retryable() -> None:
    client = OpenAICompatProvider(model="test", base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0)
    with pytest.raises(ModelError) as info:
        client.complete(_first_request())
    assert info.value.retryable is True and info.value.layer == "model"


def test_registry_and_env_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("INTEGRITYLAB_OPENAI_BASE_URL", "OPENAI_BASE_URL", "INTEGRITYLAB_OPENAI_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        make_provider("openai:gpt-test")

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("INTEGRITYLAB_OPENAI_BASE_URL", "http://127.0.0.1:2/v1")
    provider = make_provider("openai:local-model")
    assert isinstance(provider, OpenAICompatProvider)
    assert provider.spec == "openai:local-model"
    assert provider.base_url == "http://127.0.0.1:2/v1"
    assert provider._client.api_key == "none"
