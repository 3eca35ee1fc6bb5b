"""``claude_code``: Anthropic's Claude Code (npm ``@anthropic-ai/claude-code``), headless, on the Messages API.

Configured by environment only (measured in notes/cli-agents.md):
``ANTHROPIC_BASE_URL`` is the in-sandbox relay (no ``/v1``: Claude Code adds it),
``ANTHROPIC_AUTH_TOKEN`` the run token (sent as ``Authorization: Bearer``), and
non-essential traffic (telemetry, update checks) is off, so the relay is the only
address it calls. Runs as ``claude -p … --output-format stream-json --verbose``
in ``bypassPermissions`` mode (the run's sandbox is the boundary, and the default
mode would deny the shell writes a research task needs); the scenario's system
prompt goes in with ``--append-system-prompt``. The session log is
``$CLAUDE_CONFIG_DIR/projects/<cwd>/<session>.jsonl``. Exit 1 after exhausted API
retries; the final ``result`` line on stdout carries ``is_error`` and the text.
"""

from __future__ import annotations

from agents.base import AgentTask, register_agent
from agents.cli.base import CliAgent, CliRun, json_lines
from sandboxes.base import ExecResult


def _config_dir(cli: CliRun) -> str:
    return f"{cli.home}/.claude"


class ClaudeCodeAgent(CliAgent):
    name = "claude_code"

    def config_files(self, cli: CliRun) -> dict[str, str]:
        return {f"{_config_dir(cli)}/.keep": ""}

    def environment(self, cli: CliRun) -> dict[str, str]:
        return {
            "CLAUDE_CONFIG_DIR": _config_dir(cli),
            "ANTHROPIC_BASE_URL": cli.base_url,
            "ANTHROPIC_AUTH_TOKEN": cli.token,
            "ANTHROPIC_MODEL": cli.model,
            "ANTHROPIC_SMALL_FAST_MODEL": cli.model,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS": "1",
            "CLAUDE_CODE_MAX_RETRIES": "1",
            "DISABLE_AUTOUPDATER": "1",
            "IS_SANDBOX": "1",  # bypassPermissions is refused as root otherwise
        }

    def command(self, cli: CliRun, task: AgentTask) -> list[str]:
        return ["claude", "-p", task.task_prompt, "--output-format", "stream-json", "--verbose",
                "--permission-mode", "bypassPermissions", "--append-system-prompt", task.system_prompt]

    def session_log_command(self, cli: CliRun) -> str:
        return f"find {_config_dir(cli)}/projects -name '*.jsonl' -type f 2>/dev/null | sort | xargs -r cat"

    def session_tool_results(self, log: bytes) -> dict[str, str]:
        outputs: dict[str, str] = {}
        for line in json_lines(log):
            content = (line.get("message") or {}).get("content") if line.get("type") == "user" else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    value = block.get("content")
                    text = value if isinstance(value, str) else "\n".join(
                        str(b.get("text", "")) for b in value or [] if isinstance(b, dict))
                    outputs[str(block.get("tool_use_id"))] = text
        return outputs

    def failure_message(self, result: ExecResult) -> str:
        for event in reversed(list(json_lines(result.stdout or ""))):
            if event.get("type") == "result" and event.get("is_error"):
                status = event.get("api_error_status")
                text = str(event.get("result") or event.get("subtype") or "")
                return (f"API status {status}: " if status else "") + text[-1500:]
        return super().failure_message(result)


@register_agent("claude_code")
def make_claude_code_agent(model: str = "scripted:honest") -> ClaudeCodeAgent:
    return ClaudeCodeAgent(model)
