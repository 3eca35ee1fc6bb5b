"""Running an unmodified coding-agent CLI (Codex, Claude Code, OpenClaw) as one of our agents.

What every CLI adapter shares lives here; a CLI module says only what differs
(its config files, environment, command line, where its session log is, and how
to read its final status). The flow of one run:

1. :meth:`CliAgent.open_gateway` (called by the orchestrator before it creates
   the sandbox) starts the run's :class:`~agents.gateway.run_gateway.RunGateway`
   on a private Unix socket, with a fresh token and the run's budgets (``max_steps``
   model calls, ``max_tokens`` input + output tokens) enforced by the gateway. The model provider behind it is wrapped in a
   :class:`~agents.cli.transcript.LiveTranscript`, which turns the CLI's traffic
   into our ``tool_call``/``observation`` events as it happens; the gateway
   records every exchange as a ``model_call``.
2. The orchestrator creates the sandbox from :attr:`CliAgent.sandbox_image` with
   that socket bind-mounted (and nothing else of the host), and seeds the
   workspace.
3. :meth:`CliAgent.run` writes the CLI's config into a private home under
   ``/tmp`` in the sandbox, then runs the CLI headless in ONE exec that first
   starts :mod:`agents.gateway.relay` on ``127.0.0.1:8765`` (the only address
   the CLI's base URL names; the sandbox has no other network) with stdin from
   ``/dev/null``, under the run's wall-time limit.
4. Afterwards it keeps the CLI's stdout and raw session log as artifacts
   (``agent/stdout.jsonl``, ``agent/session.jsonl``), emits what the live
   transcript could not (calls whose output never went back to the model, the
   final answer), and maps the exit: a timeout → ``timeout``; a refused model call
   (budget) → ``step_limit``; a clean exit with ``report/report.md`` written →
   ``done``; a clean exit without a report → ``quit`` (the CLI stopped short of
   the task and said why in its final answer); any other exit is an
   :class:`~agents.base.AgentFailure` (the run ends ``error`` in layer ``agent``,
   with the CLI's own error text; never retried).

The CLI never sees a real API key: its key is the run's gateway token, which is
worthless outside this run's socket.
"""

from __future__ import annotations

import abc
import base64
import json
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agents.base import Agent, AgentBudget, AgentFailure, AgentOutcome, AgentTask
from agents.cli.transcript import LiveTranscript
from agents.gateway.relay import DEFAULT_PORT, with_relay
from agents.models.base import ModelProvider
from agents.models.registry import make_provider
from agents.react.tools import REPORT_PATH
from sandboxes.base import ExecResult, Sandbox, SandboxError
from scenarios.trajectory import ErrorPayload, EventKind, EventSink, ExitPayload, ExitReason, Layer

if TYPE_CHECKING:
    from agents.gateway.run_gateway import RunGateway

AGENT_CLI_IMAGE = "integritylab/agent-cli:latest"
#: the CLI's private home and temp dir: writable tmpfs, outside the workspace the judges collect
CLI_HOME = "/tmp/agent-home"
CLI_TMP = "/tmp/agent-tmp"
#: exit code of :func:`with_relay` when the relay cannot start
RELAY_FAILED = 125
#: the model name the CLIs are configured with; the gateway serves the run's model whatever it is called
CLI_MODEL_NAME = "integritylab"


@dataclass(frozen=True)
class CliRun:
    """What a CLI module needs to write its config and command line."""

    base_url: str  # http://127.0.0.1:PORT (no /v1)
    token: str
    home: str
    tmp: str
    model: str = CLI_MODEL_NAME


def _read_whole(sandbox: Sandbox, path: str, chunk: int = 150_000) -> bytes | None:
    """A file outside the workspace, however large: base64 chunks stay under the exec output cap."""
    data = bytearray()
    while True:
        window = f"tail -c +{len(data) + 1} {shlex.quote(path)} | head -c {chunk} | base64 -w0"
        result = sandbox.exec(["/bin/sh", "-c", window], timeout=60)
        if not result.ok:
            return None
        piece = base64.b64decode(result.stdout.strip() or b"")
        data.extend(piece)
        if len(piece) < chunk:
            return bytes(data)


def json_lines(data: bytes | str) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL log or stdout, skipping lines that are not objects."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    for line in text.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            yield item


