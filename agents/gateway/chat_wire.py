"""OpenAI Chat Completions wire format <-> :mod:`agents.models.base` types.

Pure functions, no I/O: the gateway app (and later Responses/Anthropic front
ends) use them, and tests can check them without a server.

Parsing is strict about what would change the answer (unknown roles, non-text
content parts, ``n > 1``, forced ``tool_choice``) and raises :class:`WireError`
naming the offending field, so a client learns what the gateway did not honour
instead of getting a silently different request. Fields that cannot change the
answer (``user``, ``metadata``, ``parallel_tool_calls``, echoed ``refusal`` …)
are ignored.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agents.models.base import ChatMessage, ModelRequest, ModelResponse, ToolCall, ToolSpec

#: content of a streamed message is cut into pieces of this many characters
STREAM_CONTENT_PIECE_CHARS = 256

_EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}
_ROLES = {"system", "developer", "user", "assistant", "tool"}
_PASS_THROUGH_FINISH = {"length", "content_filter"}


class WireError(ValueError):
    """The request body does not follow the wire format; ``param`` names the field (OpenAI's ``param``)."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class ChatCompletionCall:
    """A parsed request: what to ask the provider, plus how to answer on the wire."""

    request: ModelRequest
    model: str | None
    stream: bool
    include_usage: bool


# ---------------------------------------------------------------- parsing


def loads_json_body(raw: bytes) -> Any:
    """Decode a request body; NaN/Infinity and pathological nesting are client errors, not crashes."""

    def reject_constant(name: str) -> Any:
        raise WireError(f"request body is not valid JSON: {name} is not allowed")

    if not raw.strip():
        raise WireError("request body is empty; expected a JSON object")
    try:
        return json.loads(raw, parse_constant=reject_constant)
    except WireError:
        raise
    except RecursionError:
        raise WireError("request body is not valid JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise WireError(f"request body is not valid JSON: {exc}") from None


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text_content(value: Any, field: str, *, allow_null: bool) -> str | None:
    """String content or a list of text parts (joined by newlines); anything else is refused."""
    if value is None:
        if allow_null:
            return None
        raise WireError(f"{field} must not be null", param=field)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts: list[str] = []
        for k, part in enumerate(value):
            pfield = f"{field}[{k}]"
            if not isinstance(part, dict):
                raise WireError(f"{pfield} must be an object, got {_type_name(part)}", param=pfield)
            if part.get("type") != "text":
                raise WireError(
                    f"{pfield}.type {part.get('type')!r} is not supported; only 'text' parts are", param=pfield
                )
            text = part.get("text")
            if not isinstance(text, str):
                raise WireError(f"{pfield}.text must be a string, got {_type_name(text)}", param=f"{pfield}.text")
            texts.append(text)
        return "\n".join(texts)
    raise WireError(
        f"{field} must be a string or a list of text parts, got {_type_name(value)}", param=field
    )


def _parse_arguments(raw: Any, field: str) -> dict[str, Any]:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, dict):  # lenient: some clients send the object itself
        return raw
    if not isinstance(raw, str):
        raise WireError(f"{field} must be a JSON string, got {_type_name(raw)}", param=field)
    try:
        decoded = json.loads(raw)
    except (ValueError, RecursionError):
        raise WireError(f"{field} is not valid JSON: {raw[:200]!r}", param=field) from None
    if not isinstance(decoded, dict):
        raise WireError(f"{field} must encode a JSON object, got {_type_name(decoded)}", param=field)
    return decoded


def _parse_tool_calls(value: Any, field: str) -> list[ToolCall]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise WireError(f"{field} must be a list, got {_type_name(value)}", param=field)
    calls: list[ToolCall] = []
    for j, item in enumerate(value):
        cfield = f"{field}[{j}]"
        if not isinstance(item, dict):
            raise WireError(f"{cfield} must be an object, got {_type_name(item)}", param=cfield)
        if item.get("type", "function") != "function":
            raise WireError(f"{cfield}.type {item.get('type')!r} is not supported; only 'function'", param=cfield)
        call_id = item.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise WireError(f"{cfield}.id must be a non-empty string", param=f"{cfield}.id")
        function = item.get("function")
        if not isinstance(function, dict):
            raise WireError(f"{cfield}.function must be an object", param=f"{cfield}.function")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise WireError(f"{cfield}.function.name must be a non-empty string", param=f"{cfield}.function.name")
        arguments = _parse_arguments(function.get("arguments"), f"{cfield}.function.arguments")
        calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
    return calls


def _parse_message(value: Any, index: int) -> ChatMessage:
    field = f"messages[{index}]"
    if not isinstance(value, dict):
        raise WireError(f"{field} must be an object, got {_type_name(value)}", param=field)
    role = value.get("role")
    if role not in _ROLES:
        raise WireError(
            f"{field}.role must be one of {sorted(_ROLES)}, got {role!r}", param=f"{field}.role"
        )
    if role == "developer":  # the newer name for the system role
        role = "system"
    cfield = f"{field}.content"
    if role == "assistant":
        content = _text_content(value.get("content"), cfield, allow_null=True)
        tool_calls = _parse_tool_calls(value.get("tool_calls"), f"{field}.tool_calls")
        return ChatMessage(role="assistant", content=content, tool_calls=tool_calls)
    if role == "tool":
        tool_call_id = value.get("tool_call_id")
        if not isinstance(tool_call_id, str) or not tool_call_id:
            raise WireError(f"{field}.tool_call_id must be a non-empty string", param=f"{field}.tool_call_id")
        name = value.get("name")
        content = _text_content(value.get("content"), cfield, allow_null=True) or ""
        return ChatMessage(
            role="tool", content=content, tool_call_id=tool_call_id, name=name if isinstance(name, str) else None
        )
    if "content" not in value:
        raise WireError(f"{cfield} is required for role {role!r}", param=cfield)
    content = _text_content(value.get("content"), cfield, allow_null=False)
    return ChatMessage(role=role, content=content)


def _parse_tools(value: Any) -> list[ToolSpec]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise WireError(f"tools must be a list, got {_type_name(value)}", param="tools")
    specs: list[ToolSpec] = []
    for i, item in enumerate(value):
        field = f"tools[{i}]"
        if not isinstance(item, dict):
            raise WireError(f"{field} must be an object, got {_type_name(item)}", param=field)
        if item.get("type") != "function":
            raise WireError(f"{field}.type {item.get('type')!r} is not supported; only 'function'", param=field)
        function = item.get("function")
        if not isinstance(function, dict):
            raise WireError(f"{field}.function must be an object", param=f"{field}.function")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise WireError(f"{field}.function.name must be a non-empty string", param=f"{field}.function.name")
        description = function.get("description") or ""
        if not isinstance(description, str):
            raise WireError(f"{field}.function.description must be a string", param=f"{field}.function.description")
        parameters = function.get("parameters")
        if parameters is None:
            parameters = dict(_EMPTY_PARAMETERS)
        if not isinstance(parameters, dict):
            raise WireError(f"{field}.function.parameters must be an object", param=f"{field}.function.parameters")
        specs.append(ToolSpec(name=name, description=description, parameters=parameters))
    return specs


def _optional_int(body: dict[str, Any], key: str, *, minimum: int | None = None) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if not _is_int(value):
        raise WireError(f"{key} must be an integer, got {_type_name(value)}", param=key)
    if minimum is not None and value < minimum:
        raise WireError(f"{key} must be >= {minimum}, got {value}", param=key)
    return value


def parse_chat_request(body: Any) -> ChatCompletionCall:
    """Translate a decoded ``/v1/chat/completions`` body into a :class:`ChatCompletionCall`."""
    if not isinstance(body, dict):
        raise WireError(f"request body must be a JSON object, got {_type_name(body)}")
    if "messages" not in body:
        raise WireError("messages is required", param="messages")
    raw_messages = body["messages"]
    if not isinstance(raw_messages, list):
        raise WireError(f"messages must be a list, got {_type_name(raw_messages)}", param="messages")
    if not raw_messages:
        raise WireError("messages must not be empty", param="messages")
    messages = [_parse_message(m, i) for i, m in enumerate(raw_messages)]

    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise WireError(f"model must be a string, got {_type_name(model)}", param="model")

    tools = _parse_tools(body.get("tools"))
    tool_choice = body.get("tool_choice")
    if tool_choice == "none":
        tools = []  # same meaning for a provider that has no tool_choice: it cannot call any
    elif tool_choice not in (None, "auto"):
        raise WireError(
            f"tool_choice {tool_choice!r} is not supported by this gateway; use 'auto' or 'none'",
            param="tool_choice",
        )

    n = body.get("n")
    if n is not None and n != 1:
        raise WireError(f"n must be 1 (got {n!r}); this gateway returns one choice", param="n")

    temperature = body.get("temperature")
    if temperature is not None:
        if not isinstance(temperature, (int, float)) or isinstance(temperature, bool):
            raise WireError(f"temperature must be a number, got {_type_name(temperature)}", param="temperature")
        if not math.isfinite(temperature) or not 0 <= temperature <= 2:
            raise WireError(f"temperature must be between 0 and 2, got {temperature}", param="temperature")

    max_tokens = _optional_int(body, "max_tokens", minimum=1)
    max_completion_tokens = _optional_int(body, "max_completion_tokens", minimum=1)
    seed = _optional_int(body, "seed")

    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise WireError(f"stream must be a boolean, got {_type_name(stream)}", param="stream")
    stream_options = body.get("stream_options")
    include_usage = False
    if stream_options is not None:
        if not isinstance(stream_options, dict):
            raise WireError("stream_options must be an object", param="stream_options")
        include_usage = stream_options.get("include_usage") is True

    fields: dict[str, Any] = {
        "messages": messages,
        "tools": tools,
        # the newer name wins: it is what current SDKs send for the same limit
        "max_tokens": max_completion_tokens if max_completion_tokens is not None else max_tokens,
        "seed": seed,
    }
    if temperature is not None:
        fields["temperature"] = float(temperature)
    try:
        request = ModelRequest(**fields)
    except ValidationError as exc:
        raise WireError(f"invalid request: {exc.errors()[0].get('msg', exc)}") from None
    return ChatCompletionCall(request=request, model=model, stream=bool(stream), include_usage=include_usage)


# ---------------------------------------------------------------- rendering


def new_completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def wire_finish_reason(response: ModelResponse) -> str:
    """'tool_calls' if there are any; keep 'length'/'content_filter' so truncation stays visible; else 'stop'."""
    if response.tool_calls:
        return "tool_calls"
    if response.finish_reason in _PASS_THROUGH_FINISH:
        return response.finish_reason
    return "stop"


def _call_id(call: ToolCall, index: int) -> str:
    return call.id or f"call_{index}_{uuid.uuid4().hex[:12]}"


def wire_tool_calls(response: ModelResponse) -> list[dict[str, Any]]:
    return [
        {
            "id": _call_id(call, i),
            "type": "function",
            "function": {"name": call.name, "arguments": call.wire_arguments()},
        }
        for i, call in enumerate(response.tool_calls)
    ]


def wire_usage(response: ModelResponse) -> dict[str, int]:
    prompt, completion = response.usage.input_tokens, response.usage.output_tokens
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def chat_completion_dict(
    response: ModelResponse, *, model: str, completion_id: str | None = None, created: int | None = None
) -> dict[str, Any]:
    """A ``chat.completion`` object for a non-streamed reply."""
    message: dict[str, Any] = {"role": "assistant", "content": response.content, "refusal": None}
    tool_calls = wire_tool_calls(response)
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": completion_id or new_completion_id(),
        "object": "chat.completion",
        "created": int(time.time()) if created is None else created,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": wire_finish_reason(response)}
        ],
        "usage": wire_usage(response),
    }


