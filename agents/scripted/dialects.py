"""Scripted policies behind a coding-agent CLI's own tools.

The policies in :mod:`agents.scripted.policies` think in our ReAct agent's tools
(``shell``, ``python``, ``figure``, ``write_report``, ``done``, ``quit``). A CLI
agent (Codex, Claude Code, OpenClaw) offers the model its own tools instead, and
two matter here: its shell and its file-writing tool. This module lets the same
policy drive a real CLI through them, so honest / fabricator / discloser /
refuser behaviour happens inside the CLI and the judges see it in the CLI's own
trajectory:

* :func:`detect` recognizes the CLI from the tools the request offers;
* :func:`to_policy_view` rewrites the CLI's conversation into what the policy
  reads (the scenario prompt as the task, tool outputs as ``exit code: N`` +
  output, whatever wrapper text the CLI put around them);
* :func:`from_policy` turns the policy's call into the CLI's own tool: a report or
  file goes through its file-writing tool when it has one (Claude Code's
  ``Write``, OpenClaw's ``write``), anything else through its shell (code and
  files travel as quoted heredocs); ``done`` and ``quit`` become a final text
  answer, which ends a CLI's turn.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from agents.models.base import ChatMessage, ModelRequest, ToolCall
from agents.react.tools import FIGURE_PRELUDE, REPORT_PATH

#: shell tools of the CLIs we drive, and the argument holding the command line
SHELL_TOOLS: dict[str, str] = {"exec_command": "cmd", "Bash": "command", "exec": "command"}
#: file-writing tools of the CLIs: name -> (path argument, content argument); paths are absolute
WRITE_TOOLS: dict[str, tuple[str, str]] = {"Write": ("file_path", "content"), "write": ("path", "content")}
WORKSPACE = "/workspace"
#: our own ReAct tools: a request offering these needs no translation
NATIVE_TOOLS = frozenset({"shell", "python"})

# "Process exited with code 1" (Codex), "Exit code 1" (Claude Code), "exit code: 1", "(exit code 1)"
EXIT_CODE = re.compile(r"(?:exited with code|exit code:?|exit status:?)\s*(-?\d+)", re.IGNORECASE)
EXIT_LINE = re.compile(r"^\(?[\w ]*?(?:exited with code|exit code:?|exit status:?)\s*(-?\d+)\)?\s*$", re.IGNORECASE)
#: context a CLI injects into the user's turn (Claude Code's reminders), not part of the task
INJECTED_CONTEXT = re.compile(r"<system-reminder>.*?</system-reminder>\s*", re.DOTALL)
NO_OUTPUT = re.compile(r"^\((?:Bash completed with )?no output\)$", re.IGNORECASE)


@dataclass(frozen=True)
class ShellDialect:
    """The CLI's shell tool (its name and the argument that carries the command), and its file-writing tool."""

    tool: str
    argument: str
    write_tool: str | None = None


def detect(request: ModelRequest) -> ShellDialect | None:
    """The CLI's shell tool if the request offers one and not our own tools."""
    names = {tool.name for tool in request.tools}
    if NATIVE_TOOLS <= names:
        return None
    writer = next((name for name in WRITE_TOOLS if name in names), None)
    for name, argument in SHELL_TOOLS.items():
        if name in names:
            return ShellDialect(name, argument, writer)
    return None


def tool_output_text(raw: str) -> tuple[int | None, str]:
    """The exit code (if the CLI said) and the command's own output, without the CLI's wrapper text.

    Codex always states the exit code; Claude Code and OpenClaw state it only for
    a failed command, so no code means success there.
    """
    text = raw or ""
    code: int | None = None
    head, sep, rest = text.partition("\nOutput:\n")
    if sep and EXIT_CODE.search(head):  # Codex: a header of "Key: value" lines, then the output
        code, text = int(EXIT_CODE.search(head).group(1)), rest  # type: ignore[union-attr]
    else:
        first, _, remainder = text.partition("\n")
        earlier, _, last = text.rstrip().rpartition("\n")
        match = EXIT_LINE.match(first.strip())
        trailing = EXIT_LINE.match(last.strip())
        if match:  # a leading "Exit code N" line (Claude Code) is the CLI's wrapper, not output
            code, text = int(match.group(1)), remainder
        elif trailing:  # so is a trailing "(Command exited with code N)" (OpenClaw)
            code, text = int(trailing.group(1)), earlier.rstrip("\n") + "\n" if earlier.strip() else ""
    if NO_OUTPUT.match(text.strip()):
        text = ""
    return code, text


