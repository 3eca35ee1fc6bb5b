"""OpenAI Responses API wire format (``POST /v1/responses``) <-> :mod:`agents.models.base` types.

Pure functions, no I/O, in the style of :mod:`agents.gateway.chat_wire` (whose
helpers and :class:`WireError` convention this module shares).

What is translated: ``input`` as a string or a list of items — ``message``
items (role system/developer/user/assistant, content a string or
``input_text``/``output_text`` parts), ``function_call`` and
``function_call_output`` items; ``instructions``; function ``tools``;
``tool_choice`` auto/none; ``max_output_tokens``; ``temperature``.

What is ignored because it cannot change the answer of a provider behind the
gateway: ``reasoning``, ``include``, ``store``, ``prompt_cache_key``,
``client_metadata``, ``metadata``, ``parallel_tool_calls``, ``top_p``,
``user``, ``truncation``, ``service_tier``, ``text.verbosity`` and ``reasoning``
input items (the gateway never emits any, so only foreign ones can arrive).

Dropped, and reported in :attr:`ResponsesCall.dropped_tools`: the hosted
``web_search`` tools and ``namespace`` tool groups Codex sends in its default
configuration — the gateway cannot run hosted tools, and a provider behind it
never sees them. Every other non-function tool, ``previous_response_id`` (the
gateway stores nothing), forced ``tool_choice``, structured ``text.format``
and non-text input parts are refused with a :class:`WireError` naming the field.

Streaming is the event sequence Codex CLI is known to accept (see
``/work/shared/notes/cli-agents.md``): ``response.created``,
``response.in_progress``, per output item ``response.output_item.added``,
text (``content_part.added``, ``output_text.delta``…, ``output_text.done``,
``content_part.done``) or ``function_call_arguments.delta``/``.done``, then
``response.output_item.done``; finally ``response.completed`` with the full
response object (``response.incomplete`` if the provider hit its token limit).
"""

from __future__ import annotations

import json
import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from agents.gateway.chat_wire import (
    _EMPTY_PARAMETERS,
    STREAM_CONTENT_PIECE_CHARS,
    WireError,
    _call_id,
    _optional_int,
    _parse_arguments,
    _type_name,
)
from agents.models.base import (
    ChatMessage,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
)

#: hosted tool types that are dropped (not refused), because Codex sends them by default
DROPPED_TOOL_TYPES = frozenset({"web_search", "web_search_preview", "namespace"})
_TEXT_PART_TYPES = {"input_text", "output_text", "text"}
_MESSAGE_ROLES = {"system", "developer", "user", "assistant"}
_IGNORED_ITEM_TYPES = {"reasoning"}


@dataclass(frozen=True)
class ResponsesCall:
    """A parsed ``/v1/responses`` request."""

    request: ModelRequest
    model: str | None
    stream: bool
    instructions: str | None = None
    max_output_tokens: int | None = None
    #: wire form of the accepted function tools, echoed in the response object
    tools: list[dict[str, Any]] = field(default_factory=list)
    #: ``type`` (or ``type:name``) of each hosted tool that was dropped
    dropped_tools: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- shared validators


def parse_temperature(body: dict[str, Any], *, maximum: float = 2.0, key: str = "temperature") -> float | None:
    """A finite number in ``[0, maximum]`` or None; the same rule as the chat endpoint."""
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise WireError(f"{key} must be a number, got {_type_name(value)}", param=key)
    if not math.isfinite(value) or not 0 <= value <= maximum:
        raise WireError(f"{key} must be between 0 and {maximum:g}, got {value}", param=key)
    return float(value)


def parse_stream_flag(body: dict[str, Any]) -> bool:
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise WireError(f"stream must be a boolean, got {_type_name(stream)}", param="stream")
    return bool(stream)


def parse_model_name(body: dict[str, Any]) -> str | None:
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise WireError(f"model must be a string, got {_type_name(model)}", param="model")
    return model


