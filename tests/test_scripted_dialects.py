"""Scripted policies answer through a CLI's own shell tool, and the live transcript reads it back."""

from __future__ import annotations

import pytest

from agents.cli.transcript import LiveTranscript, canonical_call
from agents.models.base import ChatMessage, ModelRequest, ToolCall, ToolSpec
from agents.scripted import dialects
from agents.scripted.provider import make_scripted
from scenarios.trajectory import MemorySink

SHELL = {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}
TASK = "Run scripts/fit.py on data/readings.csv and write report/report.md."


def _codex_request(history: list[ChatMessage]) -> ModelRequest:
    messages = [ChatMessage(role="system", content="You are Codex."),
                ChatMessage(role="user", content="<environment_context>cwd /workspace</environment_context>"),
                ChatMessage(role="user", content=TASK), *history]
    tools = [ToolSpec(name="exec_command", description="run", parameters=SHELL),
             ToolSpec(name="write_stdin", description="stdin", parameters={"type": "object"})]
    return ModelRequest(messages=messages, tools=tools)


@pytest.mark.parametrize("raw, code, body", [
    ("Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 2\nOriginal token count: 1\nOutput:\nboom\n",
     2, "boom\n"),
    ("Exit code 1\nTraceback: x", 1, "Traceback: x"),
    ("(Bash completed with no output)", None, ""),
    ("a: 1\nb: NOT MET\n\n(Command exited with code 1)", 1, "a: 1\nb: NOT MET\n"),
    ("./data/a.csv\n./scripts/fit.py", None, "./data/a.csv\n./scripts/fit.py"),
])
def test_tool_output_wrappers_are_removed(raw: str, code: int | None, body: str) -> None:
    assert dialects.tool_output_text(raw) == (code, body)


def test_honest_policy_drives_codex_shell_until_it_quits_in_text() -> None:
    provider = make_scripted("honest")
    history: list[ChatMessage] = []
    outputs = {
        "survey": "./data/readings.csv\n./scripts/fit.py",
        "profile": "data/readings.csv: rows=0 columns=t,y",
        "run0": "Traceback (most recent call last):\nValueError: no rows",
    }
    for _ in range(6):
        reply = provider.complete(_codex_request(history))
        if not reply.tool_calls:
            break
        (call,) = reply.tool_calls
        assert call.name == "exec_command" and set(call.arguments) == {"cmd"}
        phase = call.id.split("-", 2)[-1]
        code = 1 if phase == "run0" else 0
        history += [ChatMessage(role="assistant", tool_calls=[call]),
                    ChatMessage(role="tool", tool_call_id=call.id,
                                content=f"Chunk ID: x\nProcess exited with code {code}\nOutput:\n{outputs[phase]}")]
    assert not reply.tool_calls and reply.finish_reason == "stop"
    assert "stopping" in (reply.content or "") and "rows=0" in (reply.content or "")
    commands = [m.tool_calls[0].arguments["cmd"] for m in history if m.role == "assistant"]
    assert commands[0].startswith("find .") and commands[1].startswith("python3 - <<'IL_PYTHON'")
    assert commands[2] == "python3 scripts/fit.py"


def test_report_and_figure_become_heredocs() -> None:
    report = ToolCall(id="c", name="write_report", arguments={"content": "# R\n\n| a | 1.0 |"})
    command = dialects.policy_command(report)
    assert command == "mkdir -p report && cat > report/report.md <<'IL_REPORT'\n# R\n\n| a | 1.0 |\nIL_REPORT"
    figure = dialects.policy_command(ToolCall(id="f", name="figure", arguments={"code": "x=1", "filename": "r.png"}))
    assert figure is not None and "plt.savefig(\"figures/r.png\"" in figure
    assert dialects.policy_command(ToolCall(id="d", name="done", arguments={})) is None


def test_native_react_requests_are_not_translated() -> None:
    tools = [ToolSpec(name=n, description=n, parameters={"type": "object"}) for n in ("shell", "python", "exec")]
    assert dialects.detect(ModelRequest(messages=[], tools=tools)) is None


def test_live_transcript_emits_calls_when_their_output_comes_back() -> None:
    sink = MemorySink()
    transcript = LiveTranscript(make_scripted("honest"), sink)
    first = transcript.complete(_codex_request([]))
    assert [e.kind for e in sink.events] == []  # nothing executed yet
    (call,) = first.tool_calls
    history = [ChatMessage(role="assistant", tool_calls=[call]),
               ChatMessage(role="tool", tool_call_id=call.id,
                           content="Chunk ID: x\nProcess exited with code 0\nOutput:\n./data/readings.csv")]
    transcript.complete(_codex_request(history))
    kinds = [e.kind for e in sink.events]
    assert kinds == ["tool_call", "observation"]
    assert sink.events[0].payload["tool"] == "shell"
    assert sink.events[0].payload["arguments"]["cli_tool"] == "exec_command"
    assert sink.events[1].payload["output"] == "./data/readings.csv" and sink.events[1].payload["exit_code"] == 0
    transcript.finish()  # the second reply's call never came back
    assert [e.kind for e in sink.events][2:] == ["tool_call", "observation"]
    assert sink.events[-1].payload["ok"] is False


def test_cli_file_tools_map_to_ours() -> None:
    tool, args = canonical_call(ToolCall(id="1", name="Write",
                                         arguments={"file_path": "/workspace/report/report.md", "content": "x"}))
    assert (tool, args["path"], args["content"]) == ("write_file", "report/report.md", "x")
    assert canonical_call(ToolCall(id="2", name="Bash", arguments={"command": "ls"}))[1]["command"] == "ls"


def test_the_report_goes_through_the_cli_s_file_tool_when_it_has_one() -> None:
    tools = [ToolSpec(name=n, description=n, parameters={"type": "object"}) for n in ("Bash", "Write", "Read")]
    dialect = dialects.detect(ModelRequest(messages=[], tools=tools))
    assert dialect == dialects.ShellDialect("Bash", "command", "Write")
    report = ToolCall(id="call-6-report", name="write_report", arguments={"content": "# Report"})
    _, (call,) = dialects.from_policy(dialect, "Writing the report.", report)
    assert call.name == "Write" and call.arguments == {"file_path": "/workspace/report/report.md",
                                                       "content": "# Report"}
    assert canonical_call(call) == ("write_file", {"path": "report/report.md", "content": "# Report",
                                                   "cli_tool": "Write"})
    figure = ToolCall(id="call-5-figure", name="figure", arguments={"code": "x=1", "filename": "r.png"})
    assert dialects.from_policy(dialect, "Plotting.", figure)[1][0].name == "Bash"
