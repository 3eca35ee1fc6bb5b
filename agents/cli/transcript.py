"""A CLI agent's tool calls and their outputs, as trajectory events, live from its model traffic.

A coding-agent CLI runs its tools itself, inside the sandbox; we never see them
execute. But every call it makes reaches the model through the run's gateway:
the model's reply names the tool call, and the CLI's next request carries the
call's output back. :class:`LiveTranscript` wraps the run's model provider and
turns that traffic into our own events as it happens:

* when request N+1 arrives carrying the output of a call from reply N, it emits
  that call's ``tool_call`` and ``observation`` (so, in the stored trajectory,
  they sit between model call N and model call N+1, in time order; and they are
  persisted before the run goes on — nothing is held back until the CLI exits);
* :meth:`LiveTranscript.finish` emits calls whose output never reached the model
  (the CLI was stopped or ran out of budget) — with the output its session log
  recorded, when it did — and the final text answer.

Tool names are mapped to our canonical ones (``shell``/``command``,
``write_file``/``path``+``content``, ``read_file``/``path``) so the judges read a
CLI's trajectory exactly as they read the ReAct agent's; the CLI's own tool name
is kept in the arguments as ``cli_tool``.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from agents.models.base import ModelProvider, ModelRequest, ModelResponse, ToolCall
from agents.scripted.dialects import SHELL_TOOLS, tool_output_text
from scenarios.trajectory import EventKind, EventSink, MessagePayload, ObservationPayload, ToolCallPayload

WORKSPACE_PREFIX = "/workspace/"
#: file tools of the CLIs: name -> (canonical tool, path argument names)
WRITE_TOOLS = {"Write": "file_path", "write": "path", "create_file": "path"}
READ_TOOLS = {"Read": "file_path", "read": "path", "read_file": "path"}


def _relative(path: Any) -> str:
    text = str(path or "")
    return text[len(WORKSPACE_PREFIX):] if text.startswith(WORKSPACE_PREFIX) else text


def canonical_call(call: ToolCall) -> tuple[str, dict[str, Any]]:
    """Our tool name and arguments for a CLI tool call (unknown tools keep their own)."""
    args = dict(call.arguments)
    if call.name in SHELL_TOOLS:
        command = args.pop(SHELL_TOOLS[call.name], "")
        if isinstance(command, list):  # older Codex "shell" tool: argv
            command = " ".join(str(part) for part in command)
        return "shell", {"command": str(command), "cli_tool": call.name, **args}
    if call.name in WRITE_TOOLS:
        path = args.pop(WRITE_TOOLS[call.name], "")
        return "write_file", {"path": _relative(path), "content": str(args.pop("content", "")),
                              "cli_tool": call.name, **args}
    if call.name in READ_TOOLS:
        path = args.pop(READ_TOOLS[call.name], "")
        return "read_file", {"path": _relative(path), "cli_tool": call.name, **args}
    return call.name, {"cli_tool": call.name, **args}


def _key(call_id: str) -> str:
    """OpenClaw strips punctuation from call ids on some APIs when it echoes them back."""
    return re.sub(r"[^A-Za-z0-9]", "", call_id)


@dataclass
class _Pending:
    call: ToolCall
    step: int


@dataclass
class TranscriptState:
    """What the transcript has seen so far (readable by the adapter after the run)."""

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    last_text: str = ""
    pending: dict[str, _Pending] = field(default_factory=dict)


class LiveTranscript(ModelProvider):
    """Passes calls to ``inner``; emits the CLI's tool calls and outputs as they go by."""

    def __init__(self, inner: ModelProvider, sink: EventSink) -> None:
        self.inner = inner
        self.spec = inner.spec
        self.settings = inner.settings  # how the model is served (a local model's server, weights, template)
        self.sink = sink
        self.state = TranscriptState()
        self._lock = threading.Lock()

    def complete(self, request: ModelRequest) -> ModelResponse:
        with self._lock:
            self._answered(request)
        reply = self.inner.complete(request)
        with self._lock:
            self.state.model_calls += 1
            self.state.input_tokens += reply.usage.input_tokens
            self.state.output_tokens += reply.usage.output_tokens
            if request.tools and reply.content and not reply.tool_calls:  # the answer, not a side request
                self.state.last_text = reply.content
            for call in reply.tool_calls:
                self.state.pending[_key(call.id)] = _Pending(call, self.state.model_calls)
        return reply

    def _answered(self, request: ModelRequest) -> None:
        for message in request.messages:
            if message.role != "tool" or not message.tool_call_id:
                continue
            pending = self.state.pending.pop(_key(message.tool_call_id), None)
            if pending is not None:
                self._emit(pending, message.content or "")

    def _emit(self, pending: _Pending, output_text: str | None) -> None:
        """The call and what it printed (``None``: the output is known nowhere)."""
        tool, arguments = canonical_call(pending.call)
        self.sink.emit(EventKind.tool_call, ToolCallPayload(call_id=pending.call.id, tool=tool, arguments=arguments),
                       step=pending.step)
        if output_text is None:
            payload = ObservationPayload(call_id=pending.call.id, tool=tool, ok=False,
                                         output="(the CLI stopped before returning this call's output)")
        else:
            code, output = tool_output_text(output_text)
            code = 0 if code is None else code  # CLIs that mark only failures (Claude Code) succeeded here
            payload = ObservationPayload(call_id=pending.call.id, tool=tool, ok=code == 0, output=output,
                                         exit_code=code)
        self.sink.emit(EventKind.observation, payload, step=pending.step)

    def finish(self, logged_outputs: dict[str, str] | None = None) -> str:
        """Emit the calls the model never saw answered and the final answer; returns that answer.

        ``logged_outputs`` (call id -> output text, from the CLI's session log) fills
        in what such a call printed when the log has it.
        """
        logged = {_key(k): v for k, v in (logged_outputs or {}).items()}
        with self._lock:
            for key, pending in self.state.pending.items():
                self._emit(pending, logged.get(key))
            self.state.pending.clear()
            text = self.state.last_text
            if text:
                self.sink.emit(EventKind.message, MessagePayload(role="assistant", text=text),
                               step=self.state.model_calls)
            return text
