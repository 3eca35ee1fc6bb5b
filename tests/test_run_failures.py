"""Runs that break keep everything recorded before the break and name the failing layer."""

from __future__ import annotations

from agents.models.base import ModelError, ModelProvider, ModelRequest, ModelResponse
from agents.models.registry import register_provider
from agents.scripted.provider import make_scripted
from orchestrator.batches import AgentSpec, BatchSpec, Selection, plan_batch
from orchestrator.db.models import ArtifactRow
from orchestrator.embedded import run_batch
from orchestrator.execution import execute_run
from orchestrator.metrics import batch_runs
from orchestrator.recorder import load_events
from tests.conftest import requires_bwrap

pytestmark = requires_bwrap


class FailsAtStep(ModelProvider):
    """The honest policy, until request number ``n``, which raises like a dead upstream."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.inner = make_scripted("honest")

    def complete(self, request: ModelRequest) -> ModelResponse:
        calls = sum(1 for m in request.messages if m.role == "assistant")
        if calls + 1 >= self.n:
            raise ModelError("upstream returned 503 five times", retryable=True)
        return self.inner.complete(request)


@register_provider("failsat")
def _make(name: str) -> ModelProvider:
    return FailsAtStep(int(name))


def test_model_failure_mid_run_is_error_in_model_layer_with_events_kept(ctx) -> None:
    spec = BatchSpec(selection=Selection(ids=["t08-soil-respiration-control"]), agents=[AgentSpec(model="failsat:3")])
    batch_id, _ = plan_batch(ctx.sessions, ctx.catalog, spec)
    assert run_batch(ctx, batch_id) == []
    with ctx.sessions() as session:
        (run,) = batch_runs(session, batch_id)
        events = load_events(session, run.id)
        artifacts = session.query(ArtifactRow).filter_by(run_id=run.id).all()
    assert run.verdict == "Error" and run.error_layer == "model" and run.status == "error"
    assert "503" in run.error_message
    kinds = [e.kind for e in events]
    assert kinds.count("tool_call") == 2 and kinds[-1] == "error"
    assert events[-1].payload["layer"] == "model"
    # the workspace was still collected after the failure
    assert {a.name for a in artifacts} >= {"manifest.json", "data/efflux_2026.csv"}


def test_unknown_scenario_at_run_time_is_a_scenario_error(ctx) -> None:
    spec = BatchSpec(selection=Selection(ids=["t08-soil-respiration-trap"]), agents=[AgentSpec()])
    batch_id, _ = plan_batch(ctx.sessions, ctx.catalog, spec)
    with ctx.sessions() as session:
        (run,) = batch_runs(session, batch_id)
        run.scenario_id = "vanished-scenario"
        session.commit()
        run_id = run.id
    assert execute_run(ctx, run_id) == "error"
    with ctx.sessions() as session:
        (run,) = batch_runs(session, batch_id)
    assert run.error_layer == "scenario" and run.verdict == "Error"


def test_execute_run_twice_does_not_run_a_finished_run_again(ctx) -> None:
    spec = BatchSpec(selection=Selection(ids=["t08-soil-respiration-trap"]), agents=[AgentSpec()])
    batch_id, _ = plan_batch(ctx.sessions, ctx.catalog, spec)
    run_batch(ctx, batch_id)
    with ctx.sessions() as session:
        (run,) = batch_runs(session, batch_id)
        before = len(load_events(session, run.id))
    assert execute_run(ctx, run.id) == "done"
    with ctx.sessions() as session:
        assert len(load_events(session, run.id)) == before
