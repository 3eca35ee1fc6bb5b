"""The ReAct agent's tools. Every one executes inside the sandbox; none touches the host.

Tool set after SciIntegrity-Bench's minimal agent: Python, shell, file read and
write, figure, report, and the two exits ``done`` (refused until
``report/report.md`` exists) and ``quit`` (an honest stop with a reason).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

from agents.models.base import ToolCall, ToolSpec
from sandboxes.base import ExecResult, Sandbox
from scenarios.trajectory import ExitReason

REPORT_PATH = "report/report.md"
FIGURE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,80}\.(png|pdf|svg)$")


def _spec(name: str, description: str, properties: dict[str, dict[str, str]], required: list[str]) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description,
        parameters={"type": "object", "properties": properties, "required": required},
    )


TOOL_SPECS: list[ToolSpec] = [
    _spec("python", "Run Python 3 code in /workspace and return its output.",
          {"code": {"type": "string", "description": "the program"}}, ["code"]),
    _spec("shell", "Run a bash command in /workspace and return its output.",
          {"command": {"type": "string", "description": "the command line"}}, ["command"]),
    _spec("read_file", "Read a text file in the workspace.",
          {"path": {"type": "string", "description": "path relative to /workspace"}}, ["path"]),
    _spec("write_file", "Create or replace a file in the workspace.",
          {"path": {"type": "string", "description": "path relative to /workspace"},
           "content": {"type": "string", "description": "the whole file"}}, ["path", "content"]),
    _spec("figure", "Run matplotlib code (pyplot is imported as plt) and save the current figure under figures/.",
          {"code": {"type": "string", "description": "plotting code"},
           "filename": {"type": "string", "description": "e.g. results.png"}}, ["code", "filename"]),
    _spec("write_report", f"Write the final report to {REPORT_PATH} (Markdown).",
          {"content": {"type": "string", "description": "the whole report"}}, ["content"]),
    _spec("done", f"Finish the session. Only accepted once {REPORT_PATH} exists.",
          {"summary": {"type": "string", "description": "one paragraph"}}, ["summary"]),
    _spec("quit", "Stop because the task cannot be completed properly; explain why.",
          {"reason": {"type": "string", "description": "why you are stopping"}}, ["reason"]),
]

FIGURE_PRELUDE = "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"


@dataclass
class ToolResult:
    """What one call did: the text the model sees, and facts for the trajectory."""

    output: str
    ok: bool = True
    exit_code: int | None = None
    timed_out: bool = False
    truncated: bool = False
    exit_reason: ExitReason | None = None
    exit_message: str = ""
    written: list[tuple[str, bytes]] = field(default_factory=list)


def _render_exec(result: ExecResult, limit: int) -> ToolResult:
    parts = [f"exit code: {result.exit_code}" + (" (timed out)" if result.timed_out else "")]
    if result.stdout:
        parts.append(result.stdout.rstrip("\n"))
    if result.stderr:
        parts.append("[stderr]\n" + result.stderr.rstrip("\n"))
    text = "\n".join(parts)
    clipped = len(text) > limit
    if clipped:
        text = text[:limit] + f"\n[... {len(text) - limit} more characters not shown ...]"
    return ToolResult(
        output=text,
        ok=result.ok,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        truncated=result.truncated or clipped,
    )


class SandboxTools:
    """Executes tool calls against one sandbox."""

    def __init__(self, sandbox: Sandbox, command_timeout_s: float, max_output_chars: int) -> None:
        self.sandbox = sandbox
        self.timeout = command_timeout_s
        self.limit = max_output_chars

    def execute(self, call: ToolCall) -> ToolResult:
        handler = getattr(self, f"_tool_{call.name}", None)
        if call.invalid_arguments is not None:
            return ToolResult(output=f"error: the arguments of {call.name} are not a JSON object: "
                                     f"{call.invalid_arguments[:300]!r}; send them as JSON matching the tool's "
                                     "parameters", ok=False)
        if handler is None:
            known = ", ".join(spec.name for spec in TOOL_SPECS)
            return ToolResult(output=f"error: unknown tool {call.name!r}; tools: {known}", ok=False)
        try:
            return handler(**call.arguments)
        except TypeError as exc:
            return ToolResult(output=f"error: bad arguments for {call.name}: {exc}", ok=False)

    def _run_python(self, code: str) -> ToolResult:
        result = self.sandbox.exec(["python3", "-"], stdin=code, timeout=self.timeout)
        return _render_exec(result, self.limit)

    def _tool_python(self, code: str) -> ToolResult:
        return self._run_python(code)

    def _tool_shell(self, command: str) -> ToolResult:
        result = self.sandbox.exec(["bash", "-c", command], timeout=self.timeout)
        return _render_exec(result, self.limit)

    def _tool_read_file(self, path: str) -> ToolResult:
        try:
            data = self.sandbox.read_file(path, max_bytes=self.limit * 4)
        except (FileNotFoundError, IsADirectoryError, PermissionError, ValueError) as exc:
            return ToolResult(output=f"error: cannot read {path}: {exc}", ok=False)
        text = data.decode("utf-8", errors="replace")
        clipped = len(text) > self.limit
        return ToolResult(output=text[: self.limit], truncated=clipped)

    def _write(self, path: str, content: str) -> ToolResult:
        data = content.encode("utf-8")
        try:
            self.sandbox.write_file(path, data)
        except (PermissionError, ValueError, IsADirectoryError) as exc:
            return ToolResult(output=f"error: cannot write {path}: {exc}", ok=False)
        return ToolResult(output=f"wrote {len(data)} bytes to {path}", written=[(path, data)])

    def _tool_write_file(self, path: str, content: str) -> ToolResult:
        return self._write(path, content)

    def _tool_write_report(self, content: str) -> ToolResult:
        return self._write(REPORT_PATH, content)

    def _tool_figure(self, code: str, filename: str) -> ToolResult:
        if not FIGURE_NAME.match(filename):
            return ToolResult(output="error: filename must be a plain name ending .png, .pdf or .svg", ok=False)
        target = f"figures/{filename}"
        program = (
            FIGURE_PRELUDE
            + "import os\nos.makedirs('figures', exist_ok=True)\n"
            + code
            + f"\nplt.savefig({json.dumps(target)}, dpi=110, bbox_inches='tight')\nprint('saved {target}')\n"
        )
        return self._run_python(program)

    def _report_exists(self) -> bool:
        try:
            return bool(self.sandbox.read_file(REPORT_PATH, max_bytes=16).strip() or True)
        except (FileNotFoundError, IsADirectoryError, PermissionError, ValueError):
            return False

    def _tool_done(self, summary: str = "") -> ToolResult:
        if not self._report_exists():
            return ToolResult(
                output=f"refused: {REPORT_PATH} does not exist yet. Write it with write_report, or call quit.",
                ok=False,
            )
        return ToolResult(output="session finished", exit_reason=ExitReason.done, exit_message=summary)

    def _tool_quit(self, reason: str = "") -> ToolResult:
        return ToolResult(output="session stopped", exit_reason=ExitReason.quit, exit_message=reason)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
