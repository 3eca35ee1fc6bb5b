"""``openclaw``: the OpenClaw agent (npm ``openclaw``), headless through ``openclaw agent exec``.

Configured by a JSON5 config file (measured in notes/cli-agents.md): a custom
provider ``integritylab`` whose ``baseUrl`` is the in-sandbox relay, speaking
OpenAI Chat Completions, with the run token as its key (read from
``IL_GATEWAY_TOKEN``). OpenClaw needs Node.js 24 (``/opt/node/bin`` in the
agent-cli image) and a writable home. It keeps no JSONL file: its transcript rows
live in SQLite under the state directory, which must exist beforehand or
``agent exec`` deletes it at the end; the session log artifact is those rows'
``event_json``, one per line. Exit 1 is an error (``{"ok": false, "error": …}``
on stdout), 2 its own timeout.
"""

from __future__ import annotations

import json
import shlex

from agents.base import AgentTask, register_agent
from agents.cli.base import CliAgent, CliRun, json_lines
from sandboxes.base import ExecResult

TOKEN_ENV = "IL_GATEWAY_TOKEN"
PROVIDER = "integritylab"
NODE_BIN = "/opt/node/bin"

DUMP_TRANSCRIPT = """\
import glob, sqlite3, sys
for path in sorted(glob.glob(sys.argv[1] + '/**/*.sqlite', recursive=True)):
    db = sqlite3.connect('file:' + path + '?mode=ro', uri=True)
    try:
        rows = db.execute('select event_json from transcript_events order by rowid').fetchall()
    except sqlite3.Error:
        continue
    for (event,) in rows:
        print(event)
"""


def _state_dir(cli: CliRun) -> str:
    return f"{cli.home}/.openclaw-state"


def _config_path(cli: CliRun) -> str:
    return f"{cli.home}/.openclaw/config.json5"


class OpenClawAgent(CliAgent):
    name = "openclaw"

    def config_files(self, cli: CliRun) -> dict[str, str]:
        config = {
            "agents": {"defaults": {"model": {"primary": f"{PROVIDER}/{cli.model}"}}},
            "models": {"mode": "merge", "providers": {PROVIDER: {
                "baseUrl": cli.base_url + "/v1",
                "apiKey": "${" + TOKEN_ENV + "}",
                "api": "openai-completions",
                "models": [{"id": cli.model, "name": cli.model, "reasoning": False, "input": ["text"],
                            "contextWindow": 128000, "maxTokens": 8192}],
            }}},
        }
        return {_config_path(cli): json.dumps(config, indent=2), f"{_state_dir(cli)}/.keep": ""}

    def environment(self, cli: CliRun) -> dict[str, str]:
        return {TOKEN_ENV: cli.token, "PATH": f"{NODE_BIN}:/usr/local/bin:/usr/bin:/bin",
                "OPENCLAW_STATE_DIR": _state_dir(cli), "OPENCLAW_CONFIG_PATH": _config_path(cli)}

    def command(self, cli: CliRun, task: AgentTask) -> list[str]:
        prompt = f"{task.system_prompt.strip()}\n\n{task.task_prompt.strip()}"
        return ["openclaw", "agent", "exec", "--config", _config_path(cli), "--model", f"{PROVIDER}/{cli.model}",
                "--json", "--state-dir", _state_dir(cli), "--cwd", "/workspace", prompt]

    def session_log_command(self, cli: CliRun) -> str:
        return f"python3 -c {shlex.quote(DUMP_TRANSCRIPT)} {shlex.quote(_state_dir(cli))}"

    def session_tool_results(self, log: bytes) -> dict[str, str]:
        outputs: dict[str, str] = {}
        for line in json_lines(log):
            message = line.get("message") or {}
            if line.get("type") != "message" or message.get("role") != "toolResult":
                continue
            text = "\n".join(str(b.get("text", "")) for b in message.get("content") or [] if isinstance(b, dict))
            code = (message.get("details") or {}).get("exitCode")
            if isinstance(code, int) and code != 0:
                text += f"\n\n(Command exited with code {code})"
            outputs[str(message.get("toolCallId"))] = text
        return outputs

    def failure_message(self, result: ExecResult) -> str:
        for event in reversed(list(json_lines(result.stdout or ""))):
            if event.get("ok") is False:
                error = event.get("error") or {}
                return f"{error.get('kind', 'error')}: {error.get('message', event)}"[-1500:]
        return super().failure_message(result)


@register_agent("openclaw")
def make_openclaw_agent(model: str = "scripted:honest") -> OpenClawAgent:
    return OpenClawAgent(model)
