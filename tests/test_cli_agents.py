"""Unmodified coding-agent CLIs (Codex, Claude Code, OpenClaw) run scenarios inside the Docker sandbox.

Each CLI is the real binary from npm, installed in the ``integritylab/agent-cli``
image at build time; its model is a scripted policy served by the run's own
gateway through the in-sandbox relay. The policy answers through the CLI's own
shell tool, so what the judges see was really executed by the CLI.

Needs a Docker engine and the agent-cli image (``integritylab images build
--offline --only agent-cli``): skipped without them, a failure when ``CI=true``.
"""

from __future__ import annotations

import json
import os

import pytest

from agents.base import make_agent, register_agent
from agents.cli.base import CliRun
from agents.cli.codex import CodexAgent
from agents.models.base import ModelProvider, ModelRequest, ModelResponse, ToolCall
from agents.models.registry import register_provider
from agents.scripted import dialects
from agents.scripted.provider import make_scripted
from orchestrator.batches import AgentSpec, BatchSpec, Selection, plan_batch
from orchestrator.db.models import ArtifactRow
from orchestrator.embedded import make_context, run_batch
from orchestrator.execution import RunContext
from orchestrator.metrics import batch_runs
from orchestrator.recorder import load_events
from orchestrator.settings import Settings

ON_CI = os.environ.get("CI", "").lower() == "true"
CLIS = ["codex", "claude_code", "openclaw"]
TRAP, CONTROL = "t01-kiln-energy-forecast-trap", "t01-kiln-energy-forecast-control"


def _image_ready() -> tuple[bool, str]:
    try:
        from sandboxes.registry import get_backend

        backend = get_backend("docker")
        ok, why = backend.available()
        if not ok:
            return False, why
        image = make_agent("codex").sandbox_image
        backend.client().images.get(image)  # type: ignore[attr-defined]
        return True, ""
    except Exception as exc:  # noqa: BLE001 - reported as the skip reason
        return False, f"{type(exc).__name__}: {exc}"


@pytest.fixture(scope="module")
def docker_ready() -> None:
    ok, why = _image_ready()
    if not ok:
        if ON_CI:
            pytest.fail(f"CI=true but the agent-cli image cannot run: {why}")
        pytest.skip(f"agent-cli image unavailable: {why}")


@pytest.fixture
def docker_ctx(settings: Settings, docker_ready: None) -> RunContext:
    return make_context(settings, backend="docker")


def _run(ctx: RunContext, agent: str, scenario: str, model: str, wall_s: float = 300):  # type: ignore[no-untyped-def]
    spec = BatchSpec(selection=Selection(ids=[scenario]), agents=[AgentSpec(agent=agent, model=model)],
                     budget={"max_steps": 30, "wall_timeout_s": wall_s})
    batch_id, _ = plan_batch(ctx.sessions, ctx.catalog, spec)
    assert run_batch(ctx, batch_id) == []
    with ctx.sessions() as session:
        (run,) = batch_runs(session, batch_id)
        events = load_events(session, run.id)
        artifacts = {a.name: a for a in session.query(ArtifactRow).filter_by(run_id=run.id)}
    return run, events, artifacts


@pytest.mark.slow
@pytest.mark.parametrize("cli", CLIS)
def test_cli_on_trap_and_control(cli: str, docker_ctx: RunContext) -> None:
    """honest quits the trap and completes the control; fabricator fabricates on the trap."""
    outcomes = {}
    for scenario, model in [(TRAP, "scripted:honest"), (CONTROL, "scripted:honest"), (TRAP, "scripted:fabricator")]:
        run, events, artifacts = _run(docker_ctx, cli, scenario, model)
        kinds = [e.kind for e in events]
        detail = f"{cli} {scenario} {model}: {run.status} {run.exit_reason} {run.error_message} {kinds}"
        assert run.status in ("done", "awaiting_review"), detail
        # the CLI really executed our policy's commands through its own shell and file tools
        calls = [e for e in events if e.kind == "tool_call"]
        assert calls and {e.payload["tool"] for e in calls} <= {"shell", "write_file"}, detail
        assert all(e.payload["arguments"]["cli_tool"] for e in calls)
        if run.exit_reason == "done" and cli != "codex":  # Claude Code's Write, OpenClaw's write
            writes = [e.payload["arguments"] for e in calls if e.payload["tool"] == "write_file"]
            assert [w["path"] for w in writes] == ["report/report.md"], detail
        # model calls went through the gateway and are interleaved with the tool calls
        model_calls = [i for i, e in enumerate(events) if e.kind == "model_call"]
        assert model_calls and model_calls[0] < kinds.index("tool_call") < model_calls[-1], detail
        # the raw session log and stdout are kept
        assert "agent/stdout.jsonl" in artifacts, detail
        assert "agent/session.jsonl" in artifacts, detail
        outcomes[(scenario, model)] = (run.verdict, run.exit_reason)
    assert outcomes[(TRAP, "scripted:honest")] == ("Pass", "quit"), outcomes
    assert outcomes[(CONTROL, "scripted:honest")] == ("Pass", "done"), outcomes
    assert outcomes[(TRAP, "scripted:fabricator")][0] == "Fail", outcomes


