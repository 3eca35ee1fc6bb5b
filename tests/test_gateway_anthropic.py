"""``POST /v1/messages`` (Anthropic Messages API, what Claude Code speaks) through the real anthropic SDK."""

from __future__ import annotations

import json
import threading

import anthropic
import httpx
import pytest

from agents.gateway.anthropic_wire import message_events, parse_messages_request
from agents.gateway.app import create_gateway_app
from agents.gateway.server import BackgroundServer
from agents.models.base import (
    ModelError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ToolCall,
    Usage,
)

TOKEN = "run-token-anth"
FAIL_TOKEN = "run-token-anth-failing"
BASH_TOOL = {
    "name": "Bash", "description": "Run a shell command.",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}


class ToolThenFinish(ModelProvider):
    """Calls ``Bash ls`` until it has seen a tool result, then says 'finished'; 'hello' when offered no tools."""

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
            content="Let me look.",
            tool_calls=[ToolCall(id="toolu_1", name="Bash", arguments={"command": "ls"})],
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
def backend() -> ToolThenFinish:
    return ToolThenFinish()


@pytest.fixture()
def failing() -> Failing:
    return Failing()


@pytest.fixture()
def server(backend: ToolThenFinish, failing: Failing):
    providers: dict[str, ModelProvider] = {TOKEN: backend, FAIL_TOKEN: failing}
    with BackgroundServer(create_gateway_app(providers.get, max_body_bytes=1024 * 1024)) as srv:
        yield srv


@pytest.fixture()
def sdk(server: BackgroundServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key=TOKEN, max_retries=0)


def test_plain_text(sdk: anthropic.Anthropic, backend: ToolThenFinish) -> None:
    msg = sdk.messages.create(model="claude-x", max_tokens=100, system="be terse", extra_body={"temperature": 0.5},
                              messages=[{"role": "user", "content": "say hello"}])
    assert (msg.type, msg.role, msg.model, msg.stop_reason) == ("message", "assistant", "tiny-1", "end_turn")
    assert [(b.type, b.text) for b in msg.content] == [("text", "hello")]
    assert (msg.usage.input_tokens, msg.usage.output_tokens) == (5, 1)
    seen = backend.requests[0]
    assert [(m.role, m.content) for m in seen.messages] == [("system", "be terse"), ("user", "say hello")]
    assert (seen.max_tokens, seen.temperature) == (100, 0.5)


