"""Anthropic Messages API wire format (``POST /v1/messages``) <-> :mod:`agents.models.base` types.

Pure functions, no I/O; the same :class:`WireError` convention as
:mod:`agents.gateway.chat_wire`.

Translated: ``system`` (string or text blocks), ``messages`` whose content is a
string or blocks — ``text``, ``tool_use`` (assistant), ``tool_result`` (user;
string or text-block content; ``is_error`` becomes an ``Error:`` prefix) —
plus ``role: "system"`` entries inside ``messages`` as Claude Code sends them;
custom ``tools`` (name, description, input_schema); ``tool_choice``
auto/none; ``max_tokens``; ``temperature``.

Ignored, since a provider behind the gateway cannot honour them and they do
not change what is asked: ``thinking``, ``context_management``, ``metadata``,
``output_config``, ``service_tier``, ``top_p``, ``top_k``, ``cache_control`` on
any block, ``defer_loading`` on tools (the tool is offered like any other), and
echoed ``thinking``/``redacted_thinking`` blocks. Refused with a
:class:`WireError` naming the field: images/documents, server tools (typed
tools such as ``web_search_20250305``), forced ``tool_choice`` and
``stop_sequences``.

A user turn holding ``tool_result`` blocks becomes one ``tool`` message per
result (in block order), with any text in the turn as a following ``user``
message.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from agents.gateway.chat_wire import (
    _EMPTY_PARAMETERS,
    STREAM_CONTENT_PIECE_CHARS,
    WireError,
    _optional_int,
    _type_name,
)
from agents.gateway.responses_wire import (
    build_model_request,
    parse_model_name,
    parse_stream_flag,
    parse_temperature,
)
from agents.models.base import (
    ChatMessage,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
)

_ROLES = {"user", "assistant", "system"}
_IGNORED_BLOCKS = {"thinking", "redacted_thinking"}
TOOL_ERROR_PREFIX = "Error: "


@dataclass(frozen=True)
class MessagesCall:
    """A parsed ``/v1/messages`` request."""

    request: ModelRequest
    model: str | None
    stream: bool


# ---------------------------------------------------------------- parsing


def _blocks(value: Any, field: str) -> list[dict[str, Any]]:
    """Content as a list of block objects (a plain string is one text block)."""
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if not isinstance(value, list):
        raise WireError(f"{field} must be a string or a list of content blocks, got {_type_name(value)}", param=field)
    for k, block in enumerate(value):
        if not isinstance(block, dict):
            raise WireError(f"{field}[{k}] must be an object, got {_type_name(block)}", param=f"{field}[{k}]")
    return value


def _block_text(block: dict[str, Any], field: str) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise WireError(f"{field}.text must be a string, got {_type_name(text)}", param=f"{field}.text")
    return text


def _text_only(value: Any, field: str) -> str:
    """A string or a list of text blocks, joined by newlines (system prompts, tool results)."""
    texts: list[str] = []
    for k, block in enumerate(_blocks(value, field)):
        bfield = f"{field}[{k}]"
        if block.get("type") != "text":
            raise WireError(f"{bfield}.type {block.get('type')!r} is not supported here; only 'text' blocks are",
                            param=f"{bfield}.type")
        texts.append(_block_text(block, bfield))
    return "\n".join(texts)


def _unsupported_block(btype: Any, bfield: str, allowed: str) -> WireError:
    return WireError(f"{bfield}.type {btype!r} is not supported in this message; {allowed}", param=f"{bfield}.type")


def _parse_message(value: Any, index: int) -> list[ChatMessage]:
    field = f"messages[{index}]"
    if not isinstance(value, dict):
        raise WireError(f"{field} must be an object, got {_type_name(value)}", param=field)
    role = value.get("role")
    if role not in _ROLES:
        raise WireError(f"{field}.role must be one of {sorted(_ROLES)}, got {role!r}", param=f"{field}.role")
    if "content" not in value:
        raise WireError(f"{field}.content is required", param=f"{field}.content")
    cfield = f"{field}.content"
    if role == "system":  # Claude Code puts one after the user turn
        return [ChatMessage(role="system", content=_text_only(value["content"], cfield))]

    blocks = _blocks(value["content"], cfield)
    if role == "assistant":
        texts: list[str] = []
        calls: list[ToolCall] = []
        for k, block in enumerate(blocks):
            bfield = f"{cfield}[{k}]"
            btype = block.get("type")
            if btype == "text":
                texts.append(_block_text(block, bfield))
            elif btype == "tool_use":
                call_id, name = block.get("id"), block.get("name")
                if not isinstance(call_id, str) or not call_id:
                    raise WireError(f"{bfield}.id must be a non-empty string", param=f"{bfield}.id")
                if not isinstance(name, str) or not name:
                    raise WireError(f"{bfield}.name must be a non-empty string", param=f"{bfield}.name")
                arguments = block.get("input", {})
                if not isinstance(arguments, dict):
                    raise WireError(f"{bfield}.input must be an object, got {_type_name(arguments)}",
                                    param=f"{bfield}.input")
                calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
            elif btype in _IGNORED_BLOCKS:
                continue
            else:
                raise _unsupported_block(btype, bfield, "assistant turns take 'text' and 'tool_use' blocks")
        content = "\n".join(texts) if texts else None
        return [ChatMessage(role="assistant", content=content, tool_calls=calls)]

    out: list[ChatMessage] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            out.append(ChatMessage(role="user", content="\n".join(pending)))
            pending.clear()

    for k, block in enumerate(blocks):
        bfield = f"{cfield}[{k}]"
        btype = block.get("type")
        if btype == "text":
            pending.append(_block_text(block, bfield))
        elif btype == "tool_result":
            flush()
            tool_use_id = block.get("tool_use_id")
            if not isinstance(tool_use_id, str) or not tool_use_id:
                raise WireError(f"{bfield}.tool_use_id must be a non-empty string", param=f"{bfield}.tool_use_id")
            raw = block.get("content")
            text = "" if raw is None else _text_only(raw, f"{bfield}.content")
            if block.get("is_error") is True:
                text = TOOL_ERROR_PREFIX + text
            out.append(ChatMessage(role="tool", content=text, tool_call_id=tool_use_id))
        else:
            raise _unsupported_block(btype, bfield, "user turns take 'text' and 'tool_result' blocks")
    flush()
    if not out:  # an empty content list: keep the turn, as an empty user message
        out.append(ChatMessage(role="user", content=""))
    return out


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
        ttype = item.get("type")
        if ttype not in (None, "custom"):
            raise WireError(f"{field}.type {ttype!r} is not supported; only custom tools (name + input_schema)",
                            param=f"{field}.type")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise WireError(f"{field}.name must be a non-empty string", param=f"{field}.name")
        description = item.get("description") or ""
        if not isinstance(description, str):
            raise WireError(f"{field}.description must be a string", param=f"{field}.description")
        schema = item.get("input_schema")
        if schema is None:
            schema = dict(_EMPTY_PARAMETERS)
        if not isinstance(schema, dict):
            raise WireError(f"{field}.input_schema must be an object", param=f"{field}.input_schema")
        specs.append(ToolSpec(name=name, description=description, parameters=schema))
    return specs


def parse_messages_request(body: Any) -> MessagesCall:
    """Translate a decoded ``/v1/messages`` body into a :class:`MessagesCall`."""
    if not isinstance(body, dict):
        raise WireError(f"request body must be a JSON object, got {_type_name(body)}")
    if "messages" not in body:
        raise WireError("messages is required", param="messages")
    raw_messages = body["messages"]
    if not isinstance(raw_messages, list):
        raise WireError(f"messages must be a list, got {_type_name(raw_messages)}", param="messages")
    if not raw_messages:
        raise WireError("messages must not be empty", param="messages")
    model = parse_model_name(body)

    messages: list[ChatMessage] = []
    system = body.get("system")
    if system is not None:
        text = _text_only(system, "system")
        if text:
            messages.append(ChatMessage(role="system", content=text))
    for i, m in enumerate(raw_messages):
        messages.extend(_parse_message(m, i))

    tools = _parse_tools(body.get("tools"))
    tool_choice = body.get("tool_choice")
    if tool_choice is not None:
        choice_type = tool_choice.get("type") if isinstance(tool_choice, dict) else None
        if choice_type == "none":
            tools = []
        elif choice_type != "auto":
            raise WireError(f"tool_choice {tool_choice!r} is not supported by this gateway; use "
                            "{'type': 'auto'} or {'type': 'none'}", param="tool_choice")
    stop = body.get("stop_sequences")
    if stop:
        raise WireError("stop_sequences is not supported by this gateway", param="stop_sequences")

    temperature = parse_temperature(body, maximum=1.0)
    max_tokens = _optional_int(body, "max_tokens", minimum=1)
    stream = parse_stream_flag(body)
    fields: dict[str, Any] = {"messages": messages, "tools": tools, "max_tokens": max_tokens}
    if temperature is not None:
        fields["temperature"] = temperature
    return MessagesCall(request=build_model_request(fields), model=model, stream=stream)


# ---------------------------------------------------------------- rendering


def new_message_id() -> str:
    return f"msg_{uuid.uuid4().hex}"


def stop_reason(response: ModelResponse) -> str:
    if response.tool_calls:
        return "tool_use"
    if response.finish_reason == "length":
        return "max_tokens"
    return "end_turn"


def content_blocks(response: ModelResponse) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if response.content:
        blocks.append({"type": "text", "text": response.content})
    for i, call in enumerate(response.tool_calls):
        blocks.append({"type": "tool_use", "id": call.id or f"toolu_{i}_{uuid.uuid4().hex[:12]}",
                       "name": call.name, "input": call.arguments})
    return blocks


def _usage(response: ModelResponse, *, output_tokens: int | None = None) -> dict[str, Any]:
    return {"input_tokens": response.usage.input_tokens,
            "output_tokens": response.usage.output_tokens if output_tokens is None else output_tokens,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def message_dict(response: ModelResponse, *, model: str, message_id: str | None = None) -> dict[str, Any]:
    """A ``message`` object for a non-streamed reply."""
    return {
        "id": message_id or new_message_id(),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content_blocks(response),
        "stop_reason": stop_reason(response),
        "stop_sequence": None,
        "usage": _usage(response),
    }


def message_events(
    response: ModelResponse, *, model: str, message_id: str | None = None,
    piece_chars: int = STREAM_CONTENT_PIECE_CHARS,
) -> list[dict[str, Any]]:
    """The streamed events: message_start, per block start/delta…/stop, message_delta, message_stop."""
    final = message_dict(response, model=model, message_id=message_id)
    start = {**final, "content": [], "stop_reason": None, "usage": _usage(response, output_tokens=0)}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    step = max(1, piece_chars)
    for index, block in enumerate(final["content"]):
        if block["type"] == "text":
            events.append({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
            text = block["text"]
            for s in range(0, len(text), step):
                events.append({"type": "content_block_delta", "index": index,
                               "delta": {"type": "text_delta", "text": text[s : s + step]}})
        else:
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {**block, "input": {}}})
            events.append({"type": "content_block_delta", "index": index,
                           "delta": {"type": "input_json_delta",
                                     "partial_json": json.dumps(block["input"], ensure_ascii=False)}})
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": final["stop_reason"], "stop_sequence": None},
                   "usage": {"output_tokens": response.usage.output_tokens}})
    events.append({"type": "message_stop"})
    return events


def anthropic_error_body(message: str, *, type: str) -> dict[str, Any]:
    """Anthropic's error envelope; ``type`` is e.g. invalid_request_error, authentication_error, api_error."""
    return {"type": "error", "error": {"type": type, "message": message}}