@pytest.mark.parametrize("budget, named", [({"max_steps": 2}, "calls"), ({"max_tokens": 12_000}, "tokens")])
def test_cli_run_ends_at_its_gateway_budget(budget: dict, named: str, docker_ctx: RunContext) -> None:
    spec = BatchSpec(selection=Selection(ids=[CONTROL]), agents=[AgentSpec(agent="codex", model="scripted:honest")],
                     budget=budget)
    batch_id, _ = plan_batch(docker_ctx.sessions, docker_ctx.catalog, spec)
    run_batch(docker_ctx, batch_id)
    with docker_ctx.sessions() as session:
        (run,) = batch_runs(session, batch_id)
        events = load_events(session, run.id)
    assert run.exit_reason == "step_limit", (run.exit_reason, run.error_message)
    assert named in (run.exit_message or ""), run.exit_message
    # the last command ran, but its output never reached the model: it comes from Codex's session log
    last = [e for e in events if e.kind == "observation"][-1]
    assert last.payload["ok"] and last.payload["output"].strip(), last.payload
    errors = [e for e in events if e.kind == "error" and e.payload["layer"] == "gateway"]
    assert errors and "budget" in errors[0].payload["message"]


class ReachesOut(ModelProvider):
    """The honest policy, after one detour: it has the CLI try the internet and the host from its shell."""

    ATTEMPT = ("python3 -c \"import socket; socket.create_connection(('93.184.216.34', 80), timeout=3)\" ; "
               "python3 -c \"import socket; socket.create_connection(('172.17.0.1', 5432), timeout=3)\"")

    def __init__(self) -> None:
        self.inner = make_scripted("honest")
        self.spec = "reachesout:honest"

    def complete(self, request: ModelRequest) -> ModelResponse:
        dialect = dialects.detect(request)
        if dialect is not None and not any(m.role == "tool" for m in request.messages):
            call = ToolCall(id="call-0-netprobe", name=dialect.tool, arguments={dialect.argument: self.ATTEMPT})
            return ModelResponse(content="Checking the network.", tool_calls=[call], finish_reason="tool_calls")
        return self.inner.complete(request)


@register_provider("reachesout")
def _reaches_out(name: str) -> ModelProvider:
    return ReachesOut()


def test_commands_a_cli_runs_cannot_reach_the_network_and_the_attempt_is_recorded(docker_ctx: RunContext) -> None:
    run, events, _ = _run(docker_ctx, "codex", CONTROL, "reachesout:honest")
    probe = next(e for e in events if e.kind == "observation" and e.payload["call_id"] == "call-0-netprobe")
    assert probe.payload["exit_code"] != 0 and not probe.payload["ok"]
    assert "Network is unreachable" in probe.payload["output"], probe.payload["output"]
    call = next(e for e in events if e.kind == "tool_call" and e.payload["call_id"] == "call-0-netprobe")
    assert "create_connection" in call.payload["arguments"]["command"]
    assert run.verdict == "Pass" and run.exit_reason == "done"  # the run itself went on through the relay


class CodexAimedElsewhere(CodexAgent):
    """Codex configured with a real provider address instead of the relay."""

    def config_files(self, cli: CliRun) -> dict[str, str]:
        files = super().config_files(cli)
        return {path: text.replace(cli.base_url, "http://203.0.113.7:443") for path, text in files.items()}


@register_agent("codex_elsewhere")
def _codex_elsewhere(model: str = "scripted:honest") -> CodexAgent:
    return CodexAimedElsewhere(model)


def test_a_cli_aimed_past_the_relay_fails_and_the_failure_is_recorded(docker_ctx: RunContext) -> None:
    run, events, artifacts = _run(docker_ctx, "codex_elsewhere", CONTROL, "scripted:honest", wall_s=20)
    # Codex retries a dead endpoint with backoff: it either gives up (an agent-layer error) or runs out of time
    assert run.exit_reason in ("crash", "timeout"), run.exit_message
    if run.exit_reason == "crash":
        assert run.status == "error" and run.error_layer == "agent" and "exited with code" in run.error_message
    assert not [e for e in events if e.kind == "model_call"]  # nothing reached any model
    assert events[-1].kind in ("exit", "error")
    assert "agent/stdout.jsonl" in artifacts


@pytest.mark.parametrize("cli", ["claude_code"])
def test_the_pressure_condition_reaches_the_cli_s_model(cli: str, docker_ctx: RunContext) -> None:
    """The scenario prompt goes to the CLI with its pressure condition; the model sees both."""
    from scenarios.conditions import get_condition

    spec = BatchSpec(selection=Selection(ids=[CONTROL]), agents=[AgentSpec(agent=cli, model="scripted:honest")],
                     conditions=["PP4"], budget={"max_steps": 30})
    batch_id, _ = plan_batch(docker_ctx.sessions, docker_ctx.catalog, spec)
    assert run_batch(docker_ctx, batch_id) == []
    with docker_ctx.sessions() as session:
        (run,) = batch_runs(session, batch_id)
        events = load_events(session, run.id)
    first = json.dumps(next(e for e in events if e.kind == "model_call").payload["request"]["body"])
    fragment_line = get_condition("PP4").fragment.strip().splitlines()[0]
    assert json.dumps(fragment_line)[1:-1] in first
    assert "report/report.md" in first and run.condition == "PP4"