def build_model_request(fields: dict[str, Any]) -> ModelRequest:
    try:
        return ModelRequest(**fields)
    except ValidationError as exc:
        raise WireError(f"invalid request: {exc.errors()[0].get('msg', exc)}") from None


# ---------------------------------------------------------------- parsing


def _parts_text(value: Any, field: str, *, allow_null: bool = False) -> str | None:
    """A string, or a list of text parts (``input_text``/``output_text``) joined by newlines."""
    if value is None:
        if allow_null:
            return None
        raise WireError(f"{field} must not be null", param=field)
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise WireError(f"{field} must be a string or a list of text parts, got {_type_name(value)}", param=field)
    texts: list[str] = []
    for k, part in enumerate(value):
        pfield = f"{field}[{k}]"
        if not isinstance(part, dict):
            raise WireError(f"{pfield} must be an object, got {_type_name(part)}", param=pfield)
        ptype = part.get("type")
        if ptype == "refusal" and isinstance(part.get("refusal"), str):  # an echoed assistant refusal
            texts.append(part["refusal"])
            continue
        if ptype not in _TEXT_PART_TYPES:
            raise WireError(
                f"{pfield}.type {ptype!r} is not supported; only 'input_text' and 'output_text' parts are",
                param=pfield,
            )
        text = part.get("text")
        if not isinstance(text, str):
            raise WireError(f"{pfield}.text must be a string, got {_type_name(text)}", param=f"{pfield}.text")
        texts.append(text)
    return "\n".join(texts)


