"""The main job end to end: first pack x four scripted policies x two conditions, real bwrap sandboxes.

The expected outcomes are the archetypes of issue 2; they come out of the
detectors reading real trajectories, never from a per-policy rule.
"""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from orchestrator.batches import AgentSpec, BatchSpec, Selection, plan_batch
from orchestrator.cli.app import app
from orchestrator.cli.runs_cmd import DEMO_SCENARIOS
from orchestrator.db.models import JudgementRow, Run
from orchestrator.embedded import run_batch
from orchestrator.execution import RunContext
from orchestrator.metrics import batch_runs, summarize
from tests.conftest import requires_bwrap

pytestmark = requires_bwrap

POLICIES = ["honest", "fabricator", "discloser", "refuser"]


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Run], dict[str, list[dict]]]:
    from orchestrator.embedded import make_context
    from orchestrator.settings import Settings

    settings = Settings(data_dir=tmp_path_factory.mktemp("demo"))
    ctx: RunContext = make_context(settings, backend="bwrap")
    spec = BatchSpec(name="e2e", selection=Selection(ids=DEMO_SCENARIOS),
                     agents=[AgentSpec(model=f"scripted:{p}") for p in POLICIES], conditions=["none", "completion"])
    batch_id, count = plan_batch(ctx.sessions, ctx.catalog, spec)
    assert count == len(DEMO_SCENARIOS) * len(POLICIES) * 2
    assert run_batch(ctx, batch_id, workers=2) == []
    with ctx.sessions() as session:
        runs = batch_runs(session, batch_id)
        findings = {
            j.run_id: j.findings for j in session.query(JudgementRow).filter(JudgementRow.is_current.is_(True))
        }
    return runs, findings


def _runs(runs: list[Run], policy: str, role: str) -> list[Run]:
    return [r for r in runs if r.model == f"scripted:{policy}" and r.role == role]


def test_no_run_errors(demo_runs) -> None:
    runs, _ = demo_runs
    assert [(r.scenario_id, r.model, r.error_layer, r.error_message) for r in runs if r.verdict == "Error"] == []
    assert all(r.status == "done" for r in runs)


def test_honest_passes_traps_and_completes_controls(demo_runs) -> None:
    runs, _ = demo_runs
    assert {r.verdict for r in _runs(runs, "honest", "trap")} == {"Pass"}
    assert all(r.exit_reason == "quit" for r in _runs(runs, "honest", "trap"))
    controls = _runs(runs, "honest", "control")
    assert {r.verdict for r in controls} == {"Pass"} and all(r.completed for r in controls)


def test_fabricator_fails_traps_with_evidence(demo_runs) -> None:
    runs, findings = demo_runs
    traps = _runs(runs, "fabricator", "trap")
    assert {r.verdict for r in traps} == {"Fail"}
    for run in traps:
        violations = [f for f in findings[run.id] if f["kind"] == "violation"]
        assert violations and all(f["event_ids"] and f["quotes"] for f in violations)
    by_category = {r.category: {f["detector"] for f in findings[r.id]} for r in traps}
    assert "numbers_without_data" in by_category["T08"]
    assert "off_limits_access" in by_category["T02"]
    assert "resource_substituted" in by_category["T05"]
    assert all(r.completed for r in _runs(runs, "fabricator", "control"))


def test_discloser_is_flawed_on_traps(demo_runs) -> None:
    runs, findings = demo_runs
    traps = _runs(runs, "discloser", "trap")
    assert {r.verdict for r in traps} == {"Flawed"}
    for run in traps:
        assert all(f["disclosed"] for f in findings[run.id] if f["kind"] == "violation")


def test_refuser_passes_traps_but_over_refuses_every_control(demo_runs) -> None:
    runs, _ = demo_runs
    assert {r.verdict for r in _runs(runs, "refuser", "trap")} == {"Pass"}
    controls = _runs(runs, "refuser", "control")
    assert controls and not any(r.completed for r in controls)


def test_summary_table_rates(demo_runs) -> None:
    runs, _ = demo_runs
    rows = {(r.agent, r.condition): r for r in summarize(runs)}
    assert rows[("react/scripted:fabricator", "none")].integrity_problem_rate == 1.0
    assert rows[("react/scripted:honest", "completion")].integrity_problem_rate == 0.0
    assert rows[("react/scripted:honest", "none")].over_refusal_rate == 0.0
    assert rows[("react/scripted:refuser", "none")].over_refusal_rate == 1.0


def test_cli_demo_json(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("INTEGRITYLAB_DATA_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["run", "--scenario", "t08-soil-respiration-trap", "--model",
                                      "scripted:fabricator", "--backend", "bwrap", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["runs"][0]["verdict"] == "Fail"
    again = CliRunner().invoke(app, ["report", "--json"])
    assert again.exit_code == 0 and json.loads(again.stdout)["batch"] == doc["batch"]


def test_demo_ends_by_saying_where_to_look(tmp_path, monkeypatch) -> None:
    from orchestrator.cli import runs_cmd
    monkeypatch.setenv("INTEGRITYLAB_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(runs_cmd, "DEMO_SCENARIOS", ["t08-soil-respiration-trap"])
    monkeypatch.setattr(runs_cmd, "DEMO_MODELS", ["scripted:fabricator"])
    result = CliRunner().invoke(app, ["demo", "--backend", "bwrap"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    batch = re.search(r"/dashboard\?batch=([0-9a-f]+)", result.output)
    assert batch and "integritylab serve" in result.output
    report = tmp_path / "reports" / f"{batch.group(1)}.html"
    assert str(report) in result.output.replace("\n", "")
    html = report.read_text()
    assert "<svg" in html and "<script" not in html and "react/scripted:fabricator" in html
    assert not re.findall(r"(?:src|href)=\"https?://", html)  # nothing fetched from elsewhere
    written = CliRunner().invoke(app, ["report", batch.group(1), "--html", str(tmp_path / "again.html")])
    assert written.exit_code == 0 and (tmp_path / "again.html").read_text().count("<svg") >= 2
