"""``codex``: OpenAI's Codex CLI (npm ``@openai/codex``), headless, on the Responses API.

Configured through ``$CODEX_HOME/config.toml`` (measured in notes/cli-agents.md):
a ``[model_providers.integritylab]`` entry pointing at the in-sandbox relay with
``wire_api = "responses"`` (the only wire Codex still accepts), the run token in
``IL_GATEWAY_TOKEN`` (sent as ``Authorization: Bearer``), and the features that
would phone home (plugins, analytics, hosted web search, sub-agents, goals) off.
Runs as ``codex exec --json`` with Codex's own sandbox bypassed: the run's
sandbox is ours, and Codex's bwrap helper cannot nest inside it. The session log
is ``$CODEX_HOME/sessions/…/rollout-*.jsonl``. Exit 1 means a failed turn or a
config error; the reason is in the ``turn.failed``/``error`` events on stdout.
"""

from __future__ import annotations

import json

from agents.base import AgentTask, register_agent
from agents.cli.base import CliAgent, CliRun, json_lines
from sandboxes.base import ExecResult

TOKEN_ENV = "IL_GATEWAY_TOKEN"


def _codex_home(cli: CliRun) -> str:
    return f"{cli.home}/.codex"  # not under TMPDIR: Codex refuses to set up its helpers there


class CodexAgent(CliAgent):
    name = "codex"

    def config_files(self, cli: CliRun) -> dict[str, str]:
        config = f"""\
model = {json.dumps(cli.model)}
model_provider = "integritylab"
web_search = "disabled"

[model_providers.integritylab]
name = "integritylab gateway"
base_url = {json.dumps(cli.base_url + "/v1")}
env_key = "{TOKEN_ENV}"
wire_api = "responses"
request_max_retries = 1
stream_max_retries = 1

[features]
plugins = false
goals = false

[agents]
enabled = false

[analytics]
enabled = false
"""
        return {f"{_codex_home(cli)}/config.toml": config}

    def environment(self, cli: CliRun) -> dict[str, str]:
        return {"CODEX_HOME": _codex_home(cli), TOKEN_ENV: cli.token}

    def command(self, cli: CliRun, task: AgentTask) -> list[str]:
        prompt = f"{task.system_prompt.strip()}\n\n{task.task_prompt.strip()}"
        return ["codex", "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                "--cd", "/workspace", prompt]

    def session_log_command(self, cli: CliRun) -> str:
        return f"find {_codex_home(cli)}/sessions -name 'rollout-*.jsonl' -type f 2>/dev/null | sort | xargs -r cat"

    def session_tool_results(self, log: bytes) -> dict[str, str]:
        outputs: dict[str, str] = {}
        for line in json_lines(log):
            payload = line.get("payload") or {}
            if line.get("type") == "response_item" and payload.get("type") == "function_call_output":
                output = payload.get("output")
                outputs[str(payload.get("call_id"))] = output if isinstance(output, str) else json.dumps(output)
        return outputs

    def failure_message(self, result: ExecResult) -> str:
        reasons: list[str] = []
        for event in json_lines(result.stdout or ""):
            if event.get("type") == "turn.failed":
                reasons.append(str((event.get("error") or {}).get("message", event)))
            elif event.get("type") == "error":
                reasons.append(str(event.get("message", event)))
        return "; ".join(reasons)[-1500:] or super().failure_message(result)


@register_agent("codex")
def make_codex_agent(model: str = "scripted:honest") -> CodexAgent:
    return CodexAgent(model)
