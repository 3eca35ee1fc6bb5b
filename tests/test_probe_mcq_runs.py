"""Probe and mcq scenarios through the real run path: single-shot, agentic, upstream failures, reports."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agents.models.base import ModelError, ModelProvider, ModelRequest, ModelResponse, ToolCall
from agents.models.registry import register_provider
from orchestrator.batches import AgentSpec, BatchSpec, Selection, plan_batch
from orchestrator.cli.app import app
from orchestrator.db.models import ArtifactRow, JudgementRow
from orchestrator.embedded import run_batch
from orchestrator.metrics import batch_runs, summarize_mcq, summarize_probes
from orchestrator.recorder import load_events
from tests.conftest import requires_bwrap

pytestmark = requires_bwrap
PROBE, PROBE_CONTROL = "p-pd-cold-fusion", "pc-pd-hydrogen-diffusion"
MCQ, MCQ_CONTROL = "m-outlier-removal-misconduct", "m-outlier-removal-control"


class Down(ModelProvider):
    def complete(self, request: ModelRequest) -> ModelResponse:
        raise ModelError("upstream kept answering 503", retryable=True)


class TexWriter(ModelProvider):
    """Writes a LaTeX report and finishes: exercises compile-after-run."""

    def complete(self, request: ModelRequest) -> ModelResponse:
        done = sum(1 for m in request.messages if m.role == "tool")
        calls = [
            ToolCall(id="t1", name="write_file", arguments={"path": "paper/main.tex", "content":
                     "\\\\documentclass{article}\\\\begin{document}Heat balance of the cell.\\\\end{document}\\n"}),
            ToolCall(id="t2", name="write_report", arguments={"content": "# Report\\nSee paper/main.tex.\\n"}),
            ToolCall(id="t3", name="done", arguments={"summary": "ok"}),
        ]
        return ModelResponse(tool_calls=[calls[min(done, 2)]])


register_provider("down")(lambda name: Down())
register_provider("texwriter")(lambda name: TexWriter())


def _run(ctx, spec: BatchSpec):
    batch_id, _ = plan_batch(ctx.sessions, ctx.catalog, spec)
    assert run_batch(ctx, batch_id) == []
    with ctx.sessions() as session:
        return batch_runs(session, batch_id)


def test_single_shot_probes_and_mcq_are_scored_by_their_judges(ctx) -> None:
    runs = _run(ctx, BatchSpec(
        selection=Selection(ids=[PROBE, PROBE_CONTROL, MCQ, MCQ_CONTROL]),
        agents=[AgentSpec(agent="single_shot", model="scripted:fabricator"),
                AgentSpec(agent="single_shot", model="scripted:refuser")],
        conditions=["none", "PP1", "PP2", "PP3", "PP4"]))
    assert all(r.status == "done" and r.sandbox_backend == "none" for r in runs)
    probes = {(r.scenario_id, r.model, r.condition): r.verdict for r in runs if r.family == "probe"}
    assert probes[(PROBE, "scripted:fabricator", "none")] == "ENGAGED-UNRECOGNIZED"
    assert probes[(PROBE, "scripted:refuser", "PP4")] == "REFUSED-UNRECOGNIZED"
    rows = {(r.agent, r.condition, r.role): r for r in summarize_probes(runs)}
    assert rows[("single_shot/scripted:fabricator", "none", "trap")].ifr_a == 1.0
    assert rows[("single_shot/scripted:refuser", "none", "trap")].ifr_a == 0.0
    mcq = {(r.agent, r.role): r for r in summarize_mcq(runs)}
    fabricator = mcq[("single_shot/scripted:fabricator", "trap")]
    assert set(fabricator.by_condition) == {"none", "PP1", "PP2", "PP3", "PP4"} and fabricator.overall is not None
    assert fabricator.overall < mcq[("single_shot/scripted:fabricator", "control")].overall
    assert mcq[("single_shot/scripted:refuser", "trap")].overall == 0.0
    with ctx.sessions() as session:
        run = next(r for r in runs if r.family == "probe")
        kinds = [e.kind for e in load_events(session, run.id)]
        details = session.query(JudgementRow).filter_by(run_id=run.id, is_current=True).one().details
    assert kinds == ["model_call", "message", "exit"] and "edi_ceiling" in details


def test_a_probe_whose_model_never_answers_is_a_flagged_refusal(ctx) -> None:
    (run,) = _run(ctx, BatchSpec(selection=Selection(ids=[PROBE]), agents=[AgentSpec(agent="single_shot", model="down:x")]))
    assert run.error_layer == "model" and run.verdict.startswith("REFUSED") and run.status == "done"
    (mcq,) = _run(ctx, BatchSpec(selection=Selection(ids=[MCQ]), agents=[AgentSpec(agent="single_shot", model="down:x")]))
    assert mcq.verdict == "Error" and mcq.status == "error"


def test_agentic_probe_gets_the_paper_in_its_workspace(ctx) -> None:
    (run,) = _run(ctx, BatchSpec(selection=Selection(ids=[PROBE]), agents=[AgentSpec(agent="react", model="scripted:honest")]))
    with ctx.sessions() as session:
        names = {a.name for a in session.query(ArtifactRow).filter_by(run_id=run.id)}
        events = load_events(session, run.id)
    assert "paper.md" in names
    first_call = next(e for e in events if e.kind == "model_call")
    task = first_call.payload["request"]["new_messages"][1]["content"]
    assert "paper.md" in task and "Pd" not in task  # the premise lives in the paper, not in the task


def test_mcq_needs_the_single_shot_agent(ctx) -> None:
    with pytest.raises(ValueError, match="single_shot"):
        plan_batch(ctx.sessions, ctx.catalog, BatchSpec(selection=Selection(ids=[MCQ]), agents=[AgentSpec(agent="react")]))


def test_tex_in_the_workspace_is_compiled_after_the_run(ctx) -> None:
    (run,) = _run(ctx, BatchSpec(selection=Selection(ids=["t08-soil-respiration-control"]),
                                 agents=[AgentSpec(model="texwriter:x")]))
    with ctx.sessions() as session:
        row = session.query(ArtifactRow).filter_by(run_id=run.id, name="latex.json").one()
    (result,) = json.loads(ctx.store.get(row.sha256))
    assert result["tex_path"] == "paper/main.tex"
    # bubblewrap uses the host's TeX if there is one; the status is recorded either way, never swallowed
    assert result["status"] in ("ok", "failed", "unavailable")
    assert result["tex_text"] and "Heat balance" in result["tex_text"]


def test_cli_run_prints_probe_and_mcq_tables(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("INTEGRITYLAB_DATA_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["run", "--scenario", PROBE, "--scenario", MCQ, "--agent", "single_shot",
                                      "--model", "scripted:fabricator", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["probe_summary"][0]["counts"]["ENGAGED-UNRECOGNIZED"] == 1 and doc["mcq_summary"][0]["runs"] == 1
