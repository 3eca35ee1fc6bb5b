"""Each CLI adapter reads tool outputs back from its CLI's own session log format.

The lines are shaped like the ones Codex 0.171, Claude Code 2.1.332 and OpenClaw
2026.9.6 wrote in this project's own runs (trimmed to the fields that matter).
"""

from __future__ import annotations

import json

from agents.cli.claude_code import ClaudeCodeAgent
from agents.cli.codex import CodexAgent
from agents.cli.openclaw import OpenClawAgent
from agents.cli.transcript import LiveTranscript
from agents.models.base import ChatMessage, ModelRequest, ToolSpec
from agents.scripted.dialects import tool_output_text
from agents.scripted.provider import make_scripted
from scenarios.trajectory import MemorySink


def _jsonl(*items: object) -> bytes:
    return ("\n".join(json.dumps(i) for i in items) + "\nnot json\n").encode()


def test_codex_rollout() -> None:
    log = _jsonl(
        {"type": "response_item", "payload": {"type": "function_call", "call_id": "call-2-profile", "name": "exec_command"}},
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "call-2-profile",
                                              "output": "Chunk ID: 8\nProcess exited with code 3\nOutput:\nrows=0\n"}},
    )
    outputs = CodexAgent("scripted:honest").session_tool_results(log)
    assert tool_output_text(outputs["call-2-profile"]) == (3, "rows=0\n")


def test_claude_code_project_log() -> None:
    log = _jsonl(
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "call-1-survey"}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call-1-survey", "content": "./data/a.csv", "is_error": False}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call-2-run0", "is_error": True,
             "content": [{"type": "text", "text": "Exit code 1\nTraceback"}]}]}},
    )
    outputs = ClaudeCodeAgent("scripted:honest").session_tool_results(log)
    assert outputs == {"call-1-survey": "./data/a.csv", "call-2-run0": "Exit code 1\nTraceback"}


def test_openclaw_transcript_rows() -> None:
    log = _jsonl(
        {"type": "message", "message": {"role": "toolResult", "toolCallId": "call-3-run0", "toolName": "exec",
                                        "content": [{"type": "text", "text": "check: NOT MET"}],
                                        "details": {"status": "completed", "exitCode": 1}}},
        {"type": "custom", "customType": "openclaw.cache-ttl", "data": {}},
    )
    outputs = OpenClawAgent("scripted:honest").session_tool_results(log)
    assert tool_output_text(outputs["call-3-run0"]) == (1, "check: NOT MET\n")


def test_a_call_the_model_never_saw_answered_takes_its_output_from_the_session_log() -> None:
    sink = MemorySink()
    transcript = LiveTranscript(make_scripted("honest"), sink)
    tools = [ToolSpec(name="exec_command", description="run", parameters={"type": "object"})]
    reply = transcript.complete(ModelRequest(messages=[ChatMessage(role="user", content="Run scripts/a.py.")],
                                             tools=tools))
    (call,) = reply.tool_calls
    transcript.finish({call.id.replace("-", ""): "Chunk ID: 1\nProcess exited with code 0\nOutput:\n./data/a.csv\n"})
    observation = [e for e in sink.events if e.kind == "observation"][-1]
    assert observation.payload["ok"] and observation.payload["output"] == "./data/a.csv\n"

    unlogged_sink = MemorySink()
    unlogged = LiveTranscript(make_scripted("honest"), unlogged_sink)
    unlogged.complete(ModelRequest(messages=[ChatMessage(role="user", content="x")], tools=tools))
    unlogged.finish({})
    last = unlogged_sink.events[-1]
    assert last.kind == "observation" and not last.payload["ok"] and "stopped" in last.payload["output"]


def test_each_cli_s_own_words_on_a_failure() -> None:
    from sandboxes.base import ExecResult

    def failed(stdout: str) -> ExecResult:
        return ExecResult(exit_code=1, stdout=stdout, stderr="generic stderr")

    codex = failed('{"type":"thread.started"}\n{"type":"turn.failed","error":{"message":"stream disconnected"}}\n')
    assert CodexAgent("scripted:honest").failure_message(codex) == "stream disconnected"
    claude = failed('{"type":"system"}\n{"type":"result","is_error":true,"api_error_status":401,"result":"bad key"}')
    assert ClaudeCodeAgent("scripted:honest").failure_message(claude) == "API status 401: bad key"
    openclaw = failed('{"ok":false,"status":"error","error":{"kind":"model","message":"Unknown model"}}')
    assert OpenClawAgent("scripted:honest").failure_message(openclaw) == "model: Unknown model"
    assert CodexAgent("scripted:honest").failure_message(failed("not json")) == "generic stderr"