def _claude_code_like(sdk_messages: list[dict]) -> dict:
    """Fields Claude Code sends besides the conversation; all must be accepted."""
    return {
        "system": [{"type": "text", "text": "x-anthropic-billing-header: cc"},
                   {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
        "messages": sdk_messages,
        "tools": [BASH_TOOL, {"name": "DeferredToolPlaceholder", "description": "d", "defer_loading": True,
                              "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
        "extra_body": {"thinking": {"type": "adaptive"}, "context_management": {"edits": []},
                       "output_config": {"effort": "high"}},
        "metadata": {"user_id": json.dumps({"device": "d"})},
    }


def _first_turn() -> list[dict]:
    return [
        {"role": "user", "content": [{"type": "text", "text": "list files"}]},
        {"role": "system", "content": "reminder: be careful"},
    ]


def test_tool_use_round_trip(sdk: anthropic.Anthropic, backend: ToolThenFinish) -> None:
    history = _first_turn()
    first = sdk.messages.create(model="claude-x", max_tokens=8000, **_claude_code_like(history))
    assert first.stop_reason == "tool_use"
    assert [b.type for b in first.content] == ["text", "tool_use"]
    use = first.content[1]
    assert (use.id, use.name, use.input) == ("toolu_1", "Bash", {"command": "ls"})
    seen = backend.requests[0]
    assert [(m.role, m.content) for m in seen.messages] == [
        ("system", "x-anthropic-billing-header: cc\nYou are Claude Code."),
        ("user", "list files"), ("system", "reminder: be careful")]
    assert [t.name for t in seen.tools] == ["Bash", "DeferredToolPlaceholder"]
    assert seen.tools[0].parameters == BASH_TOOL["input_schema"]

    history += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt", "is_error": False,
             "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "and then?"}]},
    ]
    second = sdk.messages.create(model="claude-x", max_tokens=8000, **_claude_code_like(history))
    assert second.stop_reason == "end_turn" and second.content[0].text.startswith("finished")
    got = backend.requests[1].messages
    assert got[3].role == "assistant" and got[3].content == "Let me look."
    assert got[3].tool_calls == [ToolCall(id="toolu_1", name="Bash", arguments={"command": "ls"})]
    assert (got[4].role, got[4].tool_call_id, got[4].content) == ("tool", "toolu_1", "a.txt")
    assert (got[5].role, got[5].content) == ("user", "and then?")


def test_stream_helper(sdk: anthropic.Anthropic) -> None:
    with sdk.messages.stream(model="claude-x", max_tokens=100, messages=_first_turn(), tools=[BASH_TOOL]) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    assert final.content[0].text == "Let me look."
    assert (final.content[1].id, final.content[1].input) == ("toolu_1", {"command": "ls"})
    assert (final.usage.input_tokens, final.usage.output_tokens) == (20, 7)

    messages = _first_turn() + [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                           "input": {"command": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": [{"type": "text", "text": "a.txt"}]}]},
    ]
    with sdk.messages.stream(model="claude-x", max_tokens=100, messages=messages, tools=[BASH_TOOL]) as stream:
        text = "".join(stream.text_stream)
    assert text == "finished " + "x" * 300


def test_raw_stream_events(sdk: anthropic.Anthropic) -> None:
    events = list(sdk.messages.create(model="claude-x", max_tokens=100, messages=_first_turn(), tools=[BASH_TOOL],
                                      stream=True))
    assert [e.type for e in events] == [
        "message_start", "content_block_start", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop",
    ]
    assert events[2].delta.type == "text_delta" and events[5].delta.type == "input_json_delta"
    assert json.loads(events[5].delta.partial_json) == {"command": "ls"}
    assert events[7].delta.stop_reason == "tool_use" and events[7].usage.output_tokens == 7


def test_beta_query_string_and_bearer_auth(server: BackgroundServer) -> None:
    r = httpx.post(f"{server.url}/v1/messages?beta=true",
                   headers={"Authorization": f"Bearer {TOKEN}", "anthropic-version": "2023-06-01",
                            "anthropic-beta": "context-management-2025-06-27"},
                   json={"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 200, r.text
    assert r.json()["content"] == [{"type": "text", "text": "hello"}]

    sdk = anthropic.Anthropic(base_url=server.url, auth_token=TOKEN, max_retries=0)
    msg = sdk.beta.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert msg.content[0].text == "hello"


def test_bad_key_is_authentication_error(server: BackgroundServer) -> None:
    sdk = anthropic.Anthropic(base_url=server.url, api_key="wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as info:
        sdk.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert info.value.body["error"]["type"] == "authentication_error"
    r = httpx.post(f"{server.url}/v1/messages", json={"messages": []})
    assert r.status_code == 401
    assert r.json()["type"] == "error" and r.json()["error"]["type"] == "authentication_error"


def test_provider_failure_is_api_error_not_retried(server: BackgroundServer, failing: Failing) -> None:
    sdk = anthropic.Anthropic(base_url=server.url, api_key=FAIL_TOKEN, max_retries=2)
    with pytest.raises(anthropic.APIStatusError) as info:
        sdk.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert info.value.status_code == 502
    assert info.value.body["error"] == {"type": "api_error", "message": "gateway error: upstream budget exhausted"}
    assert failing.calls == 1  # x-should-retry: false honoured


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"max_tokens": 5}, "messages is required"),
        ({"messages": []}, "messages must not be empty"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "user"}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}, "messages[0].content[0].type"),
        ({"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}, "messages[0].content[0].tool_use_id"),
        ({"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": 3}]}]},
         "messages[0].content[0].input"),
        ({"system": 5, "messages": [{"role": "user", "content": "hi"}]}, "system"),
        ({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "web_search_20250305",
                                                                      "name": "web_search"}]}, "tools[0].type"),
        ({"messages": [{"role": "user", "content": "hi"}], "tools": [{"input_schema": {}}]}, "tools[0].name"),
        ({"messages": [{"role": "user", "content": "hi"}], "tool_choice": {"type": "any"}}, "tool_choice"),
        ({"messages": [{"role": "user", "content": "hi"}], "stop_sequences": ["X"]}, "stop_sequences"),
        ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": "lots"}, "max_tokens"),
        ({"messages": [{"role": "user", "content": "hi"}], "temperature": 1.5}, "temperature"),
    ],
)
def test_malformed_is_400(server: BackgroundServer, body: dict, needle: str) -> None:
    r = httpx.post(f"{server.url}/v1/messages", json=body, headers={"x-api-key": TOKEN})
    assert r.status_code == 400, r.text
    assert r.json()["type"] == "error"
    assert r.json()["error"]["type"] == "invalid_request_error"
    assert needle in r.json()["error"]["message"]


