"""``anthropic:<model>``: the Anthropic Messages API (or anything speaking it, e.g. the gateway) via the official SDK.

Configuration comes from arguments or env vars, ``INTEGRITYLAB_ANTHROPIC_*``
first: base URL from ``INTEGRITYLAB_ANTHROPIC_BASE_URL`` / ``ANTHROPIC_BASE_URL``
(the server root, without ``/v1``), key from ``INTEGRITYLAB_ANTHROPIC_API_KEY``
/ ``ANTHROPIC_API_KEY`` (sent as ``x-api-key``).

Translation: leading system messages become ``system``; a system message later
in the conversation is sent as a ``role: "system"`` entry, as Claude Code does;
assistant tool calls become ``tool_use`` blocks and tool messages
``tool_result`` blocks in a user turn (consecutive same-role turns are merged,
as the API requires alternation). ``max_tokens`` is required by the API, so
:data:`DEFAULT_MAX_TOKENS` is sent when the request has none. ``seed`` has no
Anthropic equivalent and is not sent. ``temperature`` is sent in the body
directly, since recent SDKs no longer take it as an argument.

Every SDK failure becomes :class:`ModelError` with ``retryable`` set as in
:mod:`agents.models.openai_compat`.
"""

from __future__ import annotations

from typing import Any

import anthropic

from agents.models.base import (
    ChatMessage,
    ModelError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ToolCall,
    Usage,
)
from agents.models.registry import register_provider
from agents.models.sdk_common import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    resolve_credentials,
    status_error,
    upstream_message,
)

BASE_URL_ENV = ("INTEGRITYLAB_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL")
API_KEY_ENV = ("INTEGRITYLAB_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY")
DEFAULT_MAX_TOKENS = 4096
_FINISH = {"tool_use": "tool_calls", "max_tokens": "length", "end_turn": "stop", "stop_sequence": "stop"}


def _wire_message(message: ChatMessage, index: int) -> dict[str, Any]:
    if message.role == "tool":
        if not message.tool_call_id:
            raise ModelError(f"messages[{index}] has role 'tool' but no tool_call_id", layer="model")
        return {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content or ""}]}
    if message.role == "assistant":
        blocks: list[dict[str, Any]] = []
        if message.content:
            blocks.append({"type": "text", "text": message.content})
        blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in message.tool_calls]
        return {"role": "assistant", "content": blocks or [{"type": "text", "text": ""}]}
    return {"role": message.role, "content": [{"type": "text", "text": message.content or ""}]}


def request_to_params(request: ModelRequest, model: str) -> dict[str, Any]:
    """``messages.create`` keyword arguments for ``request``."""
    i = 0
    system: list[str] = []
    while i < len(request.messages) and request.messages[i].role == "system":
        system.append(request.messages[i].content or "")
        i += 1
    messages: list[dict[str, Any]] = []
    for index in range(i, len(request.messages)):
        wire = _wire_message(request.messages[index], index)
        if messages and messages[-1]["role"] == wire["role"]:
            messages[-1]["content"] = messages[-1]["content"] + wire["content"]
        else:
            messages.append(wire)
    params: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
        "extra_body": {"temperature": request.temperature},
    }
    if system:
        params["system"] = "\n".join(system)
    if request.tools:
        params["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                           for t in request.tools]
    return params


def message_to_response(message: Any, model: str) -> ModelResponse:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in getattr(message, "content", None) or []:
        btype = getattr(block, "type", None)
        if btype == "text":
            texts.append(block.text)
        elif btype == "tool_use":
            if not isinstance(block.input, dict):
                raise ModelError(f"model returned non-object input for tool {block.name!r}", layer="model")
            calls.append(ToolCall(id=block.id, name=block.name, arguments=block.input))
        elif btype in ("thinking", "redacted_thinking"):
            continue
        else:
            raise ModelError(f"model returned an unsupported content block {btype!r}", layer="model")
    usage = getattr(message, "usage", None)
    stop = getattr(message, "stop_reason", None) or ""
    return ModelResponse(
        content="".join(texts) if texts else None,
        tool_calls=calls,
        usage=Usage(input_tokens=getattr(usage, "input_tokens", 0) or 0,
                    output_tokens=getattr(usage, "output_tokens", 0) or 0),
        finish_reason=_FINISH.get(stop, "tool_calls" if calls else "stop"),
        model=getattr(message, "model", None) or model,
    )


def sdk_error_to_model_error(exc: anthropic.AnthropicError, base_url: str) -> ModelError:
    where = f"Anthropic endpoint {base_url}"
    if isinstance(exc, anthropic.APITimeoutError):
        return ModelError(f"request to {where} timed out", layer="model", retryable=True)
    if isinstance(exc, anthropic.APIConnectionError):
        return ModelError(f"cannot connect to {where}: {exc}", layer="model", retryable=True)
    if isinstance(exc, anthropic.APIStatusError):
        return status_error(exc.status_code, upstream_message(exc.body, exc.message), where, API_KEY_ENV,
                            exc.response.headers)
    return ModelError(f"{type(exc).__name__} from {where}: {exc}", layer="model", retryable=False)


class AnthropicProvider(ModelProvider):
    """A model behind an Anthropic Messages API endpoint."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, *,
                 timeout: float = DEFAULT_TIMEOUT_S, max_retries: int = DEFAULT_MAX_RETRIES) -> None:
        self.model = model
        self.base_url, key = resolve_credentials(f"anthropic:{model}", base_url, api_key, BASE_URL_ENV, API_KEY_ENV,
                                                 "an Anthropic-compatible server")
        kwargs: dict[str, Any] = {"api_key": key, "timeout": timeout, "max_retries": max_retries}
        if self.base_url is not None:
            kwargs["base_url"] = self.base_url
        self._client = anthropic.Anthropic(**kwargs)
        self.spec = f"anthropic:{model}"

    @property
    def endpoint(self) -> str:
        return str(self._client.base_url)

    def complete(self, request: ModelRequest) -> ModelResponse:
        params = request_to_params(request, self.model)
        try:
            message = self._client.messages.create(**params)
        except anthropic.AnthropicError as exc:
            raise sdk_error_to_model_error(exc, self.endpoint) from exc
        return message_to_response(message, self.model)


@register_provider("anthropic")
def make_anthropic_provider(name: str) -> ModelProvider:
    return AnthropicProvider(model=name)