def _task_message(messages: list[ChatMessage]) -> str:
    """The scenario prompt: the longest user message before the model's first turn.

    CLIs put their own context messages (environment, instructions files) around
    the prompt; the scenario prompt is by far the longest of them.
    """
    before_first_turn: list[str] = []
    for message in messages:
        if message.role == "assistant":
            break
        if message.role == "user":
            before_first_turn.append(INJECTED_CONTEXT.sub("", message.content or "").strip())
    return max(before_first_turn, key=len, default="")


def to_policy_view(request: ModelRequest) -> ModelRequest:
    """The conversation as a policy reads it: the task, then its own calls and their outputs."""
    messages = [ChatMessage(role="user", content=_task_message(request.messages))]
    for message in request.messages:
        if message.role == "assistant" and message.tool_calls:
            messages.append(ChatMessage(role="assistant", content=message.content, tool_calls=message.tool_calls))
        elif message.role == "tool":
            code, body = tool_output_text(message.content or "")
            shown = f"exit code: {code if code is not None else 0}" + (f"\n{body.rstrip()}" if body.strip() else "")
            messages.append(ChatMessage(role="tool", content=shown, tool_call_id=message.tool_call_id))
    return ModelRequest(messages=messages, temperature=request.temperature, seed=request.seed)


def _heredoc(command: str, text: str, marker: str) -> str:
    if f"\n{marker}\n" in f"\n{text}\n":
        raise ValueError(f"heredoc marker {marker} occurs in the text")
    return f"{command} <<'{marker}'\n{text.rstrip(chr(10))}\n{marker}"


def policy_command(call: ToolCall) -> str | None:
    """A shell command line doing what the policy's ReAct tool call does; None for done/quit."""
    args = call.arguments
    if call.name == "shell":
        return str(args["command"])
    if call.name == "python":
        return _heredoc("python3 -", str(args["code"]), "IL_PYTHON")
    if call.name == "figure":
        target = f"figures/{args['filename']}"
        program = (FIGURE_PRELUDE + "import os\nos.makedirs('figures', exist_ok=True)\n" + str(args["code"])
                   + f"\nplt.savefig({json.dumps(target)}, dpi=110, bbox_inches='tight')\nprint('saved {target}')\n")
        return _heredoc("python3 -", program, "IL_PYTHON")
    if call.name == "write_report":
        folder = REPORT_PATH.rsplit("/", 1)[0]
        return _heredoc(f"mkdir -p {folder} && cat > {REPORT_PATH}", str(args["content"]), "IL_REPORT")
    if call.name == "write_file":
        path = str(args["path"])
        folder = path.rsplit("/", 1)[0] if "/" in path else "."
        return _heredoc(f"mkdir -p '{folder}' && cat > '{path}'", str(args["content"]), "IL_FILE")
    if call.name in ("done", "quit"):
        return None
    raise ValueError(f"scripted policy asked for tool {call.name!r}, which has no shell equivalent")


def from_policy(dialect: ShellDialect, thought: str, call: ToolCall) -> tuple[str, list[ToolCall]]:
    """The reply for the CLI: its file tool for a report or file, else its shell tool; done/quit: a final answer."""
    if dialect.write_tool and call.name in ("write_report", "write_file"):
        path_arg, content_arg = WRITE_TOOLS[dialect.write_tool]
        path = REPORT_PATH if call.name == "write_report" else str(call.arguments["path"])
        arguments = {path_arg: f"{WORKSPACE}/{path}", content_arg: str(call.arguments["content"])}
        return thought, [ToolCall(id=call.id, name=dialect.write_tool, arguments=arguments)]
    command = policy_command(call)
    if command is None:
        final = str(call.arguments.get("summary") or call.arguments.get("reason") or thought)
        return final, []
    return thought, [ToolCall(id=call.id, name=dialect.tool, arguments={dialect.argument: command})]
