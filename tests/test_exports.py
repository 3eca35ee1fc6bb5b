"""Exports (issue #16): runs as CSV / JSONL / Parquet with the same rows in each, and a run's trajectory as
ATIF that keeps every tool call and observation and passes the format's rules; blinded viewers get
pseudonyms and no model names."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError
from sqlalchemy import select
from typer.testing import CliRunner

from orchestrator.atif import AtifTrajectory, to_atif
from orchestrator.cli.app import app
from orchestrator.db.models import AnnotationRow, EventRow, Run
from orchestrator.db.session import session_factory
from tests.conftest import requires_bwrap
from tests.test_dashboard_pages import blind_queue, seeded, signed_in  # noqa: F401 - the shared fixture

REALISTIC = Path(__file__).parent / "fixtures" / "realistic"
TRAP, CONTROL = "t01-kiln-energy-forecast-trap", "t01-kiln-energy-forecast-control"


def _events_of(recording: dict) -> list[EventRow]:
    return [EventRow(id=e["id"], seq=e["seq"], kind=e["kind"], step=e.get("step"),
                     ts=datetime.fromisoformat(e["ts"]), payload=e["payload"]) for e in recording["events"]]


def _run_of(recording: dict) -> Run:
    return Run(id=recording["case"][:32], batch_id="b", scenario_id=recording["scenario"], family="dilemma",
               category=recording["category"], role=recording["role"], agent="react", model=recording["model"],
               condition=recording["condition"], epoch=0, seed=0, status="done", trajectory_from_seq=0)


@requires_bwrap
def test_cli_exports_the_same_rows_in_three_formats_and_atif_for_a_run(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("INTEGRITYLAB_DATA_DIR", str(tmp_path / "data"))
    runner = CliRunner()
    ran = runner.invoke(app, ["run", "--scenario", TRAP, "--scenario", CONTROL, "--model", "scripted:honest",
                              "--model", "scripted:fabricator", "--json"])
    assert ran.exit_code == 0, ran.output
    tables = {}
    for fmt in ("csv", "jsonl", "parquet"):
        out = tmp_path / f"runs.{fmt}"
        done = runner.invoke(app, ["export", "runs", "-o", str(out)])
        assert done.exit_code == 0, done.output
        assert "wrote 4 run(s)" in done.output
        tables[fmt] = out
    with tables["csv"].open() as handle:
        from_csv = list(csv.DictReader(handle))
    from_jsonl = [json.loads(line) for line in tables["jsonl"].read_text().splitlines()]
    from_parquet = pq.read_table(tables["parquet"]).to_pylist()
    assert [r["run_id"] for r in from_csv] == [r["run_id"] for r in from_jsonl] == [r["run_id"] for r in from_parquet]
    by_model = {(r["model"], r["role"]): r for r in from_jsonl}
    honest, faker = by_model[("scripted:honest", "trap")], by_model[("scripted:fabricator", "trap")]
    assert (honest["verdict"], honest["resisted"]) == ("Pass", True)
    assert faker["verdict"] in ("Fail", "Flawed") and faker["resisted"] is False
    assert by_model[("scripted:honest", "control")]["refused"] is False
    assert all(r["hazard"] in ("low", "medium", "high") for r in from_jsonl)
    for a, b in zip(from_jsonl, from_parquet, strict=True):  # Parquet keeps types: ints, bools, UTC times
        assert b["input_tokens"] == a["input_tokens"] and b["resisted"] == a["resisted"]
        assert b["finished_at"].tzinfo is not None
        assert b["finished_at"].isoformat() == a["finished_at"]

    run_id = faker["run_id"]
    out = tmp_path / "run.atif.json"
    done = runner.invoke(app, ["export", "atif", run_id, "-o", str(out)])
    assert done.exit_code == 0, done.output
    document = json.loads(out.read_text())
    trajectory = AtifTrajectory.model_validate(document)  # the format's rules hold on what was written
    sessions = session_factory(f"sqlite:///{tmp_path / 'data' / 'integritylab.db'}")
    with sessions() as session:
        run = session.get(Run, run_id)
        events = list(session.scalars(select(EventRow).where(EventRow.run_id == run_id).order_by(EventRow.seq)))
        assert trajectory.final_metrics.total_prompt_tokens == run.input_tokens
        assert trajectory.final_metrics.total_completion_tokens == run.output_tokens
    calls = [c for s in trajectory.steps for c in s.tool_calls or []]
    results = {r.source_call_id: r.content for s in trajectory.steps if s.observation for r in s.observation.results}
    stored_calls = [e for e in events if e.kind == "tool_call"]
    assert [c.tool_call_id for c in calls] == [e.payload["call_id"] for e in stored_calls]
    for e in events:
        if e.kind == "observation":
            assert results[e.payload["call_id"]] == e.payload["output"]
    assert trajectory.steps[0].source == "system" and trajectory.steps[1].source == "user"
    assert document["extra"]["integritylab"]["verdict"] == run.verdict
    with sessions() as session:
        session.add(AnnotationRow(run_id=run_id, annotator="ada", label="Fail", note="made up",
                                  checklist={"R3": True}))
        session.commit()
    judged = tmp_path / "judgements.parquet"
    assert runner.invoke(app, ["export", "judgements", "-o", str(judged)]).exit_code == 0
    judgement_table = pq.read_table(judged).to_pylist()
    assert {r["run_id"] for r in judgement_table} == {r["run_id"] for r in from_jsonl}
    faked = [r for r in judgement_table if r["run_id"] == run_id and r["is_current"]]
    assert faked and faked[0]["verdict"] == run.verdict and faked[0]["violations"]
    labelled = tmp_path / "labels.csv"
    assert runner.invoke(app, ["export", "labels", "-o", str(labelled)]).exit_code == 0
    with labelled.open() as handle:
        (label,) = list(csv.DictReader(handle))
    assert (label["run_id"], label["label"], json.loads(label["checklist"])) == (run_id, "Fail", {"R3": True})
    lines = tmp_path / "events.jsonl"
    assert runner.invoke(app, ["export", "events", run_id, "-o", str(lines)]).exit_code == 0
    exported = [json.loads(line) for line in lines.read_text().splitlines()]
    assert [(e["seq"], e["kind"], e["payload"]) for e in exported] == [(e.seq, e.kind, e.payload) for e in events]
    missing = runner.invoke(app, ["export", "runs", "nosuchbatch", "-o", str(tmp_path / "x.csv")])
    assert missing.exit_code == 2 and "no batch nosuchbatch" in missing.output
    wrong = runner.invoke(app, ["export", "runs", "-o", str(tmp_path / "x.xlsx")])
    assert wrong.exit_code == 2 and "unknown export format 'xlsx'" in wrong.output


def test_every_realistic_recording_converts_to_valid_atif() -> None:
    recordings = sorted((REALISTIC / "dev").glob("*.json"))[:60]
    assert len(recordings) >= 40
    for path in recordings:
        recording = json.loads(path.read_text())
        events = _events_of(recording)
        trajectory = to_atif(_run_of(recording), events)
        again = AtifTrajectory.model_validate(json.loads(json.dumps(trajectory.to_json_dict())))
        calls = [c.tool_call_id for s in again.steps for c in s.tool_calls or []]
        assert calls == [e.payload["call_id"] for e in events if e.kind == "tool_call"], path.name
        answered = [r.source_call_id for s in again.steps if s.observation for r in s.observation.results]
        assert sorted(answered) == sorted(e.payload["call_id"] for e in events if e.kind == "observation"), path.name


def _minimal(**step: object) -> dict:
    return {"schema_version": "ATIF-v1.4", "session_id": "s", "agent": {"name": "a", "version": "1"},
            "steps": [{"step_id": 1, "source": "user", "message": "hi"},
                      {"step_id": 2, "source": "agent", "message": "", **step}]}


@pytest.mark.parametrize("change, why", [
    ({"tool_calls": [{"tool_call_id": "c1", "function_name": "shell", "arguments": {}}],
      "observation": {"results": [{"source_call_id": "c9", "content": "x"}]}}, "no tool call of this step"),
    ({"timestamp": "yesterday"}, "not ISO 8601"),
    ({"surprise": 1}, "Extra inputs"),
    ({"step_id": 3}, "step ids must run"),
])
def test_the_atif_rules_refuse_what_the_format_forbids(change, why) -> None:
    with pytest.raises(ValidationError, match=why):
        AtifTrajectory.model_validate(_minimal(**change))
    AtifTrajectory.model_validate(_minimal(timestamp="2026-12-01T10:00:00Z"))  # and the plain case passes


def test_agent_fields_on_a_user_step_are_refused() -> None:
    document = _minimal()
    document["steps"][0]["model_name"] = "gpt"
    with pytest.raises(ValidationError, match="only on agent steps"):
        AtifTrajectory.model_validate(document)


def test_a_blinded_viewer_exports_pseudonyms_and_no_models(seeded) -> None:  # noqa: F811
    settings, batch_id = seeded
    sessions = session_factory(settings.effective_database_url)
    with sessions() as session:
        run = session.scalars(select(Run).where(Run.agent == "codex")).first()
        blind_queue(session, run.id, completed=True)
        session.add(EventRow(run_id=run.id, seq=0, kind="model_call", step=1, ts=datetime.now(UTC), payload={
            "provider": "scripted", "model": "scripted:x", "request": {"new_messages": [
                {"role": "user", "content": "task"}]}, "response": {"content": "ok", "tool_calls": []},
            "input_tokens": 3, "output_tokens": 1}))
        session.commit()
        run_id = run.id
    ada = signed_in(settings, "ada")
    rows = ada.get(f"/dashboard/export.jsonl?batch={batch_id}")
    assert rows.status_code == 200 and "scripted:x" not in rows.text and "codex" not in rows.text
    assert {json.loads(line)["agent"] for line in rows.text.splitlines()} == {"agent 1", "agent 2"}
    trajectory = ada.get(f"/dashboard/runs/{run_id}/atif.json")
    assert trajectory.status_code == 200 and "scripted:x" not in trajectory.text
    assert trajectory.json()["agent"]["name"].startswith("agent ")
    lines = ada.get(f"/dashboard/runs/{run_id}/events.jsonl")
    assert lines.status_code == 200 and "scripted:x" not in lines.text and len(lines.text.splitlines()) == 1
    root = signed_in(settings, "root")
    assert "codex/scripted:x" in root.get(f"/dashboard/export.csv?batch={batch_id}").text
    assert root.get(f"/dashboard/runs/{run_id}/atif.json").json()["agent"]["model_name"] == "scripted:x"
    parquet = root.get(f"/dashboard/export.parquet?batch={batch_id}")
    assert parquet.status_code == 200 and parquet.content[:4] == b"PAR1"
    assert root.get("/dashboard/export.xlsx").status_code == 404
    assert 'href="/dashboard/export.csv?batch=' in root.get(f"/dashboard?batch={batch_id}").text
    assert f'href="/dashboard/runs/{run_id}/atif.json"' in root.get(f"/dashboard/runs/{run_id}").text
    assert "scripted:x" in root.get(f"/dashboard/runs/{run_id}/events.jsonl").text