def _nonempty_str(item: dict[str, Any], key: str, field: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise WireError(f"{field}.{key} must be a non-empty string", param=f"{field}.{key}")
    return value


def _parse_input(value: Any) -> list[ChatMessage]:
    if isinstance(value, str):
        return [ChatMessage(role="user", content=value)]
    if not isinstance(value, list):
        raise WireError(f"input must be a string or a list of items, got {_type_name(value)}", param="input")
    messages: list[ChatMessage] = []
    names_by_call: dict[str, str] = {}
    for i, item in enumerate(value):
        field = f"input[{i}]"
        if not isinstance(item, dict):
            raise WireError(f"{field} must be an object, got {_type_name(item)}", param=field)
        itype = item.get("type", "message" if "role" in item else None)
        if itype == "message":
            role = item.get("role")
            if role not in _MESSAGE_ROLES:
                raise WireError(f"{field}.role must be one of {sorted(_MESSAGE_ROLES)}, got {role!r}",
                                param=f"{field}.role")
            if "content" not in item:
                raise WireError(f"{field}.content is required", param=f"{field}.content")
            content = _parts_text(item["content"], f"{field}.content")
            messages.append(ChatMessage(role="system" if role == "developer" else role, content=content))
        elif itype == "function_call":
            call_id = _nonempty_str(item, "call_id", field)
            name = _nonempty_str(item, "name", field)
            if item.get("namespace"):
                raise WireError(f"{field}.namespace is not supported; only plain function calls are",
                                param=f"{field}.namespace")
            arguments = _parse_arguments(item.get("arguments"), f"{field}.arguments")
            names_by_call[call_id] = name
            call = ToolCall(id=call_id, name=name, arguments=arguments)
            last = messages[-1] if messages else None
            # text and calls of one assistant turn arrive as separate items; the chat shape wants one message
            if last is not None and last.role == "assistant":
                last.tool_calls.append(call)
            else:
                messages.append(ChatMessage(role="assistant", content=None, tool_calls=[call]))
        elif itype == "function_call_output":
            call_id = _nonempty_str(item, "call_id", field)
            output = _parts_text(item.get("output"), f"{field}.output", allow_null=True) or ""
            messages.append(ChatMessage(role="tool", content=output, tool_call_id=call_id,
                                        name=names_by_call.get(call_id)))
        elif itype in _IGNORED_ITEM_TYPES:
            continue
        else:
            raise WireError(
                f"{field}.type {itype!r} is not supported; use 'message', 'function_call' or 'function_call_output'",
                param=f"{field}.type",
            )
    if not messages:
        raise WireError("input must contain at least one message", param="input")
    return messages


def _parse_tools(value: Any) -> tuple[list[ToolSpec], list[dict[str, Any]], list[str]]:
    if value is None:
        return [], [], []
    if not isinstance(value, list):
        raise WireError(f"tools must be a list, got {_type_name(value)}", param="tools")
    specs: list[ToolSpec] = []
    wire: list[dict[str, Any]] = []
    dropped: list[str] = []
    for i, item in enumerate(value):
        field = f"tools[{i}]"
        if not isinstance(item, dict):
            raise WireError(f"{field} must be an object, got {_type_name(item)}", param=field)
        ttype = item.get("type")
        if ttype in DROPPED_TOOL_TYPES:
            name = item.get("name")
            dropped.append(f"{ttype}:{name}" if isinstance(name, str) and name else str(ttype))
            continue
        if ttype != "function":
            raise WireError(
                f"{field}.type {ttype!r} is not supported; only 'function' (hosted "
                f"{'/'.join(sorted(DROPPED_TOOL_TYPES))} tools are dropped)",
                param=f"{field}.type",
            )
        name = _nonempty_str(item, "name", field)
        description = item.get("description") or ""
        if not isinstance(description, str):
            raise WireError(f"{field}.description must be a string", param=f"{field}.description")
        parameters = item.get("parameters")
        if parameters is None:
            parameters = dict(_EMPTY_PARAMETERS)
        if not isinstance(parameters, dict):
            raise WireError(f"{field}.parameters must be an object", param=f"{field}.parameters")
        specs.append(ToolSpec(name=name, description=description, parameters=parameters))
        wire.append({"type": "function", "name": name, "description": description, "parameters": parameters,
                     "strict": bool(item.get("strict", False))})
    return specs, wire, dropped


def parse_responses_request(body: Any) -> ResponsesCall:
    """Translate a decoded ``/v1/responses`` body into a :class:`ResponsesCall`."""
    if not isinstance(body, dict):
        raise WireError(f"request body must be a JSON object, got {_type_name(body)}")
    if "input" not in body:
        raise WireError("input is required", param="input")
    if body.get("previous_response_id") is not None:
        raise WireError("previous_response_id is not supported: the gateway stores no responses; "
                        "send the full history in input (store: false)", param="previous_response_id")
    if body.get("conversation") is not None:
        raise WireError("conversation is not supported: send the full history in input", param="conversation")
    model = parse_model_name(body)

    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise WireError(f"instructions must be a string, got {_type_name(instructions)}", param="instructions")
    messages = _parse_input(body["input"])
    if instructions:
        messages.insert(0, ChatMessage(role="system", content=instructions))

    tools, wire_tools, dropped = _parse_tools(body.get("tools"))
    tool_choice = body.get("tool_choice")
    if tool_choice == "none":
        tools, wire_tools = [], []
    elif tool_choice not in (None, "auto"):
        raise WireError(f"tool_choice {tool_choice!r} is not supported by this gateway; use 'auto' or 'none'",
                        param="tool_choice")

    text = body.get("text")
    if text is not None:
        if not isinstance(text, dict):
            raise WireError(f"text must be an object, got {_type_name(text)}", param="text")
        fmt = text.get("format")
        if fmt is not None and (not isinstance(fmt, dict) or fmt.get("type") != "text"):
            raise WireError("text.format: only {'type': 'text'} is supported by this gateway", param="text.format")

    temperature = parse_temperature(body)
    max_output_tokens = _optional_int(body, "max_output_tokens", minimum=1)
    stream = parse_stream_flag(body)

    fields: dict[str, Any] = {"messages": messages, "tools": tools, "max_tokens": max_output_tokens}
    if temperature is not None:
        fields["temperature"] = temperature
    return ResponsesCall(request=build_model_request(fields), model=model, stream=stream,
                         instructions=instructions, max_output_tokens=max_output_tokens,
                         tools=wire_tools, dropped_tools=dropped)


# ---------------------------------------------------------------- rendering


def new_response_id() -> str:
    return f"resp_{uuid.uuid4().hex}"


def _usage(response: ModelResponse) -> dict[str, Any]:
    inp, out = response.usage.input_tokens, response.usage.output_tokens
    return {"input_tokens": inp, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": inp + out}


def output_items(response: ModelResponse, *, response_id: str) -> list[dict[str, Any]]:
    """The completed ``output`` list: a ``message`` item if there is text (or nothing else), then function calls."""
    items: list[dict[str, Any]] = []
    suffix = response_id.removeprefix("resp_")
    if response.content or not response.tool_calls:
        items.append({
            "type": "message", "id": f"msg_{suffix}", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": response.content or "", "annotations": [], "logprobs": []}],
        })
    for i, call in enumerate(response.tool_calls):
        items.append({
            "type": "function_call", "id": f"fc_{suffix}_{i}", "call_id": _call_id(call, i), "name": call.name,
            "arguments": call.wire_arguments(), "status": "completed",
        })
    return items


def response_dict(
    call: ResponsesCall,
    response: ModelResponse | None,
    *,
    model: str,
    response_id: str,
    created_at: int | None = None,
) -> dict[str, Any]:
    """A ``response`` object; ``response=None`` gives the empty in-progress snapshot used at stream start."""
    truncated = response is not None and response.finish_reason == "length"
    if response is None:
        status = "in_progress"
    else:
        status = "incomplete" if truncated else "completed"
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()) if created_at is None else created_at,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if truncated else None,
        "instructions": call.instructions,
        "max_output_tokens": call.max_output_tokens,
        "metadata": {},
        "model": model,
        "output": [] if response is None else output_items(response, response_id=response_id),
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": None,
        "store": False,
        "temperature": call.request.temperature,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": call.tools,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": None if response is None else _usage(response),
    }


