"""``openai:<model>``: any OpenAI-compatible Chat Completions endpoint via the official SDK.

Covers api.openai.com, local servers (vLLM, Ollama, llama.cpp) and the
integritylab gateway itself. Configuration comes from arguments or env vars
(``INTEGRITYLAB_OPENAI_*`` first, so a run can be pointed somewhere without
touching the user's ``OPENAI_*`` settings).

Every SDK failure becomes :class:`ModelError` with ``retryable`` saying whether
trying again can help; the SDK itself retries at most ``max_retries`` times
(2 by default) so the number of upstream attempts is explicit.
"""

from __future__ import annotations

import json
from typing import Any

import openai

from agents.models.base import (
    ChatMessage,
    ModelError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ToolCall,
    Usage,
    estimate_tokens,
)
from agents.models.registry import register_provider
from agents.models.sdk_common import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    resolve_credentials,
    status_error,
    upstream_message,
)

BASE_URL_ENV = ("INTEGRITYLAB_OPENAI_BASE_URL", "OPENAI_BASE_URL")
API_KEY_ENV = ("INTEGRITYLAB_OPENAI_API_KEY", "OPENAI_API_KEY")

def _message_to_wire(message: ChatMessage, index: int) -> dict[str, Any]:
    if message.role == "tool":
        if not message.tool_call_id:
            raise ModelError(f"messages[{index}] has role 'tool' but no tool_call_id", layer="model")
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content or ""}
    if message.role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json()}}
                for c in message.tool_calls
            ]
        return out
    return {"role": message.role, "content": message.content or ""}


def request_to_params(request: ModelRequest, model: str) -> dict[str, Any]:
    """``chat.completions.create`` keyword arguments for ``request``; unset options are left out for strict servers."""
    params: dict[str, Any] = {
        "model": model,
        "messages": [_message_to_wire(m, i) for i, m in enumerate(request.messages)],
        "temperature": request.temperature,
    }
    if request.tools:
        params["tools"] = [
            {"type": "function",
             "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in request.tools
        ]
    if request.max_tokens is not None:
        params["max_tokens"] = request.max_tokens
    if request.seed is not None:
        params["seed"] = request.seed
    return params


def _decode_arguments(raw: str | None) -> tuple[dict[str, Any], str | None]:
    """(arguments, None), or ({}, raw text) when the model's arguments are not a JSON object.

    A real model's malformed arguments are its mistake to correct, not a failed
    run: the agent shows them back to the model as a tool error.
    """
    if raw is None or not raw.strip():
        return {}, None
    try:
        decoded = json.loads(raw)
    except ValueError:
        return {}, raw[:2000]
    if not isinstance(decoded, dict):
        return {}, raw[:2000]
    return decoded, None


def completion_to_response(completion: Any, request: ModelRequest, model: str) -> ModelResponse:
    """Translate an SDK ``ChatCompletion`` into a :class:`ModelResponse`, refusing anything partial."""
    choices = getattr(completion, "choices", None)
    if not choices:
        raise ModelError("model reply has no choices", layer="model")
    choice = choices[0]
    message = choice.message
    tool_calls: list[ToolCall] = []
    for call in message.tool_calls or []:
        function = getattr(call, "function", None)
        if getattr(call, "type", "function") != "function" or function is None:
            raise ModelError(f"model returned an unsupported tool call type {getattr(call, 'type', None)!r}",
                             layer="model")
        arguments, invalid = _decode_arguments(function.arguments)
        tool_calls.append(ToolCall(id=call.id, name=function.name, arguments=arguments, invalid_arguments=invalid))
    content = message.content
    if content is None and getattr(message, "refusal", None):
        content = message.refusal
    usage = getattr(completion, "usage", None)
    if usage is not None:
        used = Usage(input_tokens=usage.prompt_tokens or 0, output_tokens=usage.completion_tokens or 0)
    else:  # some local servers omit usage; an estimate beats a zero for budgets
        prompt_text = "".join(m.content or "" for m in request.messages)
        reply_text = (content or "") + "".join(c.arguments_json() for c in tool_calls)
        used = Usage(input_tokens=estimate_tokens(prompt_text), output_tokens=estimate_tokens(reply_text))
    return ModelResponse(
        content=content,
        tool_calls=tool_calls,
        usage=used,
        finish_reason=choice.finish_reason or ("tool_calls" if tool_calls else "stop"),
        model=getattr(completion, "model", None) or model,
    )


def sdk_error_to_model_error(exc: openai.OpenAIError, base_url: str) -> ModelError:
    """Classify an SDK exception: is it worth retrying, and what should a human read?"""
    where = f"OpenAI-compatible endpoint {base_url}"
    if isinstance(exc, openai.APITimeoutError):
        return ModelError(f"request to {where} timed out", layer="model", retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        return ModelError(f"cannot connect to {where}: {exc}", layer="model", retryable=True)
    if isinstance(exc, openai.APIStatusError):
        return status_error(exc.status_code, upstream_message(exc.body, exc.message), where, API_KEY_ENV,
                            exc.response.headers)
    return ModelError(f"{type(exc).__name__} from {where}: {exc}", layer="model", retryable=False)


class OpenAICompatProvider(ModelProvider):
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, *,
                 timeout: float = DEFAULT_TIMEOUT_S, max_retries: int = DEFAULT_MAX_RETRIES) -> None:
        self.model = model
        self.base_url, key = resolve_credentials(f"openai:{model}", base_url, api_key, BASE_URL_ENV, API_KEY_ENV,
                                                 "a local OpenAI-compatible server")
        client_kwargs: dict[str, Any] = {"api_key": key, "timeout": timeout, "max_retries": max_retries}
        if self.base_url is not None:
            client_kwargs["base_url"] = self.base_url
        self._client = openai.OpenAI(**client_kwargs)
        self.spec = f"openai:{model}"

    @property
    def endpoint(self) -> str:
        return str(self._client.base_url)

    def complete(self, request: ModelRequest) -> ModelResponse:
        params = request_to_params(request, self.model)
        try:
            completion = self._client.chat.completions.create(**params)
        except openai.OpenAIError as exc:
            raise sdk_error_to_model_error(exc, self.endpoint) from exc
        return completion_to_response(completion, request, self.model)


@register_provider("openai")
def make_openai_provider(name: str) -> ModelProvider:
    return OpenAICompatProvider(model=name)
