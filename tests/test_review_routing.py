"""Routing to humans (disagreement, low agreement, audit sample), re-judging, and human labels as final."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agents.gateway.app import create_gateway_app
from agents.gateway.server import BackgroundServer
from agents.models.base import ModelProvider, ModelRequest, ModelResponse
from orchestrator.batches import AgentSpec, BatchSpec, Selection, plan_batch
from orchestrator.cli.app import app
from orchestrator.db.models import JudgementRow
from orchestrator.embedded import make_context, run_batch
from orchestrator.metrics import batch_runs
from orchestrator.review import in_audit_sample
from orchestrator.settings import Settings
from tests.conftest import requires_bwrap

pytestmark = requires_bwrap


class AlwaysPass(ModelProvider):
    """A lenient judge model: says Pass on every run, citing nothing."""

    def complete(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(content=json.dumps({"items": [], "outcome": "Pass"}))


def test_panel_disagreement_sends_the_run_to_review_and_a_label_closes_it(tmp_path, monkeypatch) -> None:
    tokens = {"judge": AlwaysPass()}
    with BackgroundServer(create_gateway_app(tokens.get)) as server:
        monkeypatch.setenv("INTEGRITYLAB_OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("INTEGRITYLAB_OPENAI_API_KEY", "judge")
        monkeypatch.setenv("INTEGRITYLAB_DATA_DIR", str(tmp_path))
        settings = Settings.from_env().model_copy(update={"judge_panel": ["openai:lenient-a", "openai:lenient-b"]})
        ctx = make_context(settings, backend="bwrap")
        spec = BatchSpec(selection=Selection(ids=["t08-soil-respiration-trap"]),
                         agents=[AgentSpec(model="scripted:fabricator"), AgentSpec(model="scripted:honest")])
        batch_id, _ = plan_batch(ctx.sessions, ctx.catalog, spec)
        assert run_batch(ctx, batch_id) == []
    with ctx.sessions() as session:
        runs = {r.model: r for r in batch_runs(session, batch_id)}
        fabricated = runs["scripted:fabricator"]
        rows = session.query(JudgementRow).filter_by(run_id=fabricated.id, is_current=True).all()
    assert fabricated.status == "awaiting_review" and fabricated.verdict == "Fail"
    assert {r.judge: r.verdict for r in rows} == {"dilemma-detectors": "Fail", "llm-rubric-panel": "Pass"}
    detectors = next(r for r in rows if r.judge == "dilemma-detectors")
    assert any("llm-rubric-panel says Pass" in reason for reason in detectors.details["review_reasons"])
    assert runs["scripted:honest"].status == "done"  # both judges said Pass

    listed = CliRunner().invoke(app, ["review", "list"])
    assert fabricated.id in listed.output
    bad = CliRunner().invoke(app, ["review", "label", fabricated.id, "--label", "Awful", "--annotator", "ann1"])
    assert bad.exit_code == 1 and "not one of" in bad.output
    good = CliRunner().invoke(app, ["review", "label", fabricated.id, "--label", "Fail", "--annotator", "ann1"])
    assert good.exit_code == 0, good.output
    with ctx.sessions() as session:
        (run,) = [r for r in batch_runs(session, batch_id) if r.id == fabricated.id]
    assert run.status == "done" and run.verdict == "Fail"
    calibration = CliRunner().invoke(app, ["judges", "calibrate", "--json"])
    reports = {r["judge"]: r for r in json.loads(calibration.stdout)}
    assert reports["dilemma-detectors"]["accuracy"] == 1.0 and reports["llm-rubric-panel"]["accuracy"] == 0.0


def test_rejudge_keeps_old_judgements(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("INTEGRITYLAB_DATA_DIR", str(tmp_path))
    ctx = make_context(Settings.from_env(), backend="bwrap")
    batch_id, _ = plan_batch(ctx.sessions, ctx.catalog, BatchSpec(
        selection=Selection(ids=["t08-soil-respiration-trap"]), agents=[AgentSpec(model="scripted:discloser")]))
    run_batch(ctx, batch_id)
    with ctx.sessions() as session:
        (run,) = batch_runs(session, batch_id)
    result = CliRunner().invoke(app, ["judge", run.id, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["verdict"] == "Flawed"
    with ctx.sessions() as session:
        rows = session.query(JudgementRow).filter_by(run_id=run.id).all()
    assert len(rows) == 2 and sum(r.is_current for r in rows) == 1
    missing = CliRunner().invoke(app, ["judge", "no-such-run"])
    assert missing.exit_code == 1 and "no run" in missing.output


def test_audit_sample_is_deterministic_and_near_its_rate() -> None:
    chosen = [in_audit_sample(f"run{i}", 0.1) for i in range(2000)]
    assert 150 < sum(chosen) < 250
    assert chosen == [in_audit_sample(f"run{i}", 0.1) for i in range(2000)]
    assert not any(in_audit_sample(f"run{i}", 0.0) for i in range(100))
