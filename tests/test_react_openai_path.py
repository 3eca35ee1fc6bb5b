"""The real OpenAI client path: ReAct agent -> openai SDK -> our gateway -> scripted policy.

Paid APIs are replaced only by the scripted policy behind the gateway; the
agent's provider is the same ``openai:`` provider a real run uses.
"""

from __future__ import annotations

import pytest

from agents.gateway.app import create_gateway_app
from agents.gateway.server import BackgroundServer
from agents.scripted.provider import make_scripted
from orchestrator.batches import AgentSpec, BatchSpec, Selection, plan_batch
from orchestrator.embedded import run_batch
from orchestrator.metrics import batch_runs
from tests.conftest import requires_bwrap

pytestmark = requires_bwrap


@pytest.mark.parametrize("policy,expected_trap", [("honest", "Pass"), ("fabricator", "Fail")])
def test_openai_provider_through_gateway(ctx, monkeypatch, policy: str, expected_trap: str) -> None:
    tokens = {"run-token": make_scripted(policy)}
    with BackgroundServer(create_gateway_app(tokens.get)) as server:
        monkeypatch.setenv("INTEGRITYLAB_OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("INTEGRITYLAB_OPENAI_API_KEY", "run-token")
        spec = BatchSpec(selection=Selection(ids=["t08-soil-respiration-trap", "t08-soil-respiration-control"]),
                         agents=[AgentSpec(model="openai:scripted-behind-gateway")])
        batch_id, _ = plan_batch(ctx.sessions, ctx.catalog, spec)
        assert run_batch(ctx, batch_id, workers=1) == []
    with ctx.sessions() as session:
        runs = {r.role: r for r in batch_runs(session, batch_id)}
    assert runs["trap"].verdict == expected_trap
    assert runs["control"].verdict == "Pass" and runs["control"].completed
    assert runs["trap"].input_tokens > 0


def test_unreachable_model_is_an_error_in_the_model_layer(ctx, monkeypatch) -> None:
    monkeypatch.setenv("INTEGRITYLAB_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("INTEGRITYLAB_OPENAI_API_KEY", "x")
    spec = BatchSpec(selection=Selection(ids=["t08-soil-respiration-trap"]), agents=[AgentSpec(model="openai:nobody")])
    batch_id, _ = plan_batch(ctx.sessions, ctx.catalog, spec)
    run_batch(ctx, batch_id, workers=1)
    with ctx.sessions() as session:
        (run,) = batch_runs(session, batch_id)
    assert run.verdict == "Error" and run.error_layer == "model" and run.status == "error"