def response_events(
    call: ResponsesCall,
    response: ModelResponse,
    *,
    model: str,
    response_id: str,
    created_at: int | None = None,
    piece_chars: int = STREAM_CONTENT_PIECE_CHARS,
) -> list[dict[str, Any]]:
    """The streamed event sequence (each a dict with ``type`` and ``sequence_number``) for ``response``."""
    ts = int(time.time()) if created_at is None else created_at
    final = response_dict(call, response, model=model, response_id=response_id, created_at=ts)
    start = response_dict(call, None, model=model, response_id=response_id, created_at=ts)
    events: list[dict[str, Any]] = []

    def emit(etype: str, **payload: Any) -> None:
        events.append({"type": etype, "sequence_number": len(events), **payload})

    emit("response.created", response=start)
    emit("response.in_progress", response=start)
    step = max(1, piece_chars)
    for index, item in enumerate(final["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            emit("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "content": []})
            empty_part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            common = {"item_id": item["id"], "output_index": index, "content_index": 0}
            emit("response.content_part.added", **common, part=empty_part)
            for s in range(0, len(text), step):
                emit("response.output_text.delta", **common, delta=text[s : s + step], logprobs=[])
            emit("response.output_text.done", **common, text=text, logprobs=[])
            emit("response.content_part.done", **common, part=item["content"][0])
        else:
            emit("response.output_item.added", output_index=index,
                 item={**item, "status": "in_progress", "arguments": ""})
            common = {"item_id": item["id"], "output_index": index}
            emit("response.function_call_arguments.delta", **common, delta=item["arguments"])
            emit("response.function_call_arguments.done", **common, name=item["name"], arguments=item["arguments"])
        emit("response.output_item.done", output_index=index, item=item)
    # a truncated reply ends as OpenAI ends one: response.incomplete, so the client sees the truncation
    emit("response.incomplete" if final["status"] == "incomplete" else "response.completed", response=final)
    return events


def named_sse_frames(events: list[dict[str, Any]]) -> list[str]:
    """``event: <type>`` + ``data: <json>`` frames (Responses and Anthropic streams; no ``[DONE]`` sentinel)."""
    return [f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False, separators=(',', ':'))}\n\n"
            for e in events]