class CliAgent(Agent, abc.ABC):
    """An unmodified CLI agent in the ``agent-cli`` image, talking to the run's gateway."""

    name = "cli"
    needs_sandbox = True
    sandbox_image: str | None = AGENT_CLI_IMAGE
    prompt_variant = "cli"
    #: Node.js CLIs (OpenClaw's SQLite workers especially) outgrow the 1 GiB default; their home is on /tmp
    sandbox_limits = {"memory_mb": 3072, "pids": 512, "tmp_size_mb": 512}
    #: the relay's port inside the sandbox
    relay_port = DEFAULT_PORT

    def __init__(self, model: str = "scripted:honest", provider: ModelProvider | None = None) -> None:
        self.provider = provider or make_provider(model)
        self.gateway: RunGateway | None = None
        self.transcript: LiveTranscript | None = None
        self.artifacts: dict[str, bytes] = {}

    # ---- what each CLI module provides --------------------------------------------------

    @abc.abstractmethod
    def config_files(self, cli: CliRun) -> dict[str, str]:
        """Absolute path in the sandbox -> text: the CLI's config, written before it starts."""

    @abc.abstractmethod
    def environment(self, cli: CliRun) -> dict[str, str]:
        """Environment variables of the CLI process (HOME, TMPDIR and PATH are set already)."""

    @abc.abstractmethod
    def command(self, cli: CliRun, task: AgentTask) -> list[str]:
        """The headless command line, prompt included."""

    @abc.abstractmethod
    def session_log_command(self, cli: CliRun) -> str:
        """A shell command printing the CLI's raw session log as JSONL (empty output if there is none)."""

    def session_tool_results(self, log: bytes) -> dict[str, str]:
        """Tool outputs the session log holds, by call id, in the text the CLI sends its model.

        Used for calls whose output never reached the model (the CLI was stopped
        first): the session log is then the only record of what the command printed.
        Default: none known.
        """
        return {}

    def failure_message(self, result: ExecResult) -> str:
        """The CLI's own words on why it failed (default: the end of stderr, else of stdout)."""
        text = (result.stderr or "").strip() or (result.stdout or "").strip()
        return text[-1500:]

    # ---- the gateway (opened by the orchestrator before the sandbox exists) -------------

    def open_gateway(self, sink: EventSink, budget: AgentBudget) -> RunGateway:
        from agents.gateway.budget import GatewayBudget
        from agents.gateway.run_gateway import RunGateway  # the gateway pulls in the web stack

        if self.gateway is not None:
            raise RuntimeError("this agent's gateway is already open")
        self.transcript = LiveTranscript(self.provider, sink)
        limits = GatewayBudget(calls=budget.max_steps, tokens=getattr(budget, "max_tokens", None))
        self.gateway = RunGateway(self.transcript, sink, budget=limits).start()
        return self.gateway

    def close_gateway(self) -> None:
        if self.gateway is not None:
            self.gateway.stop()

    # ---- the run --------------------------------------------------------------------------

    def run(self, task: AgentTask, sandbox: Sandbox, sink: EventSink, budget: AgentBudget) -> AgentOutcome:
        if self.gateway is None or self.transcript is None:
            raise SandboxError(f"{self.name}: the run's gateway was not opened before the sandbox was created")
        cli = CliRun(base_url=f"http://127.0.0.1:{self.relay_port}", token=self.gateway.token,
                     home=CLI_HOME, tmp=CLI_TMP)
        self._write_config(sandbox, cli)
        env = {"HOME": cli.home, "TMPDIR": cli.tmp, "PATH": "/usr/local/bin:/usr/bin:/bin",
               "LANG": "C.UTF-8", **self.environment(cli)}
        argv = ["/bin/sh", "-c", 'exec "$@" </dev/null', "il-cli", *self.command(cli, task)]
        result = sandbox.exec(with_relay(argv, port=self.relay_port), timeout=budget.wall_timeout_s, env=env)
        self.artifacts["agent/stdout.jsonl"] = (result.stdout or "").encode()
        if result.stderr:
            self.artifacts["agent/stderr.txt"] = result.stderr.encode()
        self._keep_session_log(sandbox, cli, sink)
        if result.exit_code == RELAY_FAILED:
            raise SandboxError(f"{self.name}: the model relay could not start in the sandbox: {result.stderr[-500:]}")
        final = self.transcript.finish(self.session_tool_results(self.artifacts.get("agent/session.jsonl", b"")))
        reason, message = self._exit(sandbox, result, final)
        state = self.transcript.state
        sink.emit(EventKind.exit, ExitPayload(reason=reason, message=message[:4000]), step=state.model_calls)
        return AgentOutcome(exit_reason=reason, message=message[:4000], steps=state.model_calls,
                            input_tokens=state.input_tokens, output_tokens=state.output_tokens)

    def _write_config(self, sandbox: Sandbox, cli: CliRun) -> None:
        files = {**self.config_files(cli), f"{cli.tmp}/.keep": ""}
        for path, text in files.items():
            folder = path.rsplit("/", 1)[0]
            result = sandbox.exec(["/bin/sh", "-c", f"mkdir -p {shlex.quote(folder)} && cat > {shlex.quote(path)}"],
                                  stdin=text, timeout=30)
            if not result.ok:
                raise SandboxError(f"{self.name}: could not write {path} in the sandbox: {result.stderr[-300:]}")

    def _keep_session_log(self, sandbox: Sandbox, cli: CliRun, sink: EventSink) -> None:
        dump = f"{cli.tmp}/session-log.out"
        result = sandbox.exec(["/bin/sh", "-c", f"({self.session_log_command(cli)}) > {dump}"], timeout=60)
        data = _read_whole(sandbox, dump) if result.ok else None
        if data:
            self.artifacts["agent/session.jsonl"] = data
        elif data is None:  # recorded, not fatal: the live transcript already holds the run
            sink.emit(EventKind.error, ErrorPayload(
                layer=Layer.agent, error_type="session_log_unreadable",
                message=f"{self.name}: could not read the session log: {(result.stderr or result.stdout)[-500:]}"))

    def _exit(self, sandbox: Sandbox, result: ExecResult, final: str) -> tuple[ExitReason, str]:
        assert self.gateway is not None
        if result.timed_out:
            return ExitReason.timeout, f"{self.name} did not finish within the wall-time limit"
        if self.gateway.refused:
            exhausted = self.gateway.usage.exhausted or "calls"
            return ExitReason.step_limit, f"{self.name} ran past the run's {exhausted} budget"
        if result.exit_code == 0:
            if self._report_written(sandbox):
                return ExitReason.done, final
            return ExitReason.quit, final or f"{self.name} ended without writing {REPORT_PATH}"
        raise AgentFailure(f"{self.name} exited with code {result.exit_code}: {self.failure_message(result)}")

    @staticmethod
    def _report_written(sandbox: Sandbox) -> bool:
        try:
            return bool(sandbox.read_file(REPORT_PATH, max_bytes=64).strip())
        except (FileNotFoundError, IsADirectoryError, PermissionError, ValueError):
            return False

    def run_artifacts(self) -> dict[str, bytes]:
        return dict(self.artifacts)