def chat_completion_chunks(
    response: ModelResponse,
    *,
    model: str,
    include_usage: bool = False,
    completion_id: str | None = None,
    created: int | None = None,
    piece_chars: int = STREAM_CONTENT_PIECE_CHARS,
) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` sequence a streaming client reassembles into ``response``.

    Order: role, content pieces, per tool call (id/type/name, then arguments),
    finish_reason, and a usage chunk (empty ``choices``) when asked for.
    """
    cid = completion_id or new_completion_id()
    ts = int(time.time()) if created is None else created

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": ts,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }
        if include_usage:
            out["usage"] = None
        return out

    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    content = response.content or ""
    step = max(1, piece_chars)
    for start in range(0, len(content), step):
        chunks.append(chunk({"content": content[start : start + step]}))
    for index, call in enumerate(wire_tool_calls(response)):
        head = {"index": index, "id": call["id"], "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""}}
        chunks.append(chunk({"tool_calls": [head]}))
        args = {"index": index, "function": {"arguments": call["function"]["arguments"]}}
        chunks.append(chunk({"tool_calls": [args]}))
    chunks.append(chunk({}, wire_finish_reason(response)))
    if include_usage:
        chunks.append(
            {"id": cid, "object": "chat.completion.chunk", "created": ts, "model": model,
             "choices": [], "usage": wire_usage(response)}
        )
    return chunks


def sse_lines(chunks: list[dict[str, Any]]) -> list[str]:
    """Server-sent-event frames for ``chunks``, ending with the ``[DONE]`` sentinel clients wait for."""
    frames = [f"data: {json.dumps(c, ensure_ascii=False, separators=(',', ':'))}\n\n" for c in chunks]
    frames.append("data: [DONE]\n\n")
    return frames


def error_body(message: str, *, type: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    """OpenAI's error envelope, so SDKs surface ``message`` to the caller."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}