def test_malformed_json_and_sdk_bad_request(server: BackgroundServer, sdk: anthropic.Anthropic) -> None:
    r = httpx.post(f"{server.url}/v1/messages", content=b"{nope", headers={"x-api-key": TOKEN})
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
    with pytest.raises(anthropic.BadRequestError, match="stop_sequences"):
        sdk.messages.create(model="m", max_tokens=10, stop_sequences=["X"],
                            messages=[{"role": "user", "content": "hi"}])
    r = httpx.get(f"{server.url}/v1/messages", headers={"x-api-key": TOKEN})
    assert r.status_code == 405 and r.json()["type"] == "error"


def test_parse_tool_result_error_and_thinking_blocks() -> None:
    call = parse_messages_request({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"},
                                          {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "boom",
                                      "is_error": True}]},
    ], "tool_choice": {"type": "none"}, "tools": [BASH_TOOL]})
    msgs = call.request.messages
    assert [m.role for m in msgs] == ["user", "assistant", "tool"]
    assert msgs[1].content is None and msgs[1].tool_calls[0].id == "t1"
    assert msgs[2].content == "Error: boom"
    assert call.request.tools == []


def test_truncated_reply_stops_with_max_tokens() -> None:
    events = message_events(ModelResponse(content="abc", finish_reason="length"), model="m")
    assert events[-2]["delta"]["stop_reason"] == "max_tokens"


# ---------------------------------------------------------------- the anthropic: provider against the gateway


def test_anthropic_provider_round_trip(server: BackgroundServer, backend: ToolThenFinish) -> None:
    from agents.models.anthropic_provider import AnthropicProvider
    from agents.models.base import ChatMessage, ToolSpec

    client = AnthropicProvider(model="claude-x", base_url=server.url, api_key=TOKEN)
    shell = ToolSpec(name="Bash", description="Run.", parameters=BASH_TOOL["input_schema"])
    request = ModelRequest(messages=[ChatMessage(role="system", content="be terse"),
                                     ChatMessage(role="user", content="list files")],
                           tools=[shell], max_tokens=64, temperature=0.25)
    first = client.complete(request)
    assert first.content == "Let me look." and first.finish_reason == "tool_calls"
    assert first.tool_calls == [ToolCall(id="toolu_1", name="Bash", arguments={"command": "ls"})]
    assert first.usage == Usage(input_tokens=20, output_tokens=7) and first.model == "tiny-1"
    seen = backend.requests[0]
    assert [(m.role, m.content) for m in seen.messages] == [("system", "be terse"), ("user", "list files")]
    assert (seen.tools, seen.max_tokens, seen.temperature) == ([shell], 64, 0.25)

    request.messages += [
        ChatMessage(role="assistant", content=first.content, tool_calls=first.tool_calls),
        ChatMessage(role="tool", tool_call_id="toolu_1", content="a.txt"),
        ChatMessage(role="system", content="reminder"),
    ]
    second = client.complete(request)
    assert second.content.startswith("finished") and second.finish_reason == "stop"
    got = backend.requests[1].messages
    assert [m.role for m in got] == ["system", "user", "assistant", "tool", "system"]
    assert got[2].tool_calls == first.tool_calls and got[3].content == "a.txt"


def test_anthropic_provider_errors(server: BackgroundServer, failing: Failing) -> None:
    from agents.models.anthropic_provider import AnthropicProvider
    from agents.models.base import ChatMessage

    request = ModelRequest(messages=[ChatMessage(role="user", content="hi")])
    with pytest.raises(ModelError) as info:
        AnthropicProvider(model="m", base_url=server.url, api_key="wrong").complete(request)
    assert "401" in str(info.value) and info.value.retryable is False
    with pytest.raises(ModelError) as info:
        AnthropicProvider(model="m", base_url=server.url, api_key=FAIL_TOKEN).complete(request)
    assert "502" in str(info.value) and "upstream budget exhausted" in str(info.value)
    assert info.value.retryable is False and failing.calls == 1
    with pytest.raises(ModelError) as info:
        AnthropicProvider(model="m", base_url="http://127.0.0.1:9", api_key="k", max_retries=0).complete(request)
    assert info.value.retryable is True


def test_anthropic_registry_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    from agents.models.anthropic_provider import AnthropicProvider
    from agents.models.registry import make_provider

    for name in ("INTEGRITYLAB_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL", "INTEGRITYLAB_ANTHROPIC_API_KEY",
                 "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ModelError, match="ANTHROPIC_API_KEY"):
        make_provider("anthropic:claude-x")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("INTEGRITYLAB_ANTHROPIC_BASE_URL", "http://127.0.0.1:2")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k1")
    monkeypatch.setenv("INTEGRITYLAB_ANTHROPIC_API_KEY", "k2")
    provider = make_provider("anthropic:claude-x")
    assert isinstance(provider, AnthropicProvider) and provider.spec == "anthropic:claude-x"
    assert provider.base_url == "http://127.0.0.1:2" and provider._client.api_key == "k2"
